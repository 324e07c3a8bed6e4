// Limits of the IR: the lane count of vectors (kMaxLanes) and the nesting depth of expressions
// (kMaxExprDepth). Beyond them make(), DataType and the parser raise primjit::Error naming the
// limit, instead of wrapping, aborting in LLVM or overflowing a stack.
#include <gtest/gtest.h>

#include <string>

#include "primjit/builder.h"
#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

const DataType f32 = DataType::Float(32);

// --- lanes ------------------------------------------------------------------------------------

TEST(Lanes, DataTypesBeyondTheLimitAreRefusedNamingIt) {
  EXPECT_EQ(DataType::Float(32, kMaxLanes).lanes(), kMaxLanes);
  // 33,000 lanes used to reach LLVM and abort there; 70,000 used to wrap to 4,464 silently.
  EXPECT_ERROR_CONTAINS(DataType::Float(32, 33000),
                        "has 33000 lanes, more than the limit of 1024 lanes per vector");
  EXPECT_ERROR_CONTAINS(DataType::Int(32, 70000), "has 70000 lanes, more than the limit of 1024");
  EXPECT_ERROR_CONTAINS(DataType::Float(32).with_lanes(kMaxLanes + 1),
                        "more than the limit of 1024");
  EXPECT_ERROR_CONTAINS(DataType::Float(32, 0), "needs at least 1 lane, got 0");
}

TEST(Lanes, RampAndBroadcastNameTheLimit) {
  EXPECT_EQ(Ramp::make(make_const(0), make_const(1), kMaxLanes).dtype().lanes(), kMaxLanes);
  EXPECT_ERROR_CONTAINS(Ramp::make(make_const(0), make_const(1), 33000),
                        "Ramp has 33000 lanes, more than the limit of 1024 lanes per vector");
  EXPECT_ERROR_CONTAINS(Broadcast::make(FloatImm::make(f32, 1), 70000),
                        "Broadcast has 70000 lanes, more than the limit of 1024");
  // A vector load from a vector-typed buffer multiplies the lanes.
  Buffer wide = Buffer::make("W", DataType::Float(32, 64), {make_const(64)});
  EXPECT_ERROR_CONTAINS(BufferLoad::make(wide, {Ramp::make(make_const(0), make_const(1), 32)}),
                        "BufferLoad of 'W' has 2048 lanes, more than the limit of 1024");
}

TEST(Lanes, DtypeNamesAndDLPackTypesBeyondTheLimit) {
  EXPECT_EQ(DataType::parse("float32x1024"), DataType::Float(32, 1024));
  EXPECT_ERROR_CONTAINS(DataType::parse("float32x33000"),
                        "dtype \"float32x33000\" has 33000 lanes, more than the limit of 1024");
  DataType t;
  EXPECT_FALSE(DataType::try_parse("float32x70000", &t));
  EXPECT_TRUE(DataType::from_dlpack(2, 32, 1024, &t));
  EXPECT_FALSE(DataType::from_dlpack(2, 32, 2048, &t));
}

TEST(Lanes, TheParserReportsTheLimitAtTheExpression) {
  const std::string text =
      "@T.prim_func\n"
      "def main(A: T.Buffer((40000,), \"float32\")):\n"
      "    A[T.Ramp(0, 1, 33000)] = T.Broadcast(T.float32(1), 33000)\n";
  try {
    parse(text, "wide.tir");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(e.message().find("33000 lanes, more than the limit of 1024"), std::string::npos)
        << e.what();
  }
}

// --- expression depth -------------------------------------------------------------------------

TEST(ExprDepth, IsRecordedByMake) {
  Var x = Var::make("x", f32);
  EXPECT_EQ(x->depth, 1);
  Expr sum = Add::make(x, Mul::make(x, x));
  EXPECT_EQ(sum->depth, 3);
  Buffer a = Buffer::make("A", f32, {make_const(4)});
  EXPECT_EQ(BufferLoad::make(a, {Add::make(make_const(1), make_const(2))})->depth, 3);
  EXPECT_EQ(Select::make(LT::make(x, x), sum, x)->depth, 4);
}

TEST(ExprDepth, ABuilderChainOf100000TermsIsAnErrorNotACrash) {
  namespace pb = primjit::builder;
  pb::FunctionBuilder f("deep");
  pb::BufferRef A = f.arg_buffer("A", {4}, f32);
  std::string message = test::error_of([&] {
    Expr sum = A[0];
    for (int i = 1; i < 100000; ++i) sum = sum + Expr(A[i % 4]);
  });
  EXPECT_NE(message.find("expression nesting depth 1001 exceeds the limit of 1000"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("bind parts of the expression to variables"), std::string::npos);
}

TEST(ExprDepth, EveryNodeKindCountsItsOperands) {
  Var x = Var::make("x", f32);
  Expr e = x;
  for (int i = 1; i < kMaxExprDepth; ++i) e = Cast::make(f32, e);
  EXPECT_EQ(e->depth, kMaxExprDepth);
  EXPECT_ERROR_CONTAINS(LT::make(e, x), "depth 1001 exceeds the limit of 1000 (primjit::kMax");
  EXPECT_ERROR_CONTAINS(Call::make(f32, Op::get("fabs"), {e}), "depth 1001 exceeds the limit");
  EXPECT_ERROR_CONTAINS(Let::make(Var::make("y", f32), e, x), "depth 1001 exceeds the limit");
  EXPECT_ERROR_CONTAINS(Broadcast::make(e, 4), "depth 1001 exceeds the limit");
}

// A chain `A[0] + A[1] + ... ` of `terms` loads, as text.
std::string chain_text(int terms) {
  std::string text =
      "@T.prim_func\n"
      "def main(A: T.Buffer((4,), \"float32\")):\n"
      "    A[0] = A[0]";
  for (int i = 1; i < terms; ++i) text += " + A[" + std::to_string(i % 4) + "]";
  return text + "\n";
}

TEST(ExprDepth, TheParserRejectsTooDeepTextWithItsLocation) {
  try {
    parse(chain_text(100000), "deep.tir");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(e.file(), "deep.tir");
    EXPECT_EQ(e.line(), 3);
    EXPECT_NE(e.message().find("expression nesting depth 1001 exceeds the limit of 1000"),
              std::string::npos)
        << e.message();
  }
}

TEST(ExprDepth, AnExpressionAtTheLimitPrintsParsesAndCompares) {
  // 999 loads of depth 2: the chain is 1 + 998 + 1 = 1000 deep.
  IRModule m = parse(chain_text(kMaxExprDepth - 1));
  const auto* store = m->lookup("main")->body.as<BufferStore>();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->value->depth, kMaxExprDepth);
  IRModule again = parse(print(m));
  EXPECT_TRUE(structural_equal(m, again));
  EXPECT_EQ(structural_hash(m), structural_hash(again));
}

}  // namespace
}  // namespace primjit
