// Internals shared by the analyzer's files and the rewriter. Not installed.
//
// Where each concern lives (all in ir/arith/):
//   interval.cc     exact-integer intervals, floor division, gcd, wraparound, literals
//   facts.cc        facts about variables and conditions, scopes, forget(), prove_nonneg()
//   bound.cc        constant-integer bounds of expressions and ring forms
//   congruence.cc   congruences (modular sets)
//   linear.cc       ring forms of sums (linearize, combine)
//   expr_order.cc   the canonical order of expressions, equality, purity
//   simplify*.cc    the rewriter, one file per rule family (see simplify_internal.h)
//   analyzer.cc     the public Analyzer over AnalyzerImpl
//
// Two number worlds meet here:
// - "ring" values: what the IR computes, integers modulo 2^bits. Linear forms built by
//   linearize() are ring forms: their coefficients are reduced to the dtype's width, and
//   evaluating one (with the atoms' actual values) gives the expression's value modulo 2^bits.
// - "exact" values: mathematical integers (__int128 here). A ring form whose exact value range
//   lies within the dtype's range evaluates exactly to the expression's value (two integers of
//   one dtype range that are congruent modulo 2^bits are equal). fits() checks that, and every
//   rule that reasons about order (bounds, comparisons, division) first makes sure of it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

#include "primjit/arith.h"
#include "primjit/ir/expr.h"

namespace primjit::arith::detail {

using i128 = __int128;

/// |v| >= kInf stands for an infinite bound; every value an IR integer can hold is far below.
inline constexpr i128 kInf = i128(1) << 80;

inline bool neg_inf(i128 v) { return v <= -kInf; }
inline bool pos_inf(i128 v) { return v >= kInf; }
inline bool infinite(i128 v) { return neg_inf(v) || pos_inf(v); }
inline i128 abs128(i128 v) { return v < 0 ? -v : v; }
inline bool is_int_scalar(DataType t) { return t.is_integer() && t.is_scalar(); }

/// A closed range of exact integers [lo, hi]; lo == -kInf / hi == kInf are unbounded.
struct Interval {
  i128 lo = -kInf;
  i128 hi = kInf;

  static Interval everything() { return {}; }
  static Interval point(i128 v) { return {v, v}; }
  bool is_point() const { return lo == hi && lo > -kInf && hi < kInf; }
  bool finite() const { return lo > -kInf && hi < kInf; }
};

// Interval arithmetic on exact integers, saturating to the infinite ends.
Interval interval_add(const Interval& a, const Interval& b);
Interval interval_neg(const Interval& a);
Interval interval_mul(const Interval& a, const Interval& b);
Interval interval_union(const Interval& a, const Interval& b);
Interval interval_intersect(const Interval& a, const Interval& b);
/// True when every value of `a` lies in `outer`.
bool interval_within(const Interval& a, const Interval& outer);

/// The values a dtype's elements can hold (everything for non-integers).
Interval dtype_range(DataType t);

i128 floor_div(i128 a, i128 b);
i128 floor_mod(i128 a, i128 b);
i128 gcd(i128 a, i128 b);
/// `v` modulo 2^bits, as the signed representative in [-2^(bits-1), 2^(bits-1)).
i128 wrap_signed(i128 v, int bits);
/// The exact value of an integer literal (uint64 literals are stored in two's complement).
i128 int_value(const IntImm* imm);
/// The two operands of any binary node; {nullptr, nullptr} for any other node.
std::pair<const Expr*, const Expr*> operands(const Expr& e);
/// Appends to `out` the operands of the nest of binary operations of kind `k` at the top of
/// `e`, left to right (`e` itself when it is not of that kind): min(min(a, b), c) -> a, b, c.
void flatten(NodeKind k, const Expr& e, std::vector<Expr>* out);
/// The literal of dtype `t` (scalar int/uint/bool, or a vector: a Broadcast) holding `v`
/// reduced modulo 2^bits.
Expr make_int(DataType t, i128 v);

/// A sum of monomials: sum(coeff_k * atom_k) + constant. Terms are sorted by
/// AnalyzerImpl::compare and have nonzero coefficients; an atom is any expression that is not
/// an Add, Sub, literal or multiplication by a literal (products of atoms are one atom, with
/// their factors sorted).
struct Linear {
  std::vector<std::pair<Expr, i128>> terms;
  i128 constant = 0;

  bool is_const() const { return terms.empty(); }
};

/// A congruence over exact integers: value = coeff * k + base; coeff 0 is the exact value.
struct Congruence {
  i128 coeff = 1;
  i128 base = 0;
};

class AnalyzerImpl {
 public:
  AnalyzerImpl();

