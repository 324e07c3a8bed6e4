// Tiered compilation (JitOptions::tiered): what the first call of a new shape costs once the
// generic variant exists, and how fast calls run after the switch to the specialized variant.
//
//   BM_NewShapeFirstCall/<mode>  a vector add (float32) called with 20 lengths it has not seen
//                                (1000 to 20000), each first call timed alone; mode tiered
//                                (the generic variant exists; the new shape's own variant
//                                compiles in the background, waited for between calls) or
//                                exact (the call compiles its variant). Counters over all
//                                first calls: first_median_us, first_us (the mean) and
//                                first_max_us.
//   BM_MatmulAfterSwitch/<mode>  the CPU matmul of bench_policy with its 20 square shapes:
//                                the 20 first calls (first_ms, their sum), then, once every
//                                variant exists (tiered: switched), the 20 calls again
//                                (steady_ms, after a 200 ms pause in every mode); modes
//                                tiered, exact (kExact, not tiered) and dynamic (kDynamic:
//                                the generic variant alone).
#include <algorithm>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/bench_main.h"
#include "bench/parallel_matmul.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

enum Mode { kTiered, kExactMode, kDynamicMode };

// Waits until `k` has switched `n` shapes to their own variants; false after a minute.
bool wait_for_switch_overs(const Kernel& k, uint64_t n) {
  Clock::time_point start = Clock::now();
  while (k.stats().switch_overs < n) {
    if (ms_since(start) > 60000) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return true;
}

constexpr const char* kVectorAdd = R"(
@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i]
)";

struct Vectors {
  Tensor a, b, c;
  explicit Vectors(int64_t n)
      : a(Tensor::zeros({n}, DataType::Float(32))),
        b(Tensor::zeros({n}, DataType::Float(32))),
        c(Tensor::zeros({n}, DataType::Float(32))) {
    for (int64_t i = 0; i < n; ++i) {
      a.data<float>()[i] = static_cast<float>(i);
      b.data<float>()[i] = 1.0f;
    }
  }
  bool right() const {
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (c.data<float>()[i] != static_cast<float>(i) + 1.0f) return false;
    }
    return true;
  }
};

void BM_NewShapeFirstCall(benchmark::State& state, Mode mode) {
  PrimFunc func = parse(kVectorAdd)->lookup("vadd");
  std::vector<Vectors> vectors;
  vectors.emplace_back(500);  // the first call (tiered: makes the generic variant)
  for (int64_t i = 0; i < 20; ++i) vectors.emplace_back(1000 + 1000 * i);
  std::vector<double> first_us;
  for (auto _ : state) {
    state.PauseTiming();
    auto jit = std::make_unique<Jit>(
        JitOptions{.disk_cache = DiskCacheMode::kDisabled, .tiered = mode == kTiered});
    Kernel k =
        jit->kernel(func, {.policy = mode == kDynamicMode ? Policy::kDynamic : Policy::kExact});
    k(vectors[0].a, vectors[0].b, vectors[0].c);
    if (mode == kTiered && !wait_for_switch_overs(k, 1)) {
      fail();
      return state.SkipWithError("the background compile did not finish");
    }
    state.ResumeTiming();
    for (size_t i = 1; i < vectors.size(); ++i) {
      Vectors& v = vectors[i];
      Clock::time_point start = Clock::now();
      k(v.a, v.b, v.c);
      double us = ms_since(start) * 1000;
      state.PauseTiming();
      first_us.push_back(us);
      // The next shape's call does not share the CPU with this one's background compile.
      if (!v.right() || (mode == kTiered && !wait_for_switch_overs(k, i + 1))) {
        fail();
        return state.SkipWithError("wrong result or no switch-over");
      }
      state.ResumeTiming();
    }
    state.PauseTiming();
    if (mode == kTiered && k.stats().tiered_calls != vectors.size()) {
      fail();
      return state.SkipWithError("a new shape's first call did not run the generic variant");
    }
    jit.reset();
    state.ResumeTiming();
  }
  if (first_us.empty()) return;
  std::sort(first_us.begin(), first_us.end());
  double total = 0;
  for (double us : first_us) total += us;
  state.counters["first_median_us"] = first_us[first_us.size() / 2];
  state.counters["first_us"] = total / static_cast<double>(first_us.size());
  state.counters["first_max_us"] = first_us.back();
}
BENCHMARK_CAPTURE(BM_NewShapeFirstCall, tiered, kTiered)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_NewShapeFirstCall, exact, kExactMode)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

void BM_MatmulAfterSwitch(benchmark::State& state, Mode mode) {
  std::vector<MatmulOperands> operands;
  for (int64_t n : matmul_sizes()) operands.emplace_back(n);
  PrimFunc func = parse(parallel_matmul_text())->lookup("matmul");
  double first_ms = 0, steady_ms = 0;
  for (auto _ : state) {
    state.PauseTiming();
    auto jit = std::make_unique<Jit>(
        JitOptions{.disk_cache = DiskCacheMode::kDisabled, .tiered = mode == kTiered});
    Kernel k =
        jit->kernel(func, {.policy = mode == kDynamicMode ? Policy::kDynamic : Policy::kExact});
    state.ResumeTiming();
    Clock::time_point start = Clock::now();
    for (MatmulOperands& o : operands) k(o.a, o.b, o.c);
    first_ms += ms_since(start);
    state.PauseTiming();
    if (mode == kTiered && !wait_for_switch_overs(k, operands.size())) {
      fail();
      return state.SkipWithError("the background compiles did not finish");
    }
    // Steady state: the background threads have finished their last jobs and exited.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    uint64_t tiered_calls = k.stats().tiered_calls;
    start = Clock::now();
    for (MatmulOperands& o : operands) k(o.a, o.b, o.c);
    steady_ms += ms_since(start);
    bool right = k.stats().tiered_calls == tiered_calls;  // all on specialized variants
    for (const MatmulOperands& o : operands) right = right && o.right();
    if (!right) {
      fail();
      return state.SkipWithError("wrong result, or a steady call ran the generic variant");
    }
    jit.reset();
    state.ResumeTiming();
  }
  auto avg = [&](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgIterations); };
  state.counters["first_ms"] = avg(first_ms);
  state.counters["steady_ms"] = avg(steady_ms);
}
BENCHMARK_CAPTURE(BM_MatmulAfterSwitch, tiered, kTiered)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulAfterSwitch, exact, kExactMode)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_MatmulAfterSwitch, dynamic, kDynamicMode)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN()
