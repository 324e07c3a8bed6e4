// Kernel::benchmark: warm-up, repetitions chosen by a time budget, CUDA events on the kernel's
// stream (with an optional L2 flush) or a steady clock, statistics, text and JSON reports.
// Uses only the public Kernel API and the driver wrapper.
#include "primjit/benchmark.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <numeric>
#include <sstream>

#include "jit/cuda/driver.h"
#include "jit/runtime/call_arguments.h"
#include "jit/runtime/kernel_state.h"
#include "jit/runtime/promotion.h"
#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/jit.h"
#include "primjit/version.h"

namespace primjit {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point start, Clock::time_point end) {
  return std::chrono::duration<double, std::milli>(end - start).count();
}

// Percentile p (0..1) of sorted, non-empty samples, interpolated between the closest ranks.
double percentile(const std::vector<double>& sorted, double p) {
  double position = p * static_cast<double>(sorted.size() - 1);
  size_t below = static_cast<size_t>(std::floor(position));
  size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

// Repetitions on the GPU queued ahead of the host: enough to keep the GPU busy, few enough that
// the driver's launch queue never fills (a full queue would make launches block).
constexpr int kMaxInFlight = 64;

// The CPU's model name from /proc/cpuinfo, or "cpu" where there is none.
std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("model name", 0) != 0) continue;
    size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    size_t begin = line.find_first_not_of(" \t", colon + 1);
    return begin == std::string::npos ? "cpu" : line.substr(begin);
  }
  return "cpu";
}

std::string describe_arg(const Arg& arg) {
  const PJValue& v = arg.value;
  switch (v.type_index) {
    case kPJDLTensorPtr:
      return v.v_ptr == nullptr ? "null tensor" : describe(*static_cast<const DLTensor*>(v.v_ptr));
    case kPJInt:
      return std::to_string(v.v_int64);
    case kPJBool:
      return v.v_int64 != 0 ? "true" : "false";
    case kPJFloat: {
      char text[32];
      std::snprintf(text, sizeof(text), "%.9g", v.v_float64);
      return text;
    }
    default:
      return type_index_name(v.type_index);
  }
}

// The repetitions to time when one call takes about `estimate_ms`.
int repetitions(const BenchOptions& o, double estimate_ms) {
  if (o.reps > 0) return o.reps;
  double wanted = estimate_ms > 0 ? std::ceil(o.budget_ms / estimate_ms) : o.max_reps;
  return static_cast<int>(
      std::clamp(wanted, static_cast<double>(o.min_reps), static_cast<double>(o.max_reps)));
}

struct Samples {
  std::vector<double> device_ms, host_ms;
};

// Untimed calls: the first one (it compiles when the variant is not cached; `after_first`
// then runs), then calls for warmup_ms, at least one. `wait` waits for a call's work. Returns
// the time of one warm-up call.
template <typename Call, typename AfterFirst, typename Wait>
double warm_up(const BenchOptions& o, Call&& call, AfterFirst&& after_first, Wait&& wait,
               int64_t* calls) {
  call();
  wait();
  after_first();
  Clock::time_point start = Clock::now();
  int64_t n = 0;
  double elapsed = 0;
  do {
    call();
    wait();
    ++n;
    elapsed = ms_between(start, Clock::now());
  } while (elapsed < o.warmup_ms);
  *calls = n + 1;
  return elapsed / static_cast<double>(n);
}

// CPU targets: the call is the work, so device and host time are the same measurement.
template <typename Call>
Samples time_on_cpu(int reps, Call&& call) {
  Samples s;
  s.device_ms.resize(reps);
  for (int i = 0; i < reps; ++i) {
    Clock::time_point start = Clock::now();
    call();
    s.device_ms[i] = ms_between(start, Clock::now());
  }
  s.host_ms = s.device_ms;
  return s;
}