  // --- facts -------------------------------------------------------------------------------
  struct VarInfo {
    Var var;           // keeps the key alive
    Interval bound;    // the value's bound (within the dtype's range)
    Expr min, extent;  // symbolic loop range, when bound to a range
    Expr value;        // the value, when bound to one
  };
  void push_scope();
  void pop_scope();
  void bind_range(const Var& var, const Expr& min, const Expr& extent);
  void bind_value(const Var& var, const Expr& value);
  /// Records `condition` (already simplified) as known to hold.
  void assume(const Expr& condition);
  /// Neutralizes, in place, every fact mentioning memory for which `stale` holds
  /// (Analyzer::forget).
  void forget(const std::function<bool(const Expr&)>& stale);
  const VarInfo* info(const VarNode* var) const;
  const std::vector<Expr>& known_true() const { return known_true_; }
  /// Decides a question by cases over the disjunctions assumed in scope (`a or b`, and
  /// `not (a and b)`): for one of the innermost few, `query` is asked under each disjunct not
  /// already known false; when every such case gives the same answer, that is the answer.
  /// No nested case splits: one call costs at most kMaxCaseFacts * kMaxDisjuncts queries.
  std::optional<bool> by_cases(const std::function<std::optional<bool>()>& query);
  static constexpr size_t kMaxCaseFacts = 4;
  static constexpr size_t kMaxDisjuncts = 4;
  /// prove_nonneg() pairs the innermost this many facts (i < j and j < k give i < k).
  static constexpr size_t kMaxChainFacts = 8;

  // --- analyses ----------------------------------------------------------------------------
  /// Exact bounds of the value of `e` (per lane for vectors).
  Interval bound(const Expr& e);
  /// Exact bounds of a linear form's value, given its atoms' bounds.
  Interval bound(const Linear& l);
  /// Congruence of a scalar integer expression's value.
  Congruence congruence(const Expr& e);
  /// Congruence of the value of an expression of dtype `t` whose ring form is `l`.
  Congruence congruence(const Linear& l, DataType t);
  /// The ring form of a scalar integer (not bool) expression.
  Linear linearize(const Expr& e);
  /// True when the exact value of ring form `l` always lies in `t`'s range, so that it equals
  /// the value of the expression it came from.
  bool fits(const Linear& l, DataType t);
  /// a * sa + b * sb with exact coefficients; nullopt on (absurdly large) overflow.
  std::optional<Linear> combine(const Linear& a, i128 sa, const Linear& b, i128 sb);
  /// The same combination reduced modulo 2^bits.
  Linear combine_ring(const Linear& a, i128 sa, const Linear& b, i128 sb, int bits);
  /// True when the exact-integer form `l` is provably >= 0 (bounds, assumed facts, and
  /// substitution of variables by their symbolic ranges and values).
  bool prove_nonneg(const Linear& l, int depth = 2);

  // --- structure ---------------------------------------------------------------------------
  /// A deterministic total order on expressions: variables first (by name, dtype, then first
  /// use), compound expressions by kind and fields, literals last. 0 means identical (same
  /// variables, not merely alpha-equivalent).
  int compare(const Expr& a, const Expr& b);
  static bool equal(const Expr& a, const Expr& b);
  /// True when `e` contains no call with an effect (so it may be dropped or duplicated).
  static bool pure(const Expr& e);
  /// Gives every variable and buffer in `e` not seen before the next first-use ordinal.
  void number_objects(const Expr& e);

  // --- simplifier (simplify*.cc) -----------------------------------------------------------
  Expr simplify(const Expr& e);
  /// Rebuilds a ring form as an expression of dtype `t` in canonical order.
  Expr from_linear(const Linear& l, DataType t);

 private:
  Interval bound_impl(const Expr& e);
  Congruence atom_congruence(const Expr& atom, int depth);
  Congruence congruence_impl(const Expr& e, int depth);
  Congruence congruence_of(const Linear& l, DataType t, int depth);
  void collect(const Expr& e, i128 scale, int bits, std::vector<std::pair<Expr, i128>>* terms,
               i128* constant);
  Expr monomial(const Expr& a, const Expr& b);
  Linear normalize(std::vector<std::pair<Expr, i128>> terms, i128 constant, int bits);
  void add_fact(const Linear& l);
  void add_disjunction(std::vector<Expr> disjuncts);
  /// The value a boolean variable is bound to (a Bind or Let), or undefined.
  Expr bound_value(const VarNode* var) const;
  /// The exact form of `c * atom` without the floor division, when `atom` is `x // k` for a
  /// positive literal k dividing c: (c/k) * x - (c/k) * (x % k).
  std::optional<Linear> expand_floor_div(const Expr& atom, i128 c);
  void tighten(const Var& var, const Interval& bound);
  void set_info(const VarNode* key, VarInfo info);
  int64_t ordinal(const Ref<Object>& object);
  int compare_buffer(const Buffer& a, const Buffer& b);

  struct Undo {
    const VarNode* key;
    bool existed;
    VarInfo old;
  };
  struct Frame {
    size_t undo_size;
    size_t facts_size;
    size_t known_size;
    size_t disjunctions_size;
  };
  std::unordered_map<const VarNode*, VarInfo> vars_;  // iterated only by forget(): no order leaks
  std::vector<Undo> undo_;
  std::vector<Frame> frames_;
  std::vector<Linear> facts_;     // exact forms known to be >= 0
  std::vector<Expr> known_true_;  // conditions known to hold, as simplified
  // Disjunctions known to hold, each as its disjuncts (an empty entry was forgotten).
  std::vector<std::vector<Expr>> disjunctions_;
  bool splitting_ = false;  // inside by_cases: no nested case splits
  std::unordered_map<const Object*, std::pair<Ref<Object>, int64_t>> ordinals_;
  int64_t next_ordinal_ = 0;
  bool memory_facts_ = false;  // some fact read memory: forget() has work to do
};

}  // namespace primjit::arith::detail
