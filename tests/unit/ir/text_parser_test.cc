// Tests of the text parser (ir/text/parse.cc): the format of its errors, and its typing and
// desugaring rules.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "tests/unit/ir/text_test_util.h"

namespace primjit::test {
namespace {

// =============================================================================================
// Error format
// =============================================================================================

TEST(TextParseError, WhatIsLocationMessageSourceLineAndCaret) {
  const std::string text =
      "@T.prim_func\n"
      "def main(n: T.int32):\n"
      "    T.evaluate(n + q)\n";
  try {
    parse(text, "f.tir");
    FAIL() << "expected a ParseError";
  } catch (const ParseError& e) {
    EXPECT_EQ(std::string(e.what()),
              "f.tir:3:20: error: undefined name 'q'\n"
              "    T.evaluate(n + q)\n"
              "                   ^");
    EXPECT_EQ(e.file(), "f.tir");
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 20);
    EXPECT_EQ(e.message(), "undefined name 'q'");
  }
}

TEST(TextParseError, IsAnError) {
  EXPECT_THROW(parse("@T.prim_func\ndef f(:\n"), Error);
  EXPECT_THROW(parse("@T.prim_func\ndef f(:\n"), std::runtime_error);
}

TEST(TextParseError, ConstructorErrorsPointAtTheExpression) {
  const std::string text =
      "@T.prim_func\n"
      "def main(a: T.int32, b: T.float32):\n"
      "    T.evaluate(T.min(a, b))\n";
  try {
    parse(text);
    FAIL();
  } catch (const ParseError& e) {
    EXPECT_EQ(e.line(), 3);
    EXPECT_EQ(e.column(), 16);
    EXPECT_NE(e.message().find("Min: operands must have the same dtype"), std::string::npos);
  }
}

// =============================================================================================
// Parser rules
// =============================================================================================

/// The value of the first Bind in the body of the only function.
Expr first_bind_value(const IRModule& m) {
  Stmt body = m->functions.at(0).second->body;
  if (const auto* seq = body.as<SeqStmt>()) body = seq->seq[0];
  const auto* bind = body.as<Bind>();
  return bind != nullptr ? bind->value : Expr();
}

TEST(TextParser, BareLiteralsTakeTheOtherOperandsDtype) {
  auto value = [](const std::string& params, const std::string& expr) {
    return first_bind_value(
        parse_ok("@T.prim_func\ndef f(" + params + "):\n    x = T.Bind(" + expr + ")\n"));
  };
  Expr e = value("n: T.int64", "n + 1");
  ASSERT_NE(e.as<Add>(), nullptr);
  EXPECT_EQ(e.as<Add>()->b.dtype(), kI64);
  e = value("n: T.int64", "3000000000 * n");
  EXPECT_EQ(e.as<Mul>()->a.dtype(), kI64);
  EXPECT_EQ(as_const_int(e.as<Mul>()->a), 3000000000);
  e = value("h: T.float16", "h * 2.5");
  EXPECT_EQ(e.as<Mul>()->b.dtype(), DataType::Float(16));
  e = value("h: T.float16", "h - 1");
  EXPECT_EQ(e.as<Sub>()->b.dtype(), DataType::Float(16));
  EXPECT_EQ(value("", "7").dtype(), kI32);
  EXPECT_EQ(value("", "1.5").dtype(), kF32);
  EXPECT_EQ(value("", "1 + 2.5").dtype(), kF32);
  EXPECT_EQ(value("", "True").dtype(), DataType::Bool());
  EXPECT_EQ(value("u: T.uint8", "T.min(u, 200)").dtype(), DataType::UInt(8));
  EXPECT_EQ(value("u: T.uint64", "u < 18446744073709551615").as<LT>()->b.dtype(),
            DataType::UInt(64));
  // Bind annotations type their literal.
  Expr bound = first_bind_value(parse_ok("@T.prim_func\ndef f():\n    x: T.int64 = 5\n"));
  EXPECT_EQ(bound.dtype(), kI64);
}

TEST(TextParser, LoopBoundsAndLoopVariableDtype) {
  std::vector<IRModule> keep;  // the nodes below live as long as their module
  auto loop = [&](const std::string& header) {
    keep.push_back(parse_ok("@T.prim_func\ndef f(n: T.int32, k: T.int64):\n    for i in " + header +
                            ":\n        T.evaluate(i)\n"));
    const auto* op = keep.back()->functions.at(0).second->body.as<For>();
    EXPECT_NE(op, nullptr) << header;
    return op;
  };
  const For* op = loop("range(n, n + 4)");
  EXPECT_EQ(as_const_int(op->extent), 4);
  op = loop("range(2, 10)");
  EXPECT_EQ(as_const_int(op->min), 2);
  EXPECT_EQ(as_const_int(op->extent), 8);
  op = loop("range(n, 64)");
  ASSERT_NE(op->extent.as<Sub>(), nullptr);
  op = loop("range(k)");
  EXPECT_EQ(op->loop_var.dtype(), kI64);
  EXPECT_EQ(op->min.dtype(), kI64);
  op = loop("T.serial(1, k)");
  EXPECT_EQ(op->loop_var.dtype(), kI64);
  EXPECT_EQ(op->min.dtype(), kI64);
  op = loop("T.thread_binding(8, thread=\"threadIdx.x\")");
  EXPECT_EQ(op->for_kind, ForKind::kThreadBinding);
  EXPECT_EQ(op->thread_tag, "threadIdx.x");
}

TEST(TextParser, DeclBufferWithoutDataAllocates) {
  IRModule m = parse_ok(
      "@T.prim_func\ndef f():\n"
      "    A = T.decl_buffer(16)\n"
      "    B = T.decl_buffer((4,), \"int8\", data=A.data)\n"
      "    A[0] = T.float32(0)\n");
  const auto* seq = m->functions.at(0).second->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* alloc = seq->seq[0].as<AllocBuffer>();
  ASSERT_NE(alloc, nullptr);
  EXPECT_EQ(alloc->buffer->dtype, kF32);
  EXPECT_EQ(alloc->buffer->scope(), "global");
  const auto* decl = seq->seq[1].as<DeclBuffer>();
  ASSERT_NE(decl, nullptr);
  EXPECT_TRUE(decl->buffer->data.same_as(alloc->buffer->data));
  EXPECT_EQ(decl->buffer->dtype, DataType::Int(8));
}

TEST(TextParser, DecoratorsSetGlobalSymbol) {
  IRModule m = parse_ok(
      "@I.ir_module\nclass M:\n"
      "    @T.prim_func\n    def pub():\n        T.evaluate(0)\n"
      "    @T.prim_func(private=True)\n    def priv():\n        T.evaluate(0)\n"
      "    @T.prim_func\n    def renamed():\n"
      "        T.func_attr({\"global_symbol\": \"exported\"})\n        T.evaluate(0)\n");
  EXPECT_EQ(m->lookup("pub")->global_symbol(), "pub");
  EXPECT_EQ(m->lookup("priv")->attr(attr::kGlobalSymbol), nullptr);
  EXPECT_EQ(m->lookup("renamed")->global_symbol(), "exported");
}

TEST(TextParser, ModuleCallsTakeTheCalleesReturnType) {
  IRModule m = parse_ok(
      "@I.ir_module\nclass Module:\n"
      "    @T.prim_func\n    def main(x: T.int64):\n"
      "        y: T.int64 = Module.sq(x)\n        Module.kern(x)\n"
      "    @T.prim_func\n    def sq(a: T.int64) -> T.int64:\n        return a * a\n"
      "    @T.prim_func\n    def kern(a: T.int64):\n        T.evaluate(a)\n");
  const auto* seq = m->lookup("main")->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* call = seq->seq[0].as<Bind>()->value.as<Call>();
  ASSERT_NE(call, nullptr);
  EXPECT_EQ(call->callee->name, "sq");
  EXPECT_EQ(call->dtype, kI64);
  EXPECT_TRUE(call->callee.same_as(m->global_var("sq")));
  const auto* launch = seq->seq[1].as<Evaluate>()->value.as<Call>();
  EXPECT_TRUE(launch->dtype.is_void());
}

TEST(TextParser, NamesFollowBlocksButOutlivePythonStyle) {
  // Inside its block a name means its innermost definition; sibling loops bind distinct
  // variables even under one name.
  IRModule m = parse_ok(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n"
      "    for i in range(4):\n        A[i] = 0\n"
      "    for i in range(4):\n        A[i] = 1\n");
  const auto* seq = m->functions[0].second->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  EXPECT_FALSE(seq->seq[0].as<For>()->loop_var.same_as(seq->seq[1].as<For>()->loop_var));
  EXPECT_TRUE(well_formed_errors(m).empty());
  expect_round_trip(m);

  // After its block ends a name still resolves, so the text can express a variable used out of
  // scope; the verifier (not the parser) reports it.
  m = parse_ok(
      "@T.prim_func\ndef f(A: T.Buffer((4,), \"int32\")):\n"
      "    for i in range(4):\n        x: T.int32 = i\n"
      "    A[x] = 0\n");
  seq = m->functions[0].second->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* bind = seq->seq[0].as<For>()->body.as<Bind>();
  const auto* store = seq->seq[1].as<BufferStore>();
  ASSERT_TRUE(bind != nullptr && store != nullptr);
  EXPECT_TRUE(store->indices[0].same_as(bind->var));
  EXPECT_FALSE(well_formed_errors(m).empty());
  expect_round_trip(m);

  // Binding a name that denotes a variable of the same type binds that variable again; a
  // different type makes a new variable.
  m = parse_ok(
      "@T.prim_func\ndef f():\n"
      "    for i in range(4):\n        x: T.int32 = i\n"
      "    for j in range(4):\n        x: T.int32 = j\n"
      "    y: T.int32 = 1\n    y: T.int64 = T.int64(2)\n");
  seq = m->functions[0].second->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  EXPECT_TRUE(seq->seq[0].as<For>()->body.as<Bind>()->var.same_as(
      seq->seq[1].as<For>()->body.as<Bind>()->var));
  EXPECT_FALSE(seq->seq[2].as<Bind>()->var.same_as(seq->seq[3].as<Bind>()->var));
  EXPECT_FALSE(well_formed_errors(m).empty());
  expect_round_trip(m);

  // A concise launch's variable lives until the end of its block.
  m = parse_ok(
      "@T.prim_func\ndef f():\n    x: T.int32 = 1\n    for i in range(4):\n"
      "        tx = T.launch_thread(\"threadIdx.x\", 4)\n        T.evaluate(x + tx + i)\n");
  expect_round_trip(m);
}

TEST(TextRoundTrip, IllFormedIRStillRoundTrips) {
  // The printer's names are unique per function, so the parser's name rules give back the very
  // same IR even when it breaks the verifier's rules: a variable bound twice, a variable used
  // after its scope, a variable used before its definition.
  Buffer a = Buffer::make("A", kI32, {make_const(8)});
  Var h = Var::make_handle("A");
  Var x = Var::make("x", kI32), y = Var::make("y", kI32), i = Var::make("i", kI32);
  Stmt body =
      SeqStmt::make({BufferStore::make(a, y, {make_const(0)}),  // y is used before its Bind
                     For::make(i, make_const(0), make_const(4), ForKind::kSerial, Bind::make(x, i)),
                     Bind::make(x, make_const(3)),  // x bound a second time
                     BufferStore::make(a, x, {i}),  // i used after its loop
                     Bind::make(y, make_const(1))});
  IRModule m = IRModule::from_function("main", func_of(body, {h}, {{h, a}}));
  EXPECT_FALSE(well_formed_errors(m).empty());
  expect_round_trip(m);
}

TEST(TextParser, RejectsWhatTheSubsetLacks) {
  const char* head = "@T.prim_func\ndef f(a: T.int32, b: T.int32):\n    ";
  for (const char* body : {"T.evaluate(a / b)",
                           "T.evaluate(a & b)",
                           "T.evaluate(a ** 2)",
                           "T.evaluate(-a if a else b)",
                           "x = a + 1",
                           "a += 1",
                           "T.evaluate(T.int32())",
                           "T.evaluate(T.nothing(a))",
                           "T.evaluate(A[0])",
                           "for i in range(0, 4, 2):\n        pass",
                           "with open(a):\n        pass",
                           "import os",
                           "T.evaluate(f(a))",
                           "T.evaluate(T.exp(a, b))",
                           "T.evaluate(T.Cast(\"int77\", a))",
                           "assert a, b",
                           "return",
                           "T.evaluate([a])",
                           "T.evaluate(a < b < a)",
                           "x: T.handle",  // `x: T.int32` is a one-element buffer
                           "T.evaluate(Module.f(a))",
                           "T.evaluate(T.call_intrin(\"int32\", \"nope\"))",
                           "lambda: a",
                           "T.evaluate(a[0])",
                           "T.evaluate(a.data)",
                           "T.evaluate(T.bool(2))",
                           "T.evaluate(T.int8(1.5))"}) {
    std::string text = std::string(head) + body + "\n";
    EXPECT_THROW(parse(text), ParseError) << body;
  }
}

}  // namespace
}  // namespace primjit::test
