// Vector math for host code: the float math builtins that glibc's vector math library
// (libmvec.so.1, the x86-64 vector function ABI: `_ZGVdN4v_exp` ...) provides, on vectors of
// any lane count and inside the loops LLVM's loop vectorizer widens.
//
// - float32 lanes are computed by the float64 variant and rounded once: the float64 variants
//   err by at most a few ulp of float64, so the float32 result is within 1 ulp of the exactly
//   rounded one (almost always equal to it, as glibc's scalar float functions are), and zeros,
//   infinities, NaN, denormals, overflow and underflow come out as libm gives them. libmvec's
//   own float variants err by up to 3.6 ulp (logf), beyond the op table's bounds.
// - float64 lanes use the float64 variant only where its measured error (vectorMathTable in
//   vector_math.cc) plus half an ulp is within the op's max_ulp; other ops stay scalar libm
//   calls in float64.
// - The variant width follows the host CPU: AVX2 (d), AVX (c), else SSE2 (b); the AVX-512
//   variants (e) are not used (their 512-bit arguments need a calling convention the JIT's
//   256-bit preference does not give; AVX2 variants run on AVX-512 hosts).
// - A scalar call gets the `vector-function-abi-variant` attribute naming internal helpers of
//   2..16 lanes, so the loop vectorizer can widen it; a vector call calls the helper directly.
//
// - exp and tanh on float32, and every float64 op but exp10, log10, tan and pow, are not library
//   calls: emit_math_call computes them inline (jit/llvm/inline_math.h), which has_vector_math
//   counts as a vector form. Float64 sin and cos keep scalar libm calls, whose vector helpers
//   compute them inline (emit_ranged_math) and call libm only on the lanes beyond its range.
//
// The interface is free of LLVM headers; callers that build IR include LLVM themselves.
#pragma once

#include <string>
#include <vector>

#include "primjit/ir/op.h"

namespace llvm {
class IRBuilderBase;
class Value;
}  // namespace llvm

namespace primjit::jit {

/// The shared library the vector variants live in (the ORC engine loads it).
inline constexpr const char* kVectorMathLibrary = "libmvec.so.1";

/// Whether this host's CPU has `feature` (LLVM's name: "avx2", "fma"), as the JIT's target
/// machine, which is made for the host, sees it.
bool host_cpu_has(const char* feature);

/// Whether `op` on `element_bits`-bit floats (32 or 64) has a vector form on this host.
bool has_vector_math(const OpNode& op, int element_bits);

/// `op->libm` applied to `args` (float32 or float64, scalars or vectors of one type): a scalar
/// libm call that the loop vectorizer can widen, a call of a vector helper, or, for vectors
/// without a vector form, a scalar call per lane. `libm` names the double function (the op
/// table's libm column).
llvm::Value* emit_math_call(llvm::IRBuilderBase& b, const OpNode& op, const std::string& libm,
                            const std::vector<llvm::Value*>& args);

}  // namespace primjit::jit
