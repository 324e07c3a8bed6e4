#include "jit/llvm/inline_math.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <span>
#include <vector>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "jit/llvm/vector_math.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

using llvm::Value;

// float32 tanh's e^2|x| in float64 lanes (exp_core): e^r ~ sum kExpCoefficients[k] r^k for
// |r| <= 0.3466 (ln 2 / 2 = 0.34657...): the minimax polynomial of degree 8 for the relative
// error, 2^-40 at most (Remez exchange in float64 on a
// grid of 20001 points; rounded to float64 the coefficients keep that bound).
constexpr double kExpCoefficients[] = {
    0x1.ffffffffff7a4p-1,  0x1.ffffffffd55c2p-1,  0x1.00000000880a3p-1,
    0x1.555555a08b09cp-3,  0x1.55555404e9954p-5,  0x1.111082a3bc47ep-7,
    0x1.6c18b35eb0dc7p-10, 0x1.a1a82bcb377f0p-13, 0x1.9eda8b3d97cf9p-16,
};
constexpr double kLog2E = 0x1.71547652b82fep0;
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
// The exp scheme's constants for one float type (exp_lanes): arguments are clamped to
// [min, max] (beyond, the result is 0 or +inf, so the clamp changes no result, and 2^n stays a
// product of two normal floats); log2(e); ln 2 split into ln2_hi, whose trailing zero bits make
// n * ln2_hi exact for every n reached (so x - n * ln2_hi is exact with or without a fused
// multiply-add), and ln2_lo = ln 2 - ln2_hi rounded; the shifter 1.5 * 2^mantissa_bits rounds
// x log2(e) to the nearest integer n and holds n in its low bits. e^r ~ 1 + r + r^2 P(r) for
// |r| <= ln 2 / 2, P minimax for the relative error of the whole (Lawson iterations in 50-60
// digit arithmetic, then rounded to the type).
struct ExpScheme {
  double max, min, log2e, ln2_hi, ln2_lo, shifter;
  std::span<const double> coefficients;  // of P, lowest degree first
  int mantissa_bits, exponent_bias;
  // 2^x instead of e^x: n = nearest integer to x, r = (x - n) ln 2 (x - n is exact; the one
  // rounding of the product errs by under 0.2 ulp of the result).
  bool base2 = false;
};

// float32: clamped to [-104, 89] (e^89 > 2^128; e^-104 < 2^-150, half the smallest subnormal);
// 15 significant bits in ln2_hi (|n| <= 150); P of degree 4, 2^-28.3 before rounding.
constexpr double kExpF32Coefficients[] = {
    0x1.fffffcp-2, 0x1.555492p-3, 0x1.5558f2p-5, 0x1.1239d4p-7, 0x1.6a2448p-10,
};
constexpr ExpScheme kExpF32 = {.max = 89.0,
                               .min = -104.0,
                               .log2e = 0x1.715476p0,
                               .ln2_hi = 0x1.62e4p-1,
                               .ln2_lo = 0x1.7f7d1cp-20,
                               .shifter = 0x1.8p23,
                               .coefficients = kExpF32Coefficients,
                               .mantissa_bits = 23,
                               .exponent_bias = 127};
// float64: clamped to [-746, 710] (e^710 > 2^1024; e^-746 < 2^-1075); 32 significant bits in
// ln2_hi (|n| <= 1077); P of degree 9, 2^-56.3.
constexpr double kExpF64Coefficients[] = {
    0x1.000000000000ap-1,  0x1.55555555554fap-3,  0x1.555555555088ap-5,  0x1.1111111127b9cp-7,
    0x1.6c16c18426d4cp-10, 0x1.a01a012a6ac16p-13, 0x1.a0199a15e6c91p-16, 0x1.71df2535edc3ap-19,
    0x1.28ad6974c784dp-22, 0x1.ad7f83d047378p-26,
};
constexpr ExpScheme kExpF64 = {.max = 710.0,
                               .min = -746.0,
                               .log2e = 0x1.71547652b82fep0,
                               .ln2_hi = 0x1.62e42feep-1,
                               .ln2_lo = 0x1.a39ef35793c76p-33,
                               .shifter = 0x1.8p52,
                               .coefficients = kExpF64Coefficients,
                               .mantissa_bits = 52,
                               .exponent_bias = 1023};
