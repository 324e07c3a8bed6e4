// Bit-exact conversions between float32 and the narrow floating formats: float16, bfloat16,
// float8_e4m3fn and float8_e5m2. One definition of the rounding rules, shared by the storage
// legalization passes (whose IR formulas must agree), the interpreter and the tests.
//
// Public API (part of <primjit/primjit.h>): applications use it to fill and read tensors of
// these dtypes, whose elements are stored as their bit patterns (uint16_t, uint8_t); the value
// types primjit::float16 and primjit::bfloat16 (below) wrap the 16-bit ones.
//
// Rules: round to nearest, ties to even, on every conversion from float32. NaN stays NaN (sign
// kept). Out of range: float16 and bfloat16 give infinity (IEEE); the float8 formats saturate
// to their largest finite value, infinities included, as CUDA's __nv_fp8 constructors
// (__NV_SATFINITE) do.
#pragma once

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <type_traits>

namespace primjit::fp {

/// A narrow binary floating format with an implicit leading bit.
struct Format {
  int exponent_bits;
  int mantissa_bits;
  bool has_infinity;  // IEEE-style: all-ones exponent is inf/NaN
  bool saturates;     // out-of-range values become the largest finite value
  uint32_t nan_bits;  // the canonical (positive) NaN
  uint32_t max_bits;  // the largest finite (positive) value
};

inline constexpr Format kFloat16{5, 10, true, false, 0x7E00, 0x7BFF};
inline constexpr Format kBFloat16{8, 7, true, false, 0x7FC0, 0x7F7F};
inline constexpr Format kFloat8E4M3FN{4, 3, false, true, 0x7F, 0x7E};
inline constexpr Format kFloat8E5M2{5, 2, true, true, 0x7E, 0x7B};

/// The value of the (positive or negative) bit pattern `bits` of format `f`.
inline float decode(const Format& f, uint32_t bits) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const bool negative = ((bits >> (total - 1)) & 1u) != 0;
  const uint32_t magnitude = bits & ((1u << (total - 1)) - 1u);
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const uint32_t exponent = magnitude >> f.mantissa_bits;
  const uint32_t mantissa = magnitude & ((1u << f.mantissa_bits) - 1u);
  const uint32_t all_ones = (1u << f.exponent_bits) - 1u;
  double value;
  if (f.has_infinity && exponent == all_ones) {
    value = mantissa == 0 ? INFINITY : NAN;
  } else if (!f.has_infinity && magnitude == (f.nan_bits & ((1u << (total - 1)) - 1u))) {
    value = NAN;
  } else if (exponent == 0) {
    value = std::ldexp(static_cast<double>(mantissa), 1 - bias - f.mantissa_bits);
  } else {
    value = std::ldexp(static_cast<double>(mantissa | (1u << f.mantissa_bits)),
                       static_cast<int>(exponent) - bias - f.mantissa_bits);
  }
  return static_cast<float>(negative ? -value : value);
}

/// The bit pattern of format `f` nearest to `x` (see the rules above).
inline uint32_t encode(const Format& f, float x) {
  const int total = 1 + f.exponent_bits + f.mantissa_bits;
  const uint32_t sign = std::signbit(x) ? (1u << (total - 1)) : 0u;
  if (std::isnan(x)) return sign | f.nan_bits;
  const double max_value = decode(f, f.max_bits);
  const uint32_t overflow =
      f.saturates ? f.max_bits : ((1u << f.exponent_bits) - 1u) << f.mantissa_bits;
  double a = std::fabs(static_cast<double>(x));
  if (std::isinf(a)) return sign | overflow;
  const int bias = (1 << (f.exponent_bits - 1)) - 1;
  const int min_exponent = 1 - bias;  // of the smallest normal number
  int e = 0;
  std::frexp(a, &e);  // a = m * 2^e with m in [0.5, 1): the leading bit is 2^(e-1)
  int lead = a == 0.0 ? min_exponent : std::max(e - 1, min_exponent);
  double quantum = std::ldexp(1.0, lead - f.mantissa_bits);
  double steps = std::nearbyint(a / quantum);  // ties to even (default rounding mode)
  double rounded = steps * quantum;
  if (rounded > max_value) {
    // Between the largest finite value and the next power: IEEE rounding may still round down.
    double next = max_value + std::ldexp(1.0, lead - f.mantissa_bits);
    bool to_max = f.saturates || a < (max_value + next) / 2 ||
                  (a == (max_value + next) / 2 && (f.max_bits & 1u) == 0);
    return sign | (to_max ? f.max_bits : overflow);
  }
  if (rounded < std::ldexp(1.0, min_exponent)) {
    return sign | static_cast<uint32_t>(steps);  // subnormal (or zero): exponent field 0
  }
  int re = 0;
  std::frexp(rounded, &re);
  const int exponent = re - 1;
  const uint32_t mantissa = static_cast<uint32_t>(std::ldexp(rounded, f.mantissa_bits - exponent) -
                                                  std::ldexp(1.0, f.mantissa_bits));
  return sign | (static_cast<uint32_t>(exponent + bias) << f.mantissa_bits) | mantissa;
}

/// float32 → bfloat16 bits by the integer formula of the legalization: bias by 0x7FFF plus the
/// lowest kept bit, then shift. Agrees with encode(kBFloat16, x) on all non-NaN inputs.
inline uint16_t float_to_bfloat16_bits(float x) {
  if (std::isnan(x)) return static_cast<uint16_t>(encode(kBFloat16, x));
  uint32_t bits = std::bit_cast<uint32_t>(x);
  bits += 0x7FFFu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>(bits >> 16);
}

/// bfloat16 bits → float32: the bits become the high half.
inline float bfloat16_bits_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

/// `x` rounded to format `f` and back: what storing to a narrow buffer and loading does.
inline float round_to(const Format& f, float x) { return decode(f, encode(f, x)); }

}  // namespace primjit::fp

namespace primjit {

// Value types for the 16-bit floating dtypes: a `float16` or `bfloat16` is what one element of
// a tensor of that dtype holds (its bits, 2 bytes, trivially copyable), so `data<float16>()`
// reads and writes such a tensor. Conversions from and to float are explicit and follow the
// rules above: `primjit::float16 h(0.1f); float back = float(h);`. They are named like the
// dtypes (float16, bfloat16) because they stand for them, as `float` stands for float32.

/// An IEEE binary16 value (dtype float16).
class float16 {
 public:
  float16() = default;
  explicit float16(float x) : bits_(static_cast<uint16_t>(fp::encode(fp::kFloat16, x))) {}
  static float16 from_bits(uint16_t bits) {
    float16 h;
    h.bits_ = bits;
    return h;
  }
  uint16_t bits() const { return bits_; }
  explicit operator float() const { return fp::decode(fp::kFloat16, bits_); }

 private:
  uint16_t bits_ = 0;
};

/// A bfloat16 value: the high half of a float32 (dtype bfloat16).
class bfloat16 {
 public:
  bfloat16() = default;
  explicit bfloat16(float x) : bits_(fp::float_to_bfloat16_bits(x)) {}
  static bfloat16 from_bits(uint16_t bits) {
    bfloat16 b;
    b.bits_ = bits;
    return b;
  }
  uint16_t bits() const { return bits_; }
  explicit operator float() const { return fp::bfloat16_bits_to_float(bits_); }

 private:
  uint16_t bits_ = 0;
};

static_assert(sizeof(float16) == 2 && std::is_trivially_copyable_v<float16>);
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16>);

}  // namespace primjit
