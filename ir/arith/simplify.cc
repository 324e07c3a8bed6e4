// The rewriting simplifier. One pass rewrites an expression bottom-up (children first, then
// the rules of the node's operator); AnalyzerImpl::simplify repeats passes until nothing
// changes (or a pass cap is hit, so it always terminates).
//
// Rule families (see arith.h for the soundness contract):
// - constant folding for every operator (integers wrap in their width; float32/float64
//   arithmetic only, comparisons of any floating type);
// - integer sums: Add/Sub/Mul by constants are collected into a ring form (sum of monomials
//   with constant coefficients, atoms in AnalyzerImpl::compare order) and rebuilt canonically,
//   which cancels terms and orders commutative operands; `(x//d)*d + x%d` recombines to x;
// - floor/trunc division and modulo: bounds, divisibility of the numerator's terms, nesting;
// - min/max: flattened, dominated operands dropped by proof, operands sorted;
// - comparisons: decided from bounds of the exact difference, assumed facts and congruences;
//   otherwise normalized (terms to the side where they are positive, constant right);
// - And/Or/Not: flattened, sorted, each operand simplified assuming the previous ones;
// - Select with a known condition or equal branches (branches simplified under the condition);
// - Cast of constants, no-op casts, round trips through a wider type;
// - Let of a constant or variable is substituted; other Lets inform the analyzer;
// - vectors: Broadcast op Broadcast, Ramp +/-/* Broadcast or Ramp.
// Subexpressions holding calls with effects are never dropped, duplicated or reordered.
#include <algorithm>
#include <cmath>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::arith::detail {
namespace {

constexpr int kMaxPasses = 8;

std::optional<i128> const_int(const Expr& e) {
  if (const auto* imm = e.as<IntImm>()) return int_value(imm);
  return std::nullopt;
}

std::optional<double> const_float(const Expr& e) {
  if (const auto* imm = e.as<FloatImm>()) return imm->value;
  return std::nullopt;
}

// A scalar literal, or the literal a Broadcast repeats.
std::optional<i128> const_int_lanes(const Expr& e) {
  if (const auto* b = e.as<Broadcast>()) return const_int(b->value);
  return const_int(e);
}

/// float32 and float64 arithmetic is folded (in double, then rounded once to float32, which
/// gives the correctly rounded float32 result for + - * /).
bool foldable_float(DataType t) {
  return t.is_float() && t.is_scalar() && (t.bits() == 32 || t.bits() == 64);
}
double round_to(DataType t, double v) {
  return t.bits() == 32 ? static_cast<double>(static_cast<float>(v)) : v;
}

Expr make_bool(bool v) { return IntImm::make(DataType::Bool(), v ? 1 : 0); }

Expr make_binary(NodeKind k, Expr a, Expr b) {
  switch (k) {
#define PRIMJIT_MAKE_CASE(Name) \
  case NodeKind::k##Name:       \
    return Name::make(std::move(a), std::move(b));
    PRIMJIT_MAKE_CASE(Add)
    PRIMJIT_MAKE_CASE(Sub)
    PRIMJIT_MAKE_CASE(Mul)
    PRIMJIT_MAKE_CASE(Div)
    PRIMJIT_MAKE_CASE(Mod)
    PRIMJIT_MAKE_CASE(FloorDiv)
    PRIMJIT_MAKE_CASE(FloorMod)
    PRIMJIT_MAKE_CASE(Min)
    PRIMJIT_MAKE_CASE(Max)
    PRIMJIT_MAKE_CASE(EQ)
    PRIMJIT_MAKE_CASE(NE)
    PRIMJIT_MAKE_CASE(LT)
    PRIMJIT_MAKE_CASE(LE)
    PRIMJIT_MAKE_CASE(GT)
    PRIMJIT_MAKE_CASE(GE)
    PRIMJIT_MAKE_CASE(And)
    PRIMJIT_MAKE_CASE(Or)
#undef PRIMJIT_MAKE_CASE
    default:
      PRIMJIT_INTERNAL_ERROR() << "make_binary: not a binary kind: " << node_kind_name(k);
  }
}

// Integer constant folding; nullopt for division by zero.
std::optional<i128> fold_int(NodeKind k, DataType t, i128 x, i128 y) {
  int bits = t.bits();
  switch (k) {
    case NodeKind::kAdd:
      return x + y;
    case NodeKind::kSub:
      return x - y;
    case NodeKind::kMul:
      return wrap_signed(x, bits) * wrap_signed(y, bits);
    case NodeKind::kDiv:
      if (y == 0) return std::nullopt;
      return x / y;
    case NodeKind::kMod:
      if (y == 0) return std::nullopt;
      return x % y;
    case NodeKind::kFloorDiv:
      if (y == 0) return std::nullopt;
      return floor_div(x, y);
    case NodeKind::kFloorMod:
      if (y == 0) return std::nullopt;
      return floor_mod(x, y);
    case NodeKind::kMin:
      return std::min(x, y);
    case NodeKind::kMax:
      return std::max(x, y);
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
    case NodeKind::kAnd:
      return (x != 0) && (y != 0);
    case NodeKind::kOr:
      return (x != 0) || (y != 0);
    default:
      return std::nullopt;
  }
}

std::optional<bool> fold_float_compare(NodeKind k, double x, double y) {
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

// The opposite integer comparison: not (a < b) is a >= b, and so on.
NodeKind negated_compare(NodeKind k) {
  switch (k) {
    case NodeKind::kEQ:
      return NodeKind::kNE;
    case NodeKind::kNE:
      return NodeKind::kEQ;
    case NodeKind::kLT:
      return NodeKind::kGE;
    case NodeKind::kLE:
      return NodeKind::kGT;
    case NodeKind::kGT:
      return NodeKind::kLE;
    case NodeKind::kGE:
      return NodeKind::kLT;
    default:
      return k;
  }
}

std::pair<Expr, Expr> compare_operands(const Expr& e) {
  switch (e.kind()) {
#define PRIMJIT_OPERANDS_CASE(Name) \
  case NodeKind::k##Name:           \
    return {e.as<Name>()->a, e.as<Name>()->b};
    PRIMJIT_OPERANDS_CASE(EQ)
    PRIMJIT_OPERANDS_CASE(NE)
    PRIMJIT_OPERANDS_CASE(LT)
    PRIMJIT_OPERANDS_CASE(LE)
    PRIMJIT_OPERANDS_CASE(GT)
    PRIMJIT_OPERANDS_CASE(GE)
#undef PRIMJIT_OPERANDS_CASE
    default:
      return {};
  }
}

bool uses_var(const Expr& e, const VarNode* var) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (node.get() == var) found = true;
  });
  return found;
}

