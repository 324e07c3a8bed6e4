// Structural equality, hashing and diff: alpha-equivalence over variables and buffers, one
// inequality row per field kind, hash consistency and spread, diff paths.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>
#include <string>
#include <unordered_set>
#include <vector>

#include "primjit/ir.h"
#include "primjit/ir/structural.h"

namespace primjit {
namespace {

const DataType i32 = DataType::Int(32);
const DataType i64 = DataType::Int(64);
const DataType f16 = DataType::Float(16);
const DataType f32 = DataType::Float(32);
const DataType f64 = DataType::Float(64);

Expr c(int64_t value) { return make_const(value); }
Expr f(double value) { return FloatImm::make(f32, value); }
Stmt eval(Expr e) { return Evaluate::make(std::move(e)); }

// ---------------------------------------------------------------------------------------------
// A function that exercises every node kind and field. `mutation` names the one field to change
// ("" for none); `suffix` is appended to every name, so two builds never share a name or a node.
// ---------------------------------------------------------------------------------------------

class FunctionBuilder {
 public:
  FunctionBuilder(std::string mutation, std::string suffix)
      : mutation_(std::move(mutation)), suffix_(std::move(suffix)) {}

  /// Every mutation name the builder looked at.
  const std::set<std::string>& consulted() const { return consulted_; }