// Events and a flush buffer, released however the timing ends.
class GpuResources {
 public:
  GpuResources(jit::CudaDriver& driver, int slots, size_t flush_bytes) : driver_(driver) {
    for (int i = 0; i < slots; ++i) {
      starts_.push_back(driver.create_event());
      ends_.push_back(driver.create_event());
    }
    if (flush_bytes > 0) {
      flush_ = driver.alloc(flush_bytes);
      flush_bytes_ = flush_bytes;
    }
  }
  ~GpuResources() {
    for (CUevent_st* e : starts_) driver_.destroy_event(e);
    for (CUevent_st* e : ends_) driver_.destroy_event(e);
    if (flush_bytes_ > 0) {
      try {
        driver_.free(flush_);
      } catch (const Error&) {  // the context is unusable; nothing left to release
      }
    }
  }
  GpuResources(const GpuResources&) = delete;
  GpuResources& operator=(const GpuResources&) = delete;

  CUevent_st* start(int slot) const { return starts_[slot]; }
  CUevent_st* end(int slot) const { return ends_[slot]; }
  jit::DevicePtr flush_buffer() const { return flush_; }
  size_t flush_bytes() const { return flush_bytes_; }

 private:
  jit::CudaDriver& driver_;
  std::vector<CUevent_st*> starts_, ends_;
  jit::DevicePtr flush_ = 0;
  size_t flush_bytes_ = 0;
};

// Target cuda: a pair of events around each call on the kernel's stream; the L2 flush goes
// before the start event. Up to kMaxInFlight repetitions are queued; each event pair is read
// (and reused) once its repetition is done.
template <typename Call>
Samples time_on_gpu(jit::CudaDriver& driver, CUstream_st* stream, int reps, size_t flush_bytes,
                    Call&& call) {
  int slots = std::min(reps, kMaxInFlight);
  GpuResources gpu(driver, slots, flush_bytes);
  Samples s;
  s.device_ms.resize(reps);
  s.host_ms.resize(reps);
  auto collect = [&](int rep) {
    int slot = rep % slots;
    driver.synchronize_event(gpu.end(slot));
    s.device_ms[rep] = driver.elapsed_ms(gpu.start(slot), gpu.end(slot));
  };
  for (int i = 0; i < reps; ++i) {
    int slot = i % slots;
    if (i >= slots) collect(i - slots);
    if (gpu.flush_bytes() > 0) driver.fill_async(gpu.flush_buffer(), 0, gpu.flush_bytes(), stream);
    driver.record_event(gpu.start(slot), stream);
    Clock::time_point start = Clock::now();
    call();
    s.host_ms[i] = ms_between(start, Clock::now());
    driver.record_event(gpu.end(slot), stream);
  }
  for (int i = std::max(0, reps - slots); i < reps; ++i) collect(i);
  return s;
}

void write_json_string(std::ostream& out, const std::string& text) {
  out << '"';
  for (char c : text) {
    switch (c) {
      case '"':
        out << "\\\"";
        break;
      case '\\':
        out << "\\\\";
        break;
      case '\n':
        out << "\\n";
        break;
      case '\t':
        out << "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char escaped[8];
          std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
          out << escaped;
        } else {
          out << c;
        }
    }
  }
  out << '"';
}

// Written as null.
constexpr double kNoValue = std::numeric_limits<double>::quiet_NaN();

void write_json_number(std::ostream& out, double value) {
  if (!std::isfinite(value)) {
    out << "null";
    return;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.9g", value);
  out << text;
}

void write_json_stats(std::ostream& out, const TimeStats& s) {
  out << "{\"count\": " << s.count;
  const std::pair<const char*, double> fields[] = {{"min", s.min_ms},   {"median", s.median_ms},
                                                   {"mean", s.mean_ms}, {"p90", s.p90_ms},
                                                   {"max", s.max_ms},   {"stddev", s.stddev_ms}};
  for (const auto& [name, value] : fields) {
    out << ", \"" << name << "\": ";
    write_json_number(out, value);
  }
  out << "}";
}

}  // namespace

