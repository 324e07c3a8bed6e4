// Inline math for host code: float math builtins that primjit computes itself in LLVM IR,
// straight-line arithmetic without calls, so that LLVM's loop vectorizer widens it with the
// rest of the loop (and explicit vectors use it as is).
//
// T.exp on float32 (scalars and vectors): in float32 lanes, eight to a 256-bit vector.
//   x is clamped to [-104, 89] (exp(-104) rounds to 0 and exp(89) overflows to +inf, so the
//   clamp changes no result; NaN passes it), n = nearest integer to x / ln 2 (the 1.5 * 2^23
//   shifter: its low bits hold n, no float-to-int conversion), r = x - n ln 2 in two steps
//   (Cody and Waite: ln 2 = ln2_hi + ln2_lo, n * ln2_hi exact), e^r = 1 + r + r^2 P(r) with P
//   of degree 4, times 2^n as two factors 2^n1 * 2^n2 (each a normal float, so the product
//   rounds once, also where the result is subnormal). On all 2.24 billion floats in
//   [-105, 90] every result is the exactly rounded one or 1 ulp from it: 17.4 million (0.77 %)
//   are 1 ulp off with fused multiply-add, 18.2 million (0.81 %) without; none further (the
//   op table allows 2). Zeros, infinities, NaN, overflow (from 88.7228394) and the results
//   1 (x near 0) and 0 (x below -103.972084) are exact; a subnormal result, like any other,
//   may be 1 ulp off (the no-FMA count is of the same scheme compiled without fused
//   operations). Cost: 0.41 ns per element of a 65536-element loop on the AVX2 host (AMD
//   EPYC), against 0.96 ns for a float64-lane version (degree 8, the exactly rounded result on
//   all but 1595 of those floats; this file until 2026-11) and 1.4 ns for libmvec's float64
//   variant; libmvec's float32 variant errs by up to 3 ulp.
//
// T.exp on float64: the same scheme in float64 lanes, four to a 256-bit vector: clamped to
//   [-746, 710], ln2_hi with 32 significant bits, P of degree 9 (2^-56.3 relative), 2^n as two
//   normal factors. On 140 million arguments (100 million uniform over [-746, 710], 20 million
//   with subnormal results, 20 million near 0) every result is the exactly rounded one
//   (against expl) or 1 ulp from it: 6.8 % 1 ulp off with fused multiply-add, 7.1 % without;
//   the special values and thresholds exact. 1.34 ns per element against 4.2 ns for the
//   scalar call of glibc's exp it replaces (libmvec's float64 exp errs beyond the 2 ulp bound).
//
// T.exp2 on float64: the same scheme with n = the nearest integer to x and r = (x - n) ln 2
//   (x - n exact, the product's rounding under 0.2 ulp of the result), clamped to
//   [-1076, 1025]. On 140 million arguments within 1 ulp of exp2l's, 7.1 % 1 ulp off (7.4 %
//   without FMA); integers give their powers of 2 exactly. 1.23 ns per element against 2.9 ns
//   for the scalar call of glibc's exp2.
//
// T.log on float64, in float64 lanes: x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormal x
//   scaled by 2^52 first), f = m - 1 (exact), s = f / (2 + f), log m = 2 atanh(s) = f - f^2/2 +
//   s (f^2/2 + s^2 P(s^2)) with P of degree 6, plus e ln 2 in two parts. On 120 million
//   arguments (random bits over all positive doubles, [0.5, 2], within 1e-6 of 1,
//   subnormals) every result is within 1 ulp of logl's, 2.6 % 1 ulp off (with or without FMA);
//   log(+-0) = -inf, log(x < 0) = NaN, log(+inf) = +inf, NaN passed on, log(1) = 0. 2.1 ns per
//   element against 4.1 ns for the scalar call of glibc's log it replaces.
//
// T.log2 on float64: log's reduction; log m = hi + lo with hi = f - f^2/2 cut to 21 significant
//   bits, so that hi times 1/ln 2's leading 21 bits is exact; the sum with e in two parts
//   (Fast2Sum). On 60 million arguments (as log's) within 1 ulp of log2l's, 0.69 % 1 ulp off
//   (the same without FMA), worst 0.87 ulp; powers of two exact, special values as log.
//   2.5 ns per element of a 65536-element loop of arguments in [0, 1) against 4.0 ns for the
//   scalar call of glibc's log2 it replaces (libmvec's float64 variants err beyond the bounds).
//
// T.log1p on float64: u = 1 + x rounded and its rounding error c (TwoSum, exact), log u by
//   log's scheme (u is never subnormal) with c / u added among its small terms. On 70 million
//   arguments (random bits, [-1, 1], down to 2^-60, up to 1e6, just above -1) within 1 ulp,
//   2.3 % 1 ulp off (2.5 % without FMA), worst 0.86 ulp; log1p(-1) = -inf, below NaN, +-0 and
//   subnormals exact. 2.4 ns per element against 9.2 ns (the same loop).
//
// T.tanh on float64: e / (e + 2) with e = e^2|x| - 1 (|x| clamped to 22, where tanh is 1):
//   n = floor(2|x| / ln 2), so that r = 2|x| - n ln 2 lies in [0, ln 2) and e = 2^n (e^r - 1) +
//   (2^n - 1) adds terms of one sign (no cancellation), e^r - 1 by a degree 11 polynomial
//   (2^-57.9 relative); the division corrected for the rounding of e + 2 (TwoSum) and its
//   own (the remainder, exact with FMA). On 70 million arguments within 2 ulp: 7.6 % 1 ulp
//   off and none further with FMA (worst 1.46 ulp); without FMA 13 % 1 ulp and 0.05 % 2 ulp
//   off (worst 1.93).
//   Zeros, subnormals (tanh x = x), infinities and NaN as libm. 2.8 ns against 14.6 ns.
//
// T.erf on float64: below |x| = 0.875 x + x P(x^2) (degree 10); beyond, 1 - e^-x^2 g(x) up
//   to 6 (erf rounds to 1 from 5.93 on) with g = erfc e^x^2 one polynomial (degree 14) in
//   u = 1 / (1 + x), corrected for u's two roundings by g's derivative, and e^-x^2 from x^2 in
//   two exact parts. On 80 million arguments within 1 ulp, 5.7 % 1 ulp off, worst 0.96 ulp
//   (without FMA 6.6 %, worst 1.23 ulp); a subnormal result may be 1 ulp off; zeros,
//   infinities and NaN as libm. Every lane computes both forms: 5.2 ns per element on [0, 1)
//   against 5.3 ns for glibc's scalar erf (its cheapest range), 5.6 ns against 20.7 ns on
//   [-6, 6].
//
// T.sin and T.cos on float64 (emit_ranged_math): n = nearest integer to x 2/pi, x - n pi/2 =
//   y + y_lo with pi/2 in three parts (33, 33 and 53 bits: n pi2_1 and n pi2_2 exact for
//   |x| <= 2^20), sin and cos of y + y_lo by degree 5 polynomials in y^2 (2^-56.4 and 2^-59.6
//   relative), n mod 4 picking one and the sign. Beyond 2^20, and for infinities and NaN, the
//   vector helper (vector_math.h) calls libm on each lane of the vector. On 52 million
//   arguments (the doubles nearest to k pi/2 included) within 1 ulp, 2.5 % 1 ulp off, worst
//   1.06 ulp; |x| < 2^-27 gives x and 1 exactly. 2.7 ns per element against 9.5 ns.
//
// T.tanh on float32: in float64 on |x| (clamped to 10, where tanh is 1 in float32), sign copied
//   from x: 1 - 2 / (e^2|x| + 1) with e^2|x| in float64 (the shifter and range reduction as
//   above, in float64, and a degree 8 polynomial with relative error 2^-40: exp_core), below
//   |x| = 1/16 the odd Taylor series to x^9 instead (the first form loses e^2|x|'s 2^-40 to
//   cancellation there). Error before the rounding to float32 under 2^-37 relative: on all
//   1.09 billion floats in [0, 10.5] the result is exactly rounded but for 264, 1 ulp off.
//   Zeros, subnormal arguments (tanh x = x), infinities (+-1) and NaN as libm gives them.
//   2.2 ns per element against 3.6 ns for libmvec's float64 variant.
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

/// Whether `op` on `element_bits`-bit floats has an inline form that holds for a range of
/// arguments only (emit_ranged_math): sin and cos on float64.
bool has_ranged_math(const OpNode& op, int element_bits);

/// `op` applied to `x` (float64, scalar or vector) where `*in_range` (set to an i1 of x's
/// shape) is true; the caller computes the other lanes otherwise (by libm).
llvm::Value* emit_ranged_math(llvm::IRBuilderBase& b, const OpNode& op, llvm::Value* x,
                              llvm::Value** in_range);

}  // namespace primjit::jit
