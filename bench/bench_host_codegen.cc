// JIT-compiled host loops against the same loops compiled by g++ -O3 -march=native in this
// binary: an elementwise saxpy and an int32 sum, in cache (4096) and out of cache (1M).
// The JIT side is called through the packed calling convention, argument checks included.
#include <memory>
#include <numeric>
#include <vector>

#include "bench/bench_main.h"
#include "bench/host_reference.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/dlpack.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"

namespace primjit::bench {
namespace {

constexpr const char* kSaxpy = R"(
@T.prim_func
def saxpy(a: T.handle, b: T.handle, c: T.handle, alpha: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] * alpha + B[i]
)";

constexpr const char* kSum = R"(
@T.prim_func
def total(a: T.handle) -> T.int32:
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "int32")
    acc = T.alloc_buffer((1,), "int32", scope="local")
    acc[0] = 0
    for i in range(n):
        acc[0] = acc[0] + A[i]
    return acc[0]
)";

jit::OrcEngine& engine() {
  static jit::OrcEngine* e = new jit::OrcEngine();
  return *e;
}

// One compiled function, kept for the whole run.
PJPackedFunc compile(const char* text, const char* name) {
  static std::vector<std::unique_ptr<jit::HostProgram>> programs;
  IRModule lowered = passes::run_passes(parse(text), passes::default_pipeline());
  programs.push_back(std::make_unique<jit::HostProgram>(engine(), lowered));
  return programs.back()->function(name);
}

DLTensor tensor(void* data, int64_t* shape, DLDataType dtype) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = 1;
  t.dtype = dtype;
  t.shape = shape;
  return t;
}

PJValue ptr(DLTensor* t) {
  PJValue v{};
  v.type_index = kPJDLTensorPtr;
  v.v_ptr = t;
  return v;
}

void BM_Saxpy(benchmark::State& state, bool jit) {
  static PJPackedFunc fn = compile(kSaxpy, "saxpy");
  int64_t n = state.range(0);
  std::vector<float> a(n), b(n), c(n), expected(n);
  std::iota(a.begin(), a.end(), 0.0f);
  std::iota(b.begin(), b.end(), 1.0f);
  saxpy_reference(n, 0.5f, a.data(), b.data(), expected.data());
  DLTensor ta = tensor(a.data(), &n, {kDLFloat, 32, 1}),
           tb = tensor(b.data(), &n, {kDLFloat, 32, 1}),
           tc = tensor(c.data(), &n, {kDLFloat, 32, 1});
  PJValue args[4] = {ptr(&ta), ptr(&tb), ptr(&tc), {}};
  args[3].type_index = kPJFloat;
  args[3].v_float64 = 0.5;
  if (jit) {
    jit::call_packed(fn, args, 4);
    if (c != expected) {
      state.SkipWithError("JIT saxpy differs from the reference");
      fail();
      return;
    }
  }
  for (auto _ : state) {
    if (jit) {
      jit::call_packed(fn, args, 4);
    } else {
      saxpy_reference(n, 0.5f, a.data(), b.data(), c.data());
    }
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * n * 12);
}

void BM_Sum(benchmark::State& state, bool jit) {
  static PJPackedFunc fn = compile(kSum, "total");
  int64_t n = state.range(0);
  std::vector<int32_t> a(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<int32_t>(i % 97) - 40;
  DLTensor ta = tensor(a.data(), &n, {kDLInt, 32, 1});
  PJValue arg = ptr(&ta);
  int32_t expected = sum_reference(n, a.data());
  if (jit && jit::call_packed(fn, &arg, 1).v_int64 != expected) {
    state.SkipWithError("JIT sum differs from the reference");
    fail();
    return;
  }
  for (auto _ : state) {
    int64_t v = jit ? jit::call_packed(fn, &arg, 1).v_int64 : sum_reference(n, a.data());
    benchmark::DoNotOptimize(v);
  }
  state.SetBytesProcessed(state.iterations() * n * 4);
}

BENCHMARK_CAPTURE(BM_Saxpy, jit, true)->Arg(1)->Arg(4096)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Saxpy, gxx_O3, false)->Arg(4096)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Sum, jit, true)->Arg(4096)->Arg(1 << 20);
BENCHMARK_CAPTURE(BM_Sum, gxx_O3, false)->Arg(4096)->Arg(1 << 20);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
