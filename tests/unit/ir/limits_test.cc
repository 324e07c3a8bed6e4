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

}  // namespace
}  // namespace primjit
