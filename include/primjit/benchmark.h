// Timing kernels the way performance engineers do: warm up, then time many cached calls.
//
//   primjit::BenchOptions opt;
//   opt.bytes = 3.0 * n * sizeof(float);                 // optional: report GB/s too
//   primjit::BenchResult r = k.benchmark(a, b, 2.0f, opt);
//   std::cout << primjit::to_string(r);                  // or primjit::to_json(r)
//
// Kernel::benchmark (declared in jit.h) first calls the kernel once, untimed: that call compiles
// when the arguments' variant is not cached yet, so compilation is never timed. It then calls
// it for `warmup_ms` more (at least once) and estimates the time of one call, picks the number
// of timed repetitions that fills `budget_ms` (within [min_reps, max_reps], or exactly `reps`),
// and times each one:
//   - target cuda: CUDA events recorded on the kernel's stream (KernelOptions::cuda_stream)
//     around each call give the device time; with `flush_l2`, a buffer twice the size of the
//     GPU's L2 cache is overwritten before each repetition, outside the timed events, so every
//     repetition starts with a cold L2. Repetitions are queued without waiting for each other
//     (at most 64 in flight), so the GPU never idles between them.
//   - llvm and emu: std::chrono::steady_clock around each call (the call is the work; caches
//     are not flushed).
// The host-side dispatch time, the CPU time the call itself takes, is reported separately; on
// the GPU the launch is asynchronous, so it is the launch overhead. On the CPU it equals the
// device time. It includes waiting when the driver's launch queue is full.
#pragma once

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

namespace primjit {

struct BenchOptions {
  /// Milliseconds of untimed warm-up calls after the first (compiling) call; at least one
  /// warm-up call is always made, and it estimates the time of a call.
  double warmup_ms = 25;
  /// Milliseconds the timed repetitions should take together (estimated from the warm-up).
  double budget_ms = 100;
  /// Bounds on the number of timed repetitions the budget picks.
  int min_reps = 5;
  int max_reps = 10000;
  /// When positive: exactly this many timed repetitions (budget_ms, min_reps, max_reps unused).
  int reps = 0;
  /// GPU only: overwrite a buffer of twice the L2 size before each repetition.
  bool flush_l2 = true;
  /// Bytes moved and floating-point operations done by one call. When positive, the result
  /// reports GB/s and GFLOP/s at the median device time.
  double bytes = 0;
  double flops = 0;
};

/// Order statistics of timing samples, in milliseconds.
struct TimeStats {
  int64_t count = 0;
  double min_ms = 0;
  double median_ms = 0;
  double mean_ms = 0;
  double p90_ms = 0;  // 90th percentile
  double max_ms = 0;
  double stddev_ms = 0;  // population standard deviation
};

struct BenchResult {
  std::string kernel;  // the function's name
  std::string target;  // the target kind: "llvm", "cuda" or "emu"
  /// The device that ran the work: the GPU's name, or the CPU's model name.
  std::string device_name;
  std::string timer;  // "cuda_event" or "steady_clock"
  /// The arguments: tensors as "float32[128, 64] on cpu", scalars as their value.
  std::vector<std::string> args;
  int64_t warmup_calls = 0;        // untimed calls before the timed ones, the first one included
  bool l2_flushed = false;         // whether the L2 cache was flushed before each repetition
  TimeStats device;                // time of the work (CUDA events; on the CPU the call itself)
  TimeStats host;                  // CPU time of the call: the host-side dispatch time
  std::vector<double> samples_ms;  // the device time of each repetition, in order
  double bytes = 0;                // as given in BenchOptions
  double flops = 0;
  double gb_per_s = 0;     // bytes / median device time; 0 when bytes is 0
  double gflop_per_s = 0;  // flops / median device time; 0 when flops is 0
};

/// Statistics of `samples_ms` (any order). Percentiles interpolate linearly between the two
/// closest ranks (p at position p * (count - 1) of the sorted samples), so the median of an
/// even count is the mean of the middle two. All zero when there are no samples.
TimeStats summarize(std::vector<double> samples_ms);

/// A result from per-repetition device and host times (same count) and the options' bytes
/// and flops: statistics, rates and samples; the descriptive fields are left empty.
BenchResult summarize(std::vector<double> device_ms, std::vector<double> host_ms,
                      const BenchOptions& options);

/// Throws primjit::Error naming the field when `options` is not usable (negative budgets,
/// repetition bounds out of order, ...).
void validate(const BenchOptions& options);

/// A few lines for people: the setup, device and host statistics in microseconds, the rates.
std::string to_string(const BenchResult& result);

/// The result as one JSON object, schema "primjit-bench/1" (README, "Benchmark a kernel").
std::string to_json(const BenchResult& result);

namespace detail {
/// True when the last of Ts is a BenchOptions (Kernel::benchmark's variadic form).
template <typename... Ts>
constexpr bool last_is_bench_options() {
  if constexpr (sizeof...(Ts) == 0) {
    return false;
  } else {
    using Last = std::tuple_element_t<sizeof...(Ts) - 1, std::tuple<std::remove_cvref_t<Ts>...>>;
    return std::is_same_v<Last, BenchOptions>;
  }
}
/// True when the first of Ts converts to To (the argument span of Kernel::benchmark).
template <typename To, typename... Ts>
constexpr bool first_converts_to() {
  if constexpr (sizeof...(Ts) == 0) {
    return false;
  } else {
    return std::is_convertible_v<std::tuple_element_t<0, std::tuple<Ts...>>, To>;
  }
}
}  // namespace detail

}  // namespace primjit
