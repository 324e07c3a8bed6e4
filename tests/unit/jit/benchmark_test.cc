// Kernel::benchmark: statistics on synthetic samples, what the timed region contains (cached
// calls only), repetition choice, option checks, the text and JSON reports, and GPU timing
// with CUDA events (skipped without a driver and a device; the GPU bundle runs it).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "examples/kernels.h"
#include "jit/cuda/driver.h"
#include "primjit/benchmark.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::Pair;
using test::scale_function;

// Options that keep a test fast: no warm-up budget (one warm-up call), a few repetitions.
BenchOptions quick(int reps = 5) {
  BenchOptions o;
  o.warmup_ms = 0;
  o.reps = reps;
  return o;
}

void expect_ordered(const TimeStats& s) {
  EXPECT_GT(s.count, 0);
  EXPECT_GT(s.min_ms, 0);
  EXPECT_LE(s.min_ms, s.median_ms);
  EXPECT_LE(s.median_ms, s.p90_ms);
  EXPECT_LE(s.p90_ms, s.max_ms);
  EXPECT_LE(s.min_ms, s.mean_ms);
  EXPECT_LE(s.mean_ms, s.max_ms);
}

// --- statistics on synthetic samples -------------------------------------------------------

TEST(BenchStats, OddCountInAnyOrder) {
  TimeStats s = summarize({5, 1, 4, 2, 3});
  EXPECT_EQ(s.count, 5);
  EXPECT_DOUBLE_EQ(s.min_ms, 1);
  EXPECT_DOUBLE_EQ(s.median_ms, 3);
  EXPECT_DOUBLE_EQ(s.mean_ms, 3);
  EXPECT_DOUBLE_EQ(s.p90_ms, 4.6);  // position 0.9 * 4 = 3.6: 4 + 0.6 * (5 - 4)
  EXPECT_DOUBLE_EQ(s.max_ms, 5);
  EXPECT_DOUBLE_EQ(s.stddev_ms, std::sqrt(2.0));
}

TEST(BenchStats, EvenCountInterpolates) {
  TimeStats s = summarize({4, 1, 3, 2});
  EXPECT_DOUBLE_EQ(s.median_ms, 2.5);  // mean of the middle two
  EXPECT_DOUBLE_EQ(s.p90_ms, 3.7);     // position 2.7: 3 + 0.7 * (4 - 3)
  EXPECT_DOUBLE_EQ(s.mean_ms, 2.5);
}

TEST(BenchStats, OneSampleAndNone) {
  TimeStats one = summarize({0.25});
  EXPECT_EQ(one.count, 1);
  for (double v : {one.min_ms, one.median_ms, one.mean_ms, one.p90_ms, one.max_ms}) {
    EXPECT_DOUBLE_EQ(v, 0.25);
  }
  EXPECT_DOUBLE_EQ(one.stddev_ms, 0);
  TimeStats none = summarize(std::vector<double>{});
  EXPECT_EQ(none.count, 0);
  EXPECT_DOUBLE_EQ(none.median_ms, 0);
  EXPECT_DOUBLE_EQ(none.max_ms, 0);
}

TEST(BenchStats, RatesAtTheMedianDeviceTime) {
  BenchOptions o;
  o.bytes = 2e9;
  o.flops = 4e9;
  BenchResult r = summarize({3, 1, 2}, {0.5, 0.1, 0.3}, o);
  EXPECT_DOUBLE_EQ(r.device.median_ms, 2);
  EXPECT_DOUBLE_EQ(r.host.median_ms, 0.3);
  EXPECT_DOUBLE_EQ(r.host.max_ms, 0.5);
  EXPECT_DOUBLE_EQ(r.gb_per_s, 1000);                       // 2e9 bytes in 2 ms
  EXPECT_DOUBLE_EQ(r.gflop_per_s, 2000);                    // 4e9 flops in 2 ms
  EXPECT_EQ(r.samples_ms, (std::vector<double>{3, 1, 2}));  // in repetition order
  EXPECT_DOUBLE_EQ(r.bytes, 2e9);

  BenchResult no_rates = summarize({1}, {1}, BenchOptions{});
  EXPECT_DOUBLE_EQ(no_rates.gb_per_s, 0);
  EXPECT_DOUBLE_EQ(no_rates.gflop_per_s, 0);
  EXPECT_ERROR_CONTAINS(summarize({1, 2}, {1}, BenchOptions{}),
                        "2 device samples but 1 host samples");
}

