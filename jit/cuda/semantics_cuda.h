// The CUDA C helpers through which generated device code computes the operations whose C
// operators leave some inputs undefined or give other results than docs/semantics.md: integer
// division by zero and MIN / -1, shifts by the width or more, float to integer out of range or
// NaN, NaN and signed zeros in floating min/max, and the floor forms of division. codegen_cuda
// emits each group once, only when the kernel uses it, and calls the helpers by name.
//
// The interface is free of CUDA headers.
#pragma once

#include <string>
#include <vector>

namespace primjit::jit {

enum class SemanticsHelper {
  kIntDivision,     // primjit_truncdiv/truncmod/floordiv/floormod for int, long long and unsigned
  kFloorModFloat,   // primjit_floormod(float|double a, float|double b) = a - floor(a / b) * b
  kFloorModNarrow,  // primjit_floormod_narrow<T>(T a, T b): half, bfloat16, float8, rounding
                    // every step to T as the IR's narrow arithmetic does
  kFloatMinMax,     // primjit_fmin/primjit_fmax(float|double): IEEE 754-2019 minimumNumber
  kShift,           // primjit_shl<T, U>(a, n), primjit_shr<T, U>(a, n); U: T's unsigned type
  kFloatToInt,      // primjit_ftoi<T, F>(x, lo, hi, min, max): saturating, NaN to 0
};

/// The CUDA C definitions of `helper` (device functions, forced inline), with a comment line.
std::string semantics_helper_source(SemanticsHelper helper);

/// Every name the helpers define: no local variable of generated code may hide one.
const std::vector<std::string>& semantics_helper_names();

}  // namespace primjit::jit