  PrimFunc build() {
    Var A = Var::make_handle(name("A"));
    Var B = Var::make_handle(name("B"));
    Var n = Var::make(name("n"), i32, /*is_size_var=*/!on("var.is_size_var"));
    Var x = Var::make(name("x"), i32);
    Var z = Var::make(name("z"), on("func.param_dtype") ? f64 : f32);
    std::vector<Var> params = {A, B, n, x, z};
    if (on("func.param_count")) params.push_back(Var::make(name("extra"), i32));
    if (on("func.param_order")) std::swap(params[3], params[4]);

    Buffer a_buf = Buffer::make(name("A"), f32, {n, c(on("func.buffer_shape") ? 32 : 16)});
    Buffer b_buf = Buffer::make(name("B"), on("func.buffer_dtype") ? f16 : f32, {c(16)});
    std::vector<std::pair<Var, Buffer>> buffer_map = {{A, a_buf}};
    if (!on("func.buffer_map_count")) buffer_map.emplace_back(B, b_buf);

    std::vector<Stmt> seq;
    Var y = Var::make(name("y"), i32);
    seq.push_back(Bind::make(on("bind.var") ? x : y, Add::make(x, c(on("bind.value") ? 2 : 1))));

    // One Evaluate per expression kind.
    seq.push_back(
        eval(on("int.dtype") ? IntImm::make(i64, 7) : IntImm::make(i32, on("int.value") ? 8 : 7)));
    seq.push_back(
        eval(FloatImm::make(on("float.dtype") ? f64 : f32, on("float.value") ? 2.5 : 1.5)));
    seq.push_back(eval(StringImm::make(on("string.value") ? "world" : "hello")));
    seq.push_back(eval(Var::make(name("free"), on("var.dtype") ? i64 : i32)));
    add_binaries(&seq, x, y, n);
    seq.push_back(eval(on("binary.kind") ? Sub::make(x, y) : Add::make(x, y)));
    seq.push_back(eval(Not::make(on("not.a") ? GT::make(x, y) : LT::make(x, y))));
    seq.push_back(eval(Select::make(on("select.condition") ? GT::make(x, y) : LT::make(x, y),
                                    on("select.true_value") ? c(3) : x,
                                    on("select.false_value") ? c(4) : y)));
    seq.push_back(eval(Cast::make(on("cast.dtype") ? f64 : f32, on("cast.value") ? y : x)));
    Var lv = Var::make(name("lv"), i32);
    seq.push_back(eval(Let::make(on("let.var") ? y : lv, on("let.value") ? c(2) : x,
                                 on("let.body") ? Mul::make(lv, lv) : Add::make(lv, lv))));
    seq.push_back(eval(Ramp::make(on("ramp.base") ? y : x, c(on("ramp.stride") ? 2 : 1),
                                  on("ramp.lanes") ? 8 : 4)));
    seq.push_back(
        eval(Broadcast::make(on("broadcast.value") ? y : x, on("broadcast.lanes") ? 8 : 4)));
    seq.push_back(eval(
        Call::make(f32, Op::get(on("call.op") ? "log" : "exp"), {f(on("call.args") ? 2.0 : 1.0)})));
    std::vector<Expr> extern_args = {StringImm::make("foo"), x};
    if (on("call.arg_count")) extern_args.push_back(y);
    seq.push_back(
        eval(Call::make(on("call.dtype") ? i64 : i32, Op::get("call_extern"), extern_args)));
    seq.push_back(
        eval(Call::make(i32, GlobalVar::make(on("call.callee") ? "helper2" : "helper"), {x})));
    seq.push_back(eval(on("call.kind") ? Call::make(f32, GlobalVar::make("exp"), {f(1.0)})
                                       : Call::make(f32, Op::get("exp"), {f(1.0)})));
    Buffer e_buf = Buffer::make(name("E"), f32, {c(16)});
    seq.push_back(
        eval(BufferLoad::make(on("load.buffer") ? e_buf : b_buf, {c(on("load.indices") ? 1 : 0)})));

    // A loop nest storing into a buffer_map buffer.
    Var i = Var::make(name("i"), i32);
    Var j = Var::make(name("j"), i32);
    Buffer a_other = Buffer::make(name("A2"), f32, {n, c(16)});
    Stmt store = BufferStore::make(
        on("store.buffer") ? a_other : a_buf,
        Mul::make(Cast::make(f32, BufferLoad::make(b_buf, {j})), f(on("store.value") ? 3.0 : 2.0)),
        {on("store.indices") ? j : i, j});
    Annotations inner_annotations;
    if (on("for.annotations_add")) inner_annotations["pragma_unroll"] = true;
    Stmt inner = For::make(j, c(0), c(16), on("for.kind") ? ForKind::kVectorized : ForKind::kSerial,
                           store, "", inner_annotations);
    Annotations outer_annotations = {
        {"software_pipeline", int64_t{on("for.annotations_value") ? 3 : 2}}};
    seq.push_back(For::make(i, c(on("for.min") ? 1 : 0), on("for.extent") ? Add::make(n, c(1)) : n,
                            ForKind::kSerial, on("for.body") ? eval(c(0)) : inner, "",
                            outer_annotations));
    Var tx = Var::make(name("tx"), i32);
    seq.push_back(For::make(tx, c(0), c(32), ForKind::kThreadBinding, eval(tx),
                            on("for.thread_tag") ? "threadIdx.y" : "threadIdx.x"));

    // Attributes.
    Var bx = Var::make(name("bx"), i32);
    seq.push_back(
        AttrStmt::make(IterVar::make(bx, on("attr_stmt.tag") ? "blockIdx.y" : "blockIdx.x"),
                       on("attr_stmt.key") ? attr::kVirtualThread : attr::kThreadExtent,
                       c(on("attr_stmt.value") ? 64 : 128), eval(on("attr_stmt.body") ? y : bx)));
    seq.push_back(AttrStmt::make(on("attr_stmt.node") ? n : x, "pragma_hint", c(1), eval(c(0))));
    seq.push_back(AssertStmt::make(
        on("assert.condition") ? GE::make(x, c(0)) : GT::make(x, c(0)),
        StringImm::make(on("assert.message") ? "x must be non-negative" : "x must be positive")));

    // Allocation and a view over it.
    Var c_data = Var::make_pointer(name("C"), f32, on("alloc.scope") ? "local" : "shared");
    Buffer c_buf =
        Buffer::make(c_data, on("alloc.dtype") ? f16 : f32, {c(on("alloc.shape") ? 64 : 32)},
                     on("alloc.strides") ? std::vector<Expr>{c(1)} : std::vector<Expr>{},
                     on("alloc.elem_offset") ? c(4) : Expr(), name("C"),
                     on("alloc.alignment") ? 128 : 64, on("alloc.offset_factor") ? 4 : 1);
    seq.push_back(
        AllocBuffer::make(c_buf, {{"pragma_storage", on("alloc.annotations") ? "b" : "a"}}));
    Buffer d_buf = Buffer::make(
        on("decl.data") ? a_buf->data : c_data, on("decl.dtype") ? i32 : f32,
        {c(4), c(on("decl.shape") ? 4 : 8)},
        on("decl.strides") ? std::vector<Expr>{c(8), c(1)} : std::vector<Expr>{},
        on("decl.elem_offset") ? c(8) : Expr(), name("D"), 64, on("decl.offset_factor") ? 2 : 1);
    seq.push_back(DeclBuffer::make(d_buf));
    seq.push_back(eval(BufferLoad::make(d_buf, {c(1), c(2)})));

    // Control flow.
    seq.push_back(IfThenElse::make(on("if.condition") ? LE::make(x, n) : LT::make(x, n),
                                   eval(c(on("if.then") ? 2 : 0)),
                                   on("if.else") ? Stmt() : eval(c(1))));
    seq.push_back(While::make(LT::make(y, c(on("while.condition") ? 20 : 10)),
                              eval(on("while.body") ? y : x)));
    if (on("seq.length")) seq.push_back(eval(c(0)));
    if (on("seq.order")) std::swap(seq[1], seq[2]);

    Attrs attrs;
    attrs[attr::kGlobalSymbol] = on("attr.string") ? "main2" : "main";
    Target host = on("target.host") ? Target() : Target::llvm();
    attrs[attr::kTarget] = on("target.kind")
                               ? Target::emu(host)
                               : Target::cuda(on("target.arch") ? "sm_80" : "sm_90", host);
    attrs["noalias"] = !on("attr.bool");
    if (on("attr.kind")) {
      attrs["opt_level"] = 2.0;
    } else {
      attrs["opt_level"] = int64_t{on("attr.int") ? 3 : 2};
    }
    attrs["scale"] = on("attr.float") ? 0.25 : 0.5;
    AttrValue::Array tiles = {AttrValue(on("attr.array_elem") ? 5 : 1), AttrValue("a")};
    if (on("attr.array_len")) tiles.emplace_back(2);
    attrs["tiles"] = tiles;
    attrs["bound"] = Add::make(n, c(on("attr.expr") ? 2 : 1));
    if (on("attr.add")) attrs["extra"] = 1;
    if (on("attr.remove")) attrs.erase("scale");

    return PrimFunc::make(params, buffer_map, SeqStmt::make(seq),
                          on("func.ret_type") ? i32 : DataType::Void(), attrs);
  }