// Select evaluates both branches and And/Or both operands, so a branch simplified under its
// condition still runs when the condition is false. Only expressions that cannot fault for any
// value (no loads, calls, or divisions by non-constants, which the checked mode reports) are
// simplified that way: otherwise
// `select(i < n, A[min(i, n - 1)], 0)` would become an out-of-bounds load.
bool safe_under_any_context(const Expr& e) {
  bool safe = true;
  post_order_visit(e, [&](const Ref<Object>& node) {
    switch (node.kind()) {
      case NodeKind::kBufferLoad:
      case NodeKind::kCall:
        safe = false;
        break;
      case NodeKind::kDiv:
        safe = safe && node.as<Div>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kMod:
        safe = safe && node.as<Mod>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kFloorDiv:
        safe = safe && node.as<FloorDiv>()->b.as<IntImm>() != nullptr;
        break;
      case NodeKind::kFloorMod:
        safe = safe && node.as<FloorMod>()->b.as<IntImm>() != nullptr;
        break;
      default:
        break;
    }
  });
  return safe;
}

int count_divmod(const Linear& l) {
  int n = 0;
  for (const auto& [atom, c] : l.terms) {
    NodeKind k = atom.kind();
    n += k == NodeKind::kFloorDiv || k == NodeKind::kFloorMod || k == NodeKind::kDiv ||
         k == NodeKind::kMod;
  }
  return n;
}

class ScopeGuard {
 public:
  explicit ScopeGuard(AnalyzerImpl& an) : an_(an) { an_.push_scope(); }
  ~ScopeGuard() { an_.pop_scope(); }
  ScopeGuard(const ScopeGuard&) = delete;
  ScopeGuard& operator=(const ScopeGuard&) = delete;

 private:
  AnalyzerImpl& an_;
};

// =============================================================================================
// One rewriting pass
// =============================================================================================

class Rewriter : public ExprFunctor<Rewriter, Expr> {
 public:
  explicit Rewriter(AnalyzerImpl& an) : an_(an) {}

  /// `e` rewritten once; the very same node when nothing changed.
  Expr rewrite(const Expr& e) {
    Expr r = visit_expr(e);
    DataType t = r.dtype();
    if (t.is_bool() && t.is_scalar() && !r.as<IntImm>() && !an_.known_true().empty() &&
        AnalyzerImpl::pure(r)) {
      for (const Expr& fact : an_.known_true()) {
        if (AnalyzerImpl::equal(r, fact)) return make_bool(true);
      }
    }
    if (!r.same_as(e) && AnalyzerImpl::equal(r, e)) return e;
    return r;
  }

  // --- leaves ------------------------------------------------------------------------------
  Expr visit(const IntImm* op) { return Expr(op); }
  Expr visit(const FloatImm* op) { return Expr(op); }
  Expr visit(const StringImm* op) { return Expr(op); }
  Expr visit(const VarNode* op) {
    if (op->dtype.is_int_or_bool() && op->dtype.is_scalar()) {
      const AnalyzerImpl::VarInfo* vi = an_.info(op);
      if (vi != nullptr && vi->bound.is_point()) return make_int(op->dtype, vi->bound.lo);
    }
    return Expr(op);
  }

  // --- arithmetic --------------------------------------------------------------------------
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

  Expr visit(const Not* op) {
    Expr a = rewrite(op->a);
    if (const auto* b = a.as<Broadcast>()) {
      return rewrite(Broadcast::make(Not::make(b->value), b->lanes));
    }
    if (auto v = const_int(a)) return make_int(op->dtype, *v == 0);
    if (const auto* n = a.as<Not>()) return n->a;
    if (auto [x, y] = compare_operands(a); x.defined() && a.dtype().is_scalar()) {
      DataType t = x.dtype();
      bool negatable =
          t.is_int_or_bool() ||
          (t.is_floating() && (a.kind() == NodeKind::kEQ || a.kind() == NodeKind::kNE));
      if (negatable) return rewrite(make_binary(negated_compare(a.kind()), x, y));
    }
    return a.same_as(op->a) ? Expr(op) : Not::make(a);
  }

