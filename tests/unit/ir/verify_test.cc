// VerifyWellFormed: each rule has a failing case checked for its message, and well-formed
// counterparts that must pass.
#include "primjit/ir/verify.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primjit/ir.h"

namespace primjit {
namespace {

const DataType i32 = DataType::Int(32);
const DataType f32 = DataType::Float(32);

Expr c(int64_t v) { return make_const(v); }
Stmt seq(std::vector<Stmt> s) { return SeqStmt::make(std::move(s)); }
Stmt loop(const Var& v, int64_t extent, Stmt body) {
  return For::make(v, c(0), c(extent), ForKind::kSerial, std::move(body));
}
Stmt launch(const Var& v, const char* tag, int64_t extent, Stmt body) {
  return AttrStmt::make(IterVar::make(v, tag), attr::kThreadExtent, c(extent), std::move(body));
}
Stmt eval(Expr e) { return Evaluate::make(std::move(e)); }

// A function `f(A: float32[16])` with the given body; `A` is returned through `buffer`.
PrimFunc func_with_buffer(const Buffer& buffer, Stmt body) {
  Var handle = Var::make_handle("a");
  return PrimFunc::make({handle}, {{handle, buffer}}, std::move(body));
}

std::vector<std::string> errors_of(const PrimFunc& f) {
  return well_formed_errors(IRModule::from_function("main", f));
}

std::string only_error(const PrimFunc& f) {
  std::vector<std::string> errors = errors_of(f);
  EXPECT_EQ(errors.size(), 1u);
  return errors.empty() ? "" : errors.front();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(VerifyWellFormed, AcceptsFlatBindsLoopsAndBuffers) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var i = Var::make("i", i32);
  Var x = Var::make("x", i32);
  Var y = Var::make("y", i32);
  Buffer s = Buffer::make("S", f32, {c(16)}, "local");
  Stmt body = seq({
      Bind::make(x, c(3)), AllocBuffer::make(s),
      loop(i, 16,
           seq({Bind::make(y, Add::make(i, x)), BufferStore::make(s, BufferLoad::make(a, {i}), {i}),
                BufferStore::make(a, BufferLoad::make(s, {FloorMod::make(y, c(16))}), {i})})),
      eval(x),  // x is still visible after the loop: same scope as its Bind
  });
  PrimFunc f = func_with_buffer(a, body);
  EXPECT_TRUE(errors_of(f).empty()) << errors_of(f).front();
  EXPECT_NO_THROW(verify_well_formed(f));
}

TEST(VerifyWellFormed, UndefinedVariable) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var ghost = Var::make("ghost", i32);
  PrimFunc f = func_with_buffer(a, BufferStore::make(a, FloatImm::make(f32, 0), {ghost}));
  std::string e = only_error(f);
  EXPECT_TRUE(contains(e, "undefined variable 'ghost'")) << e;
  EXPECT_TRUE(contains(e, "A[ghost]")) << "the offending statement is printed: " << e;
}

TEST(VerifyWellFormed, BindInsideLoopIsNotVisibleAfterIt) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var i = Var::make("i", i32);
  Var x = Var::make("x", i32);
  PrimFunc f = func_with_buffer(a, seq({
                                       loop(i, 16, Bind::make(x, Mul::make(i, c(2)))),
                                       BufferStore::make(a, FloatImm::make(f32, 1), {x}),
                                   }));
  std::string e = only_error(f);
  EXPECT_TRUE(contains(e, "variable 'x' is used out of scope")) << e;
  EXPECT_TRUE(contains(e, "x: T.let[T.int32] = i * 2")) << "names the definition: " << e;
}

TEST(VerifyWellFormed, LoopVariableUsedAfterItsLoop) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var i = Var::make("i", i32);
  PrimFunc f = func_with_buffer(a, seq({loop(i, 16, eval(i)), eval(i)}));
  EXPECT_TRUE(contains(only_error(f), "variable 'i' is used out of scope"));
}

