// Tests of the text format (ir/text/: the printer, printer.h, and the parser, parse.cc):
//  - the corpus: tests/ir/roundtrip/*.tir parse, print, re-parse structurally equal, and print
//    is a fixed point; tests/ir/malformed/*.tir fail with the message and line:col written in
//    their first line (`# expect: L:C: substring`);
//  - the printer's decisions, as exact text;
//  - the parser's typing and desugaring rules;
//  - round trips of IR built with the API (forms the parser never produces itself);
//  - a property test over 200 random well-formed functions and a mutation fuzz test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<fs::path> corpus(const char* subdir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(PRIMJIT_TEST_DATA_DIR) / subdir)) {
    if (entry.path().extension() == ".tir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// print -> parse gives a structurally equal module, and printing that is a fixed point.
void expect_round_trip(const IRModule& m) {
  std::string text = print(m);
  IRModule back;
  try {
    back = parse(text, "printed");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what() << "\n--- printed text ---\n" << text;
    return;
  }
  EXPECT_TRUE(structural_equal(back, m))
      << structural_diff(back, m).value_or("") << "\n--- printed text ---\n"
      << text;
  EXPECT_EQ(print(back), text);
}

IRModule parse_ok(const std::string& text) {
  try {
    return parse(text, "test.tir");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what();
    return IRModule::make({});
  }
}

/// The function body of a single-function text, printed at the function level.
std::string body_of(const std::string& printed) {
  size_t def = printed.find("def ");
  size_t start = printed.find('\n', def) + 1;
  return printed.substr(start);
}

PrimFunc func_of(Stmt body, std::vector<Var> params = {},
                 std::vector<std::pair<Var, Buffer>> buffers = {}) {
  return PrimFunc::make(std::move(params), std::move(buffers), std::move(body), DataType::Void(),
                        {{attr::kGlobalSymbol, AttrValue("main")}});
}

std::string print_body(Stmt body, std::vector<Var> params = {},
                       std::vector<std::pair<Var, Buffer>> buffers = {}) {
  return body_of(print(func_of(std::move(body), std::move(params), std::move(buffers))));
}

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

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
// Printer decisions
// =============================================================================================

TEST(TextPrinter, ModuleHeaderAndFunctionOrderMainLast) {
  Stmt nop = Evaluate::make(make_const(0));
  IRModule m = IRModule::make({{GlobalVar::make("zeta"), func_of(nop)},
                               {GlobalVar::make("main"), func_of(nop)},
                               {GlobalVar::make("alpha"), func_of(nop)}});
  std::string text = print(m);
  EXPECT_EQ(text.rfind("# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n"
                       "@I.ir_module\nclass Module:\n",
                       0),
            0u);
  size_t alpha = text.find("def alpha(");
  size_t zeta = text.find("def zeta(");
  size_t main = text.find("def main(");
  EXPECT_LT(alpha, zeta);
  EXPECT_LT(zeta, main);
}

TEST(TextPrinter, SingleFunctionHeader) {
  PrimFunc f = func_of(Evaluate::make(make_const(0)));
  EXPECT_EQ(print(f, "kern"),
            "# from tvm.script import tirx as T\n\n"
            "@T.prim_func\n"
            "def kern():\n"
            "    T.func_attr({\"global_symbol\": \"main\"})\n"
            "    T.evaluate(0)\n");
  EXPECT_EQ(print(f, "main"),
            "# from tvm.script import tirx as T\n\n"
            "@T.prim_func\n"
            "def main():\n"
            "    T.evaluate(0)\n");
  PrimFunc priv = PrimFunc::make({}, {}, Evaluate::make(make_const(0)));
  EXPECT_EQ(body_of(print(priv, "f")), "    T.evaluate(0)\n");
  EXPECT_NE(print(priv, "f").find("@T.prim_func(private=True)\ndef f():"), std::string::npos);
}

TEST(TextPrinter, LiteralsInt32BareOthersTyped) {
  EXPECT_EQ(print(make_const(7)), "7");
  EXPECT_EQ(print(make_const(-7)), "-7");
  EXPECT_EQ(print(IntImm::make(kI64, 3)), "T.int64(3)");
  EXPECT_EQ(print(IntImm::make(DataType::UInt(8), 1)), "T.uint8(1)");
  EXPECT_EQ(print(IntImm::make(DataType::UInt(64), -1)), "T.uint64(18446744073709551615)");
  EXPECT_EQ(print(IntImm::make(DataType::Bool(), 1)), "T.bool(True)");
  EXPECT_EQ(print(FloatImm::make(kF32, 1.5)), "T.float32(1.5)");
  EXPECT_EQ(print(FloatImm::make(DataType::Float(16), 0)), "T.float16(0.0)");
  EXPECT_EQ(print(FloatImm::make(kF32, 0.1f)), "T.float32(0.10000000149011612)");
  EXPECT_EQ(print(FloatImm::make(DataType::Float(64), 1e20)), "T.float64(1e+20)");
  EXPECT_EQ(print(FloatImm::make(kF32, -0.0)), "T.float32(-0.0)");
  EXPECT_EQ(print(FloatImm::make(kF32, std::numeric_limits<double>::infinity())),
            "T.float32(\"inf\")");
  EXPECT_EQ(print(FloatImm::make(kF32, -std::numeric_limits<double>::infinity())),
            "T.float32(\"-inf\")");
  EXPECT_EQ(print(FloatImm::make(DataType::BFloat16(), std::nan(""))), "T.bfloat16(\"nan\")");
  EXPECT_EQ(print(StringImm::make("a\"b\\c\n")), "\"a\\\"b\\\\c\\n\"");
}

TEST(TextPrinter, FloatsReadBackBitExact) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 2000; ++i) {
    uint64_t bits = rng();
    double value;
    std::memcpy(&value, &bits, sizeof(value));
    if (std::isnan(value)) continue;
    Var v = Var::make("v", DataType::Float(64));
    Expr lit = FloatImm::make(DataType::Float(64), value);
    IRModule m = IRModule::from_function("main", func_of(Bind::make(v, lit)));
    IRModule back = parse_ok(print(m));
    const auto* bind = back->functions[0].second->body.as<Bind>();
    ASSERT_NE(bind, nullptr);
    const auto* imm = bind->value.as<FloatImm>();
    ASSERT_NE(imm, nullptr);
    EXPECT_EQ(std::memcmp(&imm->value, &value, sizeof(double)), 0) << print(lit);
  }
}

