// Compile latency of the two toolchains primjit drives: one small host module through LLVM ORC
// (IR text -> O0/O2 pipeline -> object -> link -> lookup) and one small kernel through NVRTC
// (CUBIN for sm_90, and PTX). These are the floor under every first call of a new variant.
// Then what primjit itself hands them:
//   BM_ManyParams/<n>      a host function of n tensor parameters (the packed wrapper checks
//                          each): lowering, LLVM codegen and the ORC compile. Counter ir_kb:
//                          the unoptimized module's size (linear in n).
//   BM_NvrtcOptions/<k>/<v> NVRTC on generated CUDA sources (k: 0 float32 vector add, 1 a
//                          float16 kernel, which includes cuda_fp16.h) with option set v:
//                          0 none of the below, 1 --minimal, 2 -pch, 3 both (the default),
//                          4 the default with ptxas -O1. Counter regs: the registers ptxas
//                          reports for the kernel (an untimed compile with -v).
#include <benchmark/benchmark.h>

#include <atomic>
#include <regex>
#include <string>

#include "bench/bench_main.h"
#include "jit/cuda/codegen_cuda.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/many_params.h"

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

using primjit::test::many_params;

void BM_ManyParams(benchmark::State& state) {
  primjit::jit::OrcEngine engine;
  const primjit::IRModule parsed = primjit::parse(many_params(state.range(0)));
  double ir_bytes = 0;
  for (auto _ : state) {
    primjit::IRModule lowered =
        primjit::passes::run_passes(parsed, primjit::passes::default_pipeline());
    state.PauseTiming();
    ir_bytes = static_cast<double>(
        primjit::jit::to_llvm_text(
            primjit::jit::codegen_llvm(primjit::passes::lower_for_host(lowered)))
            .size());
    state.ResumeTiming();
    auto program = std::make_unique<primjit::jit::HostProgram>(engine, lowered);
    state.PauseTiming();
    program.reset();  // unloading is not what is measured
    state.ResumeTiming();
  }
  state.counters["ir_kb"] = ir_bytes / 1024;
}
BENCHMARK(BM_ManyParams)->Arg(10)->Arg(100)->Arg(300)->Arg(1000)->Unit(benchmark::kMillisecond);

constexpr const char* kVectorAddTir = R"(
@T.prim_func
def vadd(A: T.Buffer((4096,), "float32"), B: T.Buffer((4096,), "float32"),
         C: T.Buffer((4096,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 16)
    tx = T.launch_thread("threadIdx.x", 256)
    C[bx * 256 + tx] = A[bx * 256 + tx] + B[bx * 256 + tx]
)";

constexpr const char* kHalfTir = R"(
@T.prim_func
def haxpy(X: T.Buffer((4096,), "float16"), Y: T.Buffer((4096,), "float16"),
          S: T.Buffer((4096,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 16)
    tx = T.launch_thread("threadIdx.x", 256)
    Y[bx * 256 + tx] = X[bx * 256 + tx] * T.float16(2) + Y[bx * 256 + tx]
    S[bx * 256 + tx] = T.Cast("float32", Y[bx * 256 + tx]) * S[bx * 256 + tx]
)";

std::string cuda_source(int64_t kernel) {
  primjit::IRModule lowered = primjit::passes::run_passes(
      primjit::parse(kernel == 0 ? kVectorAddTir : kHalfTir), primjit::passes::default_pipeline());
  return primjit::jit::codegen_cuda(lowered).code;
}

primjit::jit::NvrtcOptions option_set(int64_t set) {
  primjit::jit::NvrtcOptions options{.arch = 90};
  options.minimal = set == 1 || set >= 3;
  options.pch = set >= 2 && set != 1;
  if (set == 4) options.ptxas_opt_level = 1;
  return options;
}

void BM_NvrtcOptions(benchmark::State& state) {
  const std::string source = cuda_source(state.range(0));
  primjit::jit::NvrtcOptions options = option_set(state.range(1));
  for (auto _ : state) {
    auto image = primjit::jit::nvrtc_compile({"k.cu", source}, options);
    if (image.data.empty()) return fail(state, "NVRTC produced an empty image");
  }
  options.extra_options.push_back("--ptxas-options=-v");
  std::string log = primjit::jit::nvrtc_compile({"k.cu", source}, options).log;
  std::smatch match;
  if (std::regex_search(log, match, std::regex("Used ([0-9]+) registers"))) {
    state.counters["regs"] = std::stod(match[1]);
  }
  static const char* const kSets[] = {"none", "minimal", "pch", "minimal+pch", "+ptxas O1"};
  state.SetLabel(std::string(state.range(0) == 0 ? "f32 vadd" : "f16 axpy") + ", " +
                 kSets[state.range(1)]);
}
BENCHMARK(BM_NvrtcOptions)->ArgsProduct({{0, 1}, {0, 1, 2, 3, 4}})->Unit(benchmark::kMillisecond);

}  // namespace

PRIMJIT_BENCHMARK_MAIN()