TEST(VerifyWellFormed, EachIfBranchIsItsOwnScope) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var x = Var::make("x", i32);
  Var n = Var::make("n", i32);
  Var handle = Var::make_handle("a");
  PrimFunc f = PrimFunc::make({n, handle}, {{handle, a}},
                              IfThenElse::make(LT::make(n, c(4)), Bind::make(x, c(1)), eval(x)));
  EXPECT_TRUE(contains(only_error(f), "variable 'x' is used out of scope"));
}

TEST(VerifyWellFormed, NestedRedefinitionWhileInScope) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var x = Var::make("x", i32);
  Var i = Var::make("i", i32);
  PrimFunc f = func_with_buffer(a, seq({Bind::make(x, c(1)), loop(i, 4, Bind::make(x, c(2)))}));
  std::string e = only_error(f);
  EXPECT_TRUE(contains(e, "variable 'x' is defined again")) << e;
  EXPECT_TRUE(contains(e, "still in scope")) << e;
}

TEST(VerifyWellFormed, SequentialRedefinition) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var x = Var::make("x", i32);
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  PrimFunc f =
      func_with_buffer(a, seq({loop(i, 4, Bind::make(x, i)), loop(j, 4, Bind::make(x, j))}));
  std::string e = only_error(f);
  EXPECT_TRUE(contains(e, "variable 'x' is defined twice")) << e;
}

TEST(VerifyWellFormed, VariableReusedAcrossFunctions) {
  Var n = Var::make("n", i32);
  PrimFunc f = PrimFunc::make({n}, {}, eval(n));
  PrimFunc g = PrimFunc::make({n}, {}, eval(n));
  std::vector<std::string> errors =
      well_formed_errors(IRModule::make({{GlobalVar::make("f"), f}, {GlobalVar::make("g"), g}}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0], "variable 'n' is defined twice")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "in function 'g'")) << errors[0];
}

TEST(VerifyWellFormed, ThreadVariableMayBeRelaunchedInTheSameFunction) {
  Buffer a = Buffer::make("A", f32, {c(256)});
  Var tx = Var::make("threadIdx_x", i32);
  PrimFunc f = func_with_buffer(
      a, seq({
             launch(tx, "threadIdx.x", 256, BufferStore::make(a, FloatImm::make(f32, 1), {tx})),
             launch(tx, "threadIdx.x", 256, BufferStore::make(a, FloatImm::make(f32, 2), {tx})),
         }));
  EXPECT_TRUE(errors_of(f).empty()) << errors_of(f).front();
}

TEST(VerifyWellFormed, ThreadVariableRelaunchedInsideItself) {
  Buffer a = Buffer::make("A", f32, {c(256)});
  Var tx = Var::make("threadIdx_x", i32);
  PrimFunc f =
      func_with_buffer(a, launch(tx, "threadIdx.x", 16, launch(tx, "threadIdx.x", 16, eval(tx))));
  EXPECT_TRUE(contains(only_error(f), "is defined again"));
}

TEST(VerifyWellFormed, ThreadVariableKeepsOneTag) {
  Buffer a = Buffer::make("A", f32, {c(256)});
  Var t = Var::make("t", i32);
  PrimFunc f = func_with_buffer(
      a, seq({launch(t, "threadIdx.x", 16, eval(t)), launch(t, "blockIdx.x", 16, eval(t))}));
  EXPECT_TRUE(contains(only_error(f), "keeps one tag"));
}

TEST(VerifyWellFormed, ThreadVariableSharedAcrossFunctions) {
  Var tx = Var::make("threadIdx_x", i32);
  PrimFunc f = PrimFunc::make({}, {}, launch(tx, "threadIdx.x", 32, eval(tx)));
  PrimFunc g = PrimFunc::make({}, {}, launch(tx, "threadIdx.x", 32, eval(tx)));
  std::vector<std::string> errors =
      well_formed_errors(IRModule::make({{GlobalVar::make("f"), f}, {GlobalVar::make("g"), g}}));
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_TRUE(contains(errors[0], "launched in function 'f' and again in function 'g'"))
      << errors[0];
}