// --- the timed region ----------------------------------------------------------------------

TEST(Benchmark, TimesOnlyCachedCalls) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(1024);
  BenchOptions o;
  o.warmup_ms = 1;
  o.budget_ms = 5;
  o.max_reps = 200;
  BenchResult r = k.benchmark(p.a, p.b, 2.0f, o);
  p.expect_scaled(2.0f);

  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 1u);  // the first, untimed call compiled; no timed call did
  ASSERT_EQ(s.reasons.size(), 1u);
  EXPECT_EQ(s.reasons[0], "first call");
  EXPECT_EQ(s.calls, static_cast<uint64_t>(r.warmup_calls + r.device.count));
  EXPECT_EQ(s.hits, s.calls - 1);
  EXPECT_GE(r.warmup_calls, 2);  // the compiling call and at least one warm-up call
  EXPECT_GE(r.device.count, o.min_reps);
  EXPECT_LE(r.device.count, o.max_reps);
  EXPECT_EQ(r.samples_ms.size(), static_cast<size_t>(r.device.count));
  expect_ordered(r.device);
  // A cached call of 1024 multiplications is far below the compile of its variant.
  double compile_ms = s.compile.passes_ms + s.compile.host_ms;
  EXPECT_LT(r.device.min_ms, compile_ms);

  // CPU targets: a steady clock; the call is the work, so host and device times agree.
  EXPECT_EQ(r.kernel, "scale");
  EXPECT_EQ(r.target, "llvm");
  EXPECT_EQ(r.timer, "steady_clock");
  EXPECT_FALSE(r.device_name.empty());
  EXPECT_FALSE(r.l2_flushed);
  EXPECT_DOUBLE_EQ(r.host.median_ms, r.device.median_ms);
  EXPECT_EQ(r.args,
            (std::vector<std::string>{"float32[1024] on cpu", "float32[1024] on cpu", "2"}));

  // Benchmarking again compiles nothing.
  k.benchmark(p.a, p.b, 3.0f, quick());
  p.expect_scaled(3.0f);
  EXPECT_EQ(k.stats().misses, 1u);
}

// Under kBucketed a shape's calls run its exact variant once it is promoted: the benchmark
// promotes the shape after its first call, so that every timed call runs it (here a second
// shape of the bucket, whose first call takes the bucket's variant); no timed call compiles.
TEST(Benchmark, BucketedBenchmarkPromotesTheShape) {
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed});
  Pair first(2048);
  k(first.a, first.b, 1.0f);  // the kernel's first shape: its own exact variant
  Pair p(1024);
  BenchOptions o;
  o.warmup_ms = 0;  // one warm-up call: the promotion does not wait for promote_after of them
  o.budget_ms = 5;
  o.max_reps = 50;
  BenchResult r = k.benchmark(p.a, p.b, 2.0f, o);
  p.expect_scaled(2.0f);
  KernelStats s = k.stats();
  EXPECT_EQ(r.warmup_calls, 2);
  EXPECT_EQ(s.promotions, 2u);
  EXPECT_EQ(s.misses, 3u);
  ASSERT_EQ(s.reasons.size(), 3u);
  EXPECT_EQ(s.reasons[2], "n: bucket 16k (a larger multiple of 16) -> 1024");
  // The warm-up call after the promotion, and every timed call.
  EXPECT_EQ(s.promoted_calls, static_cast<uint64_t>(r.warmup_calls - 1 + r.device.count));
}

TEST(Benchmark, EveryCallingForm) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(64);
  Arg args[] = {p.a, p.b, 4.0f};
  BenchResult from_span = k.benchmark(std::span<const Arg>(args), quick(3));
  p.expect_scaled(4.0f);
  EXPECT_EQ(from_span.device.count, 3);
  EXPECT_EQ(k.benchmark(args, quick(4)).device.count, 4);  // an array converts to the span
  EXPECT_EQ(k.benchmark(p.a.dl(), p.b.dl(), 5.0, quick(2)).device.count, 2);
  p.expect_scaled(5.0f);
  // Without options: the default budgets (25 ms of warm-up, 100 ms of repetitions).
  BenchResult defaults = k.benchmark(p.a, p.b, 6.0f);
  p.expect_scaled(6.0f);
  EXPECT_GE(defaults.device.count, BenchOptions{}.min_reps);
  EXPECT_LE(defaults.device.count, BenchOptions{}.max_reps);
  EXPECT_EQ(k.stats().misses, 1u);
}

