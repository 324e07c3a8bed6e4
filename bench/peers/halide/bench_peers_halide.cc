// Peer benchmark: the same kernels through primjit (TVMScript text -> Kernel -> call), Halide 14
// (JIT, in this process) and g++ -O3 -march=native, side by side on the same arrays. Each row
// runs the three in interleaved rounds (the order rotates every round), each round timing a
// batch of calls, and reports the median of the rounds per call; every output is checked
// against g++'s before and after timing. bench/README.md ("Peers") has the table and the
// command; bench/peers/numba/bench_numba.py --with <this program's --csv> adds Numba's column.
//
//   bench_peers_halide [--sizes=small,large|tiny] [--rounds=9] [--kernels=SUBSTRING]
//                      [--csv=FILE] [--fp-contract] [--policy=exact|bucketed|dynamic]
//
// --policy: primjit's specialization policy (default: KernelOptions' default).
// primjit's default keeps a * b + c as two roundings (docs/semantics.md); Halide and g++ contract
// it into one fma by default. --fp-contract compiles the primjit kernels with
// KernelOptions::fp_contract, the same contraction as its peers.
//
// Exit status 0 when every row verified, 1 when any output differs (or a kernel fails to
// compile or run), 2 for bad options.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/peers/halide/halide_kernels.h"
#include "bench/peers/halide/primjit_kernels.h"
#include "bench/peers/halide/reference.h"
#include "primjit/dlpack.h"
#include "primjit/jit.h"

