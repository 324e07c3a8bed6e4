#include "jit/llvm/inline_math.h"

#include <bit>
#include <cstdint>
#include <span>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/Module.h>

#include "jit/llvm/vector_math.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

using llvm::Value;

// e^r ~ sum kExpCoefficients[k] r^k for |r| <= 0.3466 (ln 2 / 2 = 0.34657...): the minimax
// polynomial of degree 8 for the relative error, 2^-40 at most (Remez exchange in float64 on a
// grid of 20001 points; rounded to float64 the coefficients keep that bound).
constexpr double kExpCoefficients[] = {
    0x1.ffffffffff7a4p-1,  0x1.ffffffffd55c2p-1,  0x1.00000000880a3p-1,
    0x1.555555a08b09cp-3,  0x1.55555404e9954p-5,  0x1.111082a3bc47ep-7,
    0x1.6c18b35eb0dc7p-10, 0x1.a1a82bcb377f0p-13, 0x1.9eda8b3d97cf9p-16,
};
// Beyond these arguments float32 exp is +inf (e^89 > 2^128) and 0 (e^-104 < 2^-150, half the
// smallest subnormal): clamping there changes no result and keeps 2^n a normal float64.
constexpr double kExpMax = 89.0;
constexpr double kExpMin = -104.0;
constexpr double kLog2E = 0x1.71547652b82fep0;
constexpr double kLn2 = 0x1.62e42fefa39efp-1;
// Float32 exp's constants: log2(e); ln 2 split into ln2_hi, whose 15 significant bits make
// n * ln2_hi exact for |n| <= 512 (so x - n * ln2_hi is exact with or without a fused
// multiply-add), and ln2_lo = ln 2 - ln2_hi rounded; the shifter 1.5 * 2^23 rounds t
// (|t| < 2^22) to the nearest integer n and holds n in its low bits. e^r ~ 1 + r + r^2 P(r) for
// |r| <= ln 2 / 2, P of degree 4 (minimax for the relative error of the whole, 2^-28.3 before
// the coefficients were rounded to float32; Lawson iterations in 50-digit arithmetic).
constexpr float kLog2EF = 0x1.715476p0f;
constexpr float kLn2HiF = 0x1.62e4p-1f;
constexpr float kLn2LoF = 0x1.7f7d1cp-20f;
constexpr float kShifterF = 0x1.8p23f;
constexpr float kExpF32Coefficients[] = {
    0x1.fffffcp-2f, 0x1.555492p-3f, 0x1.5558f2p-5f, 0x1.1239d4p-7f, 0x1.6a2448p-10f,
};
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

// exp of float32 lanes, in float32 arithmetic (see the header).
Value* exp_f32(llvm::IRBuilderBase& b, Value* x) {
  llvm::Type* type = x->getType();
  llvm::Type* bits = type->getWithNewType(b.getInt32Ty());
  auto f = [&](float v) { return llvm::ConstantFP::get(type, v); };
  auto i = [&](int32_t v) { return llvm::ConstantInt::get(bits, static_cast<uint64_t>(v), true); };
  // Comparisons that are false for NaN: NaN stays NaN through every step below.
  x = b.CreateSelect(b.CreateFCmpOGT(x, f(kExpMax)), f(kExpMax), x);
  x = b.CreateSelect(b.CreateFCmpOLT(x, f(kExpMin)), f(kExpMin), x);
  Value* shifted = mul_add(b, x, f(kLog2EF), f(kShifterF));
  Value* n = b.CreateFSub(shifted, f(kShifterF));
  Value* r = mul_add(b, n, f(-kLn2HiF), x);
  r = mul_add(b, n, f(-kLn2LoF), r);
  constexpr int kDegree = static_cast<int>(std::size(kExpF32Coefficients)) - 1;
  Value* p = f(kExpF32Coefficients[kDegree]);
  for (int k = kDegree - 1; k >= 0; --k) p = mul_add(b, p, r, f(kExpF32Coefficients[k]));
  Value* u = b.CreateFAdd(mul_add(b, b.CreateFMul(r, r), p, r), f(1.0f));
  // 2^n in two factors 2^n1 and 2^n2, n1 = floor(n / 2): both normal floats for n in
  // [-150, 129], so u * 2^n1 is exact and the one rounding is the last product's.
  Value* whole = b.CreateSub(b.CreateBitCast(shifted, bits), i(std::bit_cast<int32_t>(kShifterF)));
  Value* n1 = b.CreateAShr(whole, i(1));
  Value* n2 = b.CreateSub(whole, n1);
  auto power = [&](Value* e) {
    return b.CreateBitCast(b.CreateShl(b.CreateAdd(e, i(127)), i(23)), type);
  };
  return b.CreateFMul(b.CreateFMul(u, power(n1)), power(n2));
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

// The inline functions on float32, by op.
const OpMap<InlineMath>& inline_f32() {
  static const OpMap<InlineMath> table = [] {
    OpMap<InlineMath> m("host code generation's inline math");
    m.set("exp", exp_f32).set("tanh", tanh_f32);
    return m;
  }();
  return table;
}

}  // namespace

bool has_inline_math(const OpNode& op, int element_bits) {
  return element_bits == 32 && inline_f32().find(&op) != nullptr;
}

Value* emit_inline_math(llvm::IRBuilderBase& b, const OpNode& op, Value* x) {
  PRIMJIT_ICHECK(x->getType()->getScalarType()->isFloatTy() && has_inline_math(op, 32))
      << "inline math: T." << op.name << " has no inline form for this type";
  return (*inline_f32().find(&op))(b, x);
}

}  // namespace primjit::jit
