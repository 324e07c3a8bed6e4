// Compile latency of the two toolchains primjit drives: one small host module through LLVM ORC
// (IR text -> O0/O2 pipeline -> object -> link -> lookup) and one small kernel through NVRTC
// (CUBIN for sm_90, and PTX). These are the floor under every first call of a new variant.
#include <benchmark/benchmark.h>

#include <atomic>
#include <string>

#include "bench/bench_main.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/llvm/orc_engine.h"

namespace {

void fail(benchmark::State& state, const char* why) {
  primjit::bench::fail();
  state.SkipWithError(why);
}

std::string add_module(int64_t serial) {
  std::string name = "add" + std::to_string(serial);
  return "define i32 @" + name + "(i32 %a, i32 %b) {\n  %s = add i32 %a, %b\n  ret i32 %s\n}\n";
}

// One module per iteration into a long-lived engine, like a stream of new variants.
void BM_OrcCompileSmallModule(benchmark::State& state) {
  primjit::jit::OrcEngine engine(
      primjit::jit::OrcOptions{.opt_level = static_cast<int>(state.range(0))});
  int64_t serial = 0;
  for (auto _ : state) {
    auto key = engine.add_ir_text(add_module(serial), "bench");
    auto* add = reinterpret_cast<int (*)(int, int)>(engine.lookup("add" + std::to_string(serial)));
    if (add(40, 2) != 42) return fail(state, "JIT-compiled add returned a wrong value");
    state.PauseTiming();
    engine.remove(key);  // keep memory flat; unloading is not what is measured
    state.ResumeTiming();
    ++serial;
  }
  state.SetLabel("O" + std::to_string(state.range(0)));
}
BENCHMARK(BM_OrcCompileSmallModule)->Arg(0)->Arg(2)->Unit(benchmark::kMillisecond);

constexpr const char* kVectorAdd = R"(extern "C" __global__ void vadd(const float* a,
    const float* b, float* c, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
)";

void BM_NvrtcCompileVectorAdd(benchmark::State& state) {
  primjit::jit::NvrtcOptions options{.arch = 90, .force_ptx = state.range(0) == 1};
  for (auto _ : state) {
    auto image = primjit::jit::nvrtc_compile({"vadd.cu", kVectorAdd}, options);
    if (image.data.empty()) return fail(state, "NVRTC produced an empty image");
    benchmark::DoNotOptimize(image.data.data());
  }
  state.SetLabel(state.range(0) == 1 ? "PTX compute_90" : "CUBIN sm_90");
}
BENCHMARK(BM_NvrtcCompileVectorAdd)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace

PRIMJIT_BENCHMARK_MAIN()