namespace primjit::bench::peers {
namespace {

using Clock = std::chrono::steady_clock;

// One row of the table: a kernel at one size. saxpy: n elements; matmul: n x n x n; softmax:
// rows x cols.
struct Row {
  std::string kernel;
  std::string size;  // tiny, small or large
  int64_t n = 0;
  int64_t rows = 0;
  int64_t cols = 0;
};

const char* const kKernels[] = {"saxpy_naive",   "saxpy_scheduled",  "matmul_naive",
                                "matmul_ikj",    "matmul_parallel",  "matmul_tiled",
                                "softmax_plain", "softmax_scheduled"};

// The sizes bench_numba.py uses too. Tiny sizes exercise tails (saxpy 1000 is not a multiple of
// the chunk, softmax's 100 columns not of the vector width).
Row make_row(const std::string& kernel, const std::string& size) {
  Row row{kernel, size};
  const int which = size == "tiny" ? 0 : size == "small" ? 1 : 2;
  if (kernel.rfind("saxpy", 0) == 0) {
    row.n = std::vector<int64_t>{1000, 65536, int64_t{1} << 24}[which];
  } else if (kernel.rfind("matmul", 0) == 0) {
    row.n = std::vector<int64_t>{32, 64, 256}[which];
  } else {
    row.rows = std::vector<int64_t>{5, 64, 4096}[which];
    row.cols = std::vector<int64_t>{100, 256, 256}[which];
  }
  return row;
}

std::string shape(const Row& row) {
  if (row.kernel.rfind("saxpy", 0) == 0) return std::to_string(row.n);
  if (row.kernel.rfind("matmul", 0) == 0) return std::to_string(row.n) + "^3";
  return std::to_string(row.rows) + "x" + std::to_string(row.cols);
}

struct Options {
  std::vector<std::string> sizes = {"small", "large"};
  int rounds = 9;
  std::string filter;
  std::string csv;
  KernelOptions kernel;  // fp_contract, policy
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

bool parse_options(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* name) -> const char* {
      const std::string prefix = std::string(name) + "=";
      return arg.rfind(prefix, 0) == 0 ? argv[i] + prefix.size() : nullptr;
    };
    if (const char* v = value("--sizes")) {
      options->sizes = split_commas(v);
      for (const std::string& s : options->sizes) {
        if (s != "tiny" && s != "small" && s != "large") {
          std::cerr << "--sizes: '" << s << "' is not tiny, small or large\n";
          return false;
        }
      }
    } else if (const char* v = value("--rounds")) {
      options->rounds = std::atoi(v);
      if (options->rounds < 1) {
        std::cerr << "--rounds: give a count of at least 1 (9 or more for the table)\n";
        return false;
      }
    } else if (const char* v = value("--kernels")) {
      options->filter = v;
    } else if (const char* v = value("--csv")) {
      options->csv = v;
    } else if (arg == "--fp-contract") {
      options->kernel.fp_contract = true;
    } else if (const char* v = value("--policy")) {
      const std::string policy = v;
      if (policy == "exact") {
        options->kernel.policy = Policy::kExact;
      } else if (policy == "bucketed") {
        options->kernel.policy = Policy::kBucketed;
      } else if (policy == "dynamic") {
        options->kernel.policy = Policy::kDynamic;
      } else {
        std::cerr << "--policy: '" << policy << "' is not exact, bucketed or dynamic\n";
        return false;
      }
    } else {
      std::cerr << "unknown option '" << arg
                << "'; options: --sizes=small,large|tiny --rounds=N --kernels=SUBSTRING "
                   "--csv=FILE --fp-contract --policy=exact|bucketed|dynamic\n";
      return false;
    }
  }
  return true;
}

// The arrays of one row: inputs a (and b), one output per implementation.
struct Data {
  std::vector<float> a, b, gxx, primjit, halide;
  float alpha = 1.5f;
};

Data make_data(const Row& row) {
  Data d;
  std::mt19937 gen(42);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  int64_t in = 0, out = 0;
  if (row.kernel.rfind("saxpy", 0) == 0) {
    in = out = row.n;
  } else if (row.kernel.rfind("matmul", 0) == 0) {
    in = out = row.n * row.n;
  } else {
    in = out = row.rows * row.cols;
    dist = std::uniform_real_distribution<float>(-8.0f, 8.0f);
  }
  d.a.resize(in);
  for (float& v : d.a) v = dist(gen);
  if (row.kernel.rfind("softmax", 0) != 0) {
    d.b.resize(in);
    for (float& v : d.b) v = dist(gen);
  }
  d.gxx.assign(out, NAN);
  d.primjit.assign(out, NAN);
  d.halide.assign(out, NAN);
  return d;
}

std::function<void()> gxx_runner(const Row& row, Data& d) {
  const float *a = d.a.data(), *b = d.b.data();
  float* c = d.gxx.data();
  const int64_t n = row.n, rows = row.rows, cols = row.cols;
  const float alpha = d.alpha;
  const std::string& k = row.kernel;
  if (k == "saxpy_naive") return [=] { saxpy_naive_gxx(n, alpha, a, b, c); };
  if (k == "saxpy_scheduled") return [=] { saxpy_scheduled_gxx(n, alpha, a, b, c); };
  if (k == "matmul_naive") return [=] { matmul_naive_gxx(n, a, b, c); };
  if (k == "matmul_ikj") return [=] { matmul_ikj_gxx(n, a, b, c); };
  if (k == "matmul_parallel") return [=] { matmul_parallel_gxx(n, a, b, c); };
  if (k == "matmul_tiled") return [=] { matmul_tiled_gxx(n, a, b, c); };
  if (k == "softmax_plain") return [=] { softmax_plain_gxx(rows, cols, a, c); };
  return [=] { softmax_scheduled_gxx(rows, cols, a, c); };
}

// DLTensors over the row's arrays, kept with the Kernel that runs on them.
struct PrimjitCall {
  Kernel kernel;
  std::vector<int64_t> shape;
  DLTensor a{}, b{}, c{};
  float alpha = 0;
  bool saxpy = false, softmax = false;