// float64 exp2: float64 exp's constants in base 2, clamped to [-1076, 1025] (2^1025
// overflows; 2^-1076 rounds to 0).
constexpr ExpScheme base2_of(ExpScheme scheme, double max, double min) {
  scheme.max = max;
  scheme.min = min;
  scheme.log2e = 1.0;
  scheme.base2 = true;
  return scheme;
}
constexpr ExpScheme kExp2F64 = base2_of(kExpF64, 1025.0, -1076.0);
// tanh(x) rounds to 1 in float32 from x = 9.01 on. Below kTanhSeries, where 1 - 2 / (e^2x + 1)
// would lose e^2x's 2^-40 to cancellation (2^-37 relative left at 1/16), the odd series
// x + x^3 (-1/3 + x^2 (2/15 + x^2 (-17/315 + x^2 62/2835))): the next term, 1382 x^11 / 155925,
// is below 2^-46 relative there.
constexpr double kTanhMax = 10.0;
constexpr double kTanhSeries = 1.0 / 16;
constexpr double kTanhSeriesCoefficients[] = {62.0 / 2835, -17.0 / 315, 2.0 / 15, -1.0 / 3};
// Added to |t| < 2^51 this rounds t to the nearest integer n and holds n in its low bits.
constexpr double kShifter = 0x1.8p52;

// Whether the host CPU fuses multiply-add (the JIT compiles for the host, which never fuses on
// its own: see OrcEngine).
// x * y + z: one fused operation where the host has one, else rounded twice (the error bounds
// above hold either way; a fused multiply-add without hardware would be a slow library call).
Value* mul_add(llvm::IRBuilderBase& b, Value* x, Value* y, Value* z) {
  if (host_cpu_has("fma"))
    return b.CreateIntrinsic(llvm::Intrinsic::fma, {x->getType()}, {x, y, z});
  return b.CreateFAdd(b.CreateFMul(x, y), z);
}

// c[0] + x (c[1] + x (c[2] + ...)): Horner's rule, fused where the host fuses.
Value* horner(llvm::IRBuilderBase& b, Value* x, std::span<const double> c) {
  llvm::Type* type = x->getType();
  Value* p = llvm::ConstantFP::get(type, c.back());
  for (size_t k = c.size() - 1; k-- > 0;) p = mul_add(b, p, x, llvm::ConstantFP::get(type, c[k]));
  return p;
}

// e^xd for float64 lanes xd in [-208, 89] or NaN (the range reduction and 2^n hold there):
// float32 tanh's e^2|x|.
Value* exp_core(llvm::IRBuilderBase& b, Value* xd) {
  llvm::Type* wide = xd->getType();
  llvm::Type* bits = wide->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(wide, v); };
  Value* shifted = mul_add(b, xd, c(kLog2E), c(kShifter));
  Value* n = b.CreateFSub(shifted, c(kShifter));
  Value* r = mul_add(b, n, c(-kLn2), xd);
  constexpr int kDegree = static_cast<int>(std::size(kExpCoefficients)) - 1;
  Value* p = c(kExpCoefficients[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) p = mul_add(b, p, r, c(kExpCoefficients[k]));
  // 2^n: n + 1023 in the exponent field (the shift keeps the low 12 bits, n's).
  Value* exponent = b.CreateAdd(b.CreateBitCast(shifted, bits), llvm::ConstantInt::get(bits, 1023));
  Value* scale = b.CreateBitCast(b.CreateShl(exponent, llvm::ConstantInt::get(bits, 52)), wide);
  return b.CreateFMul(p, scale);
}

