// Random well-typed, runnable programs for the differential fuzzer, in two families.
//
// Fixed shapes (generate_program): every program has one signature, so inputs are easy to make
// and compare:
//   main(I: int32[16], J: int32[16], F: float32[16], G: float32[16], M: float32[16],
//        M64: float64[16], n: int32, x: float32)
// and a body of stores (some overwritten by the next), Binds, ifs (some guarding on a loop
// variable), serial loops and views that alias the parameters (a Bind of X.data and a buffer
// declared on it, 1-D or 2-D), over int and float arithmetic, floor and trunc division,
// min/max, casts, selects, if_then_else, comparisons and logic, the math builtins of the op
// table, and 4-lane vectors (Ramp/Broadcast), reductions marked T.vectorized into a local
// accumulator; scalar expressions repeat now and then. So the cleanup passes
// (FlattenBuffer, Simplify, CommonSubexprElim, RemoveNoOp) get work. Indices are reduced modulo
// the extent, so every access is in bounds. What the program computes depends on the rules of
// docs/semantics.md (division by zero, NaN in min/max, float-to-int saturation, no
// contraction); Features can leave a family out, to tell a failure's cause apart.
//
// Math (the op table's float math builtins, asked of the table, none named here): those exact
// on every backend (max_ulp 0: sqrt, fabs, floor, fmod, fma, ...; isnan/isinf/isfinite in
// conditions) appear anywhere, like any other operation. The inexact ones (max_ulp > 0: exp,
// log, sin, tanh, sigmoid, erf, pow, ...) are only ever the whole value stored to a math sink,
// M (float32) or M64 (float64, of float32 arguments cast), which no expression reads and no
// view aliases; their arguments are exact expressions. So every other output is bit-identical
// on every backend, and each element of a sink is one math result, on which the backends agree
// within twice the op's bound (each is within max_ulp of the exactly rounded value): an inexact
// result never feeds further arithmetic, a branch or an index, where its error could grow
// without bound. Sink stores come as scalars, as 4-lane vectors (vector math through libmvec)
// and inside loops marked T.vectorized (LLVM's loop vectorizer, with libmvec's variants).
//
// Symbolic shapes (generate_symbolic_program): the same parameters, M and M64 now of shape
// (d,), and
//   A: float32[d], B: int32[d], C: float32[e, d]
// with shape variables d and e, called with several shapes (0, 1, 15, 16, 17, 32, ...). Loop
// nests over d and e (serial or T.unroll with any body; T.vectorized or T.parallel with an
// elementwise one; 2-D; tiled by a power of two with a guard for the partial tile; vectorized
// reductions of d elements) read and write A, B, C and the sinks only inside loops over their
// dimensions (indices are the loop variables, or anything reduced modulo the dimension, which is
// then at least 1); d, e and n appear in branch conditions inside the nests. So VersionLoops
// and the kDynamic and kBucketed variants get work.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/ir/op.h"
#include "primjit/ir/stmt.h"

namespace primjit::fuzz {

constexpr int kExtent = 16;  // elements of every fixed-shape parameter buffer
constexpr int kLanes = 4;    // lanes of vector accesses

struct Features {
  /// Divisors of every sign, zero included, and INT_MIN / -1 (else divisors are >= 1).
  bool any_divisor = true;
  /// Casts from float to int (NaN, infinities and out-of-range values included).
  bool float_to_int = true;
  /// Min and max of floats (NaN operands included).
  bool float_min_max = true;
  /// a * b + c in float (a backend may not contract it on its own).
  bool float_mul_add = true;
  /// Vector loads, stores and arithmetic.
  bool vectors = true;
  /// Views on the parameters' memory (aliasing stores).
  bool views = true;
  /// Reductions marked T.vectorized (LowerVectorReductions' fixed order: llvm and emu must agree
  /// bit for bit) of +, *, max, min over int32 and float32.
  bool reductions = true;
  /// Inexact math builtins (max_ulp > 0), stored to M and M64 (compared within their bound).
  bool inexact_math = true;
};

/// The float math builtins of the op table (float in, the same float type out): those exact on
/// every backend (max_ulp 0) when `exact`, else those with an error bound, in table order.
std::vector<Op> float_math_ops(bool exact);

/// The generated fixed-shape function for `seed` (deterministic).
PrimFunc generate_program(uint64_t seed, const Features& features);

/// The generated function with symbolic shapes for `seed` (deterministic).
PrimFunc generate_symbolic_program(uint64_t seed, const Features& features);

/// The names of the math sinks, the buffers that hold the inexact math results (float32 and
/// float64).
inline constexpr const char* kMathSink = "M";
inline constexpr const char* kMathSink64 = "M64";
inline bool is_math_sink(const std::string& name) {
  return name == kMathSink || name == kMathSink64;
}

/// The bound, in ulp, within which the backends' values of the math sinks agree: twice the
/// largest max_ulp of the math ops in the values `func` stores to them (0 when it stores none).
/// Read from the program, so it holds for minimized and hand-written programs alike.
int math_sink_tolerance(const PrimFunc& func);

}  // namespace primjit::fuzz