 private:
  bool on(const std::string& mutation) {
    consulted_.insert(mutation);
    return mutation_ == mutation;
  }
  std::string name(const char* base) const { return base + suffix_; }

  // Every binary node kind, with a row for each of its operands.
  void add_binaries(std::vector<Stmt>* seq, const Var& x, const Var& y, const Var& n) {
    struct Row {
      const char* name;
      Expr (*make)(Expr, Expr);
      bool logical;
    };
    const Row rows[] = {
        {"Add", Add::make, false},
        {"Sub", Sub::make, false},
        {"Mul", Mul::make, false},
        {"Div", Div::make, false},
        {"Mod", Mod::make, false},
        {"FloorDiv", FloorDiv::make, false},
        {"FloorMod", FloorMod::make, false},
        {"Min", Min::make, false},
        {"Max", Max::make, false},
        {"EQ", EQ::make, false},
        {"NE", NE::make, false},
        {"LT", LT::make, false},
        {"LE", LE::make, false},
        {"GT", GT::make, false},
        {"GE", GE::make, false},
        {"And", And::make, true},
        {"Or", Or::make, true},
    };
    for (const Row& row : rows) {
      bool change_a = on(std::string(row.name) + ".a");
      bool change_b = on(std::string(row.name) + ".b");
      Expr a = change_a ? n : x;
      Expr b = change_b ? c(5) : Expr(y.get());
      if (row.logical) {
        a = change_a ? GE::make(x, y) : LT::make(x, y);
        b = change_b ? IntImm::make(DataType::Bool(), 1) : GT::make(x, n);
      }
      seq->push_back(eval(row.make(a, b)));
    }
  }

