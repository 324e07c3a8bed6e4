// The message formatter of failed argument checks (primjit/abi.h) and T.format's validation.
#include <gtest/gtest.h>

#include "primjit/abi.h"
#include "primjit/ir.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

PJValue int_value(int64_t v) {
  PJValue out{};
  out.type_index = kPJInt;
  out.v_int64 = v;
  return out;
}

TEST(FormatMessage, CountsValuesOfEachPlaceholder) {
  EXPECT_EQ(format_value_count("no placeholder"), 0);
  EXPECT_EQ(format_value_count("{} and {type} and {device}"), 3);
  EXPECT_EQ(format_value_count("got {dtype}"), 3);
  EXPECT_EQ(format_value_count("{{literal}} {}"), 1);
  EXPECT_EQ(format_value_count("{unknown}"), -1);
  EXPECT_EQ(format_value_count("stray }"), -1);
  EXPECT_EQ(format_value_count("calling `{str}`, got {}"), 2);
}

// {str} prints a string literal's text; any other value as {} would.
TEST(FormatMessage, PrintsStringLiterals) {
  const char* signature = "f(A: Tensor([n], float32))";
  PJValue values[2] = {};
  values[0].type_index = kPJOpaquePtr;
  values[0].v_ptr = const_cast<char*>(signature);
  values[1] = int_value(7);
  EXPECT_EQ(format_message("calling `{str}`, got {}", values, 2),
            "calling `f(A: Tensor([n], float32))`, got 7");
  EXPECT_EQ(format_message("{str}", &values[1], 1), "7");
}

TEST(FormatMessage, PrintsValuesByKind) {
  PJValue values[] = {int_value(7), int_value(kPJFloat), int_value(2),
                      int_value(2), int_value(16),       int_value(1)};
  EXPECT_EQ(format_message("got {}, a {type}, on {device}, as {dtype} {{x}}", values, 6),
            "got 7, a float, on cuda, as float16 {x}");
  PJValue f{};
  f.type_index = kPJFloat;
  f.v_float64 = 0.5;
  EXPECT_EQ(format_message("value {}", &f, 1), "value 0.5");
  // Too few values leave the placeholder: a broken message is still a message.
  EXPECT_EQ(format_message("a {} b {}", values, 1), "a 7 b {}");
  PJValue bad_dtype[] = {int_value(99), int_value(8), int_value(1)};
  EXPECT_EQ(format_message("{dtype}", bad_dtype, 3), "(code 99, bits 8, lanes 1)");
}

TEST(FormatMessage, DlpackCodesRoundTrip) {
  for (DataType t : {DataType::Int(8), DataType::UInt(16), DataType::Float(16),
                     DataType::BFloat16(), DataType::Float8E4M3FN(), DataType::Float8E5M2(),
                     DataType::Bool(), DataType::Float(32, 4)}) {
    DataType back;
    ASSERT_TRUE(DataType::from_dlpack(t.dlpack_code(), t.bits(), t.lanes(), &back)) << t;
    EXPECT_EQ(back, t);
  }
  DataType out;
  EXPECT_FALSE(DataType::from_dlpack(2, 8, 1, &out));    // no float8 IEEE
  EXPECT_FALSE(DataType::from_dlpack(77, 32, 1, &out));  // unknown code
}

TEST(FormatCall, ChecksTheFormatAgainstItsValues) {
  Var x = Var::make("x", DataType::Int(32));
  Op fmt = Op::get("format");
  Expr ok = Call::make(DataType::Handle(), fmt, {StringImm::make("got {}"), x});
  Expr condition = EQ::make(x, make_const(0));
  Stmt assert_stmt = AssertStmt::make(condition, ok);
  ASSERT_TRUE(assert_stmt.defined());
  const auto* node = assert_stmt.as<AssertStmt>();
  ASSERT_NE(node, nullptr);
  EXPECT_TRUE(node->condition.same_as(condition));
  EXPECT_TRUE(node->message.same_as(ok));  // the T.format call itself, values read on failure
  const auto* call = node->message.as<Call>();
  ASSERT_NE(call, nullptr);
  EXPECT_TRUE(call->is_op("format"));
  ASSERT_EQ(call->args.size(), 2u);
  ASSERT_NE(call->args[0].as<StringImm>(), nullptr);
  EXPECT_EQ(call->args[0].as<StringImm>()->value, "got {}");
  EXPECT_TRUE(call->args[1].same_as(x));
  EXPECT_ERROR_CONTAINS(Call::make(DataType::Handle(), fmt, {StringImm::make("got {} {}"), x}),
                        "takes 2 values, got 1");
  EXPECT_ERROR_CONTAINS(Call::make(DataType::Handle(), fmt, {StringImm::make("{bad}")}),
                        "malformed format");
  EXPECT_ERROR_CONTAINS(Call::make(DataType::Handle(), fmt, {x}), "must be a string literal");
  EXPECT_ERROR_CONTAINS(AssertStmt::make(EQ::make(x, make_const(0)), x),
                        "message must be a string or T.format");
}

}  // namespace
}  // namespace primjit
