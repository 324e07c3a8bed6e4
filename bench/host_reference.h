// The loops bench_host_codegen compares the JIT with, compiled by g++ -O3 -march=native.
#pragma once

#include <cstdint>

namespace primjit::bench {

void saxpy_reference(int64_t n, float alpha, const float* a, const float* b, float* c);
int32_t sum_reference(int64_t n, const int32_t* a);

}  // namespace primjit::bench