TEST(VerifyWellFormed, BufferUsedWithoutDeclaration) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Buffer b = Buffer::make("B", f32, {c(16)});
  Var i = Var::make("i", i32);
  PrimFunc f =
      func_with_buffer(a, loop(i, 16, BufferStore::make(a, BufferLoad::make(b, {i}), {i})));
  std::string e = only_error(f);
  EXPECT_TRUE(contains(e, "buffer 'B' is used in")) << e;
  EXPECT_TRUE(contains(e, "without a declaration")) << e;
}

TEST(VerifyWellFormed, BufferUsedAfterItsAllocationScope) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Buffer s = Buffer::make("S", f32, {c(16)}, "shared");
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  PrimFunc f = func_with_buffer(
      a, seq({
             loop(i, 2,
                  seq({AllocBuffer::make(s), BufferStore::make(s, FloatImm::make(f32, 0), {i})})),
             loop(j, 2, BufferStore::make(a, BufferLoad::make(s, {j}), {j})),
         }));
  std::vector<std::string> errors = errors_of(f);
  ASSERT_FALSE(errors.empty());
  EXPECT_TRUE(contains(errors[0], "buffer 'S' is used in")) << errors[0];
  EXPECT_TRUE(contains(errors[0], "no longer in scope")) << errors[0];
}

TEST(VerifyWellFormed, DeclBufferNeedsExistingData) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Buffer view = Buffer::make(Var::make_pointer("orphan", f32), f32, {c(16)}, {}, Expr(), "V");
  PrimFunc f = func_with_buffer(a, DeclBuffer::make(view));
  EXPECT_TRUE(contains(only_error(f), "undefined variable 'orphan'"));
  Buffer alias = Buffer::make(a->data, f32, {c(4), c(4)}, {}, Expr(), "A2");
  Var i = Var::make("i", i32);
  PrimFunc ok = func_with_buffer(
      a, seq({DeclBuffer::make(alias),
              BufferStore::make(alias, FloatImm::make(f32, 0), {FloorMod::make(i, c(4)), c(0)})}));
  EXPECT_TRUE(contains(only_error(ok), "undefined variable 'i'"));
}

TEST(VerifyWellFormed, ParameterBuffersMayShareDataAndShapeVariables) {
  Var n = Var::make("n", i32);
  Var data = Var::make_pointer("data", f32);
  Buffer a = Buffer::make(data, f32, {n}, {}, Expr(), "A");
  Buffer b = Buffer::make(data, f32, {n, c(2)}, {}, Expr(), "B");
  Var ha = Var::make_handle("a");
  Var hb = Var::make_handle("b");
  Var i = Var::make("i", i32);
  PrimFunc f = PrimFunc::make({ha, hb}, {{ha, a}, {hb, b}},
                              For::make(i, c(0), n, ForKind::kSerial,
                                        BufferStore::make(b, BufferLoad::make(a, {i}), {i, c(0)})));
  EXPECT_TRUE(errors_of(f).empty()) << errors_of(f).front();
}

TEST(VerifyWellFormed, LetExpressionScopesItsVariable) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var x = Var::make("x", i32);
  Expr let = Let::make(x, c(2), Add::make(x, c(1)));
  PrimFunc ok = func_with_buffer(a, eval(let));
  EXPECT_TRUE(errors_of(ok).empty());
  PrimFunc bad = func_with_buffer(a, seq({eval(let), eval(x)}));
  EXPECT_TRUE(contains(only_error(bad), "variable 'x' is used out of scope"));
}

TEST(VerifyWellFormed, ThrowsAnErrorListingProblems) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var u = Var::make("u", i32);
  Var w = Var::make("w", i32);
  PrimFunc f = func_with_buffer(a, seq({eval(u), eval(w)}));
  try {
    verify_well_formed(f);
    FAIL() << "expected primjit::Error";
  } catch (const Error& e) {
    std::string text = e.what();
    EXPECT_TRUE(contains(text, "not well formed")) << text;
    EXPECT_TRUE(contains(text, "'u'")) << text;
    EXPECT_TRUE(contains(text, "'w'")) << text;
  }
}

}  // namespace
}  // namespace primjit