TimeStats summarize(std::vector<double> samples_ms) {
  TimeStats s;
  if (samples_ms.empty()) return s;
  std::sort(samples_ms.begin(), samples_ms.end());
  double n = static_cast<double>(samples_ms.size());
  s.count = static_cast<int64_t>(samples_ms.size());
  s.min_ms = samples_ms.front();
  s.max_ms = samples_ms.back();
  s.median_ms = percentile(samples_ms, 0.5);
  s.p90_ms = percentile(samples_ms, 0.9);
  s.mean_ms = std::accumulate(samples_ms.begin(), samples_ms.end(), 0.0) / n;
  double squares = 0;
  for (double x : samples_ms) squares += (x - s.mean_ms) * (x - s.mean_ms);
  s.stddev_ms = std::sqrt(squares / n);
  return s;
}

BenchResult summarize(std::vector<double> device_ms, std::vector<double> host_ms,
                      const BenchOptions& options) {
  PRIMJIT_USER_CHECK(device_ms.size() == host_ms.size())
      << "summarize: " << device_ms.size() << " device samples but " << host_ms.size()
      << " host samples; pass one of each per repetition";
  BenchResult r;
  r.device = summarize(device_ms);
  r.host = summarize(std::move(host_ms));
  r.samples_ms = std::move(device_ms);
  r.bytes = options.bytes;
  r.flops = options.flops;
  double seconds = r.device.median_ms * 1e-3;
  if (seconds > 0) {
    r.gb_per_s = options.bytes / seconds * 1e-9;
    r.gflop_per_s = options.flops / seconds * 1e-9;
  }
  return r;
}

void validate(const BenchOptions& o) {
  auto non_negative = [](double value, const char* field, const char* meaning) {
    PRIMJIT_USER_CHECK(std::isfinite(value) && value >= 0)
        << "BenchOptions::" << field << " must be a finite number >= 0, got " << value << "; it is "
        << meaning;
  };
  non_negative(o.warmup_ms, "warmup_ms", "the milliseconds of warm-up calls (0: just one)");
  non_negative(o.budget_ms, "budget_ms", "the milliseconds the timed repetitions should take");
  non_negative(o.bytes, "bytes", "the bytes one call moves (0: no GB/s)");
  non_negative(o.flops, "flops", "the floating-point operations of one call (0: no GFLOP/s)");
  PRIMJIT_USER_CHECK(o.min_reps >= 1)
      << "BenchOptions::min_reps must be at least 1, got " << o.min_reps;
  PRIMJIT_USER_CHECK(o.max_reps >= o.min_reps)
      << "BenchOptions::max_reps (" << o.max_reps << ") is below min_reps (" << o.min_reps
      << "); raise max_reps or lower min_reps";
  PRIMJIT_USER_CHECK(o.reps >= 0) << "BenchOptions::reps must be >= 0, got " << o.reps
                                  << "; use 0 to let budget_ms choose the repetitions";
}

BenchResult Kernel::benchmark(std::span<const Arg> args, const BenchOptions& bench_options) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "benchmark of an empty Kernel (use Jit::kernel)";
  validate(bench_options);
  const std::string& name = function()->global_symbol();  // kernels always have one
  bool on_gpu = target()->kind == "cuda";
  jit::CudaDriver* driver = on_gpu ? &jit::CudaDriver::get() : nullptr;
  auto* stream = static_cast<CUstream_st*>(options().cuda_stream);
  auto call_once = [&] { call(args); };
  auto wait = [&] {
    if (on_gpu) driver->synchronize_stream(stream);
  };

  int64_t warmup_calls = 0;
  // kBucketed: the timed calls run the shape's exact variant, as a hot shape's calls would.
  auto promote = [&] { jit::promote_shape(state_, args); };
  double estimate_ms = warm_up(bench_options, call_once, promote, wait, &warmup_calls);
  int reps = repetitions(bench_options, estimate_ms);
  // Variants made (compiled or loaded from disk) before the timed calls.
  auto made = [this] {
    KernelStats s = stats();
    return s.misses + s.disk_hits;
  };
  uint64_t compiles = made();

  Samples samples;
  size_t flush_bytes = 0;
  std::string device;
  if (on_gpu) {
    const int ordinal = std::max(jit::cuda_device_of(args), 0);
    jit::DeviceInfo info = driver->device_info(ordinal);
    driver->make_current(ordinal);  // the flush buffer and events belong to that device
    device = info.name;
    if (bench_options.flush_l2) flush_bytes = 2 * info.l2_cache_bytes;
    samples = time_on_gpu(*driver, stream, reps, flush_bytes, call_once);
  } else {
    device = cpu_model();
    samples = time_on_cpu(reps, call_once);
  }
  PRIMJIT_USER_CHECK(made() == compiles)
      << "benchmark of '" << name
      << "': the kernel made a new variant during the timed calls, so the "
      << "times are not those of cached calls. Its variant was evicted (raise "
         "JitOptions::cache_capacity) or another thread called it with other shapes";

  BenchResult r =
      summarize(std::move(samples.device_ms), std::move(samples.host_ms), bench_options);
  r.kernel = name;
  r.target = target()->kind;
  r.device_name = device;
  r.timer = on_gpu ? "cuda_event" : "steady_clock";
  for (const Arg& a : args) r.args.push_back(describe_arg(a));
  r.warmup_calls = warmup_calls;
  r.l2_flushed = flush_bytes > 0;
  return r;
}

