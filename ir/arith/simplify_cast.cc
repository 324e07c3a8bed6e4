// Rule family: Cast (docs/semantics.md, the rows "Cast ..."). Constants are converted as every
// backend converts them: integers wrap, integers and floats round once to nearest even, floats
// to integers saturate (NaN is 0), anything to bool is `!= 0` (NaN is true). No-op casts
// vanish, a Broadcast is cast lane-wise, a round trip through a type that holds the value
// returns the value, and an inner cast that loses nothing (a widening) is skipped:
// `Cast(float64, Cast(int64, x))` with x int32 is `Cast(float64, x)`.
#include <cmath>
#include <cstdint>
#include <limits>

#include "ir/arith/simplify_internal.h"

namespace primjit::arith::detail {
namespace {

bool float32_or_64(DataType t) { return t.is_float() && (t.bits() == 32 || t.bits() == 64); }

// True when every value of (the elements of) `from` is a value of `to`: casting to `to` changes
// no value, and a cast of the result depends only on that value.
bool widens(DataType from, DataType to) {
  if (from.is_int_or_bool() && to.is_int_or_bool()) {
    return interval_within(dtype_range(from), dtype_range(to));
  }
  if (from.is_int_or_bool() && float32_or_64(to)) {
    i128 exact = i128(1) << (to.bits() == 32 ? 24 : 53);  // every integer up to it is a value
    return interval_within(dtype_range(from), Interval{-exact, exact});
  }
  if (from.is_floating() && float32_or_64(to)) {
    return to.bits() == 64 ? from.bits() <= 32 : from.bits() < 32;
  }
  return false;
}

// The integer a float literal converts to: toward zero, saturating at the type's ends, NaN 0.
i128 saturate(double v, DataType t) {
  if (std::isnan(v)) return 0;
  Interval range = dtype_range(t);
  double whole = std::trunc(v);
  if (whole <= static_cast<double>(range.lo)) return range.lo;
  if (whole >= static_cast<double>(range.hi)) return range.hi;
  return static_cast<i128>(whole);
}

// The float32/float64 literal an integer converts to, rounded once.
double int_to_float(i128 v, DataType t) {
  bool is_signed = v < 0 || v <= std::numeric_limits<int64_t>::max();
  if (t.bits() == 32) {
    return is_signed ? static_cast<double>(static_cast<float>(static_cast<int64_t>(v)))
                     : static_cast<double>(static_cast<float>(static_cast<uint64_t>(v)));
  }
  return is_signed ? static_cast<double>(static_cast<int64_t>(v))
                   : static_cast<double>(static_cast<uint64_t>(v));
}

}  // namespace

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
    if (foldable_float(t)) return FloatImm::make(t, int_to_float(*x, t));
  }
  if (auto x = const_float(v)) {
    if (foldable_float(t) && foldable_float(s)) return FloatImm::make(t, round_to(t, *x));
    if (t.is_bool() && t.is_scalar()) return make_bool(*x != 0.0);  // NaN != 0
    if (t.is_integer() && t.is_scalar() && foldable_float(s)) return make_int(t, saturate(*x, t));
  }
  if (const auto* inner = v.as<Cast>()) {
    DataType r = inner->value.dtype();
    // A round trip through a type that holds the value: Cast(T, Cast(S, x)) with x of T.
    if (t.is_integer() && s.is_integer() && r == t &&
        interval_within(an_.bound(inner->value), dtype_range(s))) {
      return inner->value;
    }
    // Cast(T, Cast(S, x)) where S holds every value of x: the cast of the value itself. An
    // integer through a float into an integer type saturates where the direct cast wraps, so
    // that case needs T to hold x's values as well.
    bool saturates = r.is_int_or_bool() && s.is_floating() && t.is_integer() &&
                     !interval_within(dtype_range(r), dtype_range(t));
    if (widens(r.element_of(), s.element_of()) && !saturates) {
      return rewrite(Cast::make(t, inner->value));
    }
  }
  return v.same_as(op->value) ? Expr(op) : Cast::make(t, v);
}

}  // namespace primjit::arith::detail
