// The shared main() of primjit's benchmarks: a benchmark that finds a wrong result calls
// bench::fail(), and the program then exits 1 so a broken benchmark fails its ctest run.
#pragma once

#include <benchmark/benchmark.h>

#include <atomic>

namespace primjit::bench {

inline std::atomic<bool>& failed() {
  static std::atomic<bool> flag{false};
  return flag;
}

/// Marks the run as failed (the caller decides whether to also skip the benchmark).
inline void fail() { failed() = true; }

inline int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return failed() ? 1 : 0;
}

}  // namespace primjit::bench

#define PRIMJIT_BENCHMARK_MAIN() \
  int main(int argc, char** argv) { return ::primjit::bench::run_benchmarks(argc, argv); }
