// The body of a T.parallel loop keeps the noalias facts of its buffers: its pointers come from
// the task's closure, yet the loops over them vectorize without run-time overlap checks, and
// the results are right under one and many threads, with read-only tensors passed twice too.
#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <string>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

// Rows in parallel, a symbolic row length: the index arithmetic is int32 that LLVM cannot
// prove does not wrap, so without noalias it could not bound the accesses for overlap checks.
constexpr const char* kRows = R"(
@T.prim_func
def rows(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float32")
    B = T.match_buffer(b, (m, n), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i in T.parallel(m):
        for j in range(n):
            C[i, j] = A[i, j] * T.float32(2) + B[i, j]
)";

TEST(ParallelNoalias, TheBodyVectorizesWithoutRuntimeChecks) {
  IRModule m = passes::run_passes(parse(kRows), passes::default_pipeline(), {});
  std::string text = test::host_llvm_text(m);
  // Before optimization: the body's buffer pointers are noalias parameters.
  EXPECT_NE(text.find("_body("), std::string::npos) << text;
  EXPECT_NE(text.find("ptr noalias %A"), std::string::npos) << text;
  std::string ir = test::optimized_ir_of(text);
  // After it: the body is inlined into the task, its loop is vectorized, and no block checks
  // the pointers for overlap.
  EXPECT_EQ(ir.find("_body("), std::string::npos) << ir;
  EXPECT_NE(ir.find("fmul <"), std::string::npos) << ir;
  EXPECT_NE(ir.find("store <"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("memcheck"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("conflict"), std::string::npos) << ir;
  EXPECT_EQ(ir.find("diff.check"), std::string::npos) << ir;
}

void expect_rows(const Tensor& a, const Tensor& b, const Tensor& c, const std::string& where) {
  int64_t count = c.numel();
  for (int64_t i = 0; i < count; ++i) {
    ASSERT_EQ(c.data<float>()[i], a.data<float>()[i] * 2 + b.data<float>()[i])
        << where << ", element " << i;
  }
}

TEST(ParallelNoalias, ResultsUnderOneAndManyThreadsAndEveryPolicy) {
  for (Policy policy : {Policy::kExact, Policy::kBucketed, Policy::kDynamic}) {
    Jit jit;
    Kernel k = jit.kernel(parse(kRows)->lookup("rows"), {.policy = policy});
    for (int threads : {1, 0}) {
      for (auto [m, n] : {std::pair<int64_t, int64_t>{1, 1}, {7, 33}, {64, 64}, {257, 131}}) {
        Tensor a = Tensor::zeros({m, n}, DataType::Float(32));
        Tensor b = Tensor::zeros({m, n}, DataType::Float(32));
        Tensor c = Tensor::zeros({m, n}, DataType::Float(32));
        for (int64_t i = 0; i < m * n; ++i) {
          a.data<float>()[i] = static_cast<float>(i % 101) * 0.25f;
          b.data<float>()[i] = static_cast<float>(i % 7);
        }
        auto run = [&] { k(a, b, c); };
        if (threads == 1) {
          tbb::task_arena(1).execute(run);
        } else {
          run();
        }
        std::string where = "policy " + std::to_string(static_cast<int>(policy)) + ", threads " +
                            std::to_string(threads) + ", " + std::to_string(m) + "x" +
                            std::to_string(n);
        expect_rows(a, b, c, where);
        // One tensor for both inputs: read-only overlap is allowed, and the noalias of the
        // body (no store through either) keeps it right.
        k(a, a, c);
        expect_rows(a, a, c, where + ", A passed twice");
        // A written tensor that overlaps an input is refused before any code runs.
        EXPECT_ERROR_CONTAINS(k(a, b, a), "overlap in memory");
      }
    }
  }
}

// A loop over an unsigned extent runs all of it and indexes with the unsigned values: the
// parallel range is widened to int64 as its type reads (a uint8 extent of 200 was
// sign-extended to -56 and ran no iteration), and so are indices (uint8 128..199 were
// sign-extended: stores before the buffer).
TEST(ParallelNoalias, UnsignedExtentsAndIndicesReadAsUnsigned) {
  for (const char* loop : {"T.parallel", "range"}) {
    const IRModule module = parse(std::string(R"(
@T.prim_func
def main(A: T.Buffer((256,), "int32")):
    T.func_attr({"target": T.target("llvm")})
    for i in )") + loop + R"((T.uint8(200)):
        A[i] = 7
)");
    Jit jit;
    Kernel k = jit.kernel(module, "main");
    Tensor a = Tensor::zeros({256}, DataType::Int(32));
    k(a);
    for (int64_t i = 0; i < 256; ++i) {
      ASSERT_EQ(a.data<int32_t>()[i], i < 200 ? 7 : 0) << loop << " i=" << i;
    }
  }
}

}  // namespace
}  // namespace primjit
