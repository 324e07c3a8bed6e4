// The g++ side of the peer benchmark: each kernel of the table as plain C++ loops, compiled by
// g++ -O3 -march=native. The unscheduled variants (saxpy naive, matmul naive / ikj, softmax
// plain) round as the JIT does (-ffp-contract=off, serial order, libm expf); the scheduled
// ones are what g++ makes of the same schedule at its best: rows or chunks spread over oneTBB,
// and softmax's reductions and expf vectorized under -ffast-math (reference_fast_math.cc), the
// reassociation that primjit's T.vectorized and Halide's rfactor ask for. Matrices are square
// n x n and row-major; softmax's X and Y are rows x cols, row-major.
#pragma once

#include <cstdint>

namespace primjit::bench::peers {

/// Rows of 4 and columns of 16 per register tile of the tiled matmul (every implementation):
/// n must be a multiple of 16.
inline constexpr int64_t kTileRows = 4;
inline constexpr int64_t kTileCols = 16;
/// Elements per parallel chunk of the scheduled saxpy.
inline constexpr int64_t kSaxpyChunk = 8192;

void saxpy_naive_gxx(int64_t n, float alpha, const float* a, const float* b, float* c);
void saxpy_scheduled_gxx(int64_t n, float alpha, const float* a, const float* b, float* c);

void matmul_naive_gxx(int64_t n, const float* a, const float* b, float* c);
void matmul_ikj_gxx(int64_t n, const float* a, const float* b, float* c);
void matmul_parallel_gxx(int64_t n, const float* a, const float* b, float* c);
void matmul_tiled_gxx(int64_t n, const float* a, const float* b, float* c);

void softmax_plain_gxx(int64_t rows, int64_t cols, const float* x, float* y);
void softmax_scheduled_gxx(int64_t rows, int64_t cols, const float* x, float* y);
/// One row of the scheduled softmax (reference_fast_math.cc).
void softmax_row_fast_math(int64_t cols, const float* x, float* y);

}  // namespace primjit::bench::peers