  Expr visit(const Select* op) {
    Expr c = rewrite(op->condition);
    std::optional<i128> cv = const_int_lanes(c);
    if (cv) {
      const Expr& chosen = *cv != 0 ? op->true_value : op->false_value;
      const Expr& other = *cv != 0 ? op->false_value : op->true_value;
      if (AnalyzerImpl::pure(other)) return rewrite(chosen);
    }
    // Each branch is simplified knowing the condition's value when that cannot make it fault.
    bool context = c.dtype().is_scalar() && !cv && AnalyzerImpl::pure(c);
    auto branch = [&](const Expr& value, const Expr& holds) {
      if (!context || !safe_under_any_context(value)) return rewrite(value);
      ScopeGuard scope(an_);
      an_.assume(holds);
      return rewrite(value);
    };
    Expr t = branch(op->true_value, c);
    Expr f = branch(op->false_value, Not::make(c));
    if (AnalyzerImpl::pure(c) && AnalyzerImpl::pure(t) && AnalyzerImpl::equal(t, f)) return t;
    if (op->dtype.is_bool() && op->dtype.is_scalar() && c.dtype().is_scalar()) {
      auto tv = const_int(t);
      auto fv = const_int(f);
      if (tv && fv && *tv != 0 && *fv == 0) return c;
      if (tv && fv && *tv == 0 && *fv != 0) return rewrite(Not::make(c));
    }
    if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
      return Expr(op);
    }
    return Select::make(c, t, f);
  }

  Expr visit(const Cast* op) {
    Expr v = rewrite(op->value);
    DataType t = op->dtype;
    DataType s = v.dtype();
    if (t == s) return v;
    if (const auto* b = v.as<Broadcast>()) {
      return rewrite(Broadcast::make(Cast::make(t.element_of(), b->value), b->lanes));
    }
    if (auto x = const_int(v)) {
      if (t.is_int_or_bool()) return make_int(t, *x);
      constexpr i128 kExactInDouble = i128(1) << 53;
      if (foldable_float(t) && *x <= kExactInDouble && *x >= -kExactInDouble) {
        return FloatImm::make(t, round_to(t, static_cast<double>(*x)));
      }
    }
    if (auto x = const_float(v)) {
      if (foldable_float(t) && foldable_float(s)) return FloatImm::make(t, round_to(t, *x));
      if (t.is_integer() && t.is_scalar() && std::isfinite(*x)) {
        double whole = std::trunc(*x);
        double lo = t.is_int() ? -std::ldexp(1.0, t.bits() - 1) : 0.0;
        double hi = t.is_int() ? std::ldexp(1.0, t.bits() - 1) : std::ldexp(1.0, t.bits());
        if (whole >= lo && whole < hi) return make_int(t, static_cast<i128>(whole));
      }
    }
    if (t.is_integer() && s.is_integer()) {
      // A round trip through a type that holds the value: Cast(T, Cast(S, x)) with x of T.
      if (const auto* inner = v.as<Cast>()) {
        if (inner->value.dtype() == t && interval_within(an_.bound(inner->value), dtype_range(s))) {
          return inner->value;
        }
      }
    }
    return v.same_as(op->value) ? Expr(op) : Cast::make(t, v);
  }

  Expr visit(const Let* op) {
    Expr value = rewrite(op->value);
    if (AnalyzerImpl::pure(value) &&
        (value.as<IntImm>() || value.as<FloatImm>() || value.as<VarNode>())) {
      return rewrite(substitute(op->body, VarMap{{op->var.get(), value}}));
    }
    Expr body;
    {
      ScopeGuard scope(an_);
      an_.bind_value(op->var, value);
      body = rewrite(op->body);
    }
    if (AnalyzerImpl::pure(value) && !uses_var(body, op->var.get())) return body;
    if (value.same_as(op->value) && body.same_as(op->body)) return Expr(op);
    return Let::make(op->var, value, body);
  }

  Expr visit(const BufferLoad* op) {
    std::vector<Expr> indices;
    bool changed = rewrite_all(op->indices, &indices);
    return changed ? BufferLoad::make(op->buffer, std::move(indices)) : Expr(op);
  }

  Expr visit(const Call* op) {
    std::vector<Expr> args;
    if (!rewrite_all(op->args, &args)) return Expr(op);
    return op->op.defined() ? Call::make(op->dtype, op->op, std::move(args))
                            : Call::make(op->dtype, op->callee, std::move(args));
  }

  Expr visit(const Ramp* op) {
    Expr base = rewrite(op->base);
    Expr stride = rewrite(op->stride);
    if (auto s = const_int(stride); s && *s == 0) return Broadcast::make(base, op->lanes);
    if (base.same_as(op->base) && stride.same_as(op->stride)) return Expr(op);
    return Ramp::make(base, stride, op->lanes);
  }

  Expr visit(const Broadcast* op) {
    Expr v = rewrite(op->value);
    return v.same_as(op->value) ? Expr(op) : Broadcast::make(v, op->lanes);
  }

 private:
  using Rule = Expr (Rewriter::*)(NodeKind, const Expr&, const Expr&);

  template <typename N>
  Expr binary(const N* op, Rule rule) {
    Expr a = rewrite(op->a);
    Expr b = rewrite(op->b);
    Expr r = (this->*rule)(N::kKind, a, b);
    if (r.defined()) return r;
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op);
    return N::make(a, b);
  }

  bool rewrite_all(const std::vector<Expr>& in, std::vector<Expr>* out) {
    bool changed = false;
    out->reserve(in.size());
    for (const Expr& e : in) {
      out->push_back(rewrite(e));
      changed = changed || !out->back().same_as(e);
    }
    return changed;
  }

  // --- vectors -----------------------------------------------------------------------------
  Expr vector_rule(NodeKind k, const Expr& a, const Expr& b) {
    int lanes = a.dtype().lanes();
    const auto* ba = a.as<Broadcast>();
    const auto* bb = b.as<Broadcast>();
    if (ba && bb) return rewrite(Broadcast::make(make_binary(k, ba->value, bb->value), lanes));
    if (!a.dtype().is_integer()) return Expr();
    const auto* ra = a.as<Ramp>();
    const auto* rb = b.as<Ramp>();
    auto zero = [](const Expr& e) { return const_int_lanes(e) == i128(0); };
    auto one = [](const Expr& e) { return const_int_lanes(e) == i128(1); };
    switch (k) {
      case NodeKind::kAdd:
        if (ra && bb) return rewrite(Ramp::make(Add::make(ra->base, bb->value), ra->stride, lanes));
        if (ba && rb) return rewrite(Ramp::make(Add::make(ba->value, rb->base), rb->stride, lanes));
        if (ra && rb) {
          return rewrite(
              Ramp::make(Add::make(ra->base, rb->base), Add::make(ra->stride, rb->stride), lanes));
        }
        if (zero(b)) return a;
        if (zero(a)) return b;
        return Expr();
      case NodeKind::kSub:
        if (ra && bb) return rewrite(Ramp::make(Sub::make(ra->base, bb->value), ra->stride, lanes));
        if (ba && rb) {
          Expr zero_s = make_int(rb->stride.dtype(), 0);
          return rewrite(
              Ramp::make(Sub::make(ba->value, rb->base), Sub::make(zero_s, rb->stride), lanes));
        }
        if (ra && rb) {
          return rewrite(
              Ramp::make(Sub::make(ra->base, rb->base), Sub::make(ra->stride, rb->stride), lanes));
        }
        if (zero(b)) return a;
        return Expr();
      case NodeKind::kMul:
        if (ra && bb) {
          return rewrite(
              Ramp::make(Mul::make(ra->base, bb->value), Mul::make(ra->stride, bb->value), lanes));
        }
        if (ba && rb) {
          return rewrite(
              Ramp::make(Mul::make(ba->value, rb->base), Mul::make(ba->value, rb->stride), lanes));
        }
        if (one(b)) return a;
        if (one(a)) return b;
        return Expr();
      default:
        return Expr();
    }
  }

  // --- Add, Sub, Mul -----------------------------------------------------------------------
  Expr float_arith(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    auto x = const_float(a);
    auto y = const_float(b);
    if (x && y && foldable_float(t)) {
      switch (k) {
        case NodeKind::kAdd:
          return FloatImm::make(t, round_to(t, *x + *y));
        case NodeKind::kSub:
          return FloatImm::make(t, round_to(t, *x - *y));
        case NodeKind::kMul:
          return FloatImm::make(t, round_to(t, *x * *y));
        case NodeKind::kDiv:
          if (*y != 0.0) return FloatImm::make(t, round_to(t, *x / *y));
          break;
        default:
          break;
      }
    }
    // Exact identities only: x - (+0.0), x + (-0.0), x * 1.0, x / 1.0.
    switch (k) {
      case NodeKind::kSub:
        if (y && *y == 0.0 && !std::signbit(*y)) return a;
        break;
      case NodeKind::kAdd:
        if (y && *y == 0.0 && std::signbit(*y)) return a;
        if (x && *x == 0.0 && std::signbit(*x)) return b;
        break;
      case NodeKind::kMul:
        if (y && *y == 1.0) return a;
        if (x && *x == 1.0) return b;
        break;
      case NodeKind::kDiv:
        if (y && *y == 1.0) return a;
        break;
      default:
        break;
    }
    return Expr();
  }

  // Floating Add, Mul, EQ and NE are commutative (not associative): their two operands are
  // put in canonical order, nothing more.
  Expr commute(NodeKind k, const Expr& a, const Expr& b) {
    if (an_.compare(b, a) < 0) return make_binary(k, b, a);
    return Expr();
  }

  Expr add_sub(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (t.is_vector()) return vector_rule(k, a, b);
    if (t.is_floating()) {
      Expr r = float_arith(k, a, b);
      return r.defined() || k == NodeKind::kSub ? r : commute(k, a, b);
    }
    if (!t.is_integer()) return Expr();
    bool add = k == NodeKind::kAdd;
    auto x = const_int(a);
    auto y = const_int(b);
    if (x && y) return make_int(t, add ? *x + *y : *x - *y);
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
      if (y && *y == 0) return a;
      if (add && x && *x == 0) return b;
      return Expr();
    }
    Linear l = an_.combine_ring(an_.linearize(a), 1, an_.linearize(b), add ? 1 : -1, t.bits());
    return an_.from_linear(recombine(std::move(l), t), t);
  }

  Expr mul(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (t.is_vector()) return vector_rule(k, a, b);
    if (t.is_floating()) {
      Expr r = float_arith(k, a, b);
      return r.defined() ? r : commute(k, a, b);
    }
    if (!t.is_integer()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
      if (y && *y == 1) return a;
      if (x && *x == 1) return b;
      return Expr();
    }
    return an_.from_linear(an_.linearize(Mul::make(a, b)), t);
  }

  // (a // d) * (c*d) + (a % d) * c  ->  a * c, and a - (a // d) * d  ->  a % d (also for the
  // truncating pair): replaces a quotient term by `m*a - m*(a % d)` when that shrinks the sum.
  Linear recombine(Linear l, DataType t) {
    int bits = t.bits();
    for (int round = 0; round < 4; ++round) {
      bool changed = false;
      for (size_t i = 0; i < l.terms.size() && !changed; ++i) {
        const Expr q = l.terms[i].first;
        i128 c = l.terms[i].second;
        Expr num, den;
        bool floor = true;
        if (const auto* fd = q.as<FloorDiv>()) {
          num = fd->a;
          den = fd->b;
        } else if (const auto* td = q.as<Div>()) {
          num = td->a;
          den = td->b;
          floor = false;
        } else {
          continue;
        }
        auto d = const_int(den);
        if (!d || *d <= 0 || c % *d != 0) continue;
        i128 m = c / *d;
        Expr rem = rewrite(floor ? FloorMod::make(num, den) : Mod::make(num, den));
        Linear only_q;
        only_q.terms.emplace_back(q, c);
        Linear cand = an_.combine_ring(l, 1, only_q, -1, bits);
        cand = an_.combine_ring(cand, 1, an_.linearize(num), m, bits);
        cand = an_.combine_ring(cand, 1, an_.linearize(rem), -m, bits);
        bool shorter = cand.terms.size() < l.terms.size() || (cand.terms.size() == l.terms.size() &&
                                                              count_divmod(cand) < count_divmod(l));
        if (shorter) {
          l = std::move(cand);
          changed = true;
        }
      }
      if (!changed) break;
    }
    return l;
  }

  // --- division ----------------------------------------------------------------------------
  // Division by zero has a result (x / 0 is -1, x % 0 is x; see expr.h), so a rule may only
  // drop or replace a division by a variable divisor when this proves the divisor nonzero.
  bool nonzero(const Expr& b) {
    return decide(NodeKind::kNE, b, make_int(b.dtype(), 0)) == std::optional<bool>(true);
  }

  Expr negate(const Expr& a) {
    DataType t = a.dtype();
    return an_.from_linear(an_.combine_ring(Linear{}, 0, an_.linearize(a), -1, t.bits()), t);
  }

  // Floor division: the only integer rules that need the exact value of the numerator.
  Expr floor_div_rule(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (t.is_vector()) return vector_rule(k, a, b);
    if (!t.is_integer()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (y && *y == 0) return Expr();
    if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
      if (y && *y == 1) return a;
      return Expr();
    }
    if (!y) {
      if (AnalyzerImpl::equal(a, b) && nonzero(b)) return make_int(t, 1);  // 0 // 0 is -1
      if (x && *x == 0 && nonzero(b)) return make_int(t, 0);
      return Expr();
    }
    i128 d = *y;
    if (d == 1) return a;
    if (d == -1 && t.is_int()) return negate(a);
    if (x && *x == 0) return make_int(t, 0);
    if (d < 0) return Expr();
    Interval ba = an_.bound(a);
    if (ba.finite() && floor_div(ba.lo, d) == floor_div(ba.hi, d)) {
      return make_int(t, floor_div(ba.lo, d));
    }
    if (const auto* inner = a.as<FloorDiv>()) {
      auto c1 = const_int(inner->b);
      constexpr i128 kSmall = i128(1) << 62;  // keeps the product exact
      if (c1 && *c1 > 0 && *c1 < kSmall && d < kSmall &&
          interval_within(Interval::point(*c1 * d), dtype_range(t))) {
        return rewrite(FloorDiv::make(inner->a, make_int(t, *c1 * d)));
      }
    }
    Linear la = an_.linearize(a);
    if (!an_.fits(la, t)) return Expr();
    // a == d*q + r exactly, with q collecting the terms whose coefficient d divides.
    Linear q, r;
    for (const auto& [atom, c] : la.terms) {
      if (c % d == 0) {
        q.terms.emplace_back(atom, c / d);
      } else {
        r.terms.emplace_back(atom, c);
      }
    }
    q.constant = floor_div(la.constant, d);
    r.constant = floor_mod(la.constant, d);
    if (!an_.fits(r, t)) return Expr();
    Interval rb = an_.bound(r);
    if (rb.finite() && floor_div(rb.lo, d) == floor_div(rb.hi, d)) {
      q.constant += floor_div(rb.lo, d);
      return an_.from_linear(q, t);
    }
    if (q.terms.empty()) return Expr();
    Expr rest = FloorDiv::make(an_.from_linear(r, t), b);
    return rewrite(Add::make(an_.from_linear(q, t), rest));
  }

  Expr floor_mod_rule(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (t.is_vector()) return vector_rule(k, a, b);
    if (!t.is_integer()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (y && *y == 0) return Expr();
    if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
    if (!y) {
      // x % x and 0 % b are 0 for every value, 0 included (x % 0 is x).
      if (AnalyzerImpl::equal(a, b) || (x && *x == 0)) return make_int(t, 0);
      return Expr();
    }
    i128 d = *y;
    if (d == 1 || d == -1) return make_int(t, 0);
    if (x && *x == 0) return make_int(t, 0);
    if (d < 0) return Expr();
    Interval ba = an_.bound(a);
    if (ba.finite() && floor_div(ba.lo, d) == floor_div(ba.hi, d)) {
      Linear la = an_.linearize(a);
      la.constant -= floor_div(ba.lo, d) * d;
      return an_.from_linear(la, t);
    }
    if (const auto* inner = a.as<FloorMod>()) {
      auto c1 = const_int(inner->b);
      if (c1 && *c1 > 0 && *c1 % d == 0) return rewrite(FloorMod::make(inner->a, b));
    }
    Congruence m = an_.congruence(a);
    if (m.coeff % d == 0) return make_int(t, floor_mod(m.base, d));  // also coeff 0: a constant
    Linear la = an_.linearize(a);
    // The remainder modulo d only depends on the terms d does not divide, when the ring form
    // is exact, or always when d divides 2^bits (wraparound preserves residues mod d).
    bool exact = an_.fits(la, t);
    bool power_of_two = (d & (d - 1)) == 0;
    if (!exact && !power_of_two) return Expr();
    Linear r;
    for (const auto& [atom, c] : la.terms) {
      if (c % d != 0) r.terms.emplace_back(atom, c);
    }
    r.constant = floor_mod(la.constant, d);
    Interval rb = an_.bound(r);
    if (rb.finite() && floor_div(rb.lo, d) == floor_div(rb.hi, d)) {
      r.constant -= floor_div(rb.lo, d) * d;
      return an_.from_linear(r, t);
    }
    bool smaller = r.terms.size() != la.terms.size() || r.constant != la.constant;
    if (smaller && (power_of_two || an_.fits(r, t))) {
      return rewrite(FloorMod::make(an_.from_linear(r, t), b));
    }
    return Expr();
  }

  Expr trunc_div_mod(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    bool div = k == NodeKind::kDiv;
    if (t.is_vector()) return vector_rule(k, a, b);
    if (t.is_floating()) return div ? float_arith(k, a, b) : Expr();
    if (!t.is_integer()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (y && *y == 0) return Expr();
    if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) {
      if (div && y && *y == 1) return a;
      return Expr();
    }
    if (y && *y == 1) return div ? a : make_int(t, 0);
    if (y && *y == -1 && t.is_int()) return div ? negate(a) : make_int(t, 0);
    // 0 % b and b % b are 0 for every b; 0 / b and b / b need b != 0 (x / 0 is -1).
    if (x && *x == 0 && (!div || y || nonzero(b))) return make_int(t, 0);
    if (!y && AnalyzerImpl::equal(a, b) && (!div || nonzero(b))) {
      return make_int(t, div ? 1 : 0);
    }
    Interval ba = an_.bound(a);
    Interval bb = an_.bound(b);
    // With a >= 0 and b > 0, truncation and floor agree.
    if (ba.lo >= 0 && bb.lo >= 1) {
      return rewrite(div ? FloorDiv::make(a, b) : FloorMod::make(a, b));
    }
    if (y) {
      i128 m = *y < 0 ? -*y : *y;  // |a| < |d|: the quotient is 0, the remainder a
      if (ba.lo > -m && ba.hi < m) return div ? make_int(t, 0) : a;
    }
    return Expr();
  }

  // --- Min, Max ----------------------------------------------------------------------------
  static void flatten(NodeKind k, const Expr& e, std::vector<Expr>* out) {
    if (e.kind() == k) {
      auto [a, b] = k == NodeKind::kMin ? std::pair(e.as<Min>()->a, e.as<Min>()->b)
                                        : std::pair(e.as<Max>()->a, e.as<Max>()->b);
      flatten(k, a, out);
      flatten(k, b, out);
    } else {
      out->push_back(e);
    }
  }

  Expr min_max(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    bool is_min = k == NodeKind::kMin;
    if (t.is_vector()) return vector_rule(k, a, b);
    if (t.is_floating()) {
      auto x = const_float(a);
      auto y = const_float(b);
      if (x && y && !std::isnan(*x) && !std::isnan(*y) && !(*x == 0.0 && *y == 0.0)) {
        return FloatImm::make(t, is_min ? std::min(*x, *y) : std::max(*x, *y));
      }
      if (AnalyzerImpl::pure(a) && AnalyzerImpl::equal(a, b)) return a;
      return Expr();
    }
    if (!t.is_integer()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (x && y) return make_int(t, *fold_int(k, t, *x, *y));
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
    std::vector<Expr> ops;
    flatten(k, a, &ops);
    flatten(k, b, &ops);
    std::optional<i128> folded;
    std::vector<Expr> rest;
    for (const Expr& e : ops) {
      if (auto v = const_int(e)) {
        folded = folded ? (is_min ? std::min(*folded, *v) : std::max(*folded, *v)) : *v;
      } else {
        rest.push_back(e);
      }
    }
    if (folded) rest.push_back(make_int(t, *folded));
    // Drop every operand that another kept operand provably dominates.
    std::vector<bool> dropped(rest.size(), false);
    for (size_t j = 0; j < rest.size(); ++j) {
      for (size_t i = 0; i < rest.size() && !dropped[j]; ++i) {
        if (i == j || dropped[i]) continue;
        if (AnalyzerImpl::equal(rest[i], rest[j])) {
          dropped[j] = i < j;
          continue;
        }
        const Expr& lo = is_min ? rest[i] : rest[j];
        const Expr& hi = is_min ? rest[j] : rest[i];
        if (decide(NodeKind::kLE, lo, hi) == true) dropped[j] = true;
      }
    }
    std::vector<Expr> kept;
    for (size_t j = 0; j < rest.size(); ++j) {
      if (!dropped[j]) kept.push_back(rest[j]);
    }
    std::stable_sort(kept.begin(), kept.end(),
                     [&](const Expr& p, const Expr& q) { return an_.compare(p, q) < 0; });
    Expr result = kept[0];
    for (size_t i = 1; i < kept.size(); ++i) result = make_binary(k, result, kept[i]);
    return result;
  }

  // --- comparisons -------------------------------------------------------------------------
  bool nonneg(const Linear& l, i128 sign, i128 add) {
    std::optional<Linear> s = an_.combine(Linear{}, 0, l, sign);
    if (!s) return false;
    s->constant += add;
    return an_.prove_nonneg(*s);
  }

  /// Decides an integer comparison of scalar operands, when provable either way.
  std::optional<bool> decide(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (AnalyzerImpl::equal(a, b)) {
      return k == NodeKind::kEQ || k == NodeKind::kLE || k == NodeKind::kGE;
    }
    Linear la = an_.linearize(a);
    Linear lb = an_.linearize(b);
    bool exact = an_.fits(la, t) && an_.fits(lb, t);
    if (k == NodeKind::kEQ || k == NodeKind::kNE) {
      // Equality is a ring property: a == b exactly when a - b is 0 modulo 2^bits.
      Linear d = an_.combine_ring(la, 1, lb, -1, t.bits());
      std::optional<bool> eq;
      if (d.is_const()) {
        eq = d.constant == 0;
      } else {
        Congruence m = an_.congruence(d, t);
        if (m.coeff == 0) {
          eq = m.base == 0;
        } else if (m.base != 0) {
          eq = false;
        }
      }
      if (!eq && exact) {
        if (std::optional<Linear> dz = an_.combine(la, 1, lb, -1)) {
          if (nonneg(*dz, 1, -1) || nonneg(*dz, -1, -1)) {
            eq = false;
          } else if (nonneg(*dz, 1, 0) && nonneg(*dz, -1, 0)) {
            eq = true;
          }
        }
      }
      if (!eq) return std::nullopt;
      return k == NodeKind::kEQ ? *eq : !*eq;
    }
    if (!exact) {
      // b == a + D in the ring; when a's value plus D's exact value cannot leave the dtype,
      // b - a == D exactly (x*2 < x*2 + 1: x*2 is even, so adding 1 never wraps).
      for (bool swap : {false, true}) {
        const Expr& base = swap ? b : a;
        Linear d = swap ? an_.combine_ring(la, 1, lb, -1, t.bits())
                        : an_.combine_ring(lb, 1, la, -1, t.bits());
        Interval sum = interval_add(refined_bound(base), an_.bound(d));
        if (!interval_within(sum, dtype_range(t))) continue;
        // Now val(other) - val(base) == d: express the comparison on a - b.
        std::optional<Linear> dz = an_.combine(Linear{}, 0, d, swap ? 1 : -1);
        if (dz) return decide_exact(k, *dz);
      }
      Interval x = an_.bound(a);
      Interval y = an_.bound(b);
      switch (k) {
        case NodeKind::kLT:
          if (x.hi < y.lo) return true;
          if (x.lo >= y.hi) return false;
          break;
        case NodeKind::kLE:
          if (x.hi <= y.lo) return true;
          if (x.lo > y.hi) return false;
          break;
        case NodeKind::kGT:
          if (x.lo > y.hi) return true;
          if (x.hi <= y.lo) return false;
          break;
        case NodeKind::kGE:
          if (x.lo >= y.hi) return true;
          if (x.hi < y.lo) return false;
          break;
        default:
          break;
      }
      return std::nullopt;
    }
    std::optional<Linear> dz = an_.combine(la, 1, lb, -1);
    if (!dz) return std::nullopt;
    return decide_exact(k, *dz);
  }

  /// The bound of `e`, narrowed to values its congruence allows.
  Interval refined_bound(const Expr& e) {
    Interval r = an_.bound(e);
    if (!r.finite() || !e.dtype().is_integer() || !e.dtype().is_scalar()) return r;
    Congruence m = an_.congruence(e);
    if (m.coeff == 0) return interval_intersect(r, Interval::point(m.base));
    if (m.coeff > 1) {
      r.lo += floor_mod(m.base - r.lo, m.coeff);
      r.hi -= floor_mod(r.hi - m.base, m.coeff);
    }
    return r;
  }

  /// Decides `a k b` given the exact difference dz == a - b.
  std::optional<bool> decide_exact(NodeKind k, const Linear& dz) {
    switch (k) {
      case NodeKind::kEQ:
        if (dz.is_const()) return dz.constant == 0;
        if (nonneg(dz, 1, -1) || nonneg(dz, -1, -1)) return false;
        break;
      case NodeKind::kNE:
        if (dz.is_const()) return dz.constant != 0;
        if (nonneg(dz, 1, -1) || nonneg(dz, -1, -1)) return true;
        break;
      case NodeKind::kLT:  // a - b <= -1
        if (nonneg(dz, -1, -1)) return true;
        if (nonneg(dz, 1, 0)) return false;
        break;
      case NodeKind::kLE:  // a - b <= 0
        if (nonneg(dz, -1, 0)) return true;
        if (nonneg(dz, 1, -1)) return false;
        break;
      case NodeKind::kGT:  // a - b >= 1
        if (nonneg(dz, 1, -1)) return true;
        if (nonneg(dz, -1, 0)) return false;
        break;
      case NodeKind::kGE:  // a - b >= 0
        if (nonneg(dz, 1, 0)) return true;
        if (nonneg(dz, -1, -1)) return false;
        break;
      default:
        break;
    }
    return std::nullopt;
  }

  Expr compare(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    if (t.is_vector()) return vector_rule(k, a, b);
    if (t.is_floating()) {
      auto x = const_float(a);
      auto y = const_float(b);
      if (x && y) return make_bool(*fold_float_compare(k, *x, *y));
      return k == NodeKind::kEQ || k == NodeKind::kNE ? commute(k, a, b) : Expr();
    }
    if (!t.is_int_or_bool()) return Expr();
    auto x = const_int(a);
    auto y = const_int(b);
    if (x && y) return make_bool(*fold_int(k, t, *x, *y) != 0);
    if (!AnalyzerImpl::pure(a) || !AnalyzerImpl::pure(b)) return Expr();
    if (t.is_bool()) return compare_bool(k, a, b);
    if (auto r = decide(k, a, b)) return make_bool(*r);
    return normalize_compare(k, a, b);
  }

  Expr compare_bool(NodeKind k, const Expr& a, const Expr& b) {
    if (k != NodeKind::kEQ && k != NodeKind::kNE) return Expr();
    bool eq = k == NodeKind::kEQ;
    if (AnalyzerImpl::equal(a, b)) return make_bool(eq);
    if (auto y = const_int(b)) return (eq == (*y != 0)) ? a : rewrite(Not::make(a));
    if (auto x = const_int(a)) return (eq == (*x != 0)) ? b : rewrite(Not::make(b));
    if (an_.compare(b, a) < 0) return make_binary(k, b, a);
    return Expr();
  }

  // Canonical form of an undecided integer comparison. Equalities are rewritten in the ring
  // (`x + 3 == y` -> `x == y - 3`, first term positive); order comparisons only when both
  // sides are exact: terms go to the side where their coefficient is positive, the constant
  // to the right (or alone on the left), and common factors are divided out.
  Expr normalize_compare(NodeKind k, const Expr& a, const Expr& b) {
    DataType t = a.dtype();
    int bits = t.bits();
    Linear la = an_.linearize(a);
    Linear lb = an_.linearize(b);
    Linear lhs, rhs;
    if (k == NodeKind::kEQ || k == NodeKind::kNE) {
      Linear d = an_.combine_ring(la, 1, lb, -1, bits);
      if (d.is_const()) return Expr();
      // -2^(bits-1) is its own negation: it stays on the left and does not pick the sign.
      const i128 self_negating = -(i128(1) << (bits - 1));
      for (const auto& term : d.terms) {
        if (term.second == self_negating) continue;
        if (term.second < 0) d = an_.combine_ring(Linear{}, 0, d, -1, bits);
        break;
      }
      for (const auto& [atom, c] : d.terms) {
        if (c > 0 || c == self_negating) {
          lhs.terms.emplace_back(atom, c);
        } else {
          rhs.terms.emplace_back(atom, -c);
        }
      }
      rhs.constant = -d.constant;
    } else {
      if (!an_.fits(la, t) || !an_.fits(lb, t)) return Expr();
      std::optional<Linear> dz = an_.combine(la, 1, lb, -1);
      if (!dz || dz->is_const()) return Expr();
      // terms(d) <= c for LT/LE, terms(d) >= c for GT/GE.
      bool upper = k == NodeKind::kLT || k == NodeKind::kLE;
      i128 c = (k == NodeKind::kLT ? -1 : k == NodeKind::kGT ? 1 : 0) - dz->constant;
      dz->constant = 0;
      i128 g = 0;
      for (const auto& term : dz->terms) g = gcd(g, term.second);
      if (g > 1) {
        for (auto& term : dz->terms) term.second /= g;
        c = upper ? floor_div(c, g) : -floor_div(-c, g);
      }
      i128 r = k == NodeKind::kLT ? c + 1 : (k == NodeKind::kGT ? c - 1 : c);
      Linear positive, negative;
      for (const auto& [atom, coeff] : dz->terms) {
        if (coeff > 0) {
          positive.terms.emplace_back(atom, coeff);
        } else {
          negative.terms.emplace_back(atom, -coeff);
        }
      }
      if (!positive.terms.empty()) {
        lhs = std::move(positive);
        rhs = std::move(negative);
        rhs.constant = r;
      } else {
        lhs.constant = -r;
        rhs = std::move(negative);
      }
      if (!an_.fits(lhs, t) || !an_.fits(rhs, t)) return Expr();
    }
    lhs = an_.combine_ring(Linear{}, 0, lhs, 1, bits);
    rhs = an_.combine_ring(Linear{}, 0, rhs, 1, bits);
    return make_binary(k, an_.from_linear(lhs, t), an_.from_linear(rhs, t));
  }

  // --- And, Or -----------------------------------------------------------------------------
  static void flatten_logical(NodeKind k, const Expr& e, std::vector<Expr>* out) {
    if (e.kind() == k) {
      auto [a, b] = k == NodeKind::kAnd ? std::pair(e.as<And>()->a, e.as<And>()->b)
                                        : std::pair(e.as<Or>()->a, e.as<Or>()->b);
      flatten_logical(k, a, out);
      flatten_logical(k, b, out);
    } else {
      out->push_back(e);
    }
  }

  Expr logical(const Expr& e, NodeKind k) {
    bool is_and = k == NodeKind::kAnd;
    DataType t = e.dtype();
    if (t.is_vector()) {
      auto [a0, b0] = is_and ? std::pair(e.as<And>()->a, e.as<And>()->b)
                             : std::pair(e.as<Or>()->a, e.as<Or>()->b);
      Expr a = rewrite(a0);
      Expr b = rewrite(b0);
      if (Expr r = vector_rule(k, a, b); r.defined()) return r;
      if (a.same_as(a0) && b.same_as(b0)) return e;
      return make_binary(k, a, b);
    }
    // `identity` (true for And) is dropped; `absorbing` (false for And) decides the result.
    const i128 identity = is_and ? 1 : 0;
    std::vector<Expr> raw;
    flatten_logical(k, e, &raw);
    std::vector<Expr> ops;
    bool all_pure = true;
    for (const Expr& x : raw) {
      ops.push_back(rewrite(x));
      all_pure = all_pure && AnalyzerImpl::pure(ops.back());
    }
    auto build = [&](const std::vector<Expr>& xs) {
      if (xs.empty()) return make_bool(identity != 0);
      Expr r = xs[0];
      for (size_t i = 1; i < xs.size(); ++i) r = make_binary(k, r, xs[i]);
      return r;
    };
    std::vector<Expr> kept;
    if (!all_pure) {
      // Keep every operand and the order; only drop the literal identities.
      for (const Expr& x : ops) {
        if (const_int(x) != identity) kept.push_back(x);
      }
      return build(kept);
    }
    std::vector<Expr> candidates;
    for (const Expr& x : ops) {
      if (auto v = const_int(x)) {
        if (*v != identity) return make_bool(identity == 0);
        continue;
      }
      candidates.push_back(x);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](const Expr& p, const Expr& q) { return an_.compare(p, q) < 0; });
    {
      // Each operand is simplified assuming the previous ones hold (And) or failed (Or).
      ScopeGuard scope(an_);
      for (const Expr& x : candidates) {
        Expr y = kept.empty() || !safe_under_any_context(x) ? x : rewrite(x);
        if (auto v = const_int(y)) {
          if (*v != identity) return make_bool(identity == 0);
          continue;
        }
        kept.push_back(y);
        an_.assume(is_and ? y : Not::make(y));
      }
    }
    // An earlier operand implied by the later ones (And) or implying them (Or) is redundant:
    // `x < 6 or x < 4` -> `x < 6`. Removed one at a time, each under the remaining others.
    for (size_t i = kept.size(); i-- > 0 && kept.size() > 1;) {
      ScopeGuard others(an_);
      for (size_t j = 0; j < kept.size(); ++j) {
        if (j != i) an_.assume(is_and ? kept[j] : Not::make(kept[j]));
      }
      if (const_int(rewrite(kept[i])) == identity) kept.erase(kept.begin() + i);
    }
    return build(kept);
  }

  AnalyzerImpl& an_;
};

}  // namespace

