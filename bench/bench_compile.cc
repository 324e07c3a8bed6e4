// Placeholder; filled in by the benchmark work of issue #11.
#include "bench/bench_main.h"

PRIMJIT_BENCHMARK_MAIN()