TEST(TextPrinter, PrecedenceParenthesizesMinimally) {
  Var a = Var::make("a", kI32), b = Var::make("b", kI32), c = Var::make("c", kI32);
  EXPECT_EQ(print(Mul::make(Add::make(a, b), c)), "(a + b) * c");
  EXPECT_EQ(print(Add::make(Mul::make(a, b), c)), "a * b + c");
  EXPECT_EQ(print(Sub::make(a, Sub::make(b, c))), "a - (b - c)");
  EXPECT_EQ(print(Sub::make(Sub::make(a, b), c)), "a - b - c");
  EXPECT_EQ(print(Mul::make(a, FloorDiv::make(b, c))), "a * (b // c)");
  EXPECT_EQ(print(FloorDiv::make(Mul::make(a, b), c)), "a * b // c");
  EXPECT_EQ(print(FloorMod::make(a, Add::make(b, c))), "a % (b + c)");
  EXPECT_EQ(print(Add::make(a, make_const(-1))), "a + -1");
  EXPECT_EQ(print(Mul::make(make_const(-2), a)), "-2 * a");
  EXPECT_EQ(print(Div::make(a, b)), "T.truncdiv(a, b)");
  EXPECT_EQ(print(Mod::make(a, b)), "T.truncmod(a, b)");
  Var f = Var::make("f", kF32);
  EXPECT_EQ(print(Div::make(f, Add::make(f, f))), "f / (f + f)");
  Expr lt = LT::make(a, b);
  Expr ge = GE::make(b, c);
  EXPECT_EQ(print(EQ::make(lt, ge)), "(a < b) == (b >= c)");
  EXPECT_EQ(print(And::make(Or::make(lt, ge), lt)), "(a < b or b >= c) and a < b");
  EXPECT_EQ(print(Or::make(And::make(lt, ge), lt)), "a < b and b >= c or a < b");
  EXPECT_EQ(print(And::make(lt, And::make(ge, lt))), "a < b and (b >= c and a < b)");
  EXPECT_EQ(print(Not::make(And::make(lt, ge))), "not (a < b and b >= c)");
  EXPECT_EQ(print(And::make(Not::make(lt), ge)), "not a < b and b >= c");
  EXPECT_EQ(print(EQ::make(Not::make(lt), ge)), "(not a < b) == (b >= c)");
}

TEST(TextPrinter, PrecedenceRoundTripsExhaustively) {
  // Every pair of binary operators nested on either side prints to text that parses back to
  // the same tree.
  Var a = Var::make("a", kI32), b = Var::make("b", kI32), c = Var::make("c", kI32);
  using Maker = Expr (*)(Expr, Expr);
  std::vector<Maker> makers = {&Add::make, &Sub::make, &Mul::make, &FloorDiv::make, &FloorMod::make,
                               &Div::make, &Mod::make, &Min::make, &Max::make};
  Buffer out = Buffer::make("Out", kI32, {make_const(4)});
  std::vector<Stmt> stores;
  for (Maker outer : makers) {
    for (Maker inner : makers) {
      stores.push_back(BufferStore::make(out, outer(inner(a, b), c), {make_const(0)}));
      stores.push_back(BufferStore::make(out, outer(a, inner(b, c)), {make_const(0)}));
    }
  }
  using CmpMaker = Expr (*)(Expr, Expr);
  std::vector<CmpMaker> cmps = {&EQ::make, &NE::make, &LT::make, &LE::make, &GT::make, &GE::make};
  Buffer flags = Buffer::make("Flags", DataType::Bool(), {make_const(4)});
  for (CmpMaker cmp : cmps) {
    Expr x = cmp(a, Add::make(b, c));
    Expr y = cmp(x, LT::make(b, c));
    stores.push_back(BufferStore::make(flags, y, {make_const(1)}));
    stores.push_back(
        BufferStore::make(flags, Or::make(And::make(x, Not::make(y)), y), {make_const(2)}));
    stores.push_back(BufferStore::make(flags, And::make(x, Or::make(y, Not::make(Not::make(x)))),
                                       {make_const(3)}));
  }
  Var ha = Var::make_handle("a_h"), hb = Var::make_handle("b_h");
  PrimFunc f = func_of(SeqStmt::make(stores), {a, b, c, ha, hb}, {{ha, out}, {hb, flags}});
  expect_round_trip(IRModule::from_function("main", f));
}

