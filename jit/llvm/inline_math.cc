#include "jit/llvm/inline_math.h"

#include <bit>
#include <cstdint>
#include <limits>
#include <span>

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

// exp of float lanes in their own type (see the header), by `scheme`.
Value* exp_lanes(llvm::IRBuilderBase& b, Value* x, const ExpScheme& scheme) {
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
  }
  const std::span<const double> c = scheme.coefficients;
  Value* p = f(c.back());
  for (size_t k = c.size() - 1; k-- > 0;) p = mul_add(b, p, r, f(c[k]));
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

Value* log_f64(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* type = x->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt64Ty());
  auto c = [&](double v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int64_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  // Subnormal arguments are scaled by 2^52 first (exactly), and their exponent counts it.
  Value* tiny = b.CreateFCmpOLT(x, c(0x1p-1022));
  Value* scaled = b.CreateSelect(tiny, b.CreateFMul(x, c(0x1p52)), x);
  Value* ix = b.CreateBitCast(scaled, bits);
  // e such that m = scaled / 2^e lies in [sqrt(1/2), sqrt(2)): the exponent of scaled, less
  // one where its significand is below sqrt(1/2)'s.
  Value* e = b.CreateAShr(b.CreateSub(ix, i(0x3fe6a09e667f3bcd)), i(52));
  Value* m = b.CreateBitCast(b.CreateSub(ix, b.CreateShl(e, i(52))), type);
  Value* f = b.CreateFSub(m, c(1.0));  // exact: m is within a factor 2 of 1
  Value* s = b.CreateFDiv(f, b.CreateFAdd(c(2.0), f));
  Value* z = b.CreateFMul(s, s);
  const std::span<const double> coefficients = kLogF64Coefficients;
  Value* p = c(coefficients.back());
  for (size_t k = coefficients.size() - 1; k-- > 0;) p = mul_add(b, p, z, c(coefficients[k]));
  Value* r = b.CreateFMul(z, p);
  Value* hfsq = b.CreateFMul(b.CreateFMul(c(0.5), f), f);
  Value* k = b.CreateSIToFP(b.CreateAdd(e, b.CreateSelect(tiny, i(-52), i(0))), type);
  // k ln2_hi (exact: ln2_hi has 32 significant bits, |k| <= 1075) - ((f^2/2 - (s (f^2/2 + r) +
  // k ln2_lo)) - f): the small terms first, f (exact) last.
  Value* small = mul_add(b, s, b.CreateFAdd(hfsq, r), b.CreateFMul(k, c(kExpF64.ln2_lo)));
  Value* y =
      b.CreateFSub(b.CreateFMul(k, c(kExpF64.ln2_hi)), b.CreateFSub(b.CreateFSub(hfsq, small), f));
  // log(x < 0) = NaN, log(+-0) = -inf, log(+inf) = +inf, NaN stays NaN (the selects in this
  // order: a NaN argument fails every ordered comparison and is passed on by the last).
  y = b.CreateSelect(b.CreateFCmpOLT(x, c(0.0)), c(std::numeric_limits<double>::quiet_NaN()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(0.0)), c(-std::numeric_limits<double>::infinity()), y);
  y = b.CreateSelect(b.CreateFCmpOEQ(x, c(std::numeric_limits<double>::infinity())), x, y);
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
    m.set("exp", exp_f64).set("exp2", exp2_f64).set("log", log_f64);
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

}  // namespace primjit::jit
