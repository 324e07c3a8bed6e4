// Cold first-call latency of the examples, split by stage, against NVRTC alone on the same
// CUDA source; and the first call of a new JIT session that finds the variant in the disk
// cache.
//
//   BM_FirstCall/<example>      a new Jit (no disk cache) and its first call: lowering, host
//                               code, and for cuda CUDA codegen, NVRTC and loading. Counters: the
//                               Jit's own stage times. GPU examples skip without a driver.
//   BM_NvrtcAlone/<example>     NVRTC on exactly the source the first call compiles (sm_90
//                               without a GPU, else the device's arch): the baseline.
//   BM_Stages/<example>         without a driver the Jit cannot run a cuda first call, so this
//                               runs its stages one after another (passes, CUDA codegen, host
//                               LLVM, NVRTC) and reports the latency the Jit would have, which
//                               overlaps host code and NVRTC, against NVRTC alone.
//   BM_DiskHit/<example>        a new Jit over a warm disk cache: its first call loads the
//                               variant (no lowering, no LLVM, no NVRTC). Counter disk_ms: the
//                               load itself per variant.
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "bench/bench_main.h"
#include "bench/parallel_matmul.h"
#include "examples/kernels.h"
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct Example {
  const char* name;
  PrimFunc (*make)();
  std::vector<std::vector<int64_t>> shapes;  // of the float32 tensor arguments
};

// bench_policy's matmul (bench/parallel_matmul.h), compiled once here.
PrimFunc cpu_matmul() { return parse(parallel_matmul_text())->lookup("matmul"); }

const std::vector<Example>& examples() {
  static const std::vector<Example> all = {
      {"vector_add_cpu", examples::vector_add_cpu, {{4096}, {4096}, {4096}}},
      {"cpu_matmul", cpu_matmul, {{64, 64}, {64, 64}, {64, 64}}},
      {"vector_add_cuda", examples::vector_add_cuda, {{4096}, {4096}, {4096}}},
      {"row_softmax", examples::row_softmax, {{64, 256}, {64, 256}}},
      {"matmul_relu", examples::matmul_relu, {{128, 128}, {128, 128}, {128, 128}, {128, 128}}},
  };
  return all;
}

bool is_cuda(const Example& e) { return e.make()->target()->kind == "cuda"; }

bool have_gpu(std::string* why) {
  jit::CudaDriver* driver = jit::CudaDriver::try_get(why);
  if (driver != nullptr && driver->device_count() > 0) return true;
  if (driver != nullptr) *why = "no CUDA device";
  return false;
}

int device_arch() {
  std::string why;
  return have_gpu(&why) ? jit::CudaDriver::get().device_info(0).arch() : 90;
}

void fail(benchmark::State& state, const std::string& why) {
  primjit::bench::fail();
  state.SkipWithError(why.c_str());
}

// The example's arguments on its target's device, filled with ones.
std::vector<Tensor> arguments(const Example& e) {
  std::vector<Tensor> out;
  DLDevice device{is_cuda(e) ? kDLCUDA : kDLCPU, 0};
  for (const auto& shape : e.shapes) {
    Tensor t = Tensor::zeros(shape, DataType::Float(32));
    std::fill(t.data<float>(), t.data<float>() + t.numel(), 1.0f);
    out.push_back(device.device_type == kDLCPU ? std::move(t) : t.to(device));
  }
  return out;
}

// The first output element of a call with all-ones inputs, as a sanity check.
bool first_output_right(const Example& e, const std::vector<Tensor>& args) {
  Tensor out = args.back().to(DLDevice{kDLCPU, 0});
  float got = out.data<float>()[0];
  std::string name = e.name;
  if (name == "vector_add_cpu" || name == "vector_add_cuda") return got == 2.0f;
  if (name == "cpu_matmul") return got == 64.0f;
  if (name == "row_softmax") return std::abs(got - 1.0f / 256) < 1e-6f;
  if (name == "matmul_relu") return got == 128.0f;
  return false;
}

PJValue call(const Kernel& k, const std::vector<Tensor>& tensors) {
  std::vector<Arg> args(tensors.begin(), tensors.end());
  return k.call(args);
}

// The lowered module of the example's first call (what the Jit compiles).
IRModule lowered(const Example& e, const Target& target) {
  PrimFunc f = e.make().with_attr(attr::kTarget, AttrValue(target));
  std::string name = f->global_symbol();
  std::unordered_map<const VarNode*, Expr> values;
  for (size_t i = 0; i < f->params.size(); ++i) {
    Buffer b = f->buffer_of(f->params[i]);
    for (size_t d = 0; b.defined() && d < b->shape.size(); ++d) {
      if (const auto* v = b->shape[d].as<VarNode>()) {
        values.emplace(v, IntImm::make(v->dtype, e.shapes[i][d]));
      }
    }
  }
  return passes::run_passes(IRModule::from_function(name, passes::specialize(f, values)),
                            passes::default_pipeline());
}

Target cuda_target() {
  return Target::make("cuda", "sm_" + std::to_string(device_arch()), Target::llvm());
}

struct StageCounters {
  double passes = 0, host = 0, codegen = 0, nvrtc = 0, load = 0, disk = 0;
  void add(const StageTimes& t) {
    passes += t.passes_ms;
    host += t.host_ms;
    codegen += t.device_codegen_ms;
    nvrtc += t.device_compile_ms;
    load += t.load_ms;
    disk += t.disk_ms;
  }
  void report(benchmark::State& state) const {
    auto avg = [&](double v) { return benchmark::Counter(v, benchmark::Counter::kAvgIterations); };
    state.counters["passes_ms"] = avg(passes);
    state.counters["host_llvm_ms"] = avg(host);
    if (codegen > 0) state.counters["cuda_codegen_ms"] = avg(codegen);
    if (nvrtc > 0) state.counters["nvrtc_ms"] = avg(nvrtc);
    if (load > 0) state.counters["load_ms"] = avg(load);
    if (disk > 0) state.counters["disk_ms"] = avg(disk);
  }
};