// exp of float lanes in their own type (see the header), by `scheme`; e^(x + x_lo) where x_lo
// (a correction far below ulp(x), only for exp in base e) is given.
Value* exp_lanes(llvm::IRBuilderBase& b, Value* x, const ExpScheme& scheme, Value* x_lo = nullptr) {
  llvm::Type* type = x->getType();
  const unsigned width = type->getScalarSizeInBits();
  llvm::Type* bits = type->getWithNewType(b.getIntNTy(width));
  auto f = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int64_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  // Comparisons that are false for NaN: NaN stays NaN through every step below.
  x = b.CreateSelect(b.CreateFCmpOGT(x, f(scheme.max)), f(scheme.max), x);
  x = b.CreateSelect(b.CreateFCmpOLT(x, f(scheme.min)), f(scheme.min), x);
  Value* shifted = scheme.base2 ? b.CreateFAdd(x, f(scheme.shifter))
                                : mul_add(b, x, f(scheme.log2e), f(scheme.shifter));
  Value* n = b.CreateFSub(shifted, f(scheme.shifter));
  Value* r;
  if (scheme.base2) {
    r = b.CreateFMul(b.CreateFSub(x, n), f(scheme.ln2_hi + scheme.ln2_lo));
  } else {
    r = mul_add(b, n, f(-scheme.ln2_hi), x);
    r = mul_add(b, n, f(-scheme.ln2_lo), r);
    if (x_lo != nullptr) r = b.CreateFAdd(r, x_lo);
  }
  Value* p = horner(b, r, scheme.coefficients);
  Value* u = b.CreateFAdd(mul_add(b, b.CreateFMul(r, r), p, r), f(1.0));
  // 2^n in two factors 2^n1 and 2^n2, n1 = floor(n / 2): both normal for every n reached, so
  // u * 2^n1 is exact and the one rounding is the last product's.
  Value* shifter_bits = b.CreateBitCast(f(scheme.shifter), bits);
  Value* whole = b.CreateSub(b.CreateBitCast(shifted, bits), shifter_bits);
  Value* n1 = b.CreateAShr(whole, i(1));
  Value* n2 = b.CreateSub(whole, n1);
  auto power = [&](Value* e) {
    return b.CreateBitCast(
        b.CreateShl(b.CreateAdd(e, i(scheme.exponent_bias)), i(scheme.mantissa_bits)), type);
  };
  return b.CreateFMul(b.CreateFMul(u, power(n1)), power(n2));
}

Value* exp_f32(llvm::IRBuilderBase& b, Value* x) { return exp_lanes(b, x, kExpF32); }
Value* exp_f64(llvm::IRBuilderBase& b, Value* x) { return exp_lanes(b, x, kExpF64); }
Value* exp2_f64(llvm::IRBuilderBase& b, Value* x) { return exp_lanes(b, x, kExp2F64); }

// float64 log (see the header): log(1 + f) = f - f^2/2 + s (f^2/2 + z P(z)), s = f / (2 + f),
// z = s^2, for the m = 1 + f in [sqrt(1/2), sqrt(2)) of x = m 2^e; P minimax of degree 6 for
// (2 atanh(s) - 2s) / s^3 on z in [0, 0.0295] (2^-57.6 relative, Lawson iterations in 60-digit
// arithmetic).
constexpr double kLogF64Coefficients[] = {
    0x1.5555555555558p-1, 0x1.999999999522ep-2, 0x1.2492492e02ae3p-2, 0x1.c71c62d1ca6aep-3,
    0x1.7462b9b700e5ap-3, 0x1.39fdc7f7cda52p-3, 0x1.2b5f0930ce665p-3,
};

// log(m) of x = m 2^k for float64 lanes, in parts (log_parts): log m = f - f^2/2 + s (f^2/2 +
// r) with f exact.
struct LogParts {
  Value* k;     // the exponent, as a float64
  Value* f;     // m - 1
  Value* hfsq;  // f^2 / 2
  Value* s;     // f / (2 + f)
  Value* r;     // s^2 P(s^2)
};

// x's parts; subnormal x (only where `subnormals`) is scaled by 2^52 first, exactly, and k
// counts it.
LogParts log_parts(llvm::IRBuilderBase& b, Value* x, bool subnormals) {
  llvm::Type* type = x->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int64_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  Value* tiny = subnormals ? b.CreateFCmpOLT(x, c(0x1p-1022)) : nullptr;
  Value* scaled = subnormals ? b.CreateSelect(tiny, b.CreateFMul(x, c(0x1p52)), x) : x;
  Value* ix = b.CreateBitCast(scaled, bits);
  // e such that m = scaled / 2^e lies in [sqrt(1/2), sqrt(2)): the exponent of scaled, less
  // one where its significand is below sqrt(1/2)'s.
  Value* e = b.CreateAShr(b.CreateSub(ix, i(0x3fe6a09e667f3bcd)), i(52));
  Value* m = b.CreateBitCast(b.CreateSub(ix, b.CreateShl(e, i(52))), type);
  LogParts p;
  p.f = b.CreateFSub(m, c(1.0));  // exact: m is within a factor 2 of 1
  p.s = b.CreateFDiv(p.f, b.CreateFAdd(c(2.0), p.f));
  Value* z = b.CreateFMul(p.s, p.s);
  p.r = b.CreateFMul(z, horner(b, z, kLogF64Coefficients));
  p.hfsq = b.CreateFMul(b.CreateFMul(c(0.5), p.f), p.f);
  if (subnormals) e = b.CreateAdd(e, b.CreateSelect(tiny, i(-52), i(0)));
  p.k = b.CreateSIToFP(e, type);
  return p;
}

