// The op table (ops.def): its entries, the rules the text format and passes take from it, and
// OpMap, through which backends attach their lowering to the entries.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "primjit/error.h"
#include "primjit/ir/expr.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/stmt.h"
#include "primjit/ir/text.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

TEST(OpTable, EveryEntryIsFoundByNameAndIndex) {
  const std::vector<Op>& ops = Op::all();
  ASSERT_GE(ops.size(), 40u);
  std::set<std::string> names;
  for (size_t i = 0; i < ops.size(); ++i) {
    EXPECT_EQ(ops[i]->index, static_cast<int>(i));
    EXPECT_TRUE(Op::get(ops[i]->name).same_as(ops[i]));
    EXPECT_TRUE(names.insert(ops[i]->name).second) << ops[i]->name << " twice";
    // Math functions state an accuracy bound; nothing else does.
    EXPECT_EQ(ops[i]->is_math(), ops[i]->max_ulp >= 0) << ops[i]->name;
    EXPECT_TRUE(ops[i]->libm.empty() || ops[i]->is_math()) << ops[i]->name;
  }
  EXPECT_EQ(registered_op_names(), std::vector<std::string>(names.begin(), names.end()));
  EXPECT_FALSE(Op::find("no_such_op").defined());
  EXPECT_NE(test::error_of([] { Op::get("no_such_op"); }).find("unknown builtin op 'no_such_op'"),
            std::string::npos);
}

TEST(OpTable, AttributesOfRepresentativeOps) {
  EXPECT_EQ(Op::get("exp")->effect, CallEffect::kPure);
  EXPECT_EQ(Op::get("exp")->libm, "exp");
  EXPECT_EQ(Op::get("round")->libm, "rint");  // halves to even, like the IR's round
  EXPECT_EQ(Op::get("sqrt")->max_ulp, 0);
  EXPECT_EQ(Op::get("tvm_struct_get")->effect, CallEffect::kReadMemory);
  EXPECT_EQ(Op::get("tvm_struct_set")->effect, CallEffect::kWriteMemory);
  EXPECT_EQ(Op::get("ptx_cp_async")->effect, CallEffect::kWriteMemory);
  EXPECT_EQ(Op::get("call_extern")->effect, CallEffect::kOpaque);
  EXPECT_EQ(Op::get("tvm_storage_sync")->effect, CallEffect::kOpaque);
  EXPECT_EQ(Op::get("call_pure_extern")->effect, CallEffect::kPure);
  EXPECT_TRUE(Op::get("call_extern")->has_side_effects());
  EXPECT_FALSE(Op::get("tvm_struct_get")->has_side_effects());
  EXPECT_EQ(Op::get("isnan")->type_rule, OpTypeRule::kBoolOfArg);
  EXPECT_EQ(Op::get("if_then_else")->type_rule, OpTypeRule::kBranches);
  EXPECT_EQ(Op::get("format")->op_kind, OpKind::kMessage);
}

TEST(OpTable, CallEffectOfATreeIsItsStrongestCall) {
  Var x = Var::make("x", DataType::Float(32));
  Expr pure = Call::make(DataType::Float(32), Op::get("exp"), {x});
  Expr read = Call::make(DataType::Int(32), Op::get("tvm_struct_get"),
                         {Var::make_handle("h"), make_const(0), make_const(4)});
  Expr opaque = Call::make(DataType::Int(32), Op::get("call_extern"), {StringImm::make("f")});
  EXPECT_EQ(call_effect_of(Add::make(x, pure)), CallEffect::kPure);
  EXPECT_EQ(call_effect_of(Add::make(Cast::make(DataType::Float(32), read), pure)),
            CallEffect::kReadMemory);
  EXPECT_EQ(call_effect_of(Add::make(Cast::make(DataType::Float(32), opaque),
                                     Cast::make(DataType::Float(32), read))),
            CallEffect::kOpaque);
  EXPECT_FALSE(has_side_effects(Add::make(x, pure)));
  EXPECT_TRUE(has_side_effects(Add::make(opaque, make_const(1))));
  // Calls to other functions may do anything.
  Expr user = Call::make(DataType::Int(32), GlobalVar::make("helper"), {});
  EXPECT_EQ(call_effect_of(user), CallEffect::kOpaque);
  EXPECT_EQ(call_effect_of(Evaluate::make(opaque)), CallEffect::kOpaque);
}

TEST(OpTable, OpMapAcceptsOnlyTableEntriesOnceAndReportsGaps) {
  OpMap<int> m("test lowering");
  m.set("exp", 1).set("sqrt", 2);
  EXPECT_EQ(*m.find(Op::get("exp")), 1);
  EXPECT_EQ(*m.find(Op::get("sqrt")), 2);
  EXPECT_EQ(m.find(Op::get("log")), nullptr);
  EXPECT_EQ(m.find(Op()), nullptr);
  try {
    m.set("no_such_op", 3);
    FAIL() << "expected an internal error";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("test lowering: 'no_such_op' is not in the op table"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(m.set("exp", 4), InternalError);
  std::vector<std::string> missing = m.missing([](const OpNode& op) { return op.is_math(); });
  EXPECT_EQ(std::count(missing.begin(), missing.end(), "exp"), 0);
  EXPECT_EQ(std::count(missing.begin(), missing.end(), "log"), 1);
  EXPECT_EQ(missing.size() + 2,
            static_cast<size_t>(std::count_if(Op::all().begin(), Op::all().end(),
                                              [](const Op& op) { return op->is_math(); })));
}

// The text format takes each builtin's result dtype from the table's rule: every op with a
// rule other than kExplicit prints in the short form and parses back to the same dtype.
TEST(OpTable, TextFormatFollowsTheTypeRules) {
  std::string text = R"(
@T.prim_func
def f(a: T.float32, b: T.float32, i: T.int32, j: T.int32) -> T.float32:
    x: T.float32 = T.exp(a) + T.pow(a, b) + T.fmod(a, b)
    y: T.bool = T.isnan(a) or T.isinf(b)
    k: T.int32 = T.shift_left(i, j) + T.bitwise_and(i, 3)
    return T.if_then_else(y, x, T.float32(k))
)";
  IRModule m = parse(text);
  std::string printed = print(m);
  EXPECT_NE(printed.find("T.pow(a, b)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("T.isnan(a)"), std::string::npos) << printed;
  EXPECT_NE(printed.find("T.bitwise_and(i, 3)"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("call_intrin"), std::string::npos) << printed;
  EXPECT_EQ(print(parse(printed)), printed);
}

}  // namespace
}  // namespace primjit
