// Round trips of the text format: the corpus (tests/ir/roundtrip/*.tir parse, print, re-parse
// structurally equal, and print is a fixed point; tests/ir/malformed/*.tir fail with the
// message and line:col written in their first line, `# expect: L:C: substring`), and IR
// built with the API (forms the parser never produces itself).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "tests/unit/ir/text_test_util.h"

namespace primjit::test {
namespace {

// =============================================================================================
// Corpus
// =============================================================================================

TEST(TextCorpus, RoundTripFilesParsePrintAndReparseEqual) {
  std::vector<fs::path> files = corpus("roundtrip");
  ASSERT_GE(files.size(), 10u);
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    IRModule m;
    try {
      m = parse(read_file(path), path.filename().string());
    } catch (const ParseError& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    expect_round_trip(m);
  }
}

TEST(TextCorpus, MalformedFilesFailAtTheExpectedPlace) {
  std::vector<fs::path> files = corpus("malformed");
  ASSERT_GE(files.size(), 8u);
  for (const fs::path& path : files) {
    SCOPED_TRACE(path.filename().string());
    std::string text = read_file(path);
    std::string first = text.substr(0, text.find('\n'));
    const std::string prefix = "# expect: ";
    ASSERT_EQ(first.rfind(prefix, 0), 0u) << "first line must be '# expect: L:C: message'";
    std::string spec = first.substr(prefix.size());
    size_t c1 = spec.find(':');
    size_t c2 = spec.find(':', c1 + 1);
    ASSERT_NE(c2, std::string::npos);
    int line = std::stoi(spec.substr(0, c1));
    int col = std::stoi(spec.substr(c1 + 1, c2 - c1 - 1));
    std::string substring = spec.substr(c2 + 2);
    std::string file = path.filename().string();
    try {
      parse(text, file);
      ADD_FAILURE() << "parsed without error";
    } catch (const ParseError& e) {
      EXPECT_EQ(e.line(), line) << e.what();
      EXPECT_EQ(e.column(), col) << e.what();
      EXPECT_NE(e.message().find(substring), std::string::npos) << e.what();
      EXPECT_EQ(e.file(), file);
      std::string head =
          file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: ";
      EXPECT_EQ(std::string(e.what()).rfind(head, 0), 0u) << e.what();
    }
  }
}

// =============================================================================================
// Round trips of IR built with the API
// =============================================================================================

TEST(TextRoundTrip, CallWithNonRuleDtypesAndFunctionCalls) {
  Var x = Var::make("x", kF32);
  Var i = Var::make("i", kI32);
  Stmt body =
      SeqStmt::make({Evaluate::make(Call::make(DataType::Float(16), Op::get("exp"), {x})),
                     Evaluate::make(Call::make(kI64, Op::get("ret"), {i})),
                     Evaluate::make(Call::make(DataType::Void(), Op::get("tvm_storage_sync"),
                                               {StringImm::make("shared")})),
                     Evaluate::make(Call::make(kI32, GlobalVar::make("helper"), {i})),
                     Evaluate::make(Call::make(DataType::Void(), GlobalVar::make("helper"), {i})),
                     Evaluate::make(Call::make(kI32, GlobalVar::make("absent"), {}))});
  PrimFunc helper = PrimFunc::make({Var::make("a", kI32)}, {}, Evaluate::make(make_const(0)), kI32);
  IRModule m = IRModule::make(
      {{GlobalVar::make("main"), func_of(body, {x, i})}, {GlobalVar::make("helper"), helper}});
  expect_round_trip(m);
  std::string text = print(m);
  EXPECT_NE(text.find("Module.helper(i)"), std::string::npos);
  EXPECT_NE(text.find("T.call_global(\"void\", \"helper\", i)"), std::string::npos);
  // Printed alone there is no Module to refer to: calls name their callee explicitly.
  PrimFunc main = m->lookup("main");
  IRModule alone = parse_ok(print(main, "main"));
  EXPECT_TRUE(structural_equal(alone->lookup("main"), main));
}

TEST(TextRoundTrip, PointerParamsSizeVarsAndHandles) {
  Var p = Var::make_pointer("p", DataType::Float(16), "shared");
  Var q = Var::make_pointer("q", DataType::Void(), "global");
  Var h = Var::make_handle("h");
  Var n = Var::make("n", kI64, true);
  Buffer buf = Buffer::make(p, DataType::Float(16), {Cast::make(kI32, n)}, {}, Expr(), "B");
  Buffer other = Buffer::make("O", kF32, {make_const(4)});
  Var ho = Var::make_handle("o");
  Stmt body = SeqStmt::make(
      {DeclBuffer::make(buf),
       BufferStore::make(buf, FloatImm::make(DataType::Float(16), 0.5), {make_const(0)}),
       Evaluate::make(Call::make(kI32, Op::get("call_packed"), {StringImm::make("k"), q, h, n}))});
  PrimFunc f = PrimFunc::make({p, q, h, n, ho}, {{ho, other}}, body, DataType::Handle(), {});
  expect_round_trip(IRModule::from_function("main", f));
}

TEST(TextRoundTrip, BufferSharingDataWithParamIsNotInlined) {
  Var ha = Var::make_handle("a"), hb = Var::make_handle("b");
  Buffer a = Buffer::make("A", kF32, {make_const(8)});
  Buffer b = Buffer::make(a->data, kF32, {make_const(2), make_const(4)}, {}, Expr(), "B");
  Stmt body =
      BufferStore::make(b, BufferLoad::make(a, {make_const(1)}), {make_const(0), make_const(1)});
  PrimFunc f = func_of(body, {ha, hb}, {{ha, a}, {hb, b}});
  std::string text = print(f);
  EXPECT_NE(text.find("B = T.match_buffer(b, (2, 4), \"float32\", data=A.data)"),
            std::string::npos);
  expect_round_trip(IRModule::from_function("main", f));
}

TEST(TextRoundTrip, ThreadVarOddities) {
  Buffer a = Buffer::make("A", kI32, {make_const(64)});
  Var h = Var::make_handle("A");
  Var t64 = Var::make("t", kI64);
  Var vt = Var::make("vt", kI32);
  Var tx = Var::make("tx", kI32);
  Stmt body = SeqStmt::make(
      {// int64 thread variable with an int32 extent
       AttrStmt::make(IterVar::make(t64, "threadIdx.x"), attr::kThreadExtent, make_const(4),
                      BufferStore::make(a, make_const(1), {Cast::make(kI32, t64)})),
       // vthread attribute
       AttrStmt::make(IterVar::make(vt, "vthread"), attr::kVirtualThread, make_const(2),
                      BufferStore::make(a, vt, {vt})),
       // a thread variable also used after its launch (ill-formed, but printable)
       AttrStmt::make(IterVar::make(tx, "threadIdx.y"), attr::kThreadExtent, make_const(8),
                      BufferStore::make(a, tx, {tx})),
       BufferStore::make(a, tx, {make_const(0)})});
  expect_round_trip(IRModule::from_function("main", func_of(body, {h}, {{h, a}})));
}

}  // namespace
}  // namespace primjit::test