// k ln 2 + log(1 + f) + small: k ln2_hi (exact: ln2_hi has 32 significant bits, |k| <= 1075)
// - ((f^2/2 - (s (f^2/2 + r) + (k ln2_lo + small))) - f): the small terms first, f (exact)
// last.
Value* log_sum(llvm::IRBuilderBase& b, const LogParts& p, Value* small = nullptr) {
  auto c = [&](double v) { return llvm::ConstantFP::get(p.k->getType(), v); };
  Value* low = b.CreateFMul(p.k, c(kExpF64.ln2_lo));
  if (small != nullptr) low = b.CreateFAdd(low, small);
  Value* tail = mul_add(b, p.s, b.CreateFAdd(p.hfsq, p.r), low);
  return b.CreateFSub(b.CreateFMul(p.k, c(kExpF64.ln2_hi)),
                      b.CreateFSub(b.CreateFSub(p.hfsq, tail), p.f));
}

// log and log2's values at the special arguments: x < 0 gives NaN, +-0 -inf, +inf +inf, NaN
// itself (the selects in this order: a NaN argument fails every ordered comparison and is
// passed on by the last).
Value* log_specials(llvm::IRBuilderBase& b, Value* x, Value* y) {
  auto c = [&](double v) { return llvm::ConstantFP::get(x->getType(), v); };
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), c(std::numeric_limits<double>::quiet_NaN()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(0.0)), c(-std::numeric_limits<double>::infinity()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(std::numeric_limits<double>::infinity())), x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

Value* log_f64(llvm::IRBuilderBase& b, Value* x) {
  return log_specials(b, x, log_sum(b, log_parts(b, x, true)));
}

// The value's bits with the low 32 cleared: 21 significant bits, whose product with another
// such value is exact.
Value* high_bits(llvm::IRBuilderBase& b, Value* v) {
  llvm::Type* bits = v->getType()->getWithNewType(b.getInt64Ty());
  return b.CreateBitCast(
      b.CreateAnd(b.CreateBitCast(v, bits), llvm::ConstantInt::get(bits, 0xffffffff00000000ull)),
      v->getType());
}

// 1 / ln 2 = kInvLn2Hi + kInvLn2Lo, the first with 21 significant bits (high_bits).
constexpr double kInvLn2Hi = 0x1.71547p0;
constexpr double kInvLn2Lo = 0x1.94ae0bf85ddf4p-22;

// float64 log2 (see the header): k + log(m) / ln 2 with log m = hi + lo, hi = f - f^2/2 cut to
// 21 significant bits so that hi / ln 2's leading part is exact, and the sum with k in two
// parts (Fast2Sum: |k| >= 1 > |hi / ln 2| or k = 0).
Value* log2_f64(llvm::IRBuilderBase& b, Value* x) {
  auto c = [&](double v) { return llvm::ConstantFP::get(x->getType(), v); };
  LogParts p = log_parts(b, x, true);
  Value* hi = high_bits(b, b.CreateFSub(p.f, p.hfsq));
  Value* lo = b.CreateFAdd(b.CreateFSub(b.CreateFSub(p.f, hi), p.hfsq),
                           b.CreateFMul(p.s, b.CreateFAdd(p.hfsq, p.r)));
  Value* value_hi = b.CreateFMul(hi, c(kInvLn2Hi));  // exact
  Value* value_lo = mul_add(b, b.CreateFAdd(lo, hi), c(kInvLn2Lo), b.CreateFMul(lo, c(kInvLn2Hi)));
  Value* w = b.CreateFAdd(p.k, value_hi);
  value_lo = b.CreateFAdd(value_lo, b.CreateFAdd(b.CreateFSub(p.k, w), value_hi));
  return log_specials(b, x, b.CreateFAdd(value_lo, w));
}

// float64 log1p (see the header): u = 1 + x rounded, c its rounding error (TwoSum, exact), then
// log(u) + c / u: log's parts of u (never subnormal: u >= 2^-53 where x > -1) with c / u among
// the small terms.
Value* log1p_f64(llvm::IRBuilderBase& b, Value* x) {
  auto c = [&](double v) { return llvm::ConstantFP::get(x->getType(), v); };
  Value* u = b.CreateFAdd(c(1.0), x);
  Value* x_part = b.CreateFSub(u, x);
  Value* one_part = b.CreateFSub(u, x_part);
  Value* error = b.CreateFAdd(b.CreateFSub(c(1.0), x_part), b.CreateFSub(x, one_part));
  Value* y = log_sum(b, log_parts(b, u, false), b.CreateFDiv(error, u));
  // log1p(x < -1) = NaN, log1p(-1) = -inf, log1p(+inf) = +inf, log1p(+-0) = +-0, NaN passed
  // on.
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(-1.0)), c(std::numeric_limits<double>::quiet_NaN()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(-1.0)), c(-std::numeric_limits<double>::infinity()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(std::numeric_limits<double>::infinity())), x, y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(0.0)), x, y);
  return b.CreateSelect(b.CreateFCmpUNO(x, x), x, y);
}

