// One row of the scheduled softmax, compiled by g++ -O3 -march=native -ffast-math: the max and
// sum reductions reassociate into vector lanes and expf becomes glibc's vector expf (libmvec).
#include <algorithm>
#include <cmath>

#include "bench/peers/halide/reference.h"

namespace primjit::bench::peers {

void softmax_row_fast_math(int64_t cols, const float* __restrict x, float* __restrict y) {
  float mx = x[0];
  for (int64_t j = 0; j < cols; ++j) mx = std::max(mx, x[j]);
  for (int64_t j = 0; j < cols; ++j) y[j] = std::exp(x[j] - mx);
  float s = 0.0f;
  for (int64_t j = 0; j < cols; ++j) s = s + y[j];
  for (int64_t j = 0; j < cols; ++j) y[j] = y[j] / s;
}

}  // namespace primjit::bench::peers
