#include "primjit/builder.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "examples/kernels.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/unit/test_util.h"

// User code outside namespace primjit: operators on buffer elements must still be found.
static primjit::PrimFunc scale_outside_namespace() {
  namespace pb = primjit::builder;
  pb::FunctionBuilder f("scale");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n});
  f.for_("i", n, [&](pb::Var i) { A[i] = A[i] * 2.0 + A[i] / 4.0 - 1; });
  return f.finish();
}

namespace primjit {
namespace {

namespace pb = primjit::builder;

TEST(Builder, OperatorsWorkOutsideThePrimjitNamespace) {
  PrimFunc f = scale_outside_namespace();
  EXPECT_EQ(f->global_symbol(), "scale");
}

using primjit::test::error_of;

// Each example equals the same function written in the text format (tests/ir/builder/).
PrimFunc parse_file(const std::string& name) {
  std::ifstream in(std::string(PRIMJIT_TEST_DATA_DIR) + "/builder/" + name + ".tir");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return parse(text.str(), name + ".tir")->lookup(name);
}

void expect_same(const std::string& name, const PrimFunc& built) {
  PrimFunc written = parse_file(name);
  std::optional<std::string> diff = structural_diff(built, written);
  EXPECT_FALSE(diff.has_value()) << name << ": " << *diff << "\nbuilt:\n" << print(built, name);
}

TEST(Builder, VectorAddCpuMatchesItsText) {
  expect_same("vector_add_cpu", examples::vector_add_cpu());
}
TEST(Builder, VectorAddCudaMatchesItsText) {
  expect_same("vector_add_cuda", examples::vector_add_cuda());
}
TEST(Builder, RowSoftmaxMatchesItsText) { expect_same("row_softmax", examples::row_softmax()); }
TEST(Builder, MatmulReluMatchesItsText) { expect_same("matmul_relu", examples::matmul_relu()); }

// The default pipeline lowers every example and keeps it well formed after every pass; the
// CUDA examples become a host function plus kernels.
TEST(Builder, ExamplesSurviveTheDefaultPipelineUnderVerifyEach) {
  std::vector<std::string> passes = passes::default_pipeline();
  passes::RunOptions options;
  options.verify_each = true;
  for (auto [name, func] : {std::pair{"vector_add_cpu", examples::vector_add_cpu()},
                            std::pair{"vector_add_cuda", examples::vector_add_cuda()},
                            std::pair{"row_softmax", examples::row_softmax()},
                            std::pair{"matmul_relu", examples::matmul_relu()}}) {
    IRModule lowered = passes::run_passes(IRModule::from_function(name, func), passes, options);
    int merged = 0, dynamic = 0;
    for (const auto& [gvar, lowered_func] : lowered->functions) {
      post_order_visit(lowered_func->body, [&](const Ref<Object>& node) {
        const auto* alloc = node.as<AllocBuffer>();
        if (alloc != nullptr && alloc->buffer->scope() == "shared.dyn") {
          ++dynamic;
          merged += alloc->buffer->dtype == pb::u8;
        }
      });
    }
    std::string n = name;
    size_t kernels = n == "vector_add_cpu" ? 0 : n == "matmul_relu" ? 2 : 1;
    EXPECT_EQ(lowered->functions.size(), 1 + kernels) << print(lowered);
    // The matmul's first launch (two tiles) gets a merged buffer; its second launch has a single
    // dynamic allocation, which the merge leaves as it is.
    bool matmul = std::string(name) == "matmul_relu";
    EXPECT_EQ(merged, matmul ? 1 : 0) << print(lowered);
    EXPECT_EQ(dynamic, matmul ? 2 : 0) << print(lowered);
  }
}

TEST(Builder, ExamplesBuildAndVerify) {
  EXPECT_EQ(examples::vector_add_cpu()->params.size(), 3u);
  EXPECT_EQ(examples::vector_add_cuda()->params.size(), 3u);
  EXPECT_EQ(examples::row_softmax()->params.size(), 2u);
  EXPECT_EQ(examples::matmul_relu()->params.size(), 4u);
}

struct VectorAdd {
  pb::FunctionBuilder f{"vadd"};
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n});
  pb::BufferRef C = f.arg_buffer("C", {n});
};

TEST(BuilderMisuse, WrongNumberOfIndices) {
  VectorAdd v;
  EXPECT_ERROR_CONTAINS(v.f.for_("i", v.n, [&](pb::Var i) { v.C(i, i) = v.A[i]; }),
                        "buffer 'C' has 1 dimension but is indexed with 2 indices");
  VectorAdd w;
  EXPECT_ERROR_CONTAINS(w.f.for_("i", w.n,
                                 [&](pb::Var i) {
                                   w.C[i] = w.A[{i, i}] + 1.0;
                                 }),
                        "buffer 'A' has 1 dimension but is indexed with 2 indices");
}