  void operator()() const {
    if (saxpy) {
      kernel(&a, &b, &c, alpha);
    } else if (softmax) {
      kernel(&a, &c);
    } else {
      kernel(&a, &b, &c);
    }
  }
};

DLTensor tensor(const float* data, std::vector<int64_t>& shape) {
  DLTensor t{};
  t.data = const_cast<float*>(data);
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  return t;
}

std::function<void()> primjit_runner(Jit& jit, const Row& row, Data& d,
                                     const KernelOptions& options) {
  auto call = std::make_shared<PrimjitCall>();
  call->kernel = primjit_kernel(jit, row.kernel, options);
  call->saxpy = row.kernel.rfind("saxpy", 0) == 0;
  call->softmax = row.kernel.rfind("softmax", 0) == 0;
  if (call->saxpy) {
    call->shape = {row.n};
  } else if (call->softmax) {
    call->shape = {row.rows, row.cols};
  } else {
    call->shape = {row.n, row.n};
  }
  call->a = tensor(d.a.data(), call->shape);
  call->b = tensor(d.b.data(), call->shape);
  call->c = tensor(d.primjit.data(), call->shape);
  call->alpha = d.alpha;
  return [call] { (*call)(); };
}

// The largest difference of `got` from `want` beyond atol + rtol * |want|, as a message; empty
// when every element is within it (NaN in either never is).
std::string mismatch(const Row& row, const std::vector<float>& want,
                     const std::vector<float>& got) {
  double atol = 1e-6, rtol = 1e-5;
  if (row.kernel.rfind("matmul", 0) == 0) {
    atol = 1e-6 * static_cast<double>(row.n);
    rtol = 1e-4;
  } else if (row.kernel.rfind("softmax", 0) == 0) {
    atol = 1e-7;
    rtol = 1e-4;
  }
  for (size_t i = 0; i < want.size(); ++i) {
    const double w = want[i], g = got[i];
    if (!(std::abs(g - w) <= atol + rtol * std::abs(w))) {
      std::ostringstream msg;
      msg << "element " << i << ": " << g << ", g++ has " << w;
      return msg.str();
    }
  }
  return "";
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t m = v.size() / 2;
  return v.size() % 2 == 1 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

std::string read_first_line(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (key.empty()) return line;
    if (line.rfind(key, 0) == 0) return line.substr(line.find(':') + 2);
  }
  return "?";
}

struct Result {
  Row row;
  double primjit_ms = 0, halide_ms = 0, gxx_ms = 0;
  // Making the kernel and its first call, compile included: primjit's parse, Jit::kernel and
  // first call; Halide's pipeline definition, compile_jit and first realize.
  double primjit_first_ms = 0, halide_first_ms = 0;
  std::string failure;  // empty when verified
};

Result run_row(Jit& jit, const Row& row, const Options& options) {
  const int rounds = options.rounds;
  Result result{row};
  Data d = make_data(row);
  Arrays arrays{row.n, row.rows, row.cols, d.alpha, d.a.data(), d.b.data(), d.halide.data()};
  std::function<void()> impl[3];
  impl[2] = gxx_runner(row, d);
  // First calls compile (primjit, on its first call; Halide, as its pipeline is made) and warm
  // the caches; g++'s first, whose time sizes the batches below.
  Clock::time_point t0 = Clock::now();
  impl[2]();
  const double gxx_once = seconds_since(t0);
  t0 = Clock::now();
  impl[0] = primjit_runner(jit, row, d, options.kernel);
  impl[0]();
  result.primjit_first_ms = seconds_since(t0) * 1e3;
  t0 = Clock::now();
  impl[1] = halide_runner(row.kernel, arrays);
  impl[1]();
  result.halide_first_ms = seconds_since(t0) * 1e3;
  const char* names[3] = {"primjit", "Halide", "g++"};
  const std::vector<float>* outputs[3] = {&d.primjit, &d.halide, &d.gxx};
  auto verify = [&](const char* when) {
    for (int i = 0; i < 2 && result.failure.empty(); ++i) {
      std::string m = mismatch(row, d.gxx, *outputs[i]);
      if (!m.empty()) result.failure = std::string(names[i]) + " " + when + ": " + m;
    }
  };
  verify("(first call)");
  // A batch lasts about 2 ms of g++ time, so that short kernels are not timed one call at a time.
  const int reps = static_cast<int>(std::clamp(2e-3 / std::max(gxx_once, 1e-9), 1.0, 10000.0));
  std::vector<double> times[3];
  for (int r = 0; r < rounds; ++r) {
    for (int step = 0; step < 3; ++step) {
      const int i = (r + step) % 3;
      Clock::time_point start = Clock::now();
      for (int k = 0; k < reps; ++k) impl[i]();
      times[i].push_back(seconds_since(start) * 1e3 / reps);
    }
  }
  verify("(after timing)");
  result.primjit_ms = median(times[0]);
  result.halide_ms = median(times[1]);
  result.gxx_ms = median(times[2]);
  return result;
}

int run(const Options& options) {
  std::printf("primjit peer benchmark: primjit vs Halide vs g++ -O3 -march=native\n");
  std::printf("machine : %s, %u hardware threads, load average %s\n",
              read_first_line("/proc/cpuinfo", "model name").c_str(),
              std::thread::hardware_concurrency(), read_first_line("/proc/loadavg", "").c_str());
  std::printf("peers   : %s\n", halide_description().c_str());
  const Policy policy = options.kernel.policy;
  std::printf("primjit : %s, policy %s\n",
              options.kernel.fp_contract
                  ? "KernelOptions::fp_contract (a * b + c as one fma, as its peers)"
                  : "a * b + c rounded twice (peers contract)",
              policy == Policy::kExact      ? "exact"
              : policy == Policy::kBucketed ? "bucketed"
              : policy == Policy::kDynamic  ? "dynamic"
                                            : "auto");
  std::printf("timing  : median over %d interleaved rounds, ms per call\n\n", options.rounds);
  std::printf("%-18s %-6s %-10s %11s %11s %11s %9s %9s  %s\n", "kernel", "size", "shape",
              "primjit ms", "Halide ms", "g++ ms", "pj/Halide", "pj/g++", "check");
  Jit jit({.disk_cache = DiskCacheMode::kDisabled});
  std::vector<Result> results;
  int failed = 0;
  for (const std::string& size : options.sizes) {
    for (const char* kernel : kKernels) {
      if (std::string(kernel).find(options.filter) == std::string::npos) continue;
      Row row = make_row(kernel, size);
      Result r;
      try {
        r = run_row(jit, row, options);
      } catch (const std::exception& e) {
        r = Result{row};
        r.failure = std::string("failed: ") + e.what();
      }
      failed += r.failure.empty() ? 0 : 1;
      std::printf("%-18s %-6s %-10s %11.4f %11.4f %11.4f %9.2f %9.2f  %s\n", kernel, size.c_str(),
                  shape(row).c_str(), r.primjit_ms, r.halide_ms, r.gxx_ms,
                  r.primjit_ms / r.halide_ms, r.primjit_ms / r.gxx_ms,
                  r.failure.empty() ? "verified" : r.failure.c_str());
      std::fflush(stdout);
      results.push_back(r);
    }
  }
  if (!options.csv.empty()) {
    std::ofstream csv(options.csv);
    csv << "kernel,size,shape,primjit_ms,halide_ms,gxx_ms,verified\n";
    for (const Result& r : results) {
      csv << r.row.kernel << "," << r.row.size << "," << shape(r.row) << "," << r.primjit_ms << ","
          << r.halide_ms << "," << r.gxx_ms << "," << (r.failure.empty() ? 1 : 0) << "\n";
    }
    if (!csv) {
      std::fprintf(stderr, "could not write %s: check the directory exists and is writable\n",
                   options.csv.c_str());
      return 1;
    }
  }
  // Compile times: the first calls of the small rows (their run is a small part of them).
  std::printf(
      "\nfirst call, compile included (ms; primjit: parse, Jit::kernel, call; Halide: "
      "pipeline, compile_jit, realize):\n");
  std::printf("%-18s %-6s %11s %11s %9s\n", "kernel", "size", "primjit", "Halide", "pj/Halide");
  for (const Result& r : results) {
    if (r.row.size == "large" || !r.failure.empty()) continue;  // no ratio of a failed row
    std::printf("%-18s %-6s %11.2f %11.2f %9.2f\n", r.row.kernel.c_str(), r.row.size.c_str(),
                r.primjit_first_ms, r.halide_first_ms, r.primjit_first_ms / r.halide_first_ms);
  }
  std::printf("\n%zu rows, %d verified against g++, %d failed\n", results.size(),
              static_cast<int>(results.size()) - failed, failed);
  return failed == 0 && !results.empty() ? 0 : 1;
}

}  // namespace
}  // namespace primjit::bench::peers

int main(int argc, char** argv) {
  primjit::bench::peers::Options options;
  if (!primjit::bench::peers::parse_options(argc, argv, &options)) return 2;
  return primjit::bench::peers::run(options);
}
