// The main job: kernels built with the C++ builder, called through the JIT on several shapes,
// checked against a C++ reference, with a table of what each call cost.
//
// With a GPU (a driver and a device), the GPU kernels run on it (target cuda). Without one,
// they run in primjit's reference interpreter (target emu), and the CPU kernels are compiled
// for this machine (target llvm) in both cases.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "examples/kernels.h"
#include "primjit/primjit.h"

namespace pj = primjit;
namespace pb = primjit::builder;

namespace {

/// The same product on the CPU: rows in parallel, a register accumulator.
pj::PrimFunc cpu_matmul() {
  pb::FunctionBuilder f("cpu_matmul");
  pb::Var M = f.dim("M"), N = f.dim("N"), K = f.dim("K");
  pb::BufferRef A = f.arg_buffer("A", {M, K}), B = f.arg_buffer("B", {K, N});
  pb::BufferRef C = f.arg_buffer("C", {M, N});
  f.target(pj::Target::llvm());
  f.parallel("i", M, [&](pb::Var i) {
    f.for_("j", N, [&](pb::Var j) { C(i, j) = 0.0; });
    f.for_("k", K, [&](pb::Var k) {
      f.for_("j", N, [&](pb::Var j) { C(i, j) = C(i, j) + A(i, k) * B(k, j); });
    });
  });
  return f.finish();
}

pj::Tensor random_tensor(std::vector<int64_t> shape, std::mt19937& rng) {
  pj::Tensor t = pj::Tensor::zeros(std::move(shape), pj::DataType::Float(32));
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = dist(rng);
  return t;
}

double max_error(const pj::Tensor& got, const std::vector<float>& want) {
  double err = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::fabs(static_cast<double>(got.data<float>()[i]) - want[i]));
  }
  return err;
}

std::vector<float> reference_matmul(const pj::Tensor& a, const pj::Tensor& b) {
  int64_t m = a.shape()[0], k = a.shape()[1], n = b.shape()[1];
  std::vector<float> c(static_cast<size_t>(m * n), 0.0f);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t p = 0; p < k; ++p)
      for (int64_t j = 0; j < n; ++j)
        c[i * n + j] += a.data<float>()[i * k + p] * b.data<float>()[p * n + j];
  return c;
}

std::vector<float> reference_softmax(const pj::Tensor& x) {
  int64_t m = x.shape()[0], n = x.shape()[1];
  std::vector<float> y(static_cast<size_t>(m * n));
  for (int64_t i = 0; i < m; ++i) {
    const float* row = x.data<float>() + i * n;
    float mx = *std::max_element(row, row + n);
    double sum = 0;
    for (int64_t j = 0; j < n; ++j) sum += std::exp(row[j] - mx);
    for (int64_t j = 0; j < n; ++j) y[i * n + j] = static_cast<float>(std::exp(row[j] - mx) / sum);
  }
  return y;
}

// Runs `call` on device copies of `args` when the kernel targets cuda, then copies `out` back.
struct Row {
  std::string kernel, shape, target;
  pj::KernelStats before, after;
  double first_ms = 0, cached_us = 0, error = 0;
};

double time_ms(const std::function<void()>& f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

Row measure(const std::string& name, const std::string& shape, pj::Kernel& kernel,
            std::vector<pj::Tensor> args, size_t out, const std::vector<float>& want) {
  const pj::Target& t = kernel.target();
  std::string target = t->kind + (t->arch.empty() ? "" : " " + t->arch);
  Row r{name, shape, target, kernel.stats(), {}, 0, 0, 0};
  bool on_gpu = kernel.target()->kind == "cuda";
  std::vector<pj::Tensor> device_args;
  for (pj::Tensor& t : args) device_args.push_back(on_gpu ? t.to({kDLCUDA, 0}) : t);
  std::vector<pj::Arg> packed(device_args.begin(), device_args.end());
  r.first_ms = time_ms([&] { kernel.call(packed); });
  std::vector<double> times;
  for (int i = 0; i < 5; ++i) times.push_back(time_ms([&] { kernel.call(packed); }) * 1000);
  std::sort(times.begin(), times.end());
  r.cached_us = times[times.size() / 2];
  r.after = kernel.stats();
  pj::Tensor result = on_gpu ? device_args[out].to({kDLCPU, 0}) : device_args[out];
  r.error = max_error(result, want);
  return r;
}

}  // namespace

