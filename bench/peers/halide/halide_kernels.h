// The Halide 14 side of the peer benchmark: each kernel of the table as a Halide pipeline,
// JIT-compiled in this process (Halide's own LLVM 14, beside primjit's LLVM 19) for the host,
// with a schedule that matches the primjit loops (primjit_kernels.cc). Only this file's .cc
// includes Halide.h.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace primjit::bench::peers {

/// What one kernel computes on: saxpy out[n] = a[n] * alpha + b[n]; matmul out = a * b, all
/// n x n; softmax out = softmax of a's rows (rows x cols). Row-major; memory owned by the caller.
struct Arrays {
  int64_t n = 0;
  int64_t rows = 0;
  int64_t cols = 0;
  float alpha = 0;
  const float* a = nullptr;
  const float* b = nullptr;
  float* out = nullptr;
};

/// Compiles `kernel` (a name of the table) for `arrays` now and returns a call that runs it
/// once on them (Pipeline::realize into `out`). Throws std::invalid_argument for an unknown
/// name; Halide's errors are its exceptions.
std::function<void()> halide_runner(const std::string& kernel, const Arrays& arrays);

/// "Halide JIT target x86-64-linux-avx-avx2-..." (the target Halide compiles for).
std::string halide_description();

}  // namespace primjit::bench::peers