  std::string mutation_;
  std::string suffix_;
  std::set<std::string> consulted_;
};

PrimFunc build(const std::string& mutation, const std::string& suffix) {
  return FunctionBuilder(mutation, suffix).build();
}

// One row per field kind: each changes exactly one field of the reference function.
const std::vector<std::string> kMutations = {
    // literals and variables
    "int.value",
    "int.dtype",
    "float.value",
    "float.dtype",
    "string.value",
    "var.dtype",
    "var.is_size_var",
    // operands of every binary kind, and the kind itself
    "Add.a",
    "Add.b",
    "Sub.a",
    "Sub.b",
    "Mul.a",
    "Mul.b",
    "Div.a",
    "Div.b",
    "Mod.a",
    "Mod.b",
    "FloorDiv.a",
    "FloorDiv.b",
    "FloorMod.a",
    "FloorMod.b",
    "Min.a",
    "Min.b",
    "Max.a",
    "Max.b",
    "EQ.a",
    "EQ.b",
    "NE.a",
    "NE.b",
    "LT.a",
    "LT.b",
    "LE.a",
    "LE.b",
    "GT.a",
    "GT.b",
    "GE.a",
    "GE.b",
    "And.a",
    "And.b",
    "Or.a",
    "Or.b",
    "binary.kind",
    // other expressions
    "not.a",
    "select.condition",
    "select.true_value",
    "select.false_value",
    "cast.dtype",
    "cast.value",
    "let.var",
    "let.value",
    "let.body",
    "ramp.base",
    "ramp.stride",
    "ramp.lanes",
    "broadcast.value",
    "broadcast.lanes",
    "call.op",
    "call.args",
    "call.arg_count",
    "call.dtype",
    "call.callee",
    "call.kind",
    "load.buffer",
    "load.indices",
    // statements
    "bind.var",
    "bind.value",
    "store.buffer",
    "store.value",
    "store.indices",
    "for.min",
    "for.extent",
    "for.kind",
    "for.body",
    "for.thread_tag",
    "for.annotations_add",
    "for.annotations_value",
    "attr_stmt.tag",
    "attr_stmt.key",
    "attr_stmt.value",
    "attr_stmt.body",
    "attr_stmt.node",
    "assert.condition",
    "assert.message",
    "alloc.scope",
    "alloc.dtype",
    "alloc.shape",
    "alloc.strides",
    "alloc.elem_offset",
    "alloc.alignment",
    "alloc.offset_factor",
    "alloc.annotations",
    "decl.data",
    "decl.dtype",
    "decl.shape",
    "decl.strides",
    "decl.elem_offset",
    "decl.offset_factor",
    "if.condition",
    "if.then",
    "if.else",
    "while.condition",
    "while.body",
    "seq.length",
    "seq.order",
    // function
    "func.param_count",
    "func.param_dtype",
    "func.param_order",
    "func.buffer_shape",
    "func.buffer_dtype",
    "func.buffer_map_count",
    "func.ret_type",
    "attr.string",
    "attr.bool",
    "attr.int",
    "attr.kind",
    "attr.float",
    "attr.array_elem",
    "attr.array_len",
    "attr.expr",
    "attr.add",
    "attr.remove",
    "target.kind",
    "target.arch",
    "target.host",
};

// Rows whose hash must differ (not just with high probability across the table).
const std::set<std::string> kObviousHashChanges = {
    "int.value",        "int.dtype",   "float.value", "string.value",   "var.dtype",
    "binary.kind",      "call.op",     "for.kind",    "for.extent",     "if.else",
    "seq.length",       "attr.int",    "target.arch", "target.host",    "func.ret_type",
    "func.param_count", "alloc.scope", "alloc.shape", "assert.message", "attr.add",
};

TEST(StructuralEqual, EveryMutationRowIsUsedByTheBuilder) {
  FunctionBuilder builder("", "_a");
  builder.build();
  EXPECT_EQ(builder.consulted(), std::set<std::string>(kMutations.begin(), kMutations.end()));
}

TEST(StructuralEqual, IndependentlyBuiltFunctionsAreEqual) {
  PrimFunc a = build("", "_a");
  PrimFunc b = build("", "_b");
  ASSERT_FALSE(a.same_as(b));
  EXPECT_NE(a->params[0]->name, b->params[0]->name);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_TRUE(structural_equal(b, a));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_diff(a, b), std::nullopt);
  EXPECT_TRUE(structural_equal(a->body, b->body));
  EXPECT_EQ(structural_hash(a->body), structural_hash(b->body));
}

TEST(StructuralEqual, EqualsItself) {
  PrimFunc a = build("", "_a");
  EXPECT_TRUE(structural_equal(a, a));
  EXPECT_EQ(structural_hash(a), structural_hash(a));
}

class FieldChange : public testing::TestWithParam<std::string> {};

TEST_P(FieldChange, MakesFunctionsUnequal) {
  const std::string& mutation = GetParam();
  PrimFunc base = build("", "_a");
  PrimFunc changed = build(mutation, "_b");
  EXPECT_FALSE(structural_equal(base, changed));
  EXPECT_FALSE(structural_equal(changed, base));
  std::optional<std::string> diff = structural_diff(base, changed);
  ASSERT_TRUE(diff.has_value());
  EXPECT_FALSE(diff->empty());
  EXPECT_FALSE(structural_equal(IRModule::from_function("main", base),
                                IRModule::from_function("main", changed)));
  // The changed variant itself is deterministic: built twice, it compares and hashes equal.
  PrimFunc changed_again = build(mutation, "_c");
  EXPECT_TRUE(structural_equal(changed, changed_again)) << *structural_diff(changed, changed_again);
  EXPECT_EQ(structural_hash(changed), structural_hash(changed_again));
  if (kObviousHashChanges.count(mutation) != 0) {
    EXPECT_NE(structural_hash(base), structural_hash(changed));
  }
}

std::string row_name(const testing::TestParamInfo<std::string>& info) {
  std::string out = info.param;
  for (char& ch : out) {
    if (ch == '.') ch = '_';
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(Rows, FieldChange, testing::ValuesIn(kMutations), row_name);

TEST(StructuralHash, ChangedFieldsAlmostAlwaysChangeTheHash) {
  size_t base = structural_hash(build("", "_a"));
  std::unordered_set<size_t> distinct = {base};
  size_t differ = 0;
  for (const std::string& mutation : kMutations) {
    size_t h = structural_hash(build(mutation, "_b"));
    if (h != base) ++differ;
    distinct.insert(h);
  }
  EXPECT_GE(differ * 100, kMutations.size() * 95);
  // The variants also differ from one another.
  EXPECT_GE(distinct.size() * 100, (kMutations.size() + 1) * 95);
}

// ---------------------------------------------------------------------------------------------
// Alpha-equivalence
// ---------------------------------------------------------------------------------------------

void expect_equal(const Expr& a, const Expr& b) {
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}
void expect_equal(const Stmt& a, const Stmt& b) {
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
}
void expect_unequal(const Expr& a, const Expr& b) {
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(b, a));
  EXPECT_NE(structural_hash(a), structural_hash(b));
}
void expect_unequal(const Stmt& a, const Stmt& b) {
  EXPECT_FALSE(structural_equal(a, b));
  EXPECT_FALSE(structural_equal(b, a));
  EXPECT_NE(structural_hash(a), structural_hash(b));
}

TEST(AlphaEquivalence, FreshVariablesMatchByFirstOccurrence) {
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Var a = Var::make("a", i32);
  Var b = Var::make("b", i32);
  expect_equal(Add::make(x, y), Add::make(a, b));
  expect_equal(Add::make(x, y), Add::make(y, x));
  expect_equal(Add::make(x, x), Add::make(a, a));
  expect_unequal(Add::make(x, x), Add::make(x, y));
  expect_unequal(Add::make(x, y), Add::make(a, a));
  // Names do not matter, identity does.
  expect_equal(x, Var::make("other", i32));
  expect_unequal(x, Var::make("x", i64));
  expect_unequal(x, Var::make("x", i32, /*is_size_var=*/true));
}

TEST(AlphaEquivalence, PointerVariablesCompareElementAndScope) {
  expect_equal(Var::make_pointer("p", f32, "shared"), Var::make_pointer("q", f32, "shared"));
  expect_unequal(Var::make_pointer("p", f32, "shared"), Var::make_pointer("p", f32, "global"));
  expect_unequal(Var::make_pointer("p", f32, "shared"), Var::make_pointer("p", f16, "shared"));
  expect_unequal(Var::make_pointer("p", f32, "global"), Var::make_handle("p"));
}

TEST(AlphaEquivalence, VariableUsedConsistentlyAcrossBinds) {
  auto program = [](bool consistent) {
    Var v = Var::make("v", i32);
    Var w = Var::make("w", i32);
    return SeqStmt::make(
        {Bind::make(v, c(1)), Bind::make(w, c(2)), eval(Add::make(v, consistent ? v : w))});
  };
  expect_equal(program(true), program(true));
  expect_equal(program(false), program(false));
  expect_unequal(program(true), program(false));
}

TEST(AlphaEquivalence, ReusedVariableIsNotTwoDistinctOnes) {
  // The same loop variable object in two sequential loops vs two different variables.
  auto loops = [](bool reuse) {
    Var i = Var::make("i", i32);
    Var k = reuse ? i : Var::make("i", i32);
    return SeqStmt::make({For::make(i, c(0), c(4), ForKind::kSerial, eval(i)),
                          For::make(k, c(0), c(4), ForKind::kSerial, eval(k))});
  };
  expect_equal(loops(true), loops(true));
  expect_equal(loops(false), loops(false));
  expect_unequal(loops(true), loops(false));
}

TEST(AlphaEquivalence, SameBufferTwiceVsTwoEqualBuffers) {
  auto program = [](bool reuse) {
    Buffer b1 = Buffer::make("B", f32, {c(16)});
    Buffer b2 = reuse ? b1 : Buffer::make("B", f32, {c(16)});
    return eval(Add::make(BufferLoad::make(b1, {c(0)}), BufferLoad::make(b2, {c(0)})));
  };
  expect_equal(program(true), program(true));
  expect_equal(program(false), program(false));
  expect_unequal(program(true), program(false));
}

TEST(AlphaEquivalence, TwoBuffersSharingADataPointer) {
  // Two buffer objects over one data pointer are still two buffers.
  auto program = [](bool reuse) {
    Var data = Var::make_pointer("data", f32, "global");
    Buffer b1 = Buffer::make(data, f32, {c(16)}, {}, Expr(), "B");
    Buffer b2 = reuse ? b1 : Buffer::make(data, f32, {c(16)}, {}, Expr(), "B");
    return eval(Add::make(BufferLoad::make(b1, {c(0)}), BufferLoad::make(b2, {c(0)})));
  };
  expect_equal(program(false), program(false));
  expect_unequal(program(true), program(false));
}

TEST(AlphaEquivalence, BufferNamesAreIgnoredButFieldsAreNot) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Buffer b = Buffer::make("B", f32, {c(16)});
  Buffer wide = Buffer::make("A", f32, {c(32)});
  expect_equal(BufferLoad::make(a, {c(0)}), BufferLoad::make(b, {c(0)}));
  expect_unequal(BufferLoad::make(a, {c(0)}), BufferLoad::make(wide, {c(0)}));
}

TEST(AlphaEquivalence, SwappedLoopVariablesInANest) {
  auto nest = [](bool swapped, const std::string& prefix) {
    Var i = Var::make(prefix + "i", i32);
    Var j = Var::make(prefix + "j", i32);
    Buffer a = Buffer::make(prefix + "A", f32, {c(8), c(8)});
    Stmt store = BufferStore::make(a, f(1.0), {swapped ? j : i, swapped ? i : j});
    return For::make(i, c(0), c(8), ForKind::kSerial,
                     For::make(j, c(0), c(8), ForKind::kSerial, store));
  };
  expect_equal(nest(false, "p"), nest(false, "q"));
  expect_equal(nest(true, "p"), nest(true, "q"));
  expect_unequal(nest(false, "p"), nest(true, "q"));
}

TEST(AlphaEquivalence, FunctionParametersAndBufferMap) {
  auto func = [](bool second_buffer_reuses_first) {
    Var pa = Var::make_handle("a");
    Var pb = Var::make_handle("b");
    Buffer ba = Buffer::make("A", f32, {c(4)});
    Buffer bb = second_buffer_reuses_first ? ba : Buffer::make("B", f32, {c(4)});
    return PrimFunc::make({pa, pb}, {{pa, ba}, {pb, bb}},
                          BufferStore::make(bb, BufferLoad::make(ba, {c(0)}), {c(0)}));
  };
  EXPECT_TRUE(structural_equal(func(false), func(false)));
  EXPECT_EQ(structural_hash(func(false)), structural_hash(func(false)));
  EXPECT_FALSE(structural_equal(func(false), func(true)));
  EXPECT_NE(structural_hash(func(false)), structural_hash(func(true)));
}

// ---------------------------------------------------------------------------------------------
// Literals
// ---------------------------------------------------------------------------------------------

TEST(StructuralEqual, FloatLiteralsCompareByValueWithNaNEqualToNaN) {
  double nan = std::numeric_limits<double>::quiet_NaN();
  expect_equal(f(nan), f(nan));
  expect_equal(f(nan), f(-nan));
  expect_equal(f(0.1), f(0.1));
  expect_unequal(f(0.0), f(-0.0));
  expect_unequal(f(nan), f(0.0));
  expect_unequal(f(1.0), FloatImm::make(f64, 1.0));
  expect_unequal(FloatImm::make(f32, 1.0), IntImm::make(i32, 1));
}

TEST(StructuralEqual, UndefinedElseAndUndefinedHandles) {
  Expr cond = LT::make(c(0), c(1));
  expect_equal(IfThenElse::make(cond, eval(c(0))), IfThenElse::make(cond, eval(c(0))));
  expect_unequal(IfThenElse::make(cond, eval(c(0))),
                 IfThenElse::make(cond, eval(c(0)), eval(c(0))));
  EXPECT_TRUE(structural_equal(Expr(), Expr()));
  EXPECT_FALSE(structural_equal(Expr(), c(0)));
  EXPECT_TRUE(structural_equal(PrimFunc(), PrimFunc()));
  EXPECT_FALSE(structural_equal(PrimFunc(), build("", "_a")));
}

TEST(StructuralEqual, AttrStmtNodesOfOtherKinds) {
  auto attr = [](Ref<Object> node) {
    return AttrStmt::make(std::move(node), "k", c(0), eval(c(0)));
  };
  Buffer a = Buffer::make("A", f32, {c(4)});
  expect_equal(attr(GlobalVar::make("f")), attr(GlobalVar::make("f")));
  expect_unequal(attr(GlobalVar::make("f")), attr(GlobalVar::make("g")));
  expect_equal(attr(Target::cuda("sm_90")), attr(Target::cuda("sm_90")));
  expect_unequal(attr(Target::cuda("sm_90")), attr(Target::cuda("sm_80")));
  expect_equal(attr(a), attr(Buffer::make("B", f32, {c(4)})));
  expect_unequal(attr(a), attr(Buffer::make("A", f32, {c(8)})));
  expect_unequal(attr(a), attr(GlobalVar::make("A")));
  expect_unequal(attr(StringImm::make("s")), attr(StringImm::make("t")));
}

// ---------------------------------------------------------------------------------------------
// Modules
// ---------------------------------------------------------------------------------------------

IRModule two_function_module(const std::string& suffix, const std::string& second_name = "helper",
                             const std::string& mutation = "") {
  return IRModule::make({{GlobalVar::make("main"), build(mutation, suffix)},
                         {GlobalVar::make(second_name), build("int.value", suffix + "h")}});
}

TEST(StructuralEqual, Modules) {
  IRModule a = two_function_module("_a");
  IRModule b = two_function_module("_b");
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_diff(a, b), std::nullopt);

