// Stands in for the CUDA toolkit's header on the CPU path; cuda_on_cpu.h defines
// half.
#pragma once
#include "cuda_on_cpu.h"