// tanh of float32 lanes, computed in float64 on |x| and rounded once (see the header).
Value* tanh_f32(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* type = x->getType();
  llvm::Type* wide = type->getWithNewType(b.getDoubleTy());
  auto c = [&](double v) { return llvm::ConstantFP::get(wide, v); };
  auto f = [&](double v) { return llvm::ConstantFP::get(type, v); };
  Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  a = b.CreateSelect(b.CreateFCmpOGT(a, f(kTanhMax)), f(kTanhMax), a);  // NaN stays
  Value* ad = b.CreateFPExt(a, wide);
  Value* e = exp_core(b, b.CreateFAdd(ad, ad));
  Value* large = b.CreateFSub(c(1.0), b.CreateFDiv(c(2.0), b.CreateFAdd(e, c(1.0))));
  Value* a2 = b.CreateFMul(ad, ad);
  Value* series = c(kTanhSeriesCoefficients[0]);
  for (double k : std::span(kTanhSeriesCoefficients).subspan(1))
    series = mul_add(b, series, a2, c(k));
  Value* small = mul_add(b, b.CreateFMul(a2, ad), series, ad);
  Value* t = b.CreateSelect(b.CreateFCmpOLT(ad, c(kTanhSeries)), small, large);
  return b.CreateIntrinsic(llvm::Intrinsic::copysign, {type}, {b.CreateFPTrunc(t, type), x});
}

// e^r - 1 ~ r + r^2 Q(r) for r in [-0.01, ln 2 + 0.01]: Q minimax of degree 11 for the error
// relative to e^r - 1 (2^-57.9; Lawson iterations in 40-digit arithmetic).
constexpr double kExpm1F64Coefficients[] = {
    0x1.0000000000000p-1,  0x1.5555555555557p-3,  0x1.5555555555420p-5,  0x1.1111111117b0cp-7,
    0x1.6c16c169b1d99p-10, 0x1.a01a022629a2fp-13, 0x1.a019eea54d06cp-16, 0x1.71e0065cbb7c4p-19,
    0x1.27c79a5445bd6p-22, 0x1.b0e2b70b3f8e0p-26, 0x1.0dc599ffc3dddp-29, 0x1.e61f84e59c544p-33,
};
// tanh(x) rounds to 1 in float64 from x = 19.06 on.
constexpr double kTanhMaxF64 = 22.0;

// e^y - 1 for float64 lanes y in [0, 44] or NaN: n = floor(y / ln 2) (rounded from
// y / ln 2 - 1/2), r = y - n ln 2 in [0, ln 2) (Cody-Waite, as exp), e^y - 1 = 2^n (e^r - 1) +
// (2^n - 1): every term is >= 0, so nothing cancels, and 2^n - 1 is exact (n <= 53; beyond,
// the 1 is below the sum's rounding).
Value* expm1_nonnegative(llvm::IRBuilderBase& b, Value* y) {
  llvm::Type* type = y->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int64_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  Value* shifted = b.CreateFAdd(mul_add(b, y, c(kExpF64.log2e), c(-0.5)), c(kShifter));
  Value* n = b.CreateFSub(shifted, c(kShifter));
  Value* r = mul_add(b, n, c(-kExpF64.ln2_hi), y);
  r = mul_add(b, n, c(-kExpF64.ln2_lo), r);
  Value* em1 = mul_add(b, b.CreateFMul(r, r), horner(b, r, kExpm1F64Coefficients), r);
  Value* whole = b.CreateSub(b.CreateBitCast(shifted, bits), b.CreateBitCast(c(kShifter), bits));
  Value* scale = b.CreateBitCast(b.CreateShl(b.CreateAdd(whole, i(1023)), i(52)), type);
  return mul_add(b, scale, em1, b.CreateFSub(scale, c(1.0)));
}