  IRModule renamed = two_function_module("_b", "helper2");
  EXPECT_FALSE(structural_equal(a, renamed));
  EXPECT_NE(structural_hash(a), structural_hash(renamed));

  IRModule fewer = a.without_function("helper");
  EXPECT_FALSE(structural_equal(a, fewer));
  EXPECT_FALSE(structural_equal(fewer, a));
  EXPECT_NE(structural_hash(a), structural_hash(fewer));

  IRModule changed = two_function_module("_b", "helper", "attr.float");
  EXPECT_FALSE(structural_equal(a, changed));
  EXPECT_NE(structural_hash(a), structural_hash(changed));

  // Swapping which function gets which name changes the module.
  IRModule swapped = IRModule::make({{GlobalVar::make("helper"), build("", "_s")},
                                     {GlobalVar::make("main"), build("int.value", "_t")}});
  EXPECT_FALSE(structural_equal(a, swapped));
  EXPECT_NE(structural_hash(a), structural_hash(swapped));
}

// ---------------------------------------------------------------------------------------------
// Diff
// ---------------------------------------------------------------------------------------------

PrimFunc small_function(int64_t constant, double deep_constant, const std::string& suffix) {
  Var x = Var::make("x" + suffix, i32);
  Var y = Var::make("y" + suffix, i32);
  Var pa = Var::make_handle("a" + suffix);
  Buffer a = Buffer::make("A" + suffix, f32, {c(8), c(16)});
  Var i = Var::make("i" + suffix, i32);
  Var j = Var::make("j" + suffix, i32);
  Stmt store =
      BufferStore::make(a, Add::make(BufferLoad::make(a, {i, j}), f(deep_constant)), {i, j});
  Stmt nest = For::make(
      i, c(0), c(8), ForKind::kSerial,
      For::make(j, c(0), c(16), ForKind::kSerial, IfThenElse::make(LT::make(i, j), store)));
  return PrimFunc::make({pa, x}, {{pa, a}},
                        SeqStmt::make({eval(c(0)), nest, Bind::make(y, Add::make(x, c(constant)))}),
                        DataType::Void(), {{attr::kTarget, Target::cuda("sm_90")}});
}

