// Stands in for the CUDA toolkit's header on the CPU path; cuda_on_cpu.h defines
// __nv_fp8_e4m3 and __nv_fp8_e5m2.
#pragma once
#include "cuda_on_cpu.h"
