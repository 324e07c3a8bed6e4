// Bad input to the JIT runtime gets a primjit::Error naming what is wrong, never a crash, a
// hang or a silent truncation; one section per kind of input.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "jit/emu/interpreter.h"
#include "jit/llvm/codegen_llvm.h"
#include "primjit/dlpack.h"
#include "primjit/ir.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::scale_function;

const DataType f32 = DataType::Float(32);

// --- expression depth -------------------------------------------------------------------------

// B[0] = A[0] + A[1] + ... + A[terms - 1 mod 4]: a left-leaning chain terms + 1 deep.
PrimFunc chain_function(int terms) {
  Buffer a = Buffer::make("A", f32, {make_const(4)});
  Buffer b = Buffer::make("B", f32, {make_const(1)});
  Expr sum = BufferLoad::make(a, {make_const(0)});
  for (int i = 1; i < terms; ++i) sum = Add::make(sum, BufferLoad::make(a, {make_const(i % 4)}));
  Var ha = Var::make_handle("a"), hb = Var::make_handle("b");
  return PrimFunc::make({ha, hb}, {{ha, a}, {hb, b}},
                        BufferStore::make(b, std::move(sum), {make_const(0)}))
      .with_attr("target", AttrValue(Target::llvm()));
}

TEST(ExprDepth, JustUnderTheLimitRunsEndToEndOnLlvmAndEmu) {
  const int terms = kMaxExprDepth - 5;
  PrimFunc f = chain_function(terms);
  ASSERT_EQ(f->body.as<BufferStore>()->value->depth, terms + 1);
  double expected = 0;
  for (int i = 0; i < terms; ++i) expected += i % 4 + 1;
  for (Target target : {Target::llvm(), Target::emu()}) {
    Jit jit;
    Kernel k = jit.kernel(f, {.target = target});
    Tensor a = Tensor::zeros({4}, f32), b = Tensor::zeros({1}, f32);
    for (int i = 0; i < 4; ++i) a.data<float>()[i] = static_cast<float>(i + 1);
    k(a, b);
    EXPECT_EQ(b.data<float>()[0], expected) << target.str();
  }
}

// --- dimensions beyond their shape variable's dtype ----------------------------------------

// A DLTensor over `data` whose shape claims `n` elements (only its first few exist).
struct ClaimedTensor {
  float data[8] = {};
  int64_t shape[1];
  DLTensor dl;
  explicit ClaimedTensor(int64_t n)
      : shape{n}, dl{data, {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, shape, nullptr, 0} {}
};

TEST(HugeDimension, AnInt32ShapeVariableRefusesTwoToThe31BeforeAnyAccess) {
  const int64_t huge = int64_t{1} << 31;  // as int32: -2147483648
  for (Policy policy : {Policy::kDynamic, Policy::kExact}) {
    for (Target target : {Target::llvm(), Target::emu()}) {
      Jit jit;
      Kernel k = jit.kernel(scale_function(), {.target = target, .policy = policy});
      ClaimedTensor a(huge), b(huge);
      EXPECT_ERROR_CONTAINS(k(&a.dl, &b.dl, 2.0f),
                            "argument #0 ('A') of 'scale': shape[0] = 2147483648 does not fit in "
                            "int32, the dtype of A.shape[0] ('n'); declare the shape as int64");
      EXPECT_EQ(k.stats().misses, 0u) << "nothing is compiled for a bad call";
    }
  }
}

TEST(HugeDimension, ACachedDynamicVariantChecksTooAndInt64ShapesAreAccepted) {
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kDynamic});
  test::Pair small(8);
  k(small.a, small.b, 2.0f);  // compiles the dynamic variant; later calls take the fast path
  small.expect_scaled(2.0f);
  ClaimedTensor a((int64_t{1} << 32) + 8), b((int64_t{1} << 32) + 8);
  EXPECT_ERROR_CONTAINS(k(&a.dl, &b.dl, 2.0f), "shape[0] = 4294967304 does not fit in int32");
  // With an int64 shape variable the same dimension is a legal argument (the loop would then
  // run over it, so the check is only that it is not refused).
  PrimFunc wide = parse(R"(
@T.prim_func
def first(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (1,), "float32")
    B[0] = A[0] + T.Cast("float32", n % T.int64(1000))
)")
                      ->lookup("first");
  Kernel first = jit.kernel(wide, {.policy = Policy::kDynamic});
  Tensor out = Tensor::zeros({1}, f32);
  a.data[0] = 1;
  first(&a.dl, out);
  EXPECT_EQ(out.data<float>()[0], 1.0f + static_cast<float>(((int64_t{1} << 32) + 8) % 1000));
}

TEST(HugeDimension, ThePackedApiChecksTheDimensionItself) {
  // Called without the JIT's argument checks (the interpreter packs the arguments itself), the
  // packed function's own assert refuses the dimension.
  IRModule lowered = passes::run_passes(
      IRModule::make({{GlobalVar::make("scale"), scale_function()}}), passes::default_pipeline());
  jit::emu::Interpreter interp(lowered);
  ClaimedTensor a(int64_t{1} << 31), b(int64_t{1} << 31);
  EXPECT_ERROR_CONTAINS(interp.run("scale", {jit::emu::Arg(&a.dl), jit::emu::Arg(&b.dl), 2.0f}),
                        "Invalid A.shape[0] on argument #0");
  EXPECT_ERROR_CONTAINS(interp.run("scale", {jit::emu::Arg(&a.dl), jit::emu::Arg(&b.dl), 2.0f}),
                        "expected at most 2147483647 (n is int32; declare it int64 for larger "
                        "dimensions), got 2147483648");
}