TEST(StructuralDiff, NullWhenEqual) {
  IRModule a = IRModule::from_function("main", small_function(3, 1.5, "_a"));
  IRModule b = IRModule::from_function("main", small_function(3, 1.5, "_b"));
  EXPECT_EQ(structural_diff(a, b), std::nullopt);
  EXPECT_EQ(structural_diff(a->functions[0].second, b->functions[0].second), std::nullopt);
}

TEST(StructuralDiff, NamesThePathAndBothValues) {
  IRModule a = IRModule::from_function("main", small_function(3, 1.5, "_a"));
  IRModule b = IRModule::from_function("main", small_function(4, 1.5, "_b"));
  EXPECT_EQ(structural_diff(a, b), "function 'main': body.seq[2].value.b: IntImm 3 vs IntImm 4");
}

TEST(StructuralDiff, DeepInALoopNest) {
  PrimFunc a = small_function(3, 1.5, "_a");
  PrimFunc b = small_function(3, 2.5, "_b");
  EXPECT_EQ(structural_diff(a, b),
            "body.seq[1].body.body.then_case.value.b: FloatImm T.float32(1.5) vs FloatImm "
            "T.float32(2.5)");
}

TEST(StructuralDiff, FunctionOnlyInOneModule) {
  IRModule a = IRModule::make({{GlobalVar::make("main"), small_function(3, 1.5, "_a")},
                               {GlobalVar::make("helper"), small_function(3, 1.5, "_h")}});
  IRModule b = IRModule::from_function("main", small_function(3, 1.5, "_b"));
  EXPECT_EQ(structural_diff(a, b), "function 'helper' is only in the first module");
  EXPECT_EQ(structural_diff(b, a), "function 'helper' is only in the second module");
}

