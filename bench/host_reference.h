// The loops bench_host_codegen compares the JIT with, compiled by g++ -O3 -march=native
// -ffp-contract=off (the JIT's rounding: a * b + c fused only where the code says fma).
#pragma once

#include <cstdint>

namespace primjit::bench {

void saxpy_reference(int64_t n, float alpha, const float* a, const float* b, float* c);
/// The same with one rounding: c[i] = fma(a[i], alpha, b[i]).
void saxpy_fma_reference(int64_t n, float alpha, const float* a, const float* b, float* c);
int32_t sum_reference(int64_t n, const int32_t* a);
/// Float sum and max of a[0, n) (n >= 1), compiled with -ffast-math (host_reference_fast_math.cc).
float sum_fast_math_reference(int64_t n, const float* a);
float max_fast_math_reference(int64_t n, const float* a);
/// Row softmax of a (n / 256) x 256 matrix into b (bench_host_codegen's kSoftmax).
void softmax_reference(int64_t n, const float* a, float* b);
void softmax_fast_math_reference(int64_t n, const float* a, float* b);
/// b[i] = exp(a[i]) + tanh(a[i]) + 1 / (1 + exp(-a[i])).
void activations_reference(int64_t n, const float* a, float* b);
void activations_fast_math_reference(int64_t n, const float* a, float* b);

}  // namespace primjit::bench