// float64 tanh (see the header): tanh |x| = e / (e + 2) with e = e^2|x| - 1, the division
// corrected for the rounding of e + 2 (TwoSum) and its own (the remainder, exact with a fused
// multiply-add; without one the correction is partial), sign copied from x.
Value* tanh_f64(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* type = x->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  a = b.CreateSelect(b.CreateFCmpOGT(a, c(kTanhMaxF64)), c(kTanhMaxF64), a);  // NaN stays
  Value* e = expm1_nonnegative(b, b.CreateFAdd(a, a));
  Value* d = b.CreateFAdd(e, c(2.0));
  Value* e_part = b.CreateFSub(d, c(2.0));
  Value* two_part = b.CreateFSub(d, e_part);
  Value* d_error = b.CreateFAdd(b.CreateFSub(e, e_part), b.CreateFSub(c(2.0), two_part));
  Value* t0 = b.CreateFDiv(e, d);
  Value* remainder = mul_add(b, b.CreateFNeg(t0), d, e);
  Value* t = b.CreateFAdd(t0, b.CreateFDiv(b.CreateFSub(remainder, b.CreateFMul(t0, d_error)), d));
  return b.CreateIntrinsic(llvm::Intrinsic::copysign, {type}, {t, x});
}

// erf(x) = x + x P(x^2) for |x| < kErfSeriesEnd: P minimax of degree 10 for the error relative
// to erf(x) / x (2^-54.9).
constexpr double kErfSeriesEnd = 0.875;
constexpr double kErfCoefficients[] = {
    0x1.06eba8214db68p-3,  -0x1.812746b03795dp-2,  0x1.ce2f21a03bc93p-4,  -0x1.b82ce310568eep-6,
    0x1.565bccb326784p-8,  -0x1.c02da2a98fee2p-11, 0x1.f9a11777f703bp-14, -0x1.f4a9ea622fa6ep-17,
    0x1.b7e52d83d42ffp-20, -0x1.4f6bc3481bfd3p-23, 0x1.674ad36c2124fp-27,
};
// Beyond, erf(a) = 1 - e^-a^2 g(a) up to 6 (erf rounds to 1 from 5.93 on), g(a) = erfc(a)
// e^a^2 ~ G(u - u0) with u = 1 / (1 + a), u0 the middle of u's range: G of degree 14 fitted
// (least squares in 50-digit arithmetic) for the error of erfc itself, under 0.1 * 2^-54 (erf's
// half ulp is 2^-54); in u the whole range takes one polynomial.
constexpr double kErfMax = 6.0;
constexpr double kErfcU0 = 0x1.5a35a35a35a36p-2;
constexpr double kErfcCoefficients[] = {
    0x1.0a394039119ecp-2,  0x1.ee8dfe4fdbf74p-1,  0x1.fcc4325003607p-2,  -0x1.996a678a98bd1p-2,
    -0x1.05bacb0d98be8p-2, 0x1.295e3bf3ff44ap-1,  -0x1.5c7fb30e913c6p-3, -0x1.603766328775fp-1,
    0x1.248a9fa662408p+0,  -0x1.5d8d1af44f98ep-2, -0x1.b9bc5a001a5f8p+0, 0x1.ccb205d60682cp+1,
    -0x1.7fc85f6cb8890p+1, -0x1.c288f5451c3c7p-3, 0x1.da95a41bd76efp+0,
};
constexpr double kTwoOverSqrtPi = 0x1.20dd750429b6dp+0;

// float64 erf (see the header): every lane computes both forms, the sign copied from x.
Value* erf_f64(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* type = x->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  Value* series = mul_add(b, a, horner(b, b.CreateFMul(a, a), kErfCoefficients), a);
  Value* ac = b.CreateSelect(b.CreateFCmpOGT(a, c(kErfMax)), c(kErfMax), a);  // NaN stays
  Value* d = b.CreateFAdd(c(1.0), ac);
  Value* u = b.CreateFDiv(c(1.0), d);
  Value* g = horner(b, b.CreateFSub(u, c(kErfcU0)), kErfcCoefficients);
  // u is 1 / (1 + ac) rounded twice: g moves by g'(u) times the difference, where g'(u) =
  // (2/sqrt(pi) - 2 ac g) / u^2 and the difference is (1 - u (d + d_error)) u, d_error = (1 +
  // ac) - d = ac - (d - 1) (both steps exact for ac in [0.875, 6]).
  Value* d_error = b.CreateFSub(ac, b.CreateFSub(d, c(1.0)));
  Value* remainder = b.CreateFSub(mul_add(b, b.CreateFNeg(u), d, c(1.0)), b.CreateFMul(u, d_error));
  Value* slope =
      b.CreateFMul(b.CreateFSub(c(kTwoOverSqrtPi), b.CreateFMul(b.CreateFMul(c(2.0), ac), g)), d);
  g = mul_add(b, slope, remainder, g);
  // e^-ac^2 as e^-(hi + lo): hi = ah^2 exact for ah = ac cut to 26 significant bits,
  // lo = ac^2 - ah^2 = (ac - ah)(ac + ah).
  Value* ah = b.CreateBitCast(
      b.CreateAnd(b.CreateBitCast(ac, bits), llvm::ConstantInt::get(bits, 0xfffffffff8000000ull)),
      type);
  Value* hi = b.CreateFMul(ah, ah);
  Value* lo = b.CreateFMul(b.CreateFSub(ac, ah), b.CreateFAdd(ac, ah));
  Value* e = exp_lanes(b, b.CreateFNeg(hi), kExpF64, b.CreateFNeg(lo));
  Value* complement = b.CreateFSub(c(1.0), b.CreateFMul(e, g));
  Value* y = b.CreateSelect(b.CreateFCmpOLT(a, c(kErfSeriesEnd)), series, complement);
  return b.CreateIntrinsic(llvm::Intrinsic::copysign, {type}, {y, x});
}