JitOptions no_disk() {
  JitOptions o;
  o.disk_cache = DiskCacheMode::kDisabled;
  return o;
}

// Per iteration: a new Jit made with `options` (as in a new process) and the first call of the
// example's kernel, timed; then the result and the stats (`expected` says what they must
// show) are checked and the stage times added up.
template <typename Expected>
void time_first_calls(benchmark::State& state, const Example& e, const JitOptions& options,
                      Expected&& expected) {
  StageCounters stages;
  for (auto _ : state) {
    state.PauseTiming();
    std::vector<Tensor> args = arguments(e);
    auto jit = std::make_unique<Jit>(options);
    Kernel k = jit->kernel(e.make());
    state.ResumeTiming();
    call(k, args);
    state.PauseTiming();
    if (!first_output_right(e, args)) return fail(state, "wrong result");
    KernelStats s = k.stats();
    if (const char* wrong = expected(s)) return fail(state, wrong);
    stages.add(s.compile);
    jit.reset();  // unloading is not what is measured
    state.ResumeTiming();
  }
  stages.report(state);
}

void BM_FirstCall(benchmark::State& state, const Example& e) {
  std::string why;
  if (is_cuda(e) && !have_gpu(&why)) return state.SkipWithError(why.c_str());
  time_first_calls(state, e, no_disk(), [](const KernelStats& s) {
    return s.misses == 1 ? nullptr : "expected one compile";
  });
}

void BM_NvrtcAlone(benchmark::State& state, const Example& e) {
  jit::NvrtcOptions options;
  options.arch = device_arch();
  std::string source = jit::codegen_cuda(lowered(e, cuda_target())).code;
  for (auto _ : state) {
    jit::DeviceImage image = jit::nvrtc_compile({"primjit_kernels.cu", source}, options);
    if (image.data.empty()) return fail(state, "NVRTC produced nothing");
  }
  state.SetLabel("sm_" + std::to_string(options.arch));
}

// What a cuda first call costs, from its stages run one after another here: the Jit runs
// host code and NVRTC at the same time, so its latency is passes + max(CUDA codegen + NVRTC,
// host code); the ratio is against NVRTC alone on the same source, measured in the same
// iteration.
void BM_Stages(benchmark::State& state, const Example& e) {
  jit::OrcEngine engine;
  jit::NvrtcOptions options;
  options.arch = device_arch();
  double passes = 0, codegen = 0, host = 0, nvrtc = 0;
  for (auto _ : state) {
    Clock::time_point start = Clock::now();
    IRModule module = lowered(e, cuda_target());
    passes += ms_since(start);
    start = Clock::now();
    std::string source = jit::codegen_cuda(module).code;
    codegen += ms_since(start);
    start = Clock::now();
    jit::HostImage image = jit::compile_host(engine, module);
    host += ms_since(start);
    start = Clock::now();
    jit::DeviceImage device = jit::nvrtc_compile({"primjit_kernels.cu", source}, options);
    nvrtc += ms_since(start);
    if (image.object.empty() || device.data.empty()) return fail(state, "nothing compiled");
  }
  double n = static_cast<double>(state.iterations());
  double modelled = (passes + std::max(codegen + nvrtc, host)) / n;
  state.counters["passes_ms"] = passes / n;
  state.counters["cuda_codegen_ms"] = codegen / n;
  state.counters["host_llvm_ms"] = host / n;
  state.counters["nvrtc_ms"] = nvrtc / n;
  state.counters["first_call_ms"] = modelled;
  state.counters["vs_nvrtc"] = modelled / (nvrtc / n);
  state.SetLabel("stages in sequence, sm_" + std::to_string(options.arch));
}

class TempDir {
 public:
  TempDir() {
    static int count = 0;
    path_ =
        (std::filesystem::temp_directory_path() /
         ("primjit_bench_compile." + std::to_string(::getpid()) + "." + std::to_string(count++)))
            .string();
    std::filesystem::remove_all(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void BM_DiskHit(benchmark::State& state, const Example& e) {
  std::string why;
  if (is_cuda(e) && !have_gpu(&why)) return state.SkipWithError(why.c_str());
  TempDir dir;
  JitOptions options;
  options.disk_cache = DiskCacheMode::kEnabled;
  options.cache_dir = dir.path();
  {
    Jit jit(options);  // fills the cache
    std::vector<Tensor> args = arguments(e);
    call(jit.kernel(e.make()), args);
  }
  time_first_calls(state, e, options, [](const KernelStats& s) {
    return s.disk_hits == 1 && s.misses == 0 ? nullptr : "expected a disk hit";
  });
}

int register_all() {
  for (const Example& e : examples()) {
    benchmark::RegisterBenchmark((std::string("BM_FirstCall/") + e.name).c_str(), BM_FirstCall, e)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_DiskHit/") + e.name).c_str(), BM_DiskHit, e)
        ->Unit(benchmark::kMillisecond);
    if (!is_cuda(e)) continue;
    benchmark::RegisterBenchmark((std::string("BM_NvrtcAlone/") + e.name).c_str(), BM_NvrtcAlone, e)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark((std::string("BM_Stages/") + e.name).c_str(), BM_Stages, e)
        ->Unit(benchmark::kMillisecond);
  }
  return 0;
}

const int registered = register_all();

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN()
