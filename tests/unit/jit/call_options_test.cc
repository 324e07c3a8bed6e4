// Per-call options and prepared calls, the parts that need no GPU: the stream is not part of a
// variant, CPU targets ignore it, and Kernel::prepare refuses what it cannot replay (the
// fake-driver tests and the GPU tests cover the launches themselves).
#include <gtest/gtest.h>

#include <string>

#include "examples/kernels.h"
#include "jit/runtime/prepared_call.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::Pair;
using test::scale_function;

void* fake_stream(uintptr_t value) { return reinterpret_cast<void*>(value); }

TEST(CallOptions, CpuTargetsIgnoreTheStream) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(8);
  k(p.a, p.b, 2.0f, CallOptions{.cuda_stream = fake_stream(0x1230)});
  p.expect_scaled(2.0f);
  Arg args[] = {p.a, p.b, 3.0f};
  k.call(args, CallOptions{.cuda_stream = fake_stream(0x4560)});
  p.expect_scaled(3.0f);
  KernelStats s = k.stats();
  EXPECT_EQ(s.calls, 2u);
  EXPECT_EQ(s.misses, 1u);
}

// Kernels that differ only in their default stream share their variants (the stream used to
// be part of the variant's fingerprint).
TEST(CallOptions, KernelsOnOtherStreamsShareVariants) {
  Jit jit;
  Kernel k1 = jit.kernel(scale_function(), {.cuda_stream = fake_stream(0x1000)});
  Kernel k2 = jit.kernel(scale_function(), {.cuda_stream = fake_stream(0x2000)});
  Pair p(8);
  k1(p.a, p.b, 2.0f);
  k2(p.a, p.b, 4.0f);
  p.expect_scaled(4.0f);
  EXPECT_EQ(k1.stats().misses, 1u);
  EXPECT_EQ(k2.stats().misses, 0u);
  EXPECT_EQ(k2.stats().hits, 1u);
}

TEST(PreparedCall, OnlyCudaKernelsArePrepared) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(8);
  EXPECT_ERROR_CONTAINS(k.prepare(p.a, p.b, 2.0f), "only kernels for target cuda");
  EXPECT_EQ(k.stats().calls, 0u);  // refused before the call
  EXPECT_ERROR_CONTAINS(PreparedCall().launch(), "empty PreparedCall");
  EXPECT_EQ(PreparedCall().num_launches(), 0u);
}

// What a replay would leave out, found in the function before it is compiled.
std::string host_work(const std::string& text) {
  IRModule m = parse(text);
  return jit::host_work_besides_launches(m, m->functions.front().first->name);
}

TEST(PreparedCall, HostCodeThatOnlyLaunchesIsAccepted) {
  IRModule m = IRModule::from_function("vector_add_cuda", examples::vector_add_cuda());
  EXPECT_EQ(jit::host_work_besides_launches(m, "vector_add_cuda"), "");
  m = IRModule::from_function("matmul_relu", examples::matmul_relu());
  EXPECT_EQ(jit::host_work_besides_launches(m, "matmul_relu"), "");
  // A host loop over launches, and an assert, are replayed faithfully: accepted.
  EXPECT_EQ(host_work(R"(
@T.prim_func
def f(A: T.Buffer((4, 32), "float32"), n: T.int32):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    assert n > 0, "n must be positive"
    for j in range(4):
        with T.launch_thread("threadIdx.x", 32) as tx:
            A[j, tx] = A[j, tx] + T.float32(1)
)"),
            "");
}

TEST(PreparedCall, HostWorkBesidesLaunchesIsFound) {
  EXPECT_EQ(host_work(R"(
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    A[0] = T.float32(0)
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx] = A[tx] + T.float32(1)
)"),
            "stores to buffer 'A'");
  EXPECT_EQ(host_work(R"(
@T.prim_func
def f(A: T.Buffer((4, 32), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    for j in T.parallel(4):
        with T.launch_thread("threadIdx.x", 32) as tx:
            A[j, tx] = A[j, tx] + T.float32(1)
)"),
            "runs a parallel loop");
  EXPECT_EQ(host_work(R"(
@T.prim_func
def f(A: T.Buffer((32,), "float32")) -> T.int32:
    T.func_attr({"target": T.target("cuda", host="llvm")})
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx] = A[tx] + T.float32(1)
    return 1
)"),
            "returns a value (f)");
}

TEST(PreparedCall, PrepareRefusesHostWorkBeforeCompiling) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def f(A: T.Buffer((32,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    A[0] = T.float32(0)
    with T.launch_thread("threadIdx.x", 32) as tx:
        A[tx] = A[tx] + T.float32(1)
)")
                            ->lookup("f"));
  alignas(64) static float memory[32];
  int64_t n = 32;
  DLTensor a{memory, test::kGpu, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  EXPECT_ERROR_CONTAINS(k.prepare(&a), "host code of kernel 'f' stores to buffer 'A'");
  EXPECT_EQ(k.stats().calls, 0u);
}

}  // namespace
}  // namespace primjit