TEST(TextPrinter, NamesAreUniqueSanitizedAndDeterministic) {
  Buffer out = Buffer::make("A", kI32, {make_const(8)});
  Var h = Var::make_handle("A");
  std::vector<Var> vars = {Var::make("i", kI32),   Var::make("i", kI32),   Var::make("i_1", kI32),
                           Var::make("i", kI32),   Var::make("for", kI32), Var::make("T", kI32),
                           Var::make("a.b", kI32), Var::make("0x", kI32),  Var::make("", kI32),
                           Var::make("A", kI32)};
  std::vector<Stmt> seq;
  Expr sum = make_const(0);
  for (const Var& v : vars) {
    seq.push_back(Bind::make(v, make_const(1)));
    sum = Add::make(sum, v);
  }
  seq.push_back(BufferStore::make(out, sum, {make_const(0)}));
  std::string body = print_body(SeqStmt::make(seq), {h}, {{h, out}});
  EXPECT_EQ(body,
            "    i: T.let[T.int32] = 1\n"
            "    i_1: T.let[T.int32] = 1\n"
            "    i_1_1: T.let[T.int32] = 1\n"
            "    i_2: T.let[T.int32] = 1\n"
            "    for_: T.let[T.int32] = 1\n"
            "    T_: T.let[T.int32] = 1\n"
            "    a_b: T.let[T.int32] = 1\n"
            "    v0x: T.let[T.int32] = 1\n"
            "    v: T.let[T.int32] = 1\n"
            "    A_1: T.let[T.int32] = 1\n"
            "    A[0] = 0 + i + i_1 + i_1_1 + i_2 + for_ + T_ + a_b + v0x + v + A_1\n");
  expect_round_trip(IRModule::from_function("main", func_of(SeqStmt::make(seq), {h}, {{h, out}})));
}

TEST(TextPrinter, LaunchThreadConciseWhenLastElseWith) {
  Buffer a = Buffer::make("A", kF32, {make_const(512)});
  Var h = Var::make_handle("A");
  Var bx = Var::make("bx", kI32), tx = Var::make("tx", kI32), ty = Var::make("ty", kI32);
  Stmt store = BufferStore::make(a, FloatImm::make(kF32, 1),
                                 {Add::make(Mul::make(bx, make_const(128)), tx)});
  Stmt inner =
      AttrStmt::make(IterVar::make(tx, "threadIdx.x"), attr::kThreadExtent, make_const(128), store);
  Stmt not_last =
      AttrStmt::make(IterVar::make(ty, "threadIdx.y"), attr::kThreadExtent, make_const(2),
                     BufferStore::make(a, FloatImm::make(kF32, 2), {ty}));
  Stmt outer = AttrStmt::make(IterVar::make(bx, "blockIdx.x"), attr::kThreadExtent, make_const(4),
                              SeqStmt::make({not_last, inner}));
  std::string body = print_body(outer, {h}, {{h, a}});
  EXPECT_EQ(body,
            "    bx = T.launch_thread(\"blockIdx.x\", 4)\n"
            "    with T.launch_thread(\"threadIdx.y\", 2) as ty:\n"
            "        A[ty] = T.float32(2.0)\n"
            "    tx = T.launch_thread(\"threadIdx.x\", 128)\n"
            "    A[bx * 128 + tx] = T.float32(1.0)\n");
}

TEST(TextPrinter, RelaunchedThreadVarUsesEnvThread) {
  // The seed's pattern: one thread variable launched by two sibling kernels.
  Buffer a = Buffer::make("A", kF32, {make_const(128)});
  Var h = Var::make_handle("A");
  Var tx = Var::make("tx", kI32);
  auto launch = [&](int extent, double value) {
    return AttrStmt::make(IterVar::make(tx, "threadIdx.x"), attr::kThreadExtent, make_const(extent),
                          BufferStore::make(a, FloatImm::make(kF32, value), {tx}));
  };
  Stmt body = SeqStmt::make({launch(128, 1), launch(64, 2)});
  EXPECT_EQ(print_body(body, {h}, {{h, a}}),
            "    tx = T.env_thread(\"threadIdx.x\")\n"
            "    with T.launch_thread(tx, 128):\n"
            "        A[tx] = T.float32(1.0)\n"
            "    T.launch_thread(tx, 64)\n"
            "    A[tx] = T.float32(2.0)\n");
  IRModule m = IRModule::from_function("main", func_of(body, {h}, {{h, a}}));
  expect_round_trip(m);
  // Parsed back, both launches bind the very same variable.
  IRModule back = parse_ok(print(m));
  const auto* seq = back->functions[0].second->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* first = seq->seq[0].as<AttrStmt>();
  const auto* second = seq->seq[1].as<AttrStmt>();
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->iter_var()->var.same_as(second->iter_var()->var));
}

