// Stands in for the CUDA toolkit's header on the CPU path; cuda_on_cpu.h defines
// __nv_bfloat16.
#pragma once
#include "cuda_on_cpu.h"