TEST(BuilderMisuse, DtypeMismatchInAStore) {
  VectorAdd v;
  EXPECT_ERROR_CONTAINS(
      v.f.for_("i", v.n, [&](pb::Var i) { v.C[i] = pb::cast(pb::f16, v.A[i]); }),
      "store to 'C': the value has dtype float16 but the buffer holds float32 (use cast(float32");
}

TEST(BuilderMisuse, StatementAfterFinish) {
  VectorAdd v;
  v.f.for_("i", v.n, [&](pb::Var i) { v.C[i] = v.A[i]; });
  PrimFunc done = v.f.finish();
  EXPECT_TRUE(done.defined());
  EXPECT_ERROR_CONTAINS(v.f.evaluate(0), "is already finished");
  EXPECT_ERROR_CONTAINS(v.C[0] = 1.0, "store to 'C': function 'vadd' is already finished");
  EXPECT_ERROR_CONTAINS(v.f.finish(), "is already finished");
}

TEST(BuilderMisuse, BufferOutsideAnyFunction) {
  pb::BufferRef detached;
  EXPECT_ERROR_CONTAINS(detached[0] = 1.0, "does not belong to any function");
}

TEST(BuilderMisuse, LoopVariableUsedOutsideItsLoop) {
  VectorAdd v;
  pb::Var leaked;
  v.f.for_("i", v.n, [&](pb::Var i) { leaked = i; });
  EXPECT_ERROR_CONTAINS(v.C[leaked] = 1.0, "variable 'i' is used outside its scope");
  pb::Var bound;
  v.f.if_then(v.n > 2, [&] { bound = v.f.bind("x", v.n * 2); });
  EXPECT_ERROR_CONTAINS(v.f.evaluate(bound + 1), "variable 'x' is used outside its scope");
}

TEST(BuilderMisuse, FinishWithAnOpenScope) {
  VectorAdd v;
  EXPECT_ERROR_CONTAINS(v.f.for_("i", v.n, [&](pb::Var) { v.f.finish(); }),
                        "finish() called with 1 scope(s) still open");
}

TEST(BuilderMisuse, MixingTwoBuildersVariables) {
  VectorAdd v;
  pb::FunctionBuilder g("other");
  pb::BufferRef B = g.arg_buffer("B", {16});
  EXPECT_ERROR_CONTAINS(g.bind("x", v.n + 1), "variable 'n' does not belong to function 'other'");
  EXPECT_ERROR_CONTAINS(g.for_("i", 16, [&](pb::Var i) { B[i] = v.A[i]; }),
                        "does not belong to function 'other'");
}

TEST(BuilderMisuse, ErrorsAreLocatedAtTheCall) {
  VectorAdd v;
  std::string message = error_of([&] { v.f.evaluate(pb::Var::make("stray", pb::i32)); });
  EXPECT_EQ(message.rfind("builder_test.cc:", 0), 0u) << message;
}

TEST(BuilderMisuse, ArgumentsComeBeforeStatements) {
  VectorAdd v;
  v.f.evaluate(0);
  EXPECT_ERROR_CONTAINS(v.f.arg("late", pb::i32), "must be declared before its first statement");
}

TEST(BuilderMisuse, BadScopeAndBadExtent) {
  VectorAdd v;
  EXPECT_ERROR_CONTAINS(v.f.alloc_buffer("S", {4}, pb::f32, "texture"),
                        "unknown storage scope \"texture\"");
  EXPECT_ERROR_CONTAINS(v.f.for_("i", 4.0, [](pb::Var) {}), "the bounds must be scalar integers");
}

TEST(BuilderExpr, LiteralsAdoptTheOtherOperandsDtype) {
  pb::Var x = pb::Var::make("x", pb::i64);
  EXPECT_EQ((x + 1).dtype(), pb::i64);
  EXPECT_EQ((2 * x).dtype(), pb::i64);
  pb::Var h = pb::Var::make("h", pb::f16);
  EXPECT_EQ((h * 2.0).dtype(), pb::f16);
  EXPECT_EQ((h + 1).dtype(), pb::f16);
  EXPECT_EQ((x < 3).dtype(), pb::boolean);
  EXPECT_ERROR_CONTAINS(x + 0.5, "the literal 0.5 cannot be used with an operand of dtype int64");
  // Integer / and % are floor division and modulo; on floats / divides.
  EXPECT_NE((x / 2).as<FloorDiv>(), nullptr);
  EXPECT_NE((x % 2).as<FloorMod>(), nullptr);
  EXPECT_NE((h / 2.0).as<Div>(), nullptr);
  EXPECT_NE(pb::ceildiv(x, 4).as<FloorDiv>(), nullptr);
  EXPECT_NE((!(x < 3) && x > 1).as<And>(), nullptr);
  EXPECT_EQ(pb::exp(h).dtype(), pb::f16);
  EXPECT_ERROR_CONTAINS(pb::exp(x), "exp() needs a floating-point argument, got int64");
  Expr ext = pb::call_extern(pb::f32, "expf", pb::cast(pb::f32, x));
  ASSERT_NE(ext.as<Call>(), nullptr);
  EXPECT_TRUE(ext.as<Call>()->is_op("call_extern"));
}