TEST(TextPrinter, LoopForms) {
  Buffer a = Buffer::make("A", kI32, {make_const(64)});
  Var h = Var::make_handle("A");
  Var n = Var::make("n", kI32);
  Var i = Var::make("i", kI32), j = Var::make("j", kI32), k = Var::make("k", kI32);
  Stmt store = BufferStore::make(a, make_const(0), {i});
  auto loop = [](Var v, Expr min, Expr ext, Stmt body, ForKind kind = ForKind::kSerial,
                 std::string tag = "",
                 Annotations ann = {}) { return For::make(v, min, ext, kind, body, tag, ann); };
  EXPECT_EQ(print_body(loop(i, make_const(0), n, store), {h, n}, {{h, a}}),
            "    for i in range(n):\n        A[i] = 0\n");
  EXPECT_EQ(print_body(loop(i, make_const(2), make_const(8), store), {h}, {{h, a}}),
            "    for i in range(2, 10):\n        A[i] = 0\n");
  EXPECT_EQ(print_body(loop(i, n, make_const(4), store), {h, n}, {{h, a}}),
            "    for i in range(n, n + 4):\n        A[i] = 0\n");
  EXPECT_EQ(print_body(loop(i, n, Sub::make(make_const(64), n), store), {h, n}, {{h, a}}),
            "    for i in range(n, 64):\n        A[i] = 0\n");
  EXPECT_EQ(
      print_body(loop(i, make_const(0), make_const(4), store, ForKind::kParallel), {h}, {{h, a}}),
      "    for i in T.parallel(4):\n        A[i] = 0\n");
  EXPECT_EQ(
      print_body(loop(i, make_const(1), make_const(4), store, ForKind::kVectorized), {h}, {{h, a}}),
      "    for i in T.vectorized(1, 5):\n        A[i] = 0\n");
  EXPECT_EQ(
      print_body(loop(i, make_const(0), make_const(4), store, ForKind::kUnrolled), {h}, {{h, a}}),
      "    for i in T.unroll(4):\n        A[i] = 0\n");
  EXPECT_EQ(print_body(loop(i, make_const(0), make_const(32), store, ForKind::kThreadBinding,
                            "threadIdx.x"),
                       {h}, {{h, a}}),
            "    for i in T.thread_binding(32, thread=\"threadIdx.x\"):\n        A[i] = 0\n");
  EXPECT_EQ(print_body(loop(i, make_const(0), make_const(4), store, ForKind::kSerial, "",
                            {{"pragma", AttrValue(int64_t{1})}}),
                       {h}, {{h, a}}),
            "    for i in T.serial(4, annotations={\"pragma\": 1}):\n        A[i] = 0\n");
  // Nested zero-based serial loops merge into T.grid unless an extent depends on an outer var.
  Stmt grid = loop(i, make_const(0), make_const(4),
                   loop(j, make_const(0), make_const(8), loop(k, make_const(0), j, store)));
  EXPECT_EQ(print_body(grid, {h}, {{h, a}}),
            "    for i, j in T.grid(4, 8):\n"
            "        for k in range(j):\n"
            "            A[i] = 0\n");
  Stmt i64 = loop(Var::make("w", kI64), IntImm::make(kI64, 0), IntImm::make(kI64, 5),
                  BufferStore::make(a, make_const(1), {make_const(0)}));
  EXPECT_EQ(print_body(i64, {h}, {{h, a}}), "    for w in range(T.int64(5)):\n        A[0] = 1\n");
}

TEST(TextPrinter, BufferParamsInlineWhenSimpleElseMatchBuffer) {
  Var n = Var::make("n", kI32);
  Var m = Var::make("m", kI32, true);
  Var ha = Var::make_handle("a"), hb = Var::make_handle("b"), hc = Var::make_handle("c");
  Buffer a = Buffer::make("A", kF32, {n, make_const(4)});  // n is an earlier parameter
  Buffer b = Buffer::make("B", kF32, {m});                 // m is free
  Buffer c = Buffer::make("C", DataType::Float(16), {make_const(8)}, "shared");
  Stmt body =
      BufferStore::make(a, BufferLoad::make(b, {make_const(0)}), {make_const(0), make_const(1)});
  PrimFunc f = PrimFunc::make({n, ha, hb, hc}, {{ha, a}, {hb, b}, {hc, c}}, body, DataType::Void(),
                              {{attr::kGlobalSymbol, AttrValue("main")}});
  EXPECT_EQ(print(f),
            "# from tvm.script import tirx as T\n\n"
            "@T.prim_func\n"
            "def main(n: T.int32, A: T.Buffer((n, 4), \"float32\"), b: T.handle, c: T.handle):\n"
            "    m = T.int32(is_size_var=True)\n"
            "    B = T.match_buffer(b, (m,), \"float32\")\n"
            "    C = T.match_buffer(c, (8,), \"float16\", scope=\"shared\")\n"
            "    A[0, 1] = B[0]\n");
  expect_round_trip(IRModule::from_function("main", f));
}