// =============================================================================================
// AnalyzerImpl entry points
// =============================================================================================

Expr AnalyzerImpl::simplify(const Expr& e) {
  number_objects(e);
  Expr current = e;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    Expr next = Rewriter(*this).rewrite(current);
    if (next.same_as(current)) break;
    current = next;
  }
  return current;
}

Expr AnalyzerImpl::from_linear(const Linear& l, DataType t) {
  int bits = t.bits();
  // The most negative coefficient has no representable negation; it is added as it is.
  const i128 most_negative = -(i128(1) << (bits - 1));
  auto negative = [&](i128 c) { return c < 0 && c != most_negative; };
  auto scaled = [&](const Expr& atom, i128 c) {
    return c == 1 ? atom : Mul::make(atom, make_int(t, c));
  };
  if (l.terms.empty()) return make_int(t, l.constant);
  size_t first = l.terms.size();
  for (size_t i = 0; i < l.terms.size(); ++i) {
    if (!negative(l.terms[i].second)) {
      first = i;
      break;
    }
  }
  i128 constant = l.constant;
  Expr acc;
  if (first < l.terms.size()) {
    acc = scaled(l.terms[first].first, l.terms[first].second);
  } else if (constant > 0) {
    acc = make_int(t, constant);  // 5 - x
    constant = 0;
  } else {
    first = 0;
    acc = scaled(l.terms[0].first, l.terms[0].second);  // x * -1 - 3
  }
  for (size_t i = 0; i < l.terms.size(); ++i) {
    if (i == first) continue;
    const auto& [atom, c] = l.terms[i];
    acc = negative(c) ? Sub::make(acc, scaled(atom, -c)) : Add::make(acc, scaled(atom, c));
  }
  if (constant != 0) {
    acc = negative(constant) ? Sub::make(acc, make_int(t, -constant))
                             : Add::make(acc, make_int(t, constant));
  }
  return acc;
}

}  // namespace primjit::arith::detail
