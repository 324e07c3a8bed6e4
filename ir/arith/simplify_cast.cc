// Rule family: Cast. Constants are converted (integers wrap, floats round once, float to int
// only when the value fits), no-op casts vanish, a Broadcast is cast lane-wise, and a round
// trip through a type that holds the value returns the value.
#include <cmath>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {

Expr Rewriter::visit(const Cast* op) {
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

}  // namespace primjit::arith::detail
