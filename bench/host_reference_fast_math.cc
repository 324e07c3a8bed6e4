// The float reductions bench_host_codegen compares LowerVectorReductions with, compiled by g++
// -O3 -march=native -ffast-math: g++ may reassociate them as it likes, which is what marking a
// reduction T.vectorized allows the JIT.
#include <algorithm>

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

}  // namespace primjit::bench