TEST(Benchmark, RepetitionsFromTheBudgetOrExact) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(16);
  EXPECT_EQ(k.benchmark(p.a, p.b, 1.0f, quick(7)).device.count, 7);
  BenchOptions o = quick(0);
  o.budget_ms = 0;  // no time to spend: the lower bound
  o.min_reps = 2;
  o.max_reps = 50;
  EXPECT_EQ(k.benchmark(p.a, p.b, 1.0f, o).device.count, 2);
  o.budget_ms = 1e9;  // more time than any call needs: the upper bound
  EXPECT_EQ(k.benchmark(p.a, p.b, 1.0f, o).device.count, 50);
}

TEST(Benchmark, InterpreterTargetUsesTheSteadyClock) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::emu()});
  int64_t n = 40;
  Tensor a = Tensor::zeros({n}, DataType::Float(32)), b = Tensor::zeros({n}, DataType::Float(32));
  Tensor c = Tensor::zeros({n}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = static_cast<float>(i);
    b.data<float>()[i] = 1;
  }
  BenchResult r = k.benchmark(a, b, c, quick(2));
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], static_cast<float>(i) + 1);
  EXPECT_EQ(r.target, "emu");
  EXPECT_EQ(r.timer, "steady_clock");
  EXPECT_EQ(r.device.count, 2);
  expect_ordered(r.device);
  EXPECT_EQ(k.stats().misses, 1u);
}

// --- errors --------------------------------------------------------------------------------

TEST(Benchmark, BadOptionsSayWhatToChange) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(8);
  auto expect_refused = [&](const BenchOptions& o, const std::string& message) {
    EXPECT_ERROR_CONTAINS(k.benchmark(p.a, p.b, 1.0f, o), message);
  };
  BenchOptions o = quick();
  o.warmup_ms = -1;
  expect_refused(o, "BenchOptions::warmup_ms must be a finite number >= 0, got -1");
  o = quick();
  o.budget_ms = std::numeric_limits<double>::quiet_NaN();
  expect_refused(o, "BenchOptions::budget_ms must be a finite number >= 0");
  o = quick();
  o.min_reps = 0;
  expect_refused(o, "BenchOptions::min_reps must be at least 1, got 0");
  o = quick();
  o.max_reps = 3;
  expect_refused(o,
                 "BenchOptions::max_reps (3) is below min_reps (5); raise max_reps or lower "
                 "min_reps");
  o = quick();
  o.reps = -2;
  expect_refused(o, "BenchOptions::reps must be >= 0, got -2");
  o = quick();
  o.bytes = -1;
  expect_refused(o, "BenchOptions::bytes must be a finite number >= 0");
  EXPECT_EQ(k.stats().calls, 0u);  // options are checked before anything runs
}

TEST(Benchmark, EmptyKernelAndBadArguments) {
  Kernel empty;
  Pair p(8);
  EXPECT_ERROR_CONTAINS(empty.benchmark(p.a, p.b, 1.0f), "benchmark of an empty Kernel");
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Tensor short_b = Tensor::zeros({3}, DataType::Float(32));
  EXPECT_ERROR_CONTAINS(k.benchmark(p.a, short_b, 1.0f, quick()),
                        "argument #1 ('B') of 'scale': expected shape[0] to match A.shape[0]");
  EXPECT_EQ(k.stats().misses, 0u);
}

// --- reports -------------------------------------------------------------------------------

BenchResult synthetic_result() {
  BenchOptions o;
  o.bytes = 1e6;
  BenchResult r = summarize({0.002, 0.001, 0.003}, {0.0005, 0.0004, 0.0006}, o);
  r.kernel = "k\"1\\";
  r.target = "llvm";
  r.device_name = "cpu\tmodel";
  r.timer = "steady_clock";
  r.args = {"float32[4] on cpu", "2"};
  r.warmup_calls = 12;
  return r;
}