// sin and cos of float64 lanes with |x| <= kTrigMax (see the header). pi/2 in three parts, the
// first two with 33 significant bits (n pi2_1 and n pi2_2 exact for |n| < 2^20), 2/pi; sin r ~
// r + r^3 S(r^2) and cos r ~ 1 - r^2/2 + r^4 C(r^2) on |r| <= pi/4: S and C minimax of degree 5
// (2^-56.4 and 2^-59.6 relative).
constexpr double kTrigMax = 0x1p20;
constexpr double kPio2Parts[] = {0x1.921fb544p+0, 0x1.0b4611a6p-34, 0x1.3198a2e037073p-69};
constexpr double kTwoOverPi = 0x1.45f306dc9c883p-1;
constexpr double kSinCoefficients[] = {
    -0x1.5555555555548p-3, 0x1.111111110f7cdp-7,   -0x1.a01a019bfd818p-13,
    0x1.71de35677182dp-19, -0x1.ae5e5a42bd198p-26, 0x1.5d8fba34b27d9p-33,
};
constexpr double kCosCoefficients[] = {
    0x1.555555555554bp-5,   -0x1.6c16c16c14f8dp-10, 0x1.a01a019c83ec1p-16,
    -0x1.27e4f7ea7b8b8p-22, 0x1.1ee9d7821dbc3p-29,  -0x1.8fa47f36f177bp-37,
};

Value* trig_f64(llvm::IRBuilderBase& b, Value* x, bool cosine, Value** in_range) {
  llvm::Type* type = x->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int64_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  Value* a = b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  *in_range = b.CreateFCmpOLE(a, c(kTrigMax));  // false for infinities and NaN
  // n = nearest integer to x 2/pi; x - n pi/2 = y + y_lo: x - n pi2_1 exact, less n pi2_2 in
  // two parts (TwoSum), less n pi2_3, gathered by Fast2Sum.
  Value* shifted = mul_add(b, x, c(kTwoOverPi), c(kShifter));
  Value* n = b.CreateFSub(shifted, c(kShifter));
  Value* r1 = mul_add(b, b.CreateFNeg(n), c(kPio2Parts[0]), x);
  Value* w2 = b.CreateFMul(n, c(kPio2Parts[1]));
  Value* r2 = b.CreateFSub(r1, w2);
  Value* r1_part = b.CreateFAdd(r2, w2);
  Value* w2_part = b.CreateFSub(r2, r1_part);
  Value* e2 = b.CreateFAdd(b.CreateFSub(r1, r1_part), b.CreateFSub(b.CreateFNeg(w2), w2_part));
  Value* tail = b.CreateFSub(e2, b.CreateFMul(n, c(kPio2Parts[2])));
  Value* y = b.CreateFAdd(r2, tail);
  Value* y_lo = b.CreateFAdd(b.CreateFSub(r2, y), tail);
  Value* z = b.CreateFMul(y, y);
  // sin(y + y_lo) = y + (y^3 S + y_lo (1 - y^2/2)); cos(y + y_lo) = w + ((1 - w) - y^2/2) +
  // (y^4 C - y y_lo) with w = 1 - y^2/2 rounded.
  Value* y_lo_cos = mul_add(b, b.CreateFMul(c(-0.5), z), y_lo, y_lo);
  Value* sin_y =
      b.CreateFAdd(y, mul_add(b, b.CreateFMul(z, y), horner(b, z, kSinCoefficients), y_lo_cos));
  Value* hz = b.CreateFMul(c(0.5), z);
  Value* w = b.CreateFSub(c(1.0), hz);
  Value* cos_tail = mul_add(b, b.CreateFMul(z, z), horner(b, z, kCosCoefficients),
                            b.CreateFNeg(b.CreateFMul(y, y_lo)));
  Value* cos_y = b.CreateFAdd(w, b.CreateFAdd(b.CreateFSub(b.CreateFSub(c(1.0), w), hz), cos_tail));
  // The quadrant: n mod 4 (cos: n + 1) picks sin or cos of y and the sign.
  Value* q = b.CreateSub(b.CreateBitCast(shifted, bits), b.CreateBitCast(c(kShifter), bits));
  if (cosine) q = b.CreateAdd(q, i(1));
  Value* odd = b.CreateICmpNE(b.CreateAnd(q, i(1)), i(0));
  Value* v = b.CreateSelect(odd, cos_y, sin_y);
  Value* sign = b.CreateShl(b.CreateAnd(q, i(2)), i(62));
  v = b.CreateBitCast(b.CreateXor(b.CreateBitCast(v, bits), sign), type);
  // Below 2^-27, sin x rounds to x and cos x to 1 (and -0 keeps its sign).
  return b.CreateSelect(b.CreateFCmpOLT(a, c(0x1p-27)), cosine ? c(1.0) : x, v);
}

