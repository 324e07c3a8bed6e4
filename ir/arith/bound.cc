// Constant-integer bounds: the exact range of an integer expression's value, from literals,
// the variables' recorded bounds and interval arithmetic over each operator. Wraparound is
// never assumed away: a result that may leave its dtype's range is widened to that range.
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"

namespace primjit::arith::detail {
namespace {

// Quotient of finite values, floor or truncating.
i128 div_round(i128 a, i128 b, bool floor) { return floor ? floor_div(a, b) : a / b; }

// Bounds of a / b where b does not change sign and excludes 0.
Interval div_part(const Interval& a, const Interval& b, bool floor) {
  if (!a.finite()) return Interval::everything();
  if (!b.finite()) {
    // |b| >= 1, so |a / b| <= |a| (floor may reach -1 for small negatives, still within).
    i128 m = std::max(abs128(a.lo), abs128(a.hi));
    return {-m, m};
  }
  i128 c[4] = {div_round(a.lo, b.lo, floor), div_round(a.lo, b.hi, floor),
               div_round(a.hi, b.lo, floor), div_round(a.hi, b.hi, floor)};
  return {*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
}

// Bounds of the quotient. A divisor range holding 0 adds the quotient of a division by zero,
// -1 (all ones: the largest value of an unsigned type), see expr.h.
Interval div_bound(const Interval& a, const Interval& b, bool floor, DataType t) {
  std::optional<Interval> result;
  if (b.lo <= 0 && b.hi >= 0) result = Interval::point(t.is_uint() ? dtype_range(t).hi : -1);
  if (b.lo <= -1) {
    Interval part = div_part(a, {b.lo, std::min<i128>(b.hi, -1)}, floor);
    result = result ? interval_union(*result, part) : part;
  }
  if (b.hi >= 1) {
    Interval part = div_part(a, {std::max<i128>(b.lo, 1), b.hi}, floor);
    result = result ? interval_union(*result, part) : part;
  }
  return result ? *result : Interval::everything();
}

// Bounds of the remainder by the nonzero values of `b`.
Interval floormod_nonzero_bound(const Interval& a, const Interval& b) {
  if (b.lo >= 1) {
    if (a.lo >= 0 && a.hi < b.lo) return a;
    Interval r{0, pos_inf(b.hi) ? kInf : b.hi - 1};
    if (a.lo >= 0) r.hi = std::min(r.hi, a.hi);
    return r;
  }
  if (b.hi <= -1) {
    if (a.hi <= 0 && a.lo > b.hi) return a;
    Interval r{neg_inf(b.lo) ? -kInf : b.lo + 1, 0};
    if (a.hi <= 0) r.lo = std::max(r.lo, a.lo);
    return r;
  }
  return {neg_inf(b.lo) ? -kInf : std::min<i128>(b.lo + 1, 0),
          pos_inf(b.hi) ? kInf : std::max<i128>(b.hi - 1, 0)};
}

// Bounds of the remainder; x % 0 is x (expr.h), so a divisor range holding 0 adds a's range.
Interval floormod_bound(const Interval& a, const Interval& b) {
  if (b.lo > 0 || b.hi < 0) return floormod_nonzero_bound(a, b);
  if (b.lo == 0 && b.hi == 0) return a;
  Interval nonzero = b.lo == 0 ? Interval{1, b.hi} : b.hi == 0 ? Interval{b.lo, -1} : b;
  return interval_union(a, floormod_nonzero_bound(a, nonzero));
}

Interval truncmod_bound(const Interval& a, const Interval& b) {
  if (b.lo <= 0 && b.hi >= 0) {  // x % 0 is x; otherwise |x % b| <= |x|, with the sign of x
    return {std::min<i128>(a.lo, 0), std::max<i128>(a.hi, 0)};
  }
  i128 m = std::max(abs128(b.lo), abs128(b.hi));
  m = infinite(m) ? kInf : m - 1;  // |result| < |b|
  if (a.lo >= 0) return {0, std::min(a.hi, m)};
  if (a.hi <= 0) return {std::max(a.lo, -m), 0};
  return {std::max(a.lo, -m), std::min(a.hi, m)};
}

// `r` when every value fits the dtype (so no wraparound happened), else the dtype's range.
Interval no_wrap(const Interval& r, DataType t) {
  Interval range = dtype_range(t);
  return interval_within(r, range) ? r : range;
}

}  // namespace

Interval AnalyzerImpl::bound(const Expr& e) {
  DataType t = e.dtype();
  if (!t.is_int_or_bool()) return Interval::everything();
  return interval_intersect(bound_impl(e), dtype_range(t));
}

Interval AnalyzerImpl::bound_impl(const Expr& e) {
  DataType t = e.dtype();
  switch (e.kind()) {
    case NodeKind::kIntImm:
      return Interval::point(int_value(e.as<IntImm>()));
    case NodeKind::kVar: {
      const auto* v = e.as<VarNode>();
      Interval r = dtype_range(t);
      if (v->is_size_var) r.lo = std::max<i128>(r.lo, 0);
      if (const VarInfo* vi = info(v)) r = interval_intersect(r, vi->bound);
      return r;
    }
    case NodeKind::kAdd: {
      const auto* op = e.as<Add>();
      return no_wrap(interval_add(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kSub: {
      const auto* op = e.as<Sub>();
      return no_wrap(interval_add(bound(op->a), interval_neg(bound(op->b))), t);
    }
    case NodeKind::kMul: {
      const auto* op = e.as<Mul>();
      return no_wrap(interval_mul(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kDiv: {
      const auto* op = e.as<Div>();
      return no_wrap(div_bound(bound(op->a), bound(op->b), false, t), t);
    }
    case NodeKind::kFloorDiv: {
      const auto* op = e.as<FloorDiv>();
      return no_wrap(div_bound(bound(op->a), bound(op->b), true, t), t);
    }
    case NodeKind::kMod: {
      const auto* op = e.as<Mod>();
      return no_wrap(truncmod_bound(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kFloorMod: {
      const auto* op = e.as<FloorMod>();
      return no_wrap(floormod_bound(bound(op->a), bound(op->b)), t);
    }
    case NodeKind::kMin: {
      const auto* op = e.as<Min>();
      Interval a = bound(op->a);
      Interval b = bound(op->b);
      return {std::min(a.lo, b.lo), std::min(a.hi, b.hi)};
    }
    case NodeKind::kMax: {
      const auto* op = e.as<Max>();
      Interval a = bound(op->a);
      Interval b = bound(op->b);
      return {std::max(a.lo, b.lo), std::max(a.hi, b.hi)};
    }
    case NodeKind::kSelect: {
      const auto* op = e.as<Select>();
      return interval_union(bound(op->true_value), bound(op->false_value));
    }
    case NodeKind::kCast: {
      const auto* op = e.as<Cast>();
      if (t.is_bool()) return {0, 1};
      if (!op->value.dtype().is_int_or_bool()) return dtype_range(t);
      return no_wrap(bound(op->value), t);
    }
    case NodeKind::kLet: {
      const auto* op = e.as<Let>();
      push_scope();
      bind_value(op->var, op->value);
      Interval r = bound(op->body);
      pop_scope();
      return r;
    }
    case NodeKind::kRamp: {
      const auto* op = e.as<Ramp>();
      Interval steps = interval_mul(bound(op->stride), {0, op->lanes - 1});
      steps = interval_union(steps, Interval::point(0));
      return no_wrap(interval_add(bound(op->base), steps), t);
    }
    case NodeKind::kBroadcast:
      return bound(e.as<Broadcast>()->value);
    default:
      return dtype_range(t);
  }
}

Interval AnalyzerImpl::bound(const Linear& l) {
  Interval r = Interval::point(l.constant);
  for (const auto& [atom, c] : l.terms) {
    r = interval_add(r, interval_mul(bound(atom), Interval::point(c)));
  }
  return r;
}

bool AnalyzerImpl::fits(const Linear& l, DataType t) {
  return interval_within(bound(l), dtype_range(t));
}

}  // namespace primjit::arith::detail