int main() {
  try {
    pj::Target gpu = pj::Jit::default_target();
    bool have_gpu = gpu->kind == "cuda";
    pj::Target device = have_gpu ? gpu : pj::Target::emu();
    std::printf("primjit %s: GPU kernels on %s, CPU kernels on llvm (%s)\n",
                pj::toolchain_report().primjit_version.c_str(), device->kind.c_str(),
                have_gpu ? "GPU found" : "no GPU here: the interpreter runs the GPU kernels");
    pj::Jit jit;
    pj::Kernel softmax = jit.kernel(primjit::examples::row_softmax(), {.target = device});
    pj::Kernel matmul = jit.kernel(pj::examples::tiled_matmul(), {.target = device});
    pj::Kernel cpu = jit.kernel(cpu_matmul(), {.target = pj::Target::llvm()});
    std::mt19937 rng(42);
    std::vector<Row> rows;
    for (int64_t m : {4, 16, 4}) {
      pj::Tensor x = random_tensor({m, 256}, rng);
      pj::Tensor y = pj::Tensor::zeros({m, 256}, pj::DataType::Float(32));
      rows.push_back(measure("row_softmax", std::to_string(m) + "x256", softmax, {x, y}, 1,
                             reference_softmax(x)));
    }
    std::vector<std::array<int64_t, 3>> gpu_shapes =
        have_gpu
            ? std::vector<std::array<int64_t, 3>>{{256, 256, 256}, {512, 256, 128}, {256, 256, 256}}
            : std::vector<std::array<int64_t, 3>>{{32, 32, 32}, {48, 32, 16}, {32, 32, 32}};
    for (auto [m, n, k] : gpu_shapes) {
      pj::Tensor a = random_tensor({m, k}, rng), b = random_tensor({k, n}, rng);
      pj::Tensor c = pj::Tensor::zeros({m, n}, pj::DataType::Float(32));
      rows.push_back(measure("tiled_matmul",
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                             matmul, {a, b, c}, 2, reference_matmul(a, b)));
    }
    for (auto [m, n, k] :
         std::vector<std::array<int64_t, 3>>{{256, 256, 256}, {128, 512, 64}, {256, 256, 256}}) {
      pj::Tensor a = random_tensor({m, k}, rng), b = random_tensor({k, n}, rng);
      pj::Tensor c = pj::Tensor::zeros({m, n}, pj::DataType::Float(32));
      rows.push_back(measure("cpu_matmul",
                             std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k),
                             cpu, {a, b, c}, 2, reference_matmul(a, b)));
    }

    std::printf("\n%-13s %-12s %-10s %10s %9s %9s %9s %11s %9s  %s\n", "kernel", "shape", "target",
                "1st call", "passes", "host", "device", "cached", "max err", "compiled because");
    bool ok = true;
    for (const Row& r : rows) {
      // A new variant: compiled, or loaded from the disk cache (its reason says so).
      bool compiled = r.after.misses + r.after.disk_hits > r.before.misses + r.before.disk_hits;
      pj::StageTimes d{r.after.compile.passes_ms - r.before.compile.passes_ms,
                       r.after.compile.host_ms - r.before.compile.host_ms,
                       r.after.compile.device_codegen_ms - r.before.compile.device_codegen_ms,
                       r.after.compile.device_compile_ms - r.before.compile.device_compile_ms,
                       r.after.compile.load_ms - r.before.compile.load_ms};
      double device_ms = d.device_codegen_ms + d.device_compile_ms + d.load_ms;
      std::printf("%-13s %-12s %-10s %8.2fms %7.2fms %7.2fms %7.2fms %9.1fus %9.1e  %s\n",
                  r.kernel.c_str(), r.shape.c_str(), r.target.c_str(), r.first_ms, d.passes_ms,
                  d.host_ms, device_ms, r.cached_us, r.error,
                  compiled ? r.after.reasons.back().c_str() : "- (cache hit)");
      ok = ok && r.error < 1e-3;
    }
    for (pj::Kernel* k : {&softmax, &matmul, &cpu}) {
      pj::KernelStats s = k->stats();
      std::printf("%s: %llu calls, %llu hits, %llu compiles, %llu loaded from the disk cache\n",
                  k->function()->global_symbol().c_str(), static_cast<unsigned long long>(s.calls),
                  static_cast<unsigned long long>(s.hits),
                  static_cast<unsigned long long>(s.misses),
                  static_cast<unsigned long long>(s.disk_hits));
    }
    std::printf("%s\n", ok ? "all results match the C++ reference" : "RESULTS DIFFER");
    return ok ? 0 : 1;
  } catch (const pj::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
