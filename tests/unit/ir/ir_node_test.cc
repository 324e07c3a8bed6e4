// Nodes: make() type checks, DataType, functors (mutator identity), substitute,
// post_order_visit, ScopeStack.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "ir/node_key.h"
#include "ir/scope_stack.h"
#include "primjit/ir.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

const DataType i32 = DataType::Int(32);
const DataType i64 = DataType::Int(64);
const DataType f32 = DataType::Float(32);

// Runs `f` and returns the primjit::Error message it throws ("" when it does not throw).
using primjit::test::error_of;

TEST(DataType, ParsesAndPrintsEveryKind) {
  const char* names[] = {"int8",    "int16",     "int32",         "int64",       "uint8",
                         "uint16",  "uint32",    "uint64",        "float16",     "float32",
                         "float64", "bfloat16",  "float8_e4m3fn", "float8_e5m2", "bool",
                         "handle",  "float32x4", "int8x16",       "boolx8",      "float16x2"};
  for (const char* name : names) {
    EXPECT_EQ(DataType::parse(name).str(), name);
  }
  EXPECT_EQ(DataType::parse("float32x4"), DataType::Float(32, 4));
  EXPECT_TRUE(DataType::parse("bool").is_bool());
  EXPECT_TRUE(DataType::parse("float8_e4m3fn").is_float8());
  EXPECT_EQ(DataType::parse("bfloat16").bytes(), 2);
  EXPECT_EQ(DataType::Float(32, 4).bytes(), 16);
}

TEST(DataType, RejectsBadNames) {
  for (const char* bad : {"float31", "int", "int7", "bfloat32", "floaty", "", "float32x", "x4",
                          "float32x1", "handlex2"}) {
    EXPECT_ERROR_CONTAINS(DataType::parse(bad), "unknown dtype");
  }
}

TEST(Make, LiteralsCheckTheirRange) {
  EXPECT_EQ(IntImm::make(DataType::Int(8), -128).as<IntImm>()->value, -128);
  EXPECT_ERROR_CONTAINS(IntImm::make(DataType::Int(8), 128), "does not fit in int8");
  EXPECT_ERROR_CONTAINS(IntImm::make(DataType::UInt(8), -1), "does not fit in uint8");
  EXPECT_ERROR_CONTAINS(IntImm::make(DataType::Bool(), 2), "does not fit in bool");
  EXPECT_ERROR_CONTAINS(IntImm::make(f32, 1), "needs a scalar int");
  EXPECT_ERROR_CONTAINS(FloatImm::make(i32, 1.0), "needs a scalar floating dtype");
}

TEST(Make, BinaryOperandsMustHaveTheSameDtype) {
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i64);
  EXPECT_ERROR_CONTAINS(Add::make(x, y),
                        "Add: operands must have the same dtype, got int32 and int64");
  EXPECT_EQ(Add::make(x, x).dtype(), i32);
  EXPECT_EQ(LT::make(x, x).dtype(), DataType::Bool());
  EXPECT_ERROR_CONTAINS(And::make(x, x), "And: needs bool operands");
  EXPECT_ERROR_CONTAINS(Not::make(x), "Not: needs a bool operand");
  EXPECT_ERROR_CONTAINS(Add::make(LT::make(x, x), LT::make(x, x)), "needs integer or floating");
  EXPECT_ERROR_CONTAINS(Add::make(x, Expr()), "operand 'b' is undefined");
}

TEST(Make, VectorsCarryLanes) {
  Expr ramp = Ramp::make(make_const(0), make_const(1), 4);
  EXPECT_EQ(ramp.dtype(), DataType::Int(32, 4));
  Expr bc = Broadcast::make(FloatImm::make(f32, 1.0), 4);
  EXPECT_EQ(bc.dtype(), DataType::Float(32, 4));
  EXPECT_EQ(LT::make(ramp, ramp).dtype(), DataType::Bool(4));
  EXPECT_ERROR_CONTAINS(Broadcast::make(bc, 2), "must be a scalar");
  EXPECT_ERROR_CONTAINS(Ramp::make(make_const(0), make_const(1), 1), "at least 2 lanes");
  EXPECT_ERROR_CONTAINS(Cast::make(f32, ramp), "cannot change the lane count");
  Buffer a = Buffer::make("A", f32, {make_const(16)});
  Expr load = BufferLoad::make(a, {ramp});
  EXPECT_EQ(load.dtype(), DataType::Float(32, 4));
  EXPECT_ERROR_CONTAINS(BufferStore::make(a, FloatImm::make(f32, 0.0), {ramp}),
                        "value has dtype float32 but the buffer elements accessed are float32x4");
}