TEST(StructuralDiff, ParametersBuffersAndAttributes) {
  PrimFunc base = small_function(3, 1.5, "_a");
  // Parameter dtype.
  Var pa = Var::make_handle("a");
  Buffer buffer = Buffer::make("A", f32, {c(8), c(16)});
  PrimFunc wide_param = PrimFunc::make({pa, Var::make("x", i64)}, {{pa, buffer}}, base->body,
                                       DataType::Void(), base->attrs);
  EXPECT_EQ(structural_diff(base, wide_param), "params[1]: Var x_a (int32) vs Var x (int64)");
  // Buffer shape.
  Buffer narrow = Buffer::make("A", f32, {c(8), c(32)});
  PrimFunc other_shape = PrimFunc::make({pa, Var::make("x", i32)}, {{pa, narrow}}, base->body,
                                        DataType::Void(), base->attrs);
  EXPECT_EQ(structural_diff(base, other_shape),
            "buffer_map[0].buffer.shape[1]: IntImm 16 vs IntImm 32");
  // Attributes: changed, added, removed.
  EXPECT_EQ(structural_diff(base, base.with_attr(attr::kTarget, Target::cuda("sm_80"))),
            "attrs[\"target\"]: T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\") vs "
            "T.target(\"cuda\", arch=\"sm_80\", host=\"llvm\") (arch differs)");
  EXPECT_EQ(structural_diff(base, base.with_attr("extra", 1)), "attrs[\"extra\"]: (absent) vs 1");
  EXPECT_EQ(structural_diff(base, base.without_attr(attr::kTarget)),
            "attrs[\"target\"]: T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\") vs (absent)");
  // An int and a float attribute of the same value differ, and the message says so.
  EXPECT_EQ(structural_diff(base.with_attr("opt", int64_t{2}), base.with_attr("opt", 2.0)),
            "attrs[\"opt\"]: 2 vs 2.0");
  // Sequence length.
  const auto* seq = base->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  std::vector<Stmt> longer = seq->seq;
  longer.push_back(eval(c(0)));
  EXPECT_EQ(structural_diff(base, base.with_body(SeqStmt::make(longer))),
            "body.seq: 3 elements vs 4 elements");
}

