// Internals of the rewriting simplifier, shared by its files. Not installed.
//
// Rules are grouped by family, one file each (after Halide's Simplify_*.cpp):
//
//   operator                       rule (a Rewriter member)          file
//   Add, Sub, Mul                  add_sub, mul, recombine           simplify_add_sub_mul.cc
//   FloorDiv, FloorMod, Div, Mod   floor_div_rule, floor_mod_rule,   simplify_div_mod.cc
//                                  trunc_div_mod
//   Min, Max                       min_max                           simplify_min_max.cc
//   EQ, NE, LT, LE, GT, GE         compare (decide, normalize)       simplify_compare.cc
//   And, Or, Not, Select           logical, visit(Not), visit(Select) simplify_logic.cc
//   Cast                           visit(Cast)                       simplify_cast.cc
//   vectors: Ramp, Broadcast       vector_rule, visit(Ramp), ...     simplify_vector.cc
//   Call of a builtin              call_rule, math_rule, bits_rule,  simplify_call.cc
//                                  if_then_else
//   leaves, Let, loads             rewrite(), visit(...)             simplify.cc (the driver)
//
// Adding a rewrite rule:
// - Find the operator's rule above and add the rule there, in its family's file. A binary
//   rule receives the operator's kind and its operands already rewritten; it returns the
//   rewritten expression, or an undefined Expr when no rule applies (the node is then rebuilt
//   from the rewritten operands, or kept when they did not change).
// - Return rewrite(result) when the result may simplify further; the driver also repeats
//   whole passes until nothing changes.
// - Prove side conditions with the analyzer (an_.bound(), decide(), nonzero(),
//   an_.congruence()); integer rules that reason about order first check an_.fits() (see the
//   two number worlds in arith_internal.h). Rules never drop, duplicate or reorder operands
//   that are not AnalyzerImpl::pure().
// - A new family: a new simplify_<family>.cc, its rule declared in Rewriter below and
//   dispatched from visit(), the file listed in ir/CMakeLists.txt.
// - Test it: a check(input, expected) row in the family's table in
//   tests/unit/ir/arith_simplify_test.cc and, where a pass shows it, a case in
//   tests/passes/simplify.tir; arith_property_test.cc checks soundness with random bindings.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "ir/arith/arith_internal.h"
#include "primjit/float_formats.h"
#include "primjit/ir/functor.h"

