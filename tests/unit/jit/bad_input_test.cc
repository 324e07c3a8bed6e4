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

}  // namespace
}  // namespace primjit