TEST(Make, BufferAccessChecksIndices) {
  Buffer a = Buffer::make("A", f32, {make_const(4), make_const(8)});
  EXPECT_ERROR_CONTAINS(BufferLoad::make(a, {make_const(0)}),
                        "needs 2 indices (one per dimension), got 1");
  EXPECT_ERROR_CONTAINS(BufferLoad::make(a, {make_const(0), FloatImm::make(f32, 0)}),
                        "indices must be integers");
  EXPECT_ERROR_CONTAINS(BufferStore::make(a, make_const(1), {make_const(0), make_const(0)}),
                        "value has dtype int32 but the buffer element accessed is float32");
  EXPECT_EQ(a->scope(), "global");
  EXPECT_EQ(a->data_alignment, 64);
  EXPECT_EQ(Buffer::make("S", f32, {make_const(4)}, "shared.dyn")->scope(), "shared.dyn");
}

TEST(Make, BufferFieldsAreChecked) {
  Var data = Var::make_pointer("d", f32);
  EXPECT_ERROR_CONTAINS(Buffer::make(Var::make("x", i32), f32, {}, {}, Expr(), "B"),
                        "must be a pointer");
  EXPECT_ERROR_CONTAINS(
      Buffer::make(data, f32, {make_const(4)}, {make_const(1), make_const(1)}, Expr(), "B"),
      "has 1 dimensions but 2 strides");
  EXPECT_ERROR_CONTAINS(Buffer::make(data, f32, {FloatImm::make(f32, 4)}, {}, Expr(), "B"),
                        "shape[0] must be a scalar integer");
  EXPECT_ERROR_CONTAINS(Buffer::make(data, f32, {make_const(4)}, {}, Expr(), "B", 48),
                        "power of two");
  EXPECT_EQ(Buffer::make(data, f32, {make_const(4)}, {}, Expr(), "B", 0)->data_alignment, 64);
}

TEST(Make, StatementsCheckTypes) {
  Var x = Var::make("x", i32);
  EXPECT_ERROR_CONTAINS(Bind::make(x, FloatImm::make(f32, 1)),
                        "variable 'x' has dtype int32 but the value has dtype float32");
  EXPECT_ERROR_CONTAINS(IfThenElse::make(x, Evaluate::make(x)), "condition must be a scalar bool");
  EXPECT_ERROR_CONTAINS(
      For::make(x, make_const(0), IntImm::make(i64, 4), ForKind::kSerial, Evaluate::make(x)),
      "must have the loop variable's dtype");
  EXPECT_ERROR_CONTAINS(
      For::make(x, make_const(0), make_const(4), ForKind::kThreadBinding, Evaluate::make(x)),
      "thread tag is required");
  EXPECT_ERROR_CONTAINS(IterVar::make(x, "threadIdx.w"), "unknown thread tag");
  EXPECT_ERROR_CONTAINS(AttrStmt::make(x, attr::kThreadExtent, make_const(4), Evaluate::make(x)),
                        "needs an IterVar");
  EXPECT_ERROR_CONTAINS(AssertStmt::make(LT::make(x, x), make_const(1)),
                        "message must be a string");
  EXPECT_ERROR_CONTAINS(Call::make(f32, Op::get("exp"), {}), "T.exp takes 1 argument, got 0");
  EXPECT_ERROR_CONTAINS(Op::get("not_an_op"), "unknown builtin op 'not_an_op'");
}

TEST(Make, SeqStmtIsCanonical) {
  Var x = Var::make("x", i32);
  Stmt a = Evaluate::make(make_const(1));
  Stmt b = Evaluate::make(make_const(2));
  Stmt c = Evaluate::make(make_const(3));
  Stmt nested = SeqStmt::make({a, SeqStmt::make({b, c})});
  ASSERT_NE(nested.as<SeqStmt>(), nullptr);
  EXPECT_EQ(nested.as<SeqStmt>()->seq.size(), 3u);
  EXPECT_TRUE(SeqStmt::make({a}).same_as(a));
  Stmt nothing = SeqStmt::make({});
  const auto* empty = nothing.as<Evaluate>();
  ASSERT_NE(empty, nullptr);
  EXPECT_EQ(as_const_int(empty->value), 0);
}

