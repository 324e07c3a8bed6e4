// The cost of a cached call through the JIT runtime, for a kernel that does almost nothing
// (one store), so the figure is the dispatch itself: argument checks, building the key, the
// kernel's last-variant check or the Jit's cache lookup, and the packed call with its
// argument checks.
#include <vector>

#include "bench/bench_main.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"

namespace primjit::bench {
namespace {

constexpr const char* kTouch = R"(
@T.prim_func
def touch(a: T.handle, b: T.handle, s: T.float32):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    m = T.int32()
    A = T.match_buffer(a, (n, m), "float32")
    B = T.match_buffer(b, (n, m), "float32")
    B[0, 0] = A[0, 0] * s
)";

PrimFunc touch() { return parse(kTouch)->lookup("touch"); }

void check(benchmark::State& state, const Tensor& a, const Tensor& b, float s) {
  if (b.data<float>()[0] != a.data<float>()[0] * s) {
    state.SkipWithError("wrong result");
    fail();
  }
}

// The same shape every call: the kernel's last variant answers.
void BM_CachedCall_SameShape(benchmark::State& state, Policy policy) {
  Jit jit;
  Kernel k = jit.kernel(touch(), {.policy = policy});
  Tensor a = Tensor::zeros({4, 8}, DataType::Float(32)),
         b = Tensor::zeros({4, 8}, DataType::Float(32));
  a.data<float>()[0] = 3;
  k(a, b, 2.0f);
  check(state, a, b, 2.0f);
  for (auto _ : state) k(a, b, 2.0f);
}

// Two shapes in turn: every call misses the last-variant check and finds its variant in the
// Jit's concurrent map (exact policy).
void BM_CachedCall_AlternatingShapes(benchmark::State& state) {
  Jit jit;
  Kernel k = jit.kernel(touch());
  Tensor a1 = Tensor::zeros({4, 8}, DataType::Float(32)),
         b1 = Tensor::zeros({4, 8}, DataType::Float(32));
  Tensor a2 = Tensor::zeros({8, 4}, DataType::Float(32)),
         b2 = Tensor::zeros({8, 4}, DataType::Float(32));
  a1.data<float>()[0] = 5;
  k(a1, b1, 2.0f);
  k(a2, b2, 2.0f);
  check(state, a1, b1, 2.0f);
  for (auto _ : state) {
    k(a1, b1, 2.0f);
    k(a2, b2, 2.0f);
  }
  state.SetItemsProcessed(state.iterations() * 2);
}

BENCHMARK_CAPTURE(BM_CachedCall_SameShape, exact, Policy::kExact);
BENCHMARK_CAPTURE(BM_CachedCall_SameShape, dynamic, Policy::kDynamic);
BENCHMARK(BM_CachedCall_AlternatingShapes);

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN();
