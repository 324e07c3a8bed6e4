// Tests of the text printer (ir/text/printer.h): its decisions, as exact text.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "tests/unit/ir/text_test_util.h"

namespace primjit::test {
namespace {

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

}  // namespace
}  // namespace primjit::test
