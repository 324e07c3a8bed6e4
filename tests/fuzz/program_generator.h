// Random well-typed, runnable programs for the differential fuzzer.
//
// Every program has one signature, so inputs are easy to make and compare:
//   main(I: int32[16], J: int32[16], F: float32[16], G: float32[16], n: int32, x: float32)
// and a body of stores (some overwritten by the next), Binds, ifs (some guarding on a loop
// variable), serial loops and views that alias the parameters (a Bind of X.data and a buffer
// declared on it, 1-D or 2-D), over int and float arithmetic, floor and trunc division,
// min/max, casts, selects, if_then_else, comparisons and logic, exact math builtins, and
// 4-lane vectors (Ramp/Broadcast), reductions marked T.vectorized into a local accumulator;
// scalar expressions repeat now and then. So the cleanup passes
// (FlattenBuffer, Simplify, CommonSubexprElim, RemoveNoOp) get work. Indices are reduced modulo
// the extent, so every access is in bounds. What the program computes depends on the rules of
// docs/semantics.md (division by zero, NaN in min/max, float-to-int saturation, no
// contraction); Features can leave a family out, to tell a failure's cause apart.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/ir/stmt.h"

namespace primjit::fuzz {

constexpr int kExtent = 16;  // elements of every parameter buffer
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
};

/// The generated function for `seed` (deterministic).
PrimFunc generate_program(uint64_t seed, const Features& features);

}  // namespace primjit::fuzz