TEST(TextPrinter, FuncAttrsSortedAndGlobalSymbolShownOnlyWhenDifferent) {
  Stmt nop = Evaluate::make(make_const(0));
  PrimFunc f =
      PrimFunc::make({}, {}, nop, DataType::Void(),
                     {{attr::kGlobalSymbol, AttrValue("other")},
                      {attr::kTarget, AttrValue(Target::cuda("sm_90", Target::llvm()))},
                      {"a_flag", AttrValue(true)},
                      {"list", AttrValue(AttrValue::Array{AttrValue(1), AttrValue("s")})}});
  EXPECT_EQ(
      body_of(print(f, "main")),
      "    T.func_attr({\"a_flag\": True, \"global_symbol\": \"other\", \"list\": [1, \"s\"], "
      "\"target\": T.target({\"arch\": \"sm_90\", \"host\": \"llvm\", \"kind\": \"cuda\"})})\n"
      "    T.evaluate(0)\n");
  EXPECT_NE(print(f, "main").find("@T.prim_func\ndef main():"), std::string::npos);
  expect_round_trip(IRModule::from_function("main", f));
  expect_round_trip(IRModule::from_function("other", f));
}

TEST(TextPrinter, FreeVariablesDeclaredBeforeFirstTopLevelUse) {
  Buffer a = Buffer::make("A", kI32, {make_const(8)});
  Var h = Var::make_handle("A");
  Var m = Var::make("m", kI32), k = Var::make("k", kI64, true), i = Var::make("i", kI32);
  Stmt body =
      SeqStmt::make({BufferStore::make(a, make_const(1), {make_const(0)}),
                     For::make(i, make_const(0), make_const(4), ForKind::kSerial,
                               BufferStore::make(a, Add::make(m, Cast::make(kI32, k)), {i}))});
  EXPECT_EQ(print_body(body, {h}, {{h, a}}),
            "    A[0] = 1\n"
            "    m = T.int32()\n"
            "    k = T.int64(is_size_var=True)\n"
            "    for i in range(4):\n"
            "        A[i] = m + T.Cast(\"int32\", k)\n");
  expect_round_trip(IRModule::from_function("main", func_of(body, {h}, {{h, a}})));
}

TEST(TextPrinter, BufferDefinitionsAndDataPointers) {
  Var h = Var::make_handle("A");
  Buffer a = Buffer::make("A", kF32, {make_const(64)});
  Buffer s = Buffer::make("S", kF32, {make_const(32)}, "shared.dyn");
  Buffer view = Buffer::make(a->data, kF32, {make_const(16)}, {}, make_const(16), "V");
  // A merged byte buffer whose pointer element type differs from the buffer's dtype.
  Var raw = Var::make_pointer("raw", DataType::UInt(8), "shared");
  Buffer f = Buffer::make(raw, kF32, {make_const(4)}, {}, Expr(), "F");
  Buffer undeclared = Buffer::make("U", kF32, {make_const(2)}, "local");
  Stmt body = SeqStmt::make(
      {AllocBuffer::make(s), DeclBuffer::make(view), AllocBuffer::make(f),
       BufferStore::make(view, BufferLoad::make(s, {make_const(0)}), {make_const(1)}),
       BufferStore::make(f, BufferLoad::make(undeclared, {make_const(1)}), {make_const(2)})});
  EXPECT_EQ(print_body(body, {h}, {{h, a}}),
            "    S = T.alloc_buffer((32,), \"float32\", scope=\"shared.dyn\")\n"
            "    V = T.decl_buffer((16,), \"float32\", data=A.data, elem_offset=16)\n"
            "    raw = T.handle(\"uint8\", \"shared\")\n"
            "    F = T.alloc_buffer((4,), \"float32\", data=raw)\n"
            "    V[1] = S[0]\n"
            "    U = T.Buffer((2,), \"float32\", scope=\"local\")\n"
            "    F[2] = U[1]\n");
  expect_round_trip(IRModule::from_function("main", func_of(body, {h}, {{h, a}})));
}

TEST(TextPrinter, CallDtypesFollowTheRuleOrAreExplicit) {
  Var f = Var::make("f", kF32);
  Var i = Var::make("i", kI32);
  EXPECT_EQ(print(Call::make(kF32, Op::get("exp"), {f})), "T.exp(f)");
  EXPECT_EQ(print(Call::make(DataType::Float(16), Op::get("exp"), {f})),
            "T.call_intrin(\"float16\", \"exp\", f)");
  EXPECT_EQ(print(Call::make(DataType::Bool(), Op::get("isnan"), {f})), "T.isnan(f)");
  EXPECT_EQ(print(Call::make(kI32, Op::get("tvm_storage_sync"), {StringImm::make("shared")})),
            "T.tvm_storage_sync(\"shared\")");
  EXPECT_EQ(print(Call::make(kF32, Op::get("call_extern"), {StringImm::make("expf"), f})),
            "T.call_extern(\"float32\", \"expf\", f)");
  EXPECT_EQ(print(Call::make(kI32, Op::get("reinterpret"), {f})), "T.reinterpret(\"int32\", f)");
  EXPECT_EQ(print(Call::make(kI32, Op::get("if_then_else"),
                             {LT::make(i, make_const(0)), i, make_const(1)})),
            "T.if_then_else(i < 0, i, 1)");
  EXPECT_EQ(print(Call::make(kI64, GlobalVar::make("g"), {i})),
            "T.call_global(\"int64\", \"g\", i)");
  // Evaluate(ret(x)) is `return x` only when the dtype follows the rule.
  EXPECT_EQ(print(Evaluate::make(Call::make(kI32, Op::get("ret"), {i}))), "return i\n");
  EXPECT_EQ(print(Evaluate::make(Call::make(kI64, Op::get("ret"), {i}))),
            "T.call_intrin(\"int64\", \"ret\", i)\n");
  EXPECT_EQ(print(Evaluate::make(i)), "T.evaluate(i)\n");
}