TEST(Make, FunctionsAndModules) {
  Var n = Var::make("n", i32);
  Var a = Var::make_handle("a");
  Buffer buf = Buffer::make("A", f32, {n});
  Stmt body = Evaluate::make(make_const(0));
  EXPECT_ERROR_CONTAINS(PrimFunc::make({n, n}, {}, body), "parameter 'n' appears twice");
  EXPECT_ERROR_CONTAINS(PrimFunc::make({n}, {{a, buf}}, body), "which is not a parameter");
  EXPECT_ERROR_CONTAINS(PrimFunc::make({n, a}, {{n, buf}}, body), "must be a handle");
  PrimFunc f = PrimFunc::make({n, a}, {{a, buf}}, body);
  EXPECT_TRUE(f->buffer_of(a).same_as(buf));
  PrimFunc g = f.with_attr(attr::kTarget, Target::cuda("sm_80"));
  EXPECT_EQ(g->target()->arch, "sm_80");
  EXPECT_EQ(g->target()->host->kind, "llvm");
  EXPECT_FALSE(f->target().defined());
  IRModule m = IRModule::make({{GlobalVar::make("main"), f}, {GlobalVar::make("aux"), g}});
  EXPECT_EQ(m->functions.front().first->name, "aux");  // sorted by name
  EXPECT_ERROR_CONTAINS(m->lookup("nope"), "has no function 'nope' (it has: aux, main)");
  EXPECT_ERROR_CONTAINS(IRModule::make({{GlobalVar::make("f"), f}, {GlobalVar::make("f"), g}}),
                        "defines function 'f' twice");
  EXPECT_TRUE(m.with_function("main", g)->lookup("main").same_as(g));
  EXPECT_FALSE(m.without_function("aux")->contains("aux"));
}

TEST(Make, Targets) {
  EXPECT_EQ(Target::cuda().str(), "T.target(\"cuda\", arch=\"sm_90\", host=\"llvm\")");
  EXPECT_EQ(Target::llvm().str(), "T.target(\"llvm\")");
  EXPECT_EQ(Target::cuda("sm_80")->arch_number(), 80);
  EXPECT_ERROR_CONTAINS(Target::make("rocm"), "unknown target kind \"rocm\"");
  EXPECT_ERROR_CONTAINS(Target::cuda("ampere"), "CUDA arch must look like \"sm_90\"");
  EXPECT_ERROR_CONTAINS(Target::make("llvm", "sm_90"), "takes no arch");
}

// A mutator that changes nothing must hand back the very same nodes.
TEST(Mutator, NoChangeKeepsIdentity) {
  Var i = Var::make("i", i32);
  Var x = Var::make("x", i32);
  Buffer a = Buffer::make("A", f32, {make_const(16)});
  Stmt body = SeqStmt::make({
      Bind::make(x, Mul::make(i, make_const(2))),
      BufferStore::make(a, Cast::make(f32, Add::make(x, make_const(1))), {i}),
      IfThenElse::make(LT::make(x, make_const(8)), Evaluate::make(x), Evaluate::make(i)),
  });
  Stmt loop = For::make(i, make_const(0), make_const(16), ForKind::kSerial, body);
  StmtExprMutator identity;
  EXPECT_TRUE(identity.mutate_stmt(loop).same_as(loop));
  Expr e = Select::make(LT::make(i, x), BufferLoad::make(a, {i}), FloatImm::make(f32, 0));
  EXPECT_TRUE(identity.mutate_expr(e).same_as(e));
}

// A mutator that changes one leaf rebuilds only the path to it.
TEST(Mutator, RebuildsOnlyTheChangedPath) {
  struct ConstBump : StmtExprMutator {
    Expr mutate(const IntImm* op) override { return op->value == 7 ? make_const(8) : Expr(op); }
  };
  Var x = Var::make("x", i32);
  Stmt keep = Evaluate::make(Add::make(x, make_const(1)));
  Stmt change = Evaluate::make(Add::make(x, make_const(7)));
  Stmt seq = SeqStmt::make({keep, change});
  Stmt out = ConstBump().mutate_stmt(seq);
  ASSERT_FALSE(out.same_as(seq));
  const auto* s = out.as<SeqStmt>();
  ASSERT_NE(s, nullptr);
  EXPECT_TRUE(s->seq[0].same_as(keep));
  const auto* add = s->seq[1].as<Evaluate>()->value.as<Add>();
  EXPECT_TRUE(add->a.same_as(x));
  EXPECT_EQ(as_const_int(add->b), 8);
}