// Every statement form the builder offers, against the same function written as text.
TEST(Builder, EveryStatementFormMatchesItsText) {
  pb::FunctionBuilder f("forms");
  pb::Var n = f.arg("n", pb::i32);
  pb::BufferRef A = f.arg_buffer("A", {16});
  pb::BufferRef W = f.alloc_buffer("W", {8}, pb::u8, "shared.dyn");
  pb::BufferRef V = f.decl_buffer("V", {2}, pb::f32, W.data());
  f.assert_(n > 0, "n must be positive");
  f.vectorized("v", 4, [&](pb::Var v) { A[v] = 1.0; });
  f.unrolled("u", 2, [&](pb::Var u) { V[u] = A[u]; });
  f.for_("k", 2, 6, [&](pb::Var k) { A[k] = A[k] * 2.0; });
  f.if_then_else(
      n < 8, [&] { A[0] = 0.0; }, [&] { A[1] = pb::cast(pb::f32, n); });
  f.while_(A[0] < 4.0, [&] { A[0] += 1.0; });
  f.sync_threads();
  f.evaluate(pb::call_extern(pb::i32, "notify", n));
  f.ret(n + 1);
  PrimFunc built = f.finish();
  IRModule written = parse(R"(# from tvm.script import tir as T
@T.prim_func
def forms(n: T.int32, A: T.Buffer((16,), "float32")) -> T.int32:
    W = T.alloc_buffer((8,), "uint8", scope="shared.dyn")
    V = T.decl_buffer((2,), "float32", data=W.data)
    assert n > 0, "n must be positive"
    for v in T.vectorized(4):
        A[v] = T.float32(1.0)
    for u in T.unroll(2):
        V[u] = A[u]
    for k in range(2, 6):
        A[k] = A[k] * T.float32(2.0)
    if n < 8:
        A[0] = T.float32(0.0)
    else:
        A[1] = T.Cast("float32", n)
    while A[0] < T.float32(4.0):
        A[0] = A[0] + T.float32(1.0)
    T.tvm_storage_sync("shared")
    T.call_extern("int32", "notify", n)
    return n + 1
)");
  std::optional<std::string> diff = structural_diff(built, written->lookup("forms"));
  EXPECT_FALSE(diff.has_value()) << *diff << "\n" << print(built, "forms");
}

TEST(Builder, DimIsSharedAcrossArguments) {
  pb::FunctionBuilder f("shared_dim");
  pb::Var n = f.dim("n");
  pb::BufferRef A = f.arg_buffer("A", {n, 4});
  pb::BufferRef B = f.arg_buffer("B", {f.dim("n")});
  EXPECT_TRUE(A.buffer()->shape[0].same_as(B.buffer()->shape[0]));
  EXPECT_ERROR_CONTAINS(f.dim("n", pb::i64), "was declared as int32");
  f.for_("i", n, [&](pb::Var i) { B[i] = A(i, 0); });
  PrimFunc func = f.finish();
  EXPECT_EQ(func->global_symbol(), "shared_dim");
}

TEST(Builder, ConciseLaunchWrapsTheRestOfItsScope) {
  pb::FunctionBuilder f("k");
  pb::BufferRef A = f.arg_buffer("A", {128});
  f.launch_thread("blockIdx.x", 2, [&](pb::Var bx) {
    pb::Var tx = f.launch_thread("threadIdx.x", 64);
    A[bx * 64 + tx] = 0.0;
  });
  PrimFunc func = f.finish();
  const auto* outer = func->body.as<AttrStmt>();
  ASSERT_NE(outer, nullptr);
  EXPECT_EQ(outer->iter_var()->thread_tag, "blockIdx.x");
  const auto* inner = outer->body.as<AttrStmt>();
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->iter_var()->thread_tag, "threadIdx.x");
  EXPECT_NE(inner->body.as<BufferStore>(), nullptr);
}

}  // namespace
}  // namespace primjit