TEST(TextPrinter, StatementsAlone) {
  Var x = Var::make("x", kI32);
  Stmt s = IfThenElse::make(LT::make(x, make_const(3)),
                            AssertStmt::make(GT::make(x, make_const(0)), StringImm::make("pos")),
                            While::make(GE::make(x, make_const(3)), Evaluate::make(x)));
  EXPECT_EQ(print(s),
            "if x < 3:\n"
            "    assert x > 0, \"pos\"\n"
            "else:\n"
            "    while x >= 3:\n"
            "        T.evaluate(x)\n");
  Var y = Var::make("y", kI32);
  EXPECT_EQ(print(Let::make(y, Add::make(x, make_const(1)), Mul::make(y, y))),
            "T.Let(y * y, where={y: x + 1})");
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

// =============================================================================================
// Property test: random well-formed functions survive print -> parse
// =============================================================================================

class RandomFunctionBuilder {
 public:
  explicit RandomFunctionBuilder(uint32_t seed) : rng_(seed) {}

  PrimFunc build() {
    scopes_.assign(1, Scope());
    std::vector<Var> params;
    std::vector<std::pair<Var, Buffer>> buffer_map;
    int nbuf = 1 + pick(2);
    for (int b = 0; b < nbuf; ++b) {
      DataType t = scalar_type();
      std::vector<Expr> shape = {make_const(8 + pick(8))};
      if (pick(3) == 0) shape.push_back(make_const(1 + pick(4)));
      Buffer buf = Buffer::make(name(), t, shape);
      Var h = Var::make_handle(name());
      params.push_back(h);
      buffer_map.emplace_back(h, buf);
      scopes_.back().buffers.push_back(buf);
    }
    int nscalar = pick(3);
    for (int s = 0; s < nscalar; ++s) {
      DataType t = scalar_type();
      Var v = Var::make(name(), t, t.is_int() && pick(4) == 0);
      params.push_back(v);
      scopes_.back().vars.push_back(v);
    }
    Stmt body = block(3);
    Attrs attrs;
    if (pick(2) == 0) attrs[attr::kGlobalSymbol] = AttrValue("main");
    if (pick(2) == 0) attrs[attr::kTarget] = AttrValue(Target::cuda("sm_90", Target::llvm()));
    if (pick(3) == 0) attrs["opt_level"] = AttrValue(int64_t{pick(4)});
    return PrimFunc::make(params, buffer_map, body, DataType::Void(), attrs);
  }

 private:
  struct Scope {
    std::vector<Var> vars;
    std::vector<Buffer> buffers;
  };

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  std::string name() {
    static const char* kNames[] = {"i", "x", "tmp", "i_1", "a.b", "0bad", "for", "A", "buf", "T"};
    return kNames[pick(10)];
  }

  DataType scalar_type() {
    static const DataType kTypes[] = {DataType::Int(32), DataType::Int(64), DataType::Float(32)};
    return kTypes[pick(3)];
  }

  std::vector<Var> vars_of(DataType t) {
    std::vector<Var> out;
    for (const Scope& s : scopes_) {
      for (const Var& v : s.vars) {
        if (v.dtype() == t) out.push_back(v);
      }
    }
    return out;
  }
  std::vector<Buffer> buffers() {
    std::vector<Buffer> out;
    for (const Scope& s : scopes_) out.insert(out.end(), s.buffers.begin(), s.buffers.end());
    return out;
  }

  Expr literal(DataType t) {
    if (t.is_float()) {
      static const double kValues[] = {0.0, 1.0, -2.5, 0.1, 1e30, -0.0, 3.0e-8, 65504.0};
      return FloatImm::make(t, kValues[pick(8)] * (pick(2) ? 1 : 3.7));
    }
    int64_t v = pick(200) - 100;
    if (pick(10) == 0) v = t.bits() == 64 ? INT64_MIN + pick(3) : INT32_MAX - pick(3);
    return IntImm::make(t, v);
  }

  std::vector<Expr> indices_for(const Buffer& b, int depth) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < b->ndim(); ++d) idx.push_back(expr(kI32, depth));
    return idx;
  }

  Expr expr(DataType t, int depth) {
    if (depth <= 0 || pick(4) == 0) {
      std::vector<Var> vs = vars_of(t);
      int choice = pick(3);
      if (choice == 0 && !vs.empty()) return vs[pick(static_cast<int>(vs.size()))];
      if (choice == 1) {
        for (const Buffer& b : buffers()) {
          if (b->dtype == t && pick(2) == 0) return BufferLoad::make(b, indices_for(b, 0));
        }
      }
      return literal(t);
    }
    switch (pick(12)) {
      case 0:
        return Add::make(expr(t, depth - 1), expr(t, depth - 1));
      case 1:
        return Sub::make(expr(t, depth - 1), expr(t, depth - 1));
      case 2:
        return Mul::make(expr(t, depth - 1), expr(t, depth - 1));
      case 3:
        return Div::make(expr(t, depth - 1), expr(t, depth - 1));
      case 4:
        return Mod::make(expr(t, depth - 1), expr(t, depth - 1));
      case 5:
        return FloorDiv::make(expr(t, depth - 1), expr(t, depth - 1));
      case 6:
        return FloorMod::make(expr(t, depth - 1), expr(t, depth - 1));
      case 7:
        return pick(2) ? Min::make(expr(t, depth - 1), expr(t, depth - 1))
                       : Max::make(expr(t, depth - 1), expr(t, depth - 1));
      case 8:
        return Select::make(cond(depth - 1), expr(t, depth - 1), expr(t, depth - 1));
      case 9:
        return Cast::make(t, expr(scalar_type(), depth - 1));
      case 10: {
        if (!allow_let_) return literal(t);
        Var v = Var::make(name(), scalar_type());
        Expr value = expr(v.dtype(), depth - 1);
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Expr body = expr(t, depth - 1);
        scopes_.pop_back();
        return Let::make(v, value, body);
      }
      default:
        if (t.is_float() && pick(2) == 0)
          return Call::make(t, Op::get("exp"), {expr(t, depth - 1)});
        return Call::make(t, Op::get("if_then_else"),
                          {cond(depth - 1), expr(t, depth - 1), expr(t, depth - 1)});
    }
  }

  Expr cond(int depth) {
    if (depth <= 0 || pick(3) == 0) {
      DataType t = scalar_type();
      Expr a = expr(t, depth - 1);
      Expr b = expr(t, depth - 1);
      switch (pick(6)) {
        case 0:
          return EQ::make(a, b);
        case 1:
          return NE::make(a, b);
        case 2:
          return LT::make(a, b);
        case 3:
          return LE::make(a, b);
        case 4:
          return GT::make(a, b);
        default:
          return GE::make(a, b);
      }
    }
    switch (pick(3)) {
      case 0:
        return And::make(cond(depth - 1), cond(depth - 1));
      case 1:
        return Or::make(cond(depth - 1), cond(depth - 1));
      default:
        return Not::make(cond(depth - 1));
    }
  }

  Stmt scoped(int depth) {
    scopes_.emplace_back();
    Stmt s = block(depth);
    scopes_.pop_back();
    return s;
  }

  Stmt block(int depth) {
    int n = 1 + pick(4);
    std::vector<Stmt> seq;
    for (int k = 0; k < n; ++k) seq.push_back(stmt(depth));
    return SeqStmt::make(seq);
  }

  Stmt stmt(int depth) {
    int choice = depth <= 0 ? pick(5) : pick(12);
    switch (choice) {
      case 0: {
        Var v = Var::make(name(), scalar_type());
        Stmt s = Bind::make(v, expr(v.dtype(), 2));
        scopes_.back().vars.push_back(v);
        return s;
      }
      case 1: {
        std::vector<Buffer> bs = buffers();
        const Buffer& b = bs[pick(static_cast<int>(bs.size()))];
        return BufferStore::make(b, expr(b->dtype, 3), indices_for(b, 1));
      }
      case 2: {
        static const char* kScopes[] = {"global", "local", "shared", "shared.dyn"};
        Buffer b =
            Buffer::make(name(), scalar_type(), {make_const(1 + pick(64))}, kScopes[pick(4)]);
        scopes_.back().buffers.push_back(b);
        return AllocBuffer::make(b);
      }
      case 3: {
        std::vector<Buffer> bs = buffers();
        const Buffer& base = bs[pick(static_cast<int>(bs.size()))];
        Buffer view = Buffer::make(base->data, scalar_type(), {make_const(4)}, {},
                                   pick(2) ? Expr() : make_const(pick(4)), name());
        scopes_.back().buffers.push_back(view);
        return DeclBuffer::make(view);
      }
      case 4:
        if (pick(2) == 0) return AssertStmt::make(cond(1), StringImm::make("check \"failed\""));
        return Evaluate::make(Call::make(kI32, Op::get("call_extern"),
                                         {StringImm::make("f"), expr(scalar_type(), 1)}));
      case 5:
      case 6: {
        DataType t = pick(3) == 0 ? kI64 : kI32;
        Var v = Var::make(name(), t);
        Expr min = pick(2) ? IntImm::make(t, 0) : IntImm::make(t, pick(5) - 2);
        Expr extent = pick(3) == 0 ? expr(t, 1) : IntImm::make(t, 1 + pick(8));
        static const ForKind kKinds[] = {ForKind::kSerial, ForKind::kParallel, ForKind::kVectorized,
                                         ForKind::kUnrolled, ForKind::kThreadBinding};
        ForKind kind = kKinds[pick(5)];
        std::string tag = kind == ForKind::kThreadBinding ? "threadIdx.x" : "";
        Annotations ann;
        if (pick(4) == 0) ann["pragma"] = AttrValue(int64_t{1});
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Stmt body = block(depth - 1);
        scopes_.pop_back();
        return For::make(v, min, extent, kind, body, tag, ann);
      }
      case 7: {
        Expr c = cond(2);
        Stmt then_case = scoped(depth - 1);
        Stmt else_case = pick(2) ? scoped(depth - 1) : Stmt();
        return IfThenElse::make(c, then_case, else_case);
      }
      case 8:
        return While::make(cond(1), scoped(depth - 1));
      case 9: {
        static const char* kTags[] = {"blockIdx.x", "threadIdx.x", "threadIdx.y"};
        Var v = Var::make(name(), kI32);
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Stmt body = block(depth - 1);
        scopes_.pop_back();
        return AttrStmt::make(IterVar::make(v, kTags[pick(3)]), attr::kThreadExtent,
                              make_const(1 + pick(128)), body);
      }
      case 10: {
        std::vector<Buffer> bs = buffers();
        for (const Buffer& b : bs) {
          if (b->ndim() == 1 && pick(2) == 0) {
            // The index is used twice, so it must not bind variables (a Let would define its
            // variable twice, which is not well formed).
            allow_let_ = false;
            Expr idx = Ramp::make(expr(kI32, 1), make_const(1 + pick(2)), 4);
            allow_let_ = true;
            Expr value =
                pick(2) ? Broadcast::make(expr(b->dtype, 1), 4) : BufferLoad::make(b, {idx});
            return BufferStore::make(b, value, {idx});
          }
        }
        return Evaluate::make(make_const(0));
      }
      default:
        return block(depth - 1);
    }
  }

  std::mt19937 rng_;
  std::vector<Scope> scopes_;
  bool allow_let_ = true;
};

