// The g++ -O3 -march=native -ffp-contract=off loops of reference.h; parallel variants run
// their rows or chunks through oneTBB (the thread pool primjit's parallel loops use).
#include "bench/peers/halide/reference.h"

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace primjit::bench::peers {
namespace {

void saxpy_range(int64_t lo, int64_t hi, float alpha, const float* __restrict a,
                 const float* __restrict b, float* __restrict c) {
  for (int64_t i = lo; i < hi; ++i) c[i] = a[i] * alpha + b[i];
}

// C's rows [lo, hi) in i-k-j order (the inner loop over j vectorizes).
void matmul_ikj_rows(int64_t lo, int64_t hi, int64_t n, const float* __restrict a,
                     const float* __restrict b, float* __restrict c) {
  for (int64_t i = lo; i < hi; ++i) {
    float* row = c + i * n;
    for (int64_t j = 0; j < n; ++j) row[j] = 0.0f;
    for (int64_t k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      const float* brow = b + k * n;
      for (int64_t j = 0; j < n; ++j) row[j] = row[j] + aik * brow[j];
    }
  }
}

// Row tiles [lo, hi) (each kTileRows rows): a kTileRows x kTileCols block of C accumulated in
// registers over all of k, then stored. Written with vectors of 8 floats (GCC's vector
// extension): g++ vectorizes the plain loops of this tile but keeps the tile in memory, 7-10x
// slower (256^3: 16-24 ms against 2.4 ms on the machine of bench/README.md).
using Floats8 = float __attribute__((vector_size(32)));
constexpr int64_t kVectors = kTileCols / 8;
static_assert(kTileCols % 8 == 0);

void matmul_tile_rows(int64_t lo, int64_t hi, int64_t n, const float* __restrict a,
                      const float* __restrict b, float* __restrict c) {
  for (int64_t io = lo; io < hi; ++io) {
    for (int64_t jo = 0; jo < n / kTileCols; ++jo) {
      Floats8 acc[kTileRows][kVectors] = {};
      for (int64_t k = 0; k < n; ++k) {
        Floats8 brow[kVectors];
        std::memcpy(brow, b + k * n + jo * kTileCols, sizeof(brow));
        for (int64_t ii = 0; ii < kTileRows; ++ii) {
          const float aik = a[(io * kTileRows + ii) * n + k];
          for (int64_t v = 0; v < kVectors; ++v) acc[ii][v] = acc[ii][v] + aik * brow[v];
        }
      }
      for (int64_t ii = 0; ii < kTileRows; ++ii) {
        std::memcpy(c + (io * kTileRows + ii) * n + jo * kTileCols, acc[ii], sizeof(acc[ii]));
      }
    }
  }
}

}  // namespace

void saxpy_naive_gxx(int64_t n, float alpha, const float* a, const float* b, float* c) {
  saxpy_range(0, n, alpha, a, b, c);
}

void saxpy_scheduled_gxx(int64_t n, float alpha, const float* a, const float* b, float* c) {
  const int64_t chunks = (n + kSaxpyChunk - 1) / kSaxpyChunk;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, chunks), [&](const auto& r) {
    saxpy_range(r.begin() * kSaxpyChunk, std::min(n, r.end() * kSaxpyChunk), alpha, a, b, c);
  });
}

void matmul_naive_gxx(int64_t n, const float* a, const float* b, float* c) {
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < n; ++k) acc = acc + a[i * n + k] * b[k * n + j];
      c[i * n + j] = acc;
    }
  }
}

void matmul_ikj_gxx(int64_t n, const float* a, const float* b, float* c) {
  matmul_ikj_rows(0, n, n, a, b, c);
}

void matmul_parallel_gxx(int64_t n, const float* a, const float* b, float* c) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n),
                    [&](const auto& r) { matmul_ikj_rows(r.begin(), r.end(), n, a, b, c); });
}

void matmul_tiled_gxx(int64_t n, const float* a, const float* b, float* c) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n / kTileRows),
                    [&](const auto& r) { matmul_tile_rows(r.begin(), r.end(), n, a, b, c); });
}

void softmax_plain_gxx(int64_t rows, int64_t cols, const float* x, float* y) {
  for (int64_t r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    float* yr = y + r * cols;
    float mx = xr[0];
    for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, xr[j]);
    for (int64_t j = 0; j < cols; ++j) yr[j] = std::exp(xr[j] - mx);
    float s = 0.0f;
    for (int64_t j = 0; j < cols; ++j) s = s + yr[j];
    for (int64_t j = 0; j < cols; ++j) yr[j] = yr[j] / s;
  }
}

void softmax_scheduled_gxx(int64_t rows, int64_t cols, const float* x, float* y) {
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows), [&](const auto& range) {
    for (int64_t r = range.begin(); r < range.end(); ++r) {
      softmax_row_fast_math(cols, x + r * cols, y + r * cols);
    }
  });
}

}  // namespace primjit::bench::peers
