// Inline math for host code: float math builtins that primjit computes itself in LLVM IR,
// straight-line arithmetic without calls, so that LLVM's loop vectorizer widens it with the
// rest of the loop (and explicit vectors use it as is).
//
// T.exp on float32 (scalars and vectors): each lane in float64, rounded once to float32.
//   x is clamped to [-104, 89] (exp(-104) rounds to 0 and exp(89) overflows to +inf, so the
//   clamp changes no result; NaN passes it), n = nearest integer to x / ln 2 (the 1.5 * 2^52
//   shifter: its low bits hold n, no float-to-int conversion), r = x - n ln 2 (|r| <= ln 2 / 2
//   plus a few ulp), e^r by a degree 8 polynomial (minimax for the relative error on
//   [-0.3466, 0.3466]: 2^-40), times 2^n built from n's bits. In float64 the scaling is exact
//   and the range reduction errs by under 2^-46 relative, so before the rounding to float32 the
//   result is within 2^-40 of e^x: the float32 result is the exactly rounded one except where
//   e^x lies within 2^-40 relative of a midpoint between two floats, where it is 1 ulp off
//   (checked on all 2.24 billion floats in [-105, 90]: 1595 such with fused multiply-add, 1594
//   without; glibc's expf is off by 1 ulp on about 170 000 of them). Zeros, infinities, NaN,
//   subnormal results (a single rounding from float64), overflow and underflow come out
//   exactly rounded, as glibc's expf gives them. Within the op table's 2 ulp with margin.
//   Cost: about 0.9 ns per element on the AVX2 host (AMD EPYC) against 1.4 ns for libmvec's
//   float64 variant; libmvec's own float32 variant (0.43 ns) errs by up to 3 ulp.
//
// T.tanh on float32: in float64 on |x| (clamped to 10, where tanh is 1 in float32), sign copied
//   from x: 1 - 2 / (e^2|x| + 1) with e^2|x| as above, below |x| = 1/16 the odd Taylor series to
//   x^9 instead (the first form loses e^2|x|'s 2^-40 to cancellation there). Error before the
//   rounding to float32 under 2^-37 relative: on all 1.09 billion floats in [0, 10.5] the
//   result is exactly rounded but for 264, 1 ulp off. Zeros, subnormal arguments (tanh x = x),
//   infinities (+-1) and NaN as libm gives them. 2.2 ns per element against 3.6 ns for
//   libmvec's float64 variant.
//
// The interface is free of LLVM headers; callers that build IR include LLVM themselves.
#pragma once

#include "primjit/ir/op.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace primjit::jit {

/// Whether `op` on `element_bits`-bit floats is computed inline (emit_inline_math).
bool has_inline_math(const OpNode& op, int element_bits);

/// `op` applied to `x` (a float scalar or vector of the type has_inline_math accepted).
llvm::Value* emit_inline_math(llvm::IRBuilderBase& b, const OpNode& op, llvm::Value* x);

}  // namespace primjit::jit
