// What the specialization policies cost over many shapes: one CPU matmul called with 20
// square shapes (16 multiples of 16 from 48 to 288, and 4 others), as a program whose sizes
// vary would call it.
//
//   BM_TwentyMatmulShapes/<policy>  per iteration a new Jit (no disk cache) and the 20 first
//                                   calls, timed (compiles and runs). Counters: compiles,
//                                   compile_ms (the Jit's stage times), and steady_ms, the 20
//                                   calls again once every variant exists, fastest of 5
//                                   rounds (the speed the policy's variants run at; compare it
//                                   between policies).
//   BM_TiledMatmul/<policy>/n:N/parallel:P
//                                   the same product in 32 x 32 tiles with guards for partial
//                                   tiles (outer tile loop T.parallel when P is 1), one variant,
//                                   one call per iteration. Counters: compile_ms of the variant
//                                   and min_ms, the fastest call. Under kDynamic the variant has
//                                   VersionLoops' fast path (M, N multiples of 32) and the
//                                   general one; #24 asks for <= 1.3x kExact's time.
#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/parallel_matmul.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSteadyRounds = 5;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

void BM_TwentyMatmulShapes(benchmark::State& state, Policy policy) {
  std::vector<MatmulOperands> operands;
  for (int64_t n : matmul_sizes()) operands.emplace_back(n);
  PrimFunc func = parse(parallel_matmul_text())->lookup("matmul");
  double compiles = 0, compile_ms = 0, steady_ms = 0;
  for (auto _ : state) {
    state.PauseTiming();
    JitOptions options;
    options.disk_cache = DiskCacheMode::kDisabled;
    auto jit = std::make_unique<Jit>(options);
    Kernel k = jit->kernel(func, {.policy = policy});
    state.ResumeTiming();
    for (MatmulOperands& o : operands) k(o.a, o.b, o.c);
    state.PauseTiming();
    // The fastest of a few rounds: on a loaded machine one round's time is mostly noise.
    double best = 0;
    for (int round = 0; round < kSteadyRounds; ++round) {
      Clock::time_point start = Clock::now();
      for (MatmulOperands& o : operands) k(o.a, o.b, o.c);
      double ms = ms_since(start);
      best = round == 0 ? ms : std::min(best, ms);
    }
    steady_ms += best;
    for (const MatmulOperands& o : operands) {
      if (!o.right()) {
        fail();
        return state.SkipWithError("wrong result");
      }
    }
    KernelStats s = k.stats();
    compiles += static_cast<double>(s.misses);
    compile_ms += s.compile.passes_ms + s.compile.host_ms + s.compile.load_ms;
    jit.reset();
    state.ResumeTiming();
  }
  auto avg = [&](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgIterations); };
  state.counters["compiles"] = avg(compiles);
  state.counters["compile_ms"] = avg(compile_ms);
  state.counters["steady_ms"] = avg(steady_ms);
}

// The tiled matmul at one size (the argument), compiled once: per iteration one call.
// Counters: compile_ms of its one variant (lowering, LLVM and loading), and the time per
// call (the benchmark's own time). Compare dynamic against exact: #24 asks for <= 1.3x.
void BM_TiledMatmul(benchmark::State& state, Policy policy) {
  const int64_t n = state.range(0);
  const bool parallel = state.range(1) != 0;
  std::string text = tiled_matmul_text(parallel);
  MatmulOperands o(n);
  JitOptions options;
  options.disk_cache = DiskCacheMode::kDisabled;
  Jit jit(options);
  Kernel k = jit.kernel(parse(text)->lookup("tiled_matmul"), {.policy = policy});
  k(o.a, o.b, o.c);
  if (!o.right()) {
    fail();
    return state.SkipWithError("wrong result");
  }
  KernelStats s = k.stats();
  double best = 0;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    k(o.a, o.b, o.c);
    double ms = ms_since(start);
    best = best == 0 ? ms : std::min(best, ms);
  }
  state.counters["compile_ms"] = s.compile.passes_ms + s.compile.host_ms + s.compile.load_ms;
  state.counters["min_ms"] = best;
}

BENCHMARK_CAPTURE(BM_TwentyMatmulShapes, exact, Policy::kExact)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TwentyMatmulShapes, bucketed, Policy::kBucketed)
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TwentyMatmulShapes, dynamic, Policy::kDynamic)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TiledMatmul, exact, Policy::kExact)
    ->ArgsProduct({{256, 384}, {0, 1}})
    ->ArgNames({"n", "parallel"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TiledMatmul, bucketed, Policy::kBucketed)
    ->ArgsProduct({{256, 384}, {0, 1}})
    ->ArgNames({"n", "parallel"})
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_TiledMatmul, dynamic, Policy::kDynamic)
    ->ArgsProduct({{256, 384}, {0, 1}})
    ->ArgNames({"n", "parallel"})
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN()