TEST(BenchReport, JsonHasEveryDocumentedField) {
  std::string json = to_json(synthetic_result());
  for (const char* key :
       {"\"schema\": \"primjit-bench/1\"", "\"primjit_version\": \"", "\"kernel\": \"k\\\"1\\\\\"",
        "\"target\": \"llvm\"", "\"device_name\": \"cpu\\tmodel\"", "\"timer\": \"steady_clock\"",
        "\"args\": [\"float32[4] on cpu\", \"2\"]", "\"warmup_calls\": 12", "\"l2_flushed\": false",
        "\"device_ms\": {\"count\": 3, \"min\": 0.001, \"median\": 0.002, \"mean\": 0.002, "
        "\"p90\": 0.0028, \"max\": 0.003, \"stddev\": ",
        "\"host_ms\": {\"count\": 3, \"min\": 0.0004, \"median\": 0.0005", "\"bytes\": 1000000",
        "\"flops\": 0", "\"gb_per_s\": 500", "\"gflop_per_s\": null",
        "\"samples_ms\": [0.002, 0.001, 0.003]"}) {
    EXPECT_NE(json.find(key), std::string::npos) << key << "\n" << json;
  }
  EXPECT_EQ(json.front(), '{');
  EXPECT_EQ(json.substr(json.size() - 2), "}\n");
}

TEST(BenchReport, TextHasTheStatistics) {
  std::string text = to_string(synthetic_result());
  EXPECT_NE(text.find("benchmark of 'k\"1\\' on llvm (cpu\tmodel): 3 timed calls after 12 "
                      "warm-up calls, steady_clock\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("median"), std::string::npos) << text;
  // Microseconds: the device median is 2 us, the host minimum 0.4 us.
  EXPECT_NE(text.find("device          1.000        2.000        2.000        2.800        3.000"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("host            0.400"), std::string::npos) << text;
  EXPECT_NE(text.find("bandwidth 500.000 GB/s at the median"), std::string::npos) << text;
  EXPECT_EQ(text.find("GFLOP/s"), std::string::npos) << text;
}

// --- GPU -----------------------------------------------------------------------------------

using test::have_gpu;
using test::kCpu;
using test::kGpu;

TEST(BenchmarkCuda, EventsOnTheKernelStreamWithL2Flush) {
  if (!have_gpu()) GTEST_SKIP() << "no CUDA driver or device";
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  int64_t n = 1 << 20;
  Tensor a = Tensor::zeros({n}, DataType::Float(32)), b = Tensor::zeros({n}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = static_cast<float>(i % 1000);
    b.data<float>()[i] = 0.5f;
  }
  Tensor da = a.to(kGpu), db = b.to(kGpu), dc = Tensor::zeros({n}, DataType::Float(32), kGpu);
  BenchOptions o;
  o.warmup_ms = 2;
  o.budget_ms = 10;
  o.bytes = 3.0 * n * sizeof(float);
  BenchResult r = k.benchmark(da, db, dc, o);
  Tensor c = dc.to(kCpu);
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] + 0.5f);

  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.calls, static_cast<uint64_t>(r.warmup_calls + r.device.count));
  EXPECT_EQ(r.target, "cuda");
  EXPECT_EQ(r.timer, "cuda_event");
  EXPECT_EQ(r.device_name, jit::CudaDriver::get().device_info(0).name);
  EXPECT_EQ(r.l2_flushed, jit::CudaDriver::get().device_info(0).l2_cache_bytes > 0);
  expect_ordered(r.device);
  EXPECT_EQ(r.host.count, r.device.count);
  EXPECT_GT(r.host.max_ms, 0);
  EXPECT_GT(r.gb_per_s, 0);
  EXPECT_LT(r.device.min_ms, s.compile.device_compile_ms + s.compile.host_ms);

  o.flush_l2 = false;
  o.reps = 100;  // more than are kept in flight: event pairs are reused
  BenchResult warm = k.benchmark(da, db, dc, o);
  EXPECT_FALSE(warm.l2_flushed);
  EXPECT_EQ(warm.device.count, 100);
  expect_ordered(warm.device);
  EXPECT_EQ(k.stats().misses, 1u);
}

TEST(BenchmarkCuda, WithoutADriverSaysSo) {
  if (have_gpu()) GTEST_SKIP() << "a GPU is present";
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  std::vector<float> host(8);
  int64_t n = 8;
  DLTensor t{host.data(), kGpu, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  EXPECT_ERROR_CONTAINS(k.benchmark(&t, &t, &t, quick()), "no CUDA driver");
}

}  // namespace
}  // namespace primjit
