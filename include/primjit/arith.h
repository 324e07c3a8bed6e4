// Arithmetic analysis and simplification of IR expressions (primjit::arith).
//
// An Analyzer knows facts about variables (loop ranges, Bind/Let values, assumed conditions)
// and answers questions about expressions under them: constant bounds, congruences, proofs,
// and a simplified equivalent form.
//
// Soundness. Every answer holds for the IR's real semantics (see expr.h): integer arithmetic
// wraps modulo 2^bits. The analyzer reasons over the mathematical integers only where it can
// show that no wraparound happens (every bound it claims holds for the wrapped value), and uses
// ring identities (`x*4 + y - x*4 == y`) that hold under wraparound as well. So
// `min(x + 2, x)` only becomes `x` when x is known to be far enough from the dtype's maximum,
// e.g. a bound loop variable. Floating-point constants are folded only where the result is the
// correctly rounded IEEE one (float32/float64 arithmetic, comparisons); float expressions are
// never reassociated, only their commutative operands ordered. Calls with effects are never
// dropped or duplicated, and the branches of a Select (which evaluates both) are only
// simplified under its condition when that cannot introduce a fault.
//
// Canonical form. Integer sums are rebuilt as sum(coeff * monomial) + constant with monomials
// ordered variables first (by name, then dtype, then first use), then compound terms (by node
// kind, then operands), constant last; so `y + x` and `x + y` give the same expression.
//
//   arith::Analyzer an;
//   an.with_scope([&] {
//     an.bind(i, make_const(0), n);        // for i in range(n): i in [0, n)
//     an.can_prove(LT::make(i, n));        // true
//     an.simplify(e);                      // e.g. (i*16 + j) % 16 -> j once j is in [0, 16)
//   });                                    // i's range is dropped here
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <utility>

#include "primjit/ir/expr.h"

namespace primjit::arith {

namespace detail {
class AnalyzerImpl;
}

/// Bounds of an integer expression: min <= value <= max. kNegInf / kPosInf mean "unbounded" on
/// that side (an int64 value equal to INT64_MIN/INT64_MAX is reported as unbounded).
struct ConstIntBound {
  static constexpr int64_t kNegInf = std::numeric_limits<int64_t>::min();
  static constexpr int64_t kPosInf = std::numeric_limits<int64_t>::max();

  int64_t min = kNegInf;
  int64_t max = kPosInf;

  bool is_const() const { return min == max && min != kNegInf && max != kPosInf; }
  bool is_everything() const { return min == kNegInf && max == kPosInf; }
  friend bool operator==(const ConstIntBound& a, const ConstIntBound& b) {
    return a.min == b.min && a.max == b.max;
  }
};

/// The value is coeff * k + base for some integer k. coeff == 0: the value is exactly `base`.
/// coeff > 0: 0 <= base < coeff. {1, 0} says nothing.
struct ModularSet {
  int64_t coeff = 1;
  int64_t base = 0;

  bool is_const() const { return coeff == 0; }
  bool is_everything() const { return coeff == 1; }
  friend bool operator==(const ModularSet& a, const ModularSet& b) {
    return a.coeff == b.coeff && a.base == b.base;
  }
};

/// Facts about variables plus the queries that use them. Facts are added with bind/assume and
/// live until the innermost open Scope (or with_scope callback) ends; facts added outside any
/// scope live as long as the analyzer. Not thread-safe; use one analyzer per thread.
class Analyzer {
 public:
  Analyzer();
  ~Analyzer();
  Analyzer(const Analyzer&) = delete;
  Analyzer& operator=(const Analyzer&) = delete;

  /// A loop or thread variable: `var` takes the values min, min + 1, ..., min + extent - 1.
  /// `var`, `min` and `extent` must be scalar integers of one dtype.
  void bind(const Var& var, const Expr& min, const Expr& extent);
  /// A Bind/Let definition: `var` equals `value` (same dtype). A constant value makes the
  /// simplifier substitute it; an expression lets proofs reason through it.
  void bind(const Var& var, const Expr& value);
  /// Conditions known to hold (an if branch, an assert that passed): comparisons of integer
  /// expressions, their conjunctions, disjunctions and negations, boolean variables. A
  /// disjunction (`a or b`, `not (a and b)`) of up to 4 parts decides a question when every
  /// part that the other facts allow decides it the same way; the 4 innermost are tried.
  void assume(const Expr& condition);

  /// Opens a scope for the lifetime of the object; facts added meanwhile are dropped at its
  /// end. Scopes must nest (destroy them in reverse order of creation).
  class Scope {
   public:
    explicit Scope(Analyzer& analyzer);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Analyzer& analyzer_;
  };

  /// Drops every fact that `stale` says no longer holds (it is called with each assumed
  /// condition, Bind value and loop bound that mentions memory), in every open scope. For
  /// facts about memory after a store that may change it: `if A[0] == n: A[0] = 1` must not
  /// keep `A[0] == n`. A dropped fact stays dropped when its scope ends (the store may have
  /// happened); what was derived from it for variables' ranges stays, since a variable keeps
  /// the value it had.
  void forget(const std::function<bool(const Expr&)>& stale);

  /// Runs `body` inside a new scope and returns what it returns.
  template <typename F>
  decltype(auto) with_scope(F&& body) {
    Scope scope(*this);
    return std::forward<F>(body)();
  }

  /// Bounds of an integer (or bool) expression's value; everything for other dtypes.
  ConstIntBound const_int_bound(const Expr& expr);
  /// A congruence of a scalar integer expression's value; {1, 0} for other dtypes.
  ModularSet modular_set(const Expr& expr);
  /// An equivalent expression, simplified and canonically ordered. Never changes the value,
  /// never drops or duplicates a call with side effects.
  Expr simplify(const Expr& expr);
  /// True only when `condition` (a bool expression) provably holds.
  bool can_prove(const Expr& condition);
  /// True only when `a` and `b` provably have the same value.
  bool can_prove_equal(const Expr& a, const Expr& b);

 private:
  std::unique_ptr<detail::AnalyzerImpl> impl_;
};

/// `expr` simplified by a fresh Analyzer (no facts about variables beyond their dtypes and
/// size-variable flags).
Expr simplify(const Expr& expr);

}  // namespace primjit::arith