TEST(Substitute, ReplacesVariablesIncludingBufferShapes) {
  Var n = Var::make("n", i32);
  Var i = Var::make("i", i32);
  Buffer s = Buffer::make("S", f32, {n}, "shared");
  Stmt body =
      SeqStmt::make({AllocBuffer::make(s), BufferStore::make(s, FloatImm::make(f32, 1), {i})});
  Stmt out = substitute(body, {{n.get(), make_const(32)}});
  const auto* seq = out.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* alloc = seq->seq[0].as<AllocBuffer>();
  EXPECT_EQ(as_const_int(alloc->buffer->shape[0]), 32);
  // The store now uses the rewritten buffer, not the old one.
  EXPECT_TRUE(seq->seq[1].as<BufferStore>()->buffer.same_as(alloc->buffer));
  EXPECT_TRUE(substitute(body, {}).same_as(body));
  Expr e = Add::make(i, n);
  Expr r = substitute(e, {{i.get(), n}});
  EXPECT_TRUE(r.as<Add>()->a.same_as(n));
}

TEST(PostOrderVisit, ChildrenBeforeParents) {
  Var x = Var::make("x", i32);
  Expr e = Mul::make(Add::make(x, make_const(1)), make_const(3));
  std::vector<NodeKind> order;
  post_order_visit(e, [&](const Ref<Object>& node) { order.push_back(node.kind()); });
  std::vector<NodeKind> expected = {NodeKind::kVar, NodeKind::kIntImm, NodeKind::kAdd,
                                    NodeKind::kIntImm, NodeKind::kMul};
  EXPECT_EQ(order, expected);
}

TEST(ScopeStack, FramesCloseWithTheirScope) {
  ScopeStack<std::vector<int>> scopes;
  scopes.current().push_back(1);
  size_t inner_size = scopes.with_new_scope([&] {
    scopes.current().push_back(2);
    scopes.current().push_back(3);
    EXPECT_EQ(scopes.depth(), 2u);
    return scopes.current().size();
  });
  EXPECT_EQ(inner_size, 2u);
  EXPECT_EQ(scopes.depth(), 1u);
  EXPECT_EQ(scopes.current(), std::vector<int>{1});
  // An exception closes the frame too.
  EXPECT_THROW(scopes.with_new_scope([&] {
    scopes.current().push_back(9);
    throw Error("boom");
  }),
               Error);
  EXPECT_EQ(scopes.depth(), 1u);
  std::vector<size_t> sizes;
  scopes.with_new_scope([&] {
    scopes.current().push_back(5);
    scopes.for_each([&](const std::vector<int>& f) { sizes.push_back(f.size()); });
  });
  EXPECT_EQ(sizes, (std::vector<size_t>{1, 1}));
}

// Nodes are made only by their factories, where their invariants are checked: a constructor
// needs the IR library's passkey, which code outside it cannot make.
static_assert(!std::is_default_constructible_v<NodeKey>);
static_assert(!std::is_constructible_v<IntImm, DataType, int64_t>);
static_assert(
    !std::is_constructible_v<VarNode, std::string, DataType, DataType, std::string, bool>);
static_assert(!std::is_constructible_v<Evaluate, Expr>);
static_assert(!std::is_constructible_v<PrimFuncNode, std::vector<Var>,
                                       std::vector<std::pair<Var, Buffer>>, Stmt>);

TEST(NodeFactories, CheckInvariantsOnEveryNode) {
  // The one way to make a node runs its checks: an Add of mismatched dtypes is refused.
  Var i = Var::make("i", DataType::Int(32));
  Var f = Var::make("f", DataType::Float(32));
  EXPECT_THROW(Add::make(i, f), Error);
  // A fresh copy of a variable is a new identity with the same fields.
  Var p = Var::make_pointer("p", DataType::Float(16), "shared");
  Var q = Var::make_like(*p.get());
  EXPECT_FALSE(q.same_as(p));
  EXPECT_EQ(q->name, "p");
  EXPECT_EQ(q->pointee, DataType::Float(16));
  EXPECT_EQ(q->storage_scope, "shared");
}

TEST(Refcount, NodesAreFreedWhenTheLastHandleGoes) {
  static int destroyed = 0;
  struct Probe : VarNode {
    // White-box: the test borrows the IR library's passkey to count destructions.
    Probe() : VarNode(node_key(), "p", DataType::Int(32), DataType::Void(), "", false) {}
    ~Probe() override { ++destroyed; }
  };
  destroyed = 0;
  {
    Expr a(new Probe());
    Expr b = a;
    Expr sum = Add::make(a, b);
    a = Expr();
    b = Expr();
    EXPECT_EQ(destroyed, 0);  // still referenced by `sum`
  }
  EXPECT_EQ(destroyed, 1);
}

}  // namespace
}  // namespace primjit