TEST(StructuralDiff, InconsistentVariableIsExplained) {
  Var x = Var::make("x", i32);
  Var a = Var::make("a", i32);
  Var b = Var::make("b", i32);
  PrimFunc lhs = PrimFunc::make({x}, {}, eval(Add::make(x, x)));
  PrimFunc rhs = PrimFunc::make({a}, {}, eval(Add::make(a, b)));
  EXPECT_EQ(structural_diff(lhs, rhs),
            "body.value.b: variable x was matched with a earlier, here it meets b");
}

// ---------------------------------------------------------------------------------------------
// Size
// ---------------------------------------------------------------------------------------------

TEST(StructuralEqual, LongSequencesAreHandled) {
  constexpr int kCount = 50000;
  auto chain = [](int64_t last) {
    std::vector<Stmt> seq;
    Var previous = Var::make("v", i32);
    seq.push_back(Bind::make(previous, c(0)));
    for (int k = 1; k < kCount; ++k) {
      Var next = Var::make("v", i32);
      seq.push_back(Bind::make(next, Add::make(previous, c(k == kCount - 1 ? last : 1))));
      previous = next;
    }
    return PrimFunc::make({}, {}, SeqStmt::make(seq));
  };
  PrimFunc a = chain(1);
  PrimFunc b = chain(1);
  EXPECT_TRUE(structural_equal(a, b));
  EXPECT_EQ(structural_hash(a), structural_hash(b));
  EXPECT_EQ(structural_diff(a, chain(2)),
            "body.seq[" + std::to_string(kCount - 1) + "].value.b: IntImm 1 vs IntImm 2");
}

}  // namespace
}  // namespace primjit