std::string to_string(const BenchResult& r) {
  std::ostringstream out;
  out << "benchmark of '" << r.kernel << "' on " << r.target << " (" << r.device_name
      << "): " << r.device.count << " timed calls after " << r.warmup_calls << " warm-up calls, "
      << r.timer << (r.l2_flushed ? ", L2 flushed before each call" : "") << "\n";
  char line[160];
  std::snprintf(line, sizeof(line), "%-8s %12s %12s %12s %12s %12s\n", "us", "min", "median",
                "mean", "p90", "max");
  out << line;
  auto row = [&](const char* label, const TimeStats& s) {
    std::snprintf(line, sizeof(line), "%-8s %12.3f %12.3f %12.3f %12.3f %12.3f\n", label,
                  s.min_ms * 1e3, s.median_ms * 1e3, s.mean_ms * 1e3, s.p90_ms * 1e3,
                  s.max_ms * 1e3);
    out << line;
  };
  row("device", r.device);
  row("host", r.host);
  if (r.bytes > 0) {
    std::snprintf(line, sizeof(line), "bandwidth %.3f GB/s at the median\n", r.gb_per_s);
    out << line;
  }
  if (r.flops > 0) {
    std::snprintf(line, sizeof(line), "compute %.3f GFLOP/s at the median\n", r.gflop_per_s);
    out << line;
  }
  return out.str();
}

std::string to_json(const BenchResult& r) {
  std::ostringstream out;
  auto field = [&](const char* name) { out << ",\n  \"" << name << "\": "; };
  out << "{\n  \"schema\": \"primjit-bench/1\"";
  field("primjit_version");
  write_json_string(out, version());
  field("kernel");
  write_json_string(out, r.kernel);
  field("target");
  write_json_string(out, r.target);
  field("device_name");
  write_json_string(out, r.device_name);
  field("timer");
  write_json_string(out, r.timer);
  field("args");
  out << "[";
  for (size_t i = 0; i < r.args.size(); ++i) {
    if (i > 0) out << ", ";
    write_json_string(out, r.args[i]);
  }
  out << "]";
  field("warmup_calls");
  out << r.warmup_calls;
  field("l2_flushed");
  out << (r.l2_flushed ? "true" : "false");
  field("device_ms");
  write_json_stats(out, r.device);
  field("host_ms");
  write_json_stats(out, r.host);
  field("bytes");
  write_json_number(out, r.bytes);
  field("flops");
  write_json_number(out, r.flops);
  field("gb_per_s");
  write_json_number(out, r.bytes > 0 ? r.gb_per_s : kNoValue);
  field("gflop_per_s");
  write_json_number(out, r.flops > 0 ? r.gflop_per_s : kNoValue);
  field("samples_ms");
  out << "[";
  for (size_t i = 0; i < r.samples_ms.size(); ++i) {
    if (i > 0) out << ", ";
    write_json_number(out, r.samples_ms[i]);
  }
  out << "]\n}\n";
  return out.str();
}

}  // namespace primjit
