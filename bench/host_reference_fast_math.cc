// The float reductions bench_host_codegen compares LowerVectorReductions with, compiled by g++
// -O3 -march=native -ffast-math: g++ may reassociate them as it likes, which is what marking a
// reduction T.vectorized allows the JIT; and the math kernels as g++ vectorizes them only
// under -ffast-math (libmvec's float variants).
#include <algorithm>
#include <cmath>

#include "bench/host_reference.h"

namespace primjit::bench {

float sum_fast_math_reference(int64_t n, const float* a) {
  float acc = 0.0f;
  for (int64_t i = 0; i < n; ++i) acc += a[i];
  return acc;
}

float max_fast_math_reference(int64_t n, const float* a) {
  float acc = a[0];
  for (int64_t i = 0; i < n; ++i) acc = std::max(acc, a[i]);
  return acc;
}

void softmax_fast_math_reference(int64_t n, const float* __restrict__ a, float* __restrict__ b) {
  for (int64_t r = 0; r < n / 256; ++r) {
    const float* x = a + r * 256;
    float* y = b + r * 256;
    float m = x[0];
    for (int j = 0; j < 256; ++j) m = std::max(m, x[j]);
    float s = 0.0f;
    for (int j = 0; j < 256; ++j) {
      y[j] = std::exp(x[j] - m);
      s += y[j];
    }
    for (int j = 0; j < 256; ++j) y[j] = y[j] / s;
  }
}

void activations_fast_math_reference(int64_t n, const float* __restrict__ a,
                                     float* __restrict__ b) {
  for (int64_t i = 0; i < n; ++i) {
    b[i] = std::exp(a[i]) + std::tanh(a[i]) + 1.0f / (1.0f + std::exp(-a[i]));
  }
}

}  // namespace primjit::bench
