#include "bench/host_reference.h"

#include <algorithm>
#include <cmath>

namespace primjit::bench {

void saxpy_reference(int64_t n, float alpha, const float* __restrict__ a,
                     const float* __restrict__ b, float* __restrict__ c) {
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] * alpha + b[i];
}

void saxpy_fma_reference(int64_t n, float alpha, const float* __restrict__ a,
                         const float* __restrict__ b, float* __restrict__ c) {
  for (int64_t i = 0; i < n; ++i) c[i] = std::fma(a[i], alpha, b[i]);
}

int32_t sum_reference(int64_t n, const int32_t* a) {
  int32_t acc = 0;
  for (int64_t i = 0; i < n; ++i) acc += a[i];
  return acc;
}

void softmax_reference(int64_t n, const float* __restrict__ a, float* __restrict__ b) {
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

void activations_reference(int64_t n, const float* __restrict__ a, float* __restrict__ b) {
  for (int64_t i = 0; i < n; ++i) {
    b[i] = std::exp(a[i]) + std::tanh(a[i]) + 1.0f / (1.0f + std::exp(-a[i]));
  }
}

}  // namespace primjit::bench
