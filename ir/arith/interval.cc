// Exact-integer intervals and the number helpers every analysis shares: floor division,
// gcd, wraparound to a dtype's width, and integer literals of any integer dtype.
#include <algorithm>

#include "ir/arith/arith_internal.h"
#include "primjit/error.h"

namespace primjit::arith::detail {
namespace {

// A lower end: values at or below -kInf are unbounded; absurdly large ones are lowered to a
// finite value (still a valid lower bound).
i128 clamp_lo(i128 v) { return neg_inf(v) ? -kInf : (pos_inf(v) ? kInf - 1 : v); }
i128 clamp_hi(i128 v) { return pos_inf(v) ? kInf : (neg_inf(v) ? -kInf + 1 : v); }

// Product of two extended values (infinite ends saturate; 0 times anything is 0).
i128 ext_mul(i128 x, i128 y) {
  if (x == 0 || y == 0) return 0;
  bool negative = (x < 0) != (y < 0);
  if (infinite(x) || infinite(y)) return negative ? -kInf : kInf;
  i128 r;
  if (__builtin_mul_overflow(x, y, &r) || infinite(r)) return negative ? -kInf : kInf;
  return r;
}

}  // namespace

Interval interval_add(const Interval& a, const Interval& b) {
  i128 lo = (neg_inf(a.lo) || neg_inf(b.lo)) ? -kInf : clamp_lo(a.lo + b.lo);
  i128 hi = (pos_inf(a.hi) || pos_inf(b.hi)) ? kInf : clamp_hi(a.hi + b.hi);
  return {lo, hi};
}

Interval interval_neg(const Interval& a) { return {-a.hi, -a.lo}; }

Interval interval_mul(const Interval& a, const Interval& b) {
  i128 c[4] = {ext_mul(a.lo, b.lo), ext_mul(a.lo, b.hi), ext_mul(a.hi, b.lo), ext_mul(a.hi, b.hi)};
  return {clamp_lo(*std::min_element(c, c + 4)), clamp_hi(*std::max_element(c, c + 4))};
}

Interval interval_union(const Interval& a, const Interval& b) {
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

Interval interval_intersect(const Interval& a, const Interval& b) {
  return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)};
}

bool interval_within(const Interval& a, const Interval& outer) {
  return a.lo >= outer.lo && a.hi <= outer.hi;
}

Interval dtype_range(DataType t) {
  if (t.is_bool()) return {0, 1};
  if (t.is_int()) return {-(i128(1) << (t.bits() - 1)), (i128(1) << (t.bits() - 1)) - 1};
  if (t.is_uint()) return {0, (i128(1) << t.bits()) - 1};
  return Interval::everything();
}

i128 floor_div(i128 a, i128 b) {
  i128 q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}

i128 floor_mod(i128 a, i128 b) {
  i128 r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

i128 gcd(i128 a, i128 b) {
  a = abs128(a);
  b = abs128(b);
  while (b != 0) {
    i128 t = a % b;
    a = b;
    b = t;
  }
  return a;
}

i128 wrap_signed(i128 v, int bits) {
  using u128 = unsigned __int128;
  u128 m = static_cast<u128>(v) & ((u128(1) << bits) - 1);
  if ((m >> (bits - 1)) & 1) return static_cast<i128>(m) - (i128(1) << bits);
  return static_cast<i128>(m);
}

i128 int_value(const IntImm* imm) {
  if (imm->dtype.is_uint() && imm->dtype.bits() == 64) {
    return static_cast<i128>(static_cast<uint64_t>(imm->value));
  }
  return imm->value;
}

Expr make_int(DataType t, i128 v) {
  if (t.is_vector()) return Broadcast::make(make_int(t.element_of(), v), t.lanes());
  if (t.is_bool()) return IntImm::make(t, v != 0 ? 1 : 0);
  PRIMJIT_ICHECK(t.is_integer()) << "make_int: not an integer dtype: " << t;
  i128 w = wrap_signed(v, t.bits());
  if (t.is_uint() && t.bits() < 64 && w < 0) w += i128(1) << t.bits();
  return IntImm::make(t, static_cast<int64_t>(w));
}

}  // namespace primjit::arith::detail
