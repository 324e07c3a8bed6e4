// VerifyWellFormed on text input: with the SourceMap parse() fills, each problem names
// FILE:LINE:COL of the offending use (or of its statement), like every parse error.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primjit/ir/source_map.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"

namespace primjit {
namespace {

// The ParseError verify_well_formed throws for `text` parsed as "scope.tir"; fails the test
// when it throws none.
ParseError verify_error(const std::string& text) {
  SourceMap source_map;
  IRModule module = parse(text, "scope.tir", source_map);
  try {
    verify_well_formed(module, source_map);
  } catch (const ParseError& e) {
    return e;
  }
  ADD_FAILURE() << "the module verified:\n" << text;
  return ParseError("", "", 0, 0, "");
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

const char* kBindAfterLoop = R"(# from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        x: T.int32 = i * 2
    A[x] = T.float32(0)
)";

TEST(VerifyLocated, UseAfterTheLoopNamesLineAndColumnOfTheUse) {
  ParseError e = verify_error(kBindAfterLoop);
  EXPECT_EQ(e.file(), "scope.tir");
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.column(), 7);  // the x in A[x]
  std::string what = e.what();
  EXPECT_EQ(what.rfind("scope.tir:6:7: error: the IR is not well formed: variable 'x' is used "
                       "out of scope",
                       0),
            0u)
      << what;
  EXPECT_TRUE(contains(what, "\n    A[x] = T.float32(0)\n      ^")) << what;
  EXPECT_TRUE(contains(e.message(), "it was defined by `x: T.let[T.int32] = i * 2`")) << what;
}

TEST(VerifyLocated, WithoutASourceMapTheMessageIsUnchanged) {
  IRModule module = parse(kBindAfterLoop, "scope.tir");
  try {
    verify_well_formed(module);
    ADD_FAILURE() << "the module verified";
  } catch (const ParseError& e) {
    ADD_FAILURE() << "no source map, no location: " << e.what();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("the IR is not well formed:\n  - variable 'x'", 0), 0u)
        << e.what();
  }
  SourceMap source_map;
  IRModule located = parse(kBindAfterLoop, "scope.tir", source_map);
  std::vector<std::string> errors = well_formed_errors(located, source_map);
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].rfind("scope.tir:6:7: variable 'x' is used out of scope", 0), 0u)
      << errors[0];
}

TEST(VerifyLocated, UseInABranchConditionAndSecondProblemsAreLocatedToo) {
  ParseError e = verify_error(R"(# from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32"), n: T.int32):
    if n > 0:
        y: T.int32 = n
    if n < y:
        A[0] = T.float32(1)
    for i in range(4):
        z: T.int32 = i
    A[1] = T.Cast("float32",
                  z)
)");
  EXPECT_EQ(e.line(), 6);
  EXPECT_EQ(e.column(), 12);  // the y of `n < y`
  std::string what = e.what();
  EXPECT_TRUE(contains(what, "scope.tir:6:12: error: the IR is not well formed: variable 'y'"))
      << what;
  // The second problem: the use on the continuation line of a statement.
  EXPECT_TRUE(contains(what, "\nscope.tir:11:19: error: variable 'z' is used out of scope"))
      << what;
}

TEST(VerifyLocated, BufferUsedAfterItsAllocationScope) {
  ParseError e = verify_error(R"(# from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for i in range(4):
        S = T.alloc_buffer((4,), "float32")
        S[i] = T.float32(0)
    A[0] = S[1]
)");
  EXPECT_EQ(e.line(), 7);
  EXPECT_EQ(e.column(), 12);  // the S of S[1]
  EXPECT_TRUE(contains(e.message(), "buffer 'S' is used in `A[0] = S[1]`")) << e.what();
}

TEST(VerifyLocated, RedefinitionNamesTheSecondDefinition) {
  ParseError e = verify_error(R"(# from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for i in range(4):
        x: T.int32 = i
    for j in range(4):
        x: T.int32 = j
)");
  EXPECT_EQ(e.line(), 7);
  EXPECT_EQ(e.column(), 9);
  EXPECT_TRUE(contains(e.message(), "variable 'x' is defined twice")) << e.what();
}

TEST(VerifyLocated, AWellFormedModuleVerifies) {
  SourceMap source_map;
  IRModule module = parse(R"(# from tvm.script import tir as T
@T.prim_func
def main(A: T.Buffer((16,), "float32")):
    for i in range(16):
        x: T.int32 = i * 2
        A[i] = T.Cast("float32", x)
)",
                          "ok.tir", source_map);
  EXPECT_NO_THROW(verify_well_formed(module, source_map));
  EXPECT_TRUE(well_formed_errors(module, source_map).empty());
  // Statements the parser made are located; a node made afterwards is not.
  const auto* loop = module->lookup("main")->body.as<For>();
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(source_map.find(loop), (SourceLocation{4, 5}));
  EXPECT_FALSE(source_map.find(Evaluate::make(make_const(0)).get()).known());
}

}  // namespace
}  // namespace primjit