TEST(TextProperty, RandomFunctionsRoundTrip) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PrimFunc f = RandomFunctionBuilder(seed).build();
    IRModule m = IRModule::from_function(seed % 2 ? "main" : "f" + std::to_string(seed), f);
    expect_round_trip(m);
    if (HasFailure()) break;  // one failing seed is enough to debug
  }
}

TEST(TextProperty, RandomModuleWithSeveralFunctionsRoundTrips) {
  std::vector<std::pair<GlobalVar, PrimFunc>> functions;
  for (uint32_t seed = 1000; seed < 1008; ++seed) {
    functions.emplace_back(GlobalVar::make("fn" + std::to_string(seed)),
                           RandomFunctionBuilder(seed).build());
  }
  expect_round_trip(IRModule::make(functions));
}

// =============================================================================================
// Fuzz: mutated corpus files either parse (and then round-trip) or raise ParseError
// =============================================================================================

TEST(TextFuzz, MutatedCorpusNeverCrashes) {
  std::vector<fs::path> files = corpus("roundtrip");
  std::vector<fs::path> bad = corpus("malformed");
  files.insert(files.end(), bad.begin(), bad.end());
  std::mt19937 rng(12345);
  const std::string alphabet = " \n\t()[]{}:,.=+-*/%<>\"'#\\@0123456789aTx_";
  int parsed = 0, rejected = 0;
  // PRIMJIT_FUZZ_ROUNDS=N runs N mutants per file instead of 150 (for longer local runs).
  const char* env_rounds = std::getenv("PRIMJIT_FUZZ_ROUNDS");
  const int rounds = env_rounds != nullptr ? std::atoi(env_rounds) : 150;
  for (const fs::path& path : files) {
    const std::string original = read_file(path);
    for (int round = 0; round < rounds; ++round) {
      std::string text = original;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t pos = rng() % text.size();
        switch (rng() % 5) {
          case 0:
            text.erase(pos, 1);
            break;
          case 1:
            text.insert(pos, 1, text[pos]);
            break;
          case 2:
            text[pos] = alphabet[rng() % alphabet.size()];
            break;
          case 3:
            text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default: {
            size_t len = 1 + rng() % 12;
            text.erase(pos, len);
          }
        }
      }
      try {
        IRModule m = parse(text, "fuzz.tir");
        ++parsed;
        // Whatever parses is printable, and the printed text round-trips.
        std::string printed = print(m);
        IRModule back = parse(printed, "fuzz-printed.tir");
        EXPECT_TRUE(structural_equal(back, m)) << text << "\n---\n" << printed;
        EXPECT_EQ(print(back), printed) << text;
      } catch (const ParseError& e) {
        ++rejected;
        EXPECT_GE(e.line(), 1);
        EXPECT_GE(e.column(), 1);
        EXPECT_FALSE(e.message().empty());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "non-ParseError exception: " << e.what() << "\n--- input ---\n" << text;
      }
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST(TextFuzz, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "@T.prim_func\ndef f():\n    T.evaluate(" + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + ")\n";
  EXPECT_THROW(parse(deep), ParseError);
  std::string chain = "@T.prim_func\ndef f(a: T.int32):\n    T.evaluate(a";
  for (int i = 0; i < 5000; ++i) chain += " + a";
  EXPECT_THROW(parse(chain + ")\n"), ParseError);
  std::string nots = "@T.prim_func\ndef f(a: T.bool):\n    T.evaluate(";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_THROW(parse(nots + "a)\n"), ParseError);
  std::string blocks = "@T.prim_func\ndef f():\n";
  for (int i = 1; i < 400; ++i)
    blocks += std::string(static_cast<size_t>(4 * i), ' ') + "if True:\n";
  blocks += std::string(1600, ' ') + "pass\n";
  EXPECT_THROW(parse(blocks), ParseError);
  for (const char* text : {"", "\n\n", "@", "@T.prim_func", "@T.prim_func\ndef", "\"", "'''", "(",
                           ")", "\\", "@T.prim_func\ndef f():\n\tpass\n", "\x01", "\xff"}) {
    EXPECT_THROW(parse(text), ParseError) << text;
  }
}

}  // namespace
}  // namespace primjit
