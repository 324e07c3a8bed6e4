// Errors raised by the builder's operators, indexing, casts and stores name the line of the user
// code that wrote them (this file), not a line of the builder's headers.
#include <gtest/gtest.h>

#include <string>

#include "primjit/builder.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

namespace pb = primjit::builder;

// The message of the error `f` throws, and the line the test wrote it on. Keep each call on one
// line: __LINE__ and the offending operator must share it.
struct Failure {
  std::string message;
  int line;
};
template <typename F>
Failure fails(int line, F&& f) {
  return Failure{test::error_of(f), line};
}

// The error names this file and the line of the call, first, then says what is wrong.
void expect_located(const Failure& failure, const std::string& text) {
  std::string where = "builder_location_test.cc:" + std::to_string(failure.line) + ": ";
  EXPECT_EQ(failure.message.rfind(where, 0), 0u)
      << "expected to start with '" << where << "': " << failure.message;
  EXPECT_NE(failure.message.find(text), std::string::npos) << failure.message;
  EXPECT_EQ(failure.message.find("builder.h"), std::string::npos) << failure.message;
  EXPECT_EQ(failure.message.find("builder_expr.h"), std::string::npos) << failure.message;
}

struct Kernel {
  pb::FunctionBuilder f{"k"};
  pb::Var n = f.arg("n", pb::i32);
  pb::Var x = f.arg("x", pb::f32);
  pb::BufferRef A = f.arg_buffer("A", {16});
  pb::BufferRef M = f.arg_buffer("M", {4, 4});
};

TEST(BuilderLocation, IntegerPlusFloatNamesTheOperatorsLine) {
  Kernel k;
  Failure e = fails(__LINE__, [&] { return k.n + k.x; });
  expect_located(e, "operator +: Add: operands must have the same dtype, got int32 and float32");
  Failure literal_first = fails(__LINE__, [&] { return 2.5 * k.n; });
  expect_located(literal_first,
                 "operator *: the literal 2.5 cannot be used with an operand of dtype int32");
  Failure fraction = fails(__LINE__, [&] { return k.n - 0.5; });
  expect_located(fraction, "operator -: the literal 0.5 cannot be used with an operand of dtype");
}

TEST(BuilderLocation, BoolInArithmetic) {
  Kernel k;
  Failure sum = fails(__LINE__, [&] { return (k.n < 3) + (k.n > 1); });
  expect_located(sum, "operator +: Add: needs integer or floating operands, got bool");
  Failure negated = fails(__LINE__, [&] { return -(k.n < 3); });
  expect_located(negated, "unary operator -: Sub: needs integer or floating operands, got bool");
  Failure both = fails(__LINE__, [&] { return k.n && (k.n > 1); });
  expect_located(both, "operator &&: And: operands must have the same dtype, got int32 and bool");
  Failure inverted = fails(__LINE__, [&] { return !k.n; });
  expect_located(inverted, "operator !: Not: needs a bool operand, got int32");
}

TEST(BuilderLocation, ComparingAHandle) {
  Kernel k;
  Failure e = fails(__LINE__, [&] { return k.A.data() < 3; });
  expect_located(e, "operator <: a literal cannot be combined with an operand of dtype handle");
  Failure eq = fails(__LINE__, [&] { return 0 == k.A.data(); });
  expect_located(eq, "operator ==: a literal cannot be combined with an operand of dtype handle");
}

TEST(BuilderLocation, IndexingA2DBufferWithOneIndex) {
  Kernel k;
  Failure load = fails(__LINE__, [&] { return k.M[k.n] + 1.0; });
  expect_located(load, "buffer 'M' has 2 dimensions but is indexed with 1 index");
  Failure call = fails(__LINE__, [&] { return pb::Expr(k.M(k.n)); });
  expect_located(call, "buffer 'M' has 2 dimensions but is indexed with 1 index");
  Failure list = fails(__LINE__, [&] { return pb::Expr(k.M[{k.n, k.n, k.n}]); });
  expect_located(list, "buffer 'M' has 2 dimensions but is indexed with 3 indices");
  Failure store = fails(__LINE__, [&] { k.M[k.n] = 1.0; });
  expect_located(store, "buffer 'M' has 2 dimensions but is indexed with 1 index");
  // Inside a loop body, the line of the store in the lambda, not of the for_ call.
  Failure in_loop = fails(__LINE__, [&] { k.f.for_("i", 4, [&](pb::Var i) { k.A[i] = k.M[i]; }); });
  expect_located(in_loop, "buffer 'M' has 2 dimensions but is indexed with 1 index");
}

TEST(BuilderLocation, StoresAndCasts) {
  Kernel k;
  Failure store = fails(__LINE__, [&] { k.A[0] = pb::cast(pb::f16, k.x); });
  expect_located(store, "store to 'A': the value has dtype float16 but the buffer holds float32");
  Failure update = fails(__LINE__, [&] { k.A[1] += k.n; });
  expect_located(update, "+=: Add: operands must have the same dtype, got float32 and int32");
  Failure cast = fails(__LINE__, [&] { return pb::cast(pb::f32.with_lanes(4), k.n); });
  expect_located(cast, "cast: Cast: cannot change the lane count from int32 to float32x4");
  Failure math = fails(__LINE__, [&] { return pb::exp(k.n); });
  expect_located(math, "exp() needs a floating-point argument, got int32");
  Failure lo = fails(__LINE__, [&] { return pb::min(k.n, k.x); });
  expect_located(lo, "min: Min: operands must have the same dtype, got int32 and float32");
  Failure sel = fails(__LINE__, [&] { return pb::select(k.n, k.x, k.x); });
  expect_located(sel, "select: Select:");
}

// Well-typed expressions are unchanged: literals adopt the other operand's dtype, a C++
// literal in `+=` adopts the element's dtype, and C++20's reversed `==` candidates do not make
// `x == A[i]` ambiguous.
TEST(BuilderLocation, WellTypedExpressionsBuildAsBefore) {
  Kernel k;
  EXPECT_EQ((k.x == k.A[0]).dtype(), pb::boolean);
  EXPECT_EQ((k.A[0] == k.x).dtype(), pb::boolean);
  EXPECT_EQ((k.A[0] != k.A[1]).dtype(), pb::boolean);
  EXPECT_EQ((1 + k.n * 2).dtype(), pb::i32);
  EXPECT_NE((k.A[0] + k.A[1]).as<Add>(), nullptr);
  k.f.for_("i", 16, [&](pb::Var i) { k.A[i] += 1; });
  PrimFunc func = k.f.finish();
  const auto* loop = func->body.as<For>();
  ASSERT_NE(loop, nullptr);
  const auto* store = loop->body.as<BufferStore>();
  ASSERT_NE(store, nullptr);
  const auto* add = store->value.as<Add>();
  ASSERT_NE(add, nullptr);
  const auto* one = add->b.as<FloatImm>();
  ASSERT_NE(one, nullptr);
  EXPECT_EQ(one->value, 1.0);
  EXPECT_EQ(one->dtype, pb::f32);
}

}  // namespace
}  // namespace primjit