Value* sin_f64(llvm::IRBuilderBase& b, Value* x, Value** in_range) {
  return trig_f64(b, x, false, in_range);
}
Value* cos_f64(llvm::IRBuilderBase& b, Value* x, Value** in_range) {
  return trig_f64(b, x, true, in_range);
}

using InlineMath = Value* (*)(llvm::IRBuilderBase&, Value*);

// The inline functions on float32 and on float64, by op.
const OpMap<InlineMath>& inline_f32() {
  static const OpMap<InlineMath> table = [] {
    OpMap<InlineMath> m("host code generation's inline float32 math");
    m.set("exp", exp_f32).set("tanh", tanh_f32);
    return m;
  }();
  return table;
}

const OpMap<InlineMath>& inline_f64() {
  static const OpMap<InlineMath> table = [] {
    OpMap<InlineMath> m("host code generation's inline float64 math");
    m.set("exp", exp_f64)
        .set("exp2", exp2_f64)
        .set("log", log_f64)
        .set("log2", log2_f64)
        .set("log1p", log1p_f64)
        .set("tanh", tanh_f64)
        .set("erf", erf_f64);
    return m;
  }();
  return table;
}

using RangedMath = Value* (*)(llvm::IRBuilderBase&, Value*, Value**);

const OpMap<RangedMath>& ranged_f64() {
  static const OpMap<RangedMath> table = [] {
    OpMap<RangedMath> m("host code generation's float64 math for a range of arguments");
    m.set("sin", sin_f64).set("cos", cos_f64);
    return m;
  }();
  return table;
}

const OpMap<InlineMath>* inline_table(int element_bits) {
  return element_bits == 32 ? &inline_f32() : element_bits == 64 ? &inline_f64() : nullptr;
}

}  // namespace

bool has_inline_math(const OpNode& op, int element_bits) {
  const OpMap<InlineMath>* table = inline_table(element_bits);
  return table != nullptr && table->find(&op) != nullptr;
}

Value* emit_inline_math(llvm::IRBuilderBase& b, const OpNode& op, Value* x) {
  llvm::Type* element = x->getType()->getScalarType();
  const int bits = element->isFloatTy() ? 32 : element->isDoubleTy() ? 64 : 0;
  PRIMJIT_ICHECK(has_inline_math(op, bits))
      << "inline math: T." << op.name << " has no inline form for this type";
  return (*inline_table(bits)->find(&op))(b, x);
}

bool has_ranged_math(const OpNode& op, int element_bits) {
  return element_bits == 64 && ranged_f64().find(&op) != nullptr;
}

Value* emit_ranged_math(llvm::IRBuilderBase& b, const OpNode& op, Value* x, Value** in_range) {
  PRIMJIT_ICHECK(x->getType()->getScalarType()->isDoubleTy() && has_ranged_math(op, 64))
      << "inline math: T." << op.name << " has no ranged form for this type";
  return (*ranged_f64().find(&op))(b, x, in_range);
}

}  // namespace primjit::jit
