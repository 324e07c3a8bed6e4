#include "bench/host_reference.h"

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

}  // namespace primjit::bench