namespace primjit::arith::detail {

// --- literals, folding and shared helpers ----------------------------------------------------

inline std::optional<i128> const_int(const Expr& e) {
  if (const auto* imm = e.as<IntImm>()) return int_value(imm);
  return std::nullopt;
}

// The value a float literal has at run time: rounded to its type, as every backend converts it
// (T.float32(0.001) is 0.001f, not the double 0.001; 1 / it is 999.99994f, not 1000).
inline double literal_value(DataType t, double v) {
  if (t.is_float() && t.bits() == 64) return v;
  if (t.is_float() && t.bits() == 32) return static_cast<double>(static_cast<float>(v));
  const fp::Format& f = t.is_bfloat16()                             ? fp::kBFloat16
                        : t.code() == DataType::Code::kFloat8E4M3FN ? fp::kFloat8E4M3FN
                        : t.code() == DataType::Code::kFloat8E5M2   ? fp::kFloat8E5M2
                                                                    : fp::kFloat16;
  return static_cast<double>(fp::round_to(f, static_cast<float>(v)));
}

inline std::optional<double> const_float(const Expr& e) {
  if (const auto* imm = e.as<FloatImm>()) return literal_value(imm->dtype, imm->value);
  return std::nullopt;
}

// A scalar literal, or the literal a Broadcast repeats.
inline std::optional<i128> const_int_lanes(const Expr& e) {
  if (const auto* b = e.as<Broadcast>()) return const_int(b->value);
  return const_int(e);
}

/// float32 and float64 arithmetic is folded (in double, then rounded once to float32, which
/// gives the correctly rounded float32 result for + - * /).
inline bool foldable_float(DataType t) {
  return t.is_float() && t.is_scalar() && (t.bits() == 32 || t.bits() == 64);
}
inline double round_to(DataType t, double v) {
  return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v;
}

inline Expr make_bool(bool v) { return IntImm::make(DataType::Bool(), v ? 1 : 0); }

/// `x k y` for a comparison kind `k` (EQ, NE, LT, LE, GT, GE); nullopt for any other kind.
template <typename T>
std::optional<bool> fold_compare(NodeKind k, T x, T y) {
  switch (k) {
    case NodeKind::kEQ:
      return x == y;
    case NodeKind::kNE:
      return x != y;
    case NodeKind::kLT:
      return x < y;
    case NodeKind::kLE:
      return x <= y;
    case NodeKind::kGT:
      return x > y;
    case NodeKind::kGE:
      return x >= y;
    default:
      return std::nullopt;
  }
}

/// The binary node of kind `k` (arithmetic, Min/Max, comparison, And/Or) over `a` and `b`.
Expr make_binary(NodeKind k, Expr a, Expr b);

// Integer constant folding; nullopt for division by zero.
std::optional<i128> fold_int(NodeKind k, DataType t, i128 x, i128 y);

/// Rewrites `e` until a pass changes nothing, at most `max_passes` passes (AnalyzerImpl::simplify
/// uses kMaxPasses); stopping at the cap before a fixed point is logged at debug level.
Expr simplify_passes(AnalyzerImpl& an, const Expr& e, int max_passes);

/// Opens an analyzer scope for its lifetime (facts assumed inside are dropped at its end).
class ScopeGuard {
 public:
  explicit ScopeGuard(AnalyzerImpl& an) : an_(an) { an_.push_scope(); }
  ~ScopeGuard() { an_.pop_scope(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  AnalyzerImpl& an_;
};

// --- the rewriter ----------------------------------------------------------------------------

/// One rewriting pass over an expression, using (and scoping facts in) an analyzer.
class Rewriter : public ExprFunctor<Rewriter, Expr> {
 public:
  explicit Rewriter(AnalyzerImpl& an) : an_(an) {}

  /// `e` rewritten once; the very same node when nothing changed.
  Expr rewrite(const Expr& e);

  // --- leaves, Let, loads (simplify.cc) ----------------------------------------------------
  Expr visit(const IntImm* op) { return Expr(op); }
  Expr visit(const FloatImm* op) { return Expr(op); }
  Expr visit(const StringImm* op) { return Expr(op); }
  Expr visit(const VarNode* op);
  Expr visit(const Let* op);
  Expr visit(const BufferLoad* op);

  // --- calls of builtins (simplify_call.cc) ---------------------------------------------------
  Expr visit(const Call* op);

  // --- binary operators: each dispatches to its family's rule ---------------------------------
  Expr visit(const Add* op) { return binary(op, &Rewriter::add_sub); }
  Expr visit(const Sub* op) { return binary(op, &Rewriter::add_sub); }
  Expr visit(const Mul* op) { return binary(op, &Rewriter::mul); }
  Expr visit(const Div* op) { return binary(op, &Rewriter::trunc_div_mod); }
  Expr visit(const Mod* op) { return binary(op, &Rewriter::trunc_div_mod); }
  Expr visit(const FloorDiv* op) { return binary(op, &Rewriter::floor_div_rule); }
  Expr visit(const FloorMod* op) { return binary(op, &Rewriter::floor_mod_rule); }
  Expr visit(const Min* op) { return binary(op, &Rewriter::min_max); }
  Expr visit(const Max* op) { return binary(op, &Rewriter::min_max); }
  Expr visit(const EQ* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const NE* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const LT* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const LE* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const GT* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const GE* op) { return binary(op, &Rewriter::compare); }
  Expr visit(const And* op) { return logical(Expr(op), NodeKind::kAnd); }
  Expr visit(const Or* op) { return logical(Expr(op), NodeKind::kOr); }

  // --- logic (simplify_logic.cc), casts (simplify_cast.cc), vectors (simplify_vector.cc) ----
  Expr visit(const Not* op);
  Expr visit(const Select* op);
  Expr visit(const Cast* op);
  Expr visit(const Ramp* op);
  Expr visit(const Broadcast* op);

 private:
  /// A binary rule: the operator's kind and its rewritten operands; an undefined Expr when no
  /// rule applies.
  using Rule = Expr (Rewriter::*)(NodeKind, const Expr&, const Expr&);

  /// Rewrites both operands, then applies `rule`; rebuilds the node only when they changed.
  template <typename N>
  Expr binary(const N* op, Rule rule) {
    Expr a = rewrite(op->a);
    Expr b = rewrite(op->b);
    Expr r = (this->*rule)(N::kKind, a, b);
    if (r.defined()) return r;
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return N::make(a, b);
  }

  /// Rewrites every element of `in` into `out`; true when any changed.
  bool rewrite_all(const std::vector<Expr>& in, std::vector<Expr>* out);

  // --- calls of builtins (simplify_call.cc) ---------------------------------------------------
  /// T.if_then_else: its branches rewritten knowing the condition, then its rules.
  Expr if_then_else(const Call* op);
  /// The rules of a builtin call `op` whose arguments, rewritten, are `args`.
  Expr call_rule(const Call* op, const std::vector<Expr>& args);
  /// Math functions: exact constant folding, rounding of integral values, exp2/log2.
  Expr math_rule(const Call* op, const std::vector<Expr>& args);
  /// Shifts and bitwise logic on scalar integers.
  Expr bits_rule(const Call* op, const std::vector<Expr>& args);

  // --- vectors (simplify_vector.cc) ----------------------------------------------------------
  Expr vector_rule(NodeKind k, const Expr& a, const Expr& b);

  // --- Add, Sub, Mul (simplify_add_sub_mul.cc) -----------------------------------------------
  Expr add_sub(NodeKind k, const Expr& a, const Expr& b);
  Expr mul(NodeKind k, const Expr& a, const Expr& b);
  /// Recombines quotient and remainder terms of a ring form: `(x // d) * d + x % d` -> `x`.
  Linear recombine(Linear l, DataType t);
  /// Floating constant folding and exact identities (also floating Div).
  Expr float_arith(NodeKind k, const Expr& a, const Expr& b);
  /// Canonical operand order of a commutative, non-associative operator.
  Expr commute(NodeKind k, const Expr& a, const Expr& b);

  // --- division and remainder (simplify_div_mod.cc) ------------------------------------------
  Expr floor_div_rule(NodeKind k, const Expr& a, const Expr& b);
  Expr floor_mod_rule(NodeKind k, const Expr& a, const Expr& b);
  Expr trunc_div_mod(NodeKind k, const Expr& a, const Expr& b);
  /// a // b and a % b for a divisor that is not a literal, when b >= 1 is provable.
  Expr symbolic_div_mod(NodeKind k, const Expr& a, const Expr& b);
  /// True when every Mul node in `e` computes the exact product (no wraparound).
  bool exact_product(const Expr& e);
  /// True when the divisor `b` is provably nonzero.
  bool nonzero(const Expr& b);
  /// -a, in canonical form.
  Expr negate(const Expr& a);

  // --- Min, Max (simplify_min_max.cc) --------------------------------------------------------
  Expr min_max(NodeKind k, const Expr& a, const Expr& b);

  // --- comparisons (simplify_compare.cc) -----------------------------------------------------
  Expr compare(NodeKind k, const Expr& a, const Expr& b);
  Expr compare_bool(NodeKind k, const Expr& a, const Expr& b);
  /// Decides an integer comparison of scalar operands, when provable either way.
  std::optional<bool> decide(NodeKind k, const Expr& a, const Expr& b);
  /// Decides `a k b` given the exact difference dz == a - b.
  std::optional<bool> decide_exact(NodeKind k, const Linear& dz);
  /// The bound of `e`, narrowed to values its congruence allows.
  Interval refined_bound(const Expr& e);
  /// True when sign * l + add is provably >= 0.
  bool nonneg(const Linear& l, i128 sign, i128 add);
  /// Canonical form of an undecided integer comparison.
  Expr normalize_compare(NodeKind k, const Expr& a, const Expr& b);

  // --- And, Or (simplify_logic.cc) -----------------------------------------------------------
  Expr logical(const Expr& e, NodeKind k);

  AnalyzerImpl& an_;
};

}  // namespace primjit::arith::detail