// --- sizes beyond int64 ---------------------------------------------------------------------

TEST(HugeShape, TensorZerosRefusesShapesWhoseSizeOverflows) {
  // 2^32 * 2^32 * 16 wrapped to 0 elements: a 0-byte buffer indexed as if it were huge.
  EXPECT_ERROR_CONTAINS(Tensor::zeros({int64_t{1} << 32, int64_t{1} << 32, 16}, f32),
                        "Tensor::zeros: shape [4294967296, 4294967296, 16] has more elements "
                        "than an int64 can count");
  // 2^62 elements fit in int64, their bytes do not.
  EXPECT_ERROR_CONTAINS(Tensor::zeros({int64_t{1} << 31, int64_t{1} << 31}, f32),
                        "Tensor::zeros: shape [2147483648, 2147483648] of float32 needs more than "
                        "9223372036854775807 bytes");
  // A zero dimension empties any shape.
  EXPECT_EQ(Tensor::zeros({int64_t{1} << 40, 0, int64_t{1} << 40}, f32).nbytes(), 0u);
}

TEST(HugeShape, NumElementsOfADLTensorRefusesAnOverflowingShape) {
  float data[1] = {};
  int64_t shape[3] = {int64_t{1} << 32, int64_t{1} << 32, 16};
  DLTensor t{data, {kDLCPU, 0}, 3, {kDLFloat, 32, 1}, shape, nullptr, 0};
  EXPECT_ERROR_CONTAINS(num_elements(t),
                        "the shape of the tensor float32[4294967296, 4294967296, 16] on cpu has "
                        "more elements than an int64 can count");
  size_t bytes = 0;
  EXPECT_FALSE(checked_bytes(f32, int64_t{1} << 62, &bytes));
  EXPECT_TRUE(checked_bytes(f32, 1000, &bytes));
  EXPECT_EQ(bytes, 4000u);
}

// --- T.unroll beyond the unroll limit --------------------------------------------------------

PrimFunc unroll_function(int64_t iterations) {
  return parse(R"(
@T.prim_func
def add_index(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, ()" +
               std::to_string(iterations) + R"(,), "float32")
    for i in T.unroll()" +
               std::to_string(iterations) + R"():
        A[i] = A[i] + T.Cast("float32", i)
)")
      ->lookup("add_index");
}

std::string host_llvm(const PrimFunc& f, int64_t max_unroll) {
  IRModule lowered = passes::run_passes(IRModule::make({{GlobalVar::make("add_index"), f}}),
                                        passes::default_pipeline());
  return jit::to_llvm_text(
      jit::codegen_llvm(passes::lower_for_host(lowered), "", {.max_unroll = max_unroll}));
}

TEST(UnrollLimit, TheLlvmHintStopsAtTheConfiguredLimit) {
  EXPECT_EQ(host_llvm(unroll_function(65536), passes::kDefaultMaxUnroll).find("unroll.full"),
            std::string::npos);
  EXPECT_NE(host_llvm(unroll_function(64), passes::kDefaultMaxUnroll).find("unroll.full"),
            std::string::npos);
  EXPECT_EQ(host_llvm(unroll_function(64), 63).find("unroll.full"), std::string::npos);
}

TEST(UnrollLimit, A65536IterationLoopCompilesAsALoopAndComputesTheRightResult) {
  Jit jit;
  Kernel k = jit.kernel(unroll_function(65536));
  Tensor a = Tensor::zeros({65536}, f32);
  k(a);
  for (int i = 0; i < 65536; i += 4097) ASSERT_EQ(a.data<float>()[i], static_cast<float>(i));
  EXPECT_EQ(a.data<float>()[65535], 65535.0f);
  EXPECT_ERROR_CONTAINS(jit.kernel(unroll_function(4), {.max_unroll = -1}),
                        "KernelOptions::max_unroll must be >= 0");
}

TEST(UnrollLimit, ThePassTakesTheLimitAsAnArgument) {
  IRModule m = IRModule::make({{GlobalVar::make("add_index"), unroll_function(8)}});
  std::string unrolled = print(passes::run_passes(m, {"UnrollLoops"}));
  EXPECT_EQ(unrolled.find("for i"), std::string::npos) << unrolled;
  std::string kept = print(passes::run_passes(m, {"UnrollLoops{max=4}"}));
  EXPECT_NE(kept.find("for i in range(8):"), std::string::npos) << kept;
  EXPECT_ERROR_CONTAINS(
      passes::run_passes(m, {"UnrollLoops{limit=4}"}),
      "pass UnrollLoops has no option 'limit'; accepted options:\n  max=int >= 0");
}

}  // namespace
}  // namespace primjit
