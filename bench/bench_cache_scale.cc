// The variant cache at the scale of a service that specializes for every shape it sees: one
// kernel called with N distinct shapes (each a new exact variant) under the default capacity of
// 256 variants in memory. Reports the cost of a new key early and late in the run (it must not
// grow with the number of keys seen: no scan of history) and resident memory after 1,000 keys
// and after N (it must stay bounded by the capacity: evicted variants and their history go).
// The kernel runs on emu so that a variant costs lowering, not LLVM, and 100k fit in minutes.
// "early" is the 1,000 keys after the first tenth (the allocator's warm-up is over by then),
// "late" the last 1,000; times are this thread's CPU time.
//   bench_cache_scale --benchmark_filter='/100000'   (the figure in bench/README.md)
#include <unistd.h>

#include <cstdio>
#include <ctime>
#include <fstream>

#include "bench/bench_main.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit {
namespace {

double resident_mb() {
  long pages = 0, resident = 0;
  std::ifstream("/proc/self/statm") >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(::sysconf(_SC_PAGESIZE)) / 1048576.0;
}

// CPU time of this thread: other processes on the machine do not count.
double thread_cpu_ns() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// B[0] = A[0] + n: every length is a new exact variant, and a call touches one element.
PrimFunc add_n() {
  return parse(R"(
@T.prim_func
def add_n(a: T.handle, b: T.handle):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    B[0] = A[0] + T.Cast("float32", n)
)")
      ->lookup("add_n");
}

void BM_DistinctShapes(benchmark::State& state) {
  const int64_t n = state.range(0);
  const int64_t window = std::min<int64_t>(1000, n / 4);
  for (auto _ : state) {
    Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});  // capacity: the default 256
    Kernel k = jit.kernel(add_n(), {.target = Target::emu(), .recompile_limit = 1 << 30});
    // One tensor pair of N elements, viewed with a different length each call (the kernel
    // touches element 0 only).
    Tensor a = Tensor::zeros({n}, DataType::Float(32)), b = Tensor::zeros({n}, DataType::Float(32));
    DLTensor va = *a.dl(), vb = *b.dl();
    int64_t shape = 0;
    va.shape = vb.shape = &shape;
    double early_ns = 0, late_ns = 0, rss_1k = 0;
    for (int64_t i = 0; i < n; ++i) {
      shape = i + 1;
      double start = thread_cpu_ns();
      k(&va, &vb);
      double ns = thread_cpu_ns() - start;
      if (i >= n / 10 && i < n / 10 + window) early_ns += ns;  // after the heap warmed up
      if (i >= n - window) late_ns += ns;
      if (i + 1 == 1000) rss_1k = resident_mb();
    }
    state.counters["new_key_us_early"] = early_ns / static_cast<double>(window) / 1e3;
    state.counters["new_key_us_late"] = late_ns / static_cast<double>(window) / 1e3;
    state.counters["rss_mb_after_1k"] = rss_1k;
    state.counters["rss_mb_after_n"] = resident_mb();
    state.counters["variants"] = static_cast<double>(k.stats().variants);
  }
}

}  // namespace
}  // namespace primjit

BENCHMARK(primjit::BM_DistinctShapes)
    ->Arg(4000)
    ->Arg(20000)
    ->Arg(100000)
    ->Iterations(1)
    ->Unit(benchmark::kSecond);

PRIMJIT_BENCHMARK_MAIN();
