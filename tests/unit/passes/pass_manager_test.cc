// The pass manager (registry, arguments, verify-each, dumps, timings) and the passes whose
// inputs the text format cannot express (ConvertSSA needs a variable defined twice).
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"
#include "tests/unit/test_util.h"

namespace primjit::passes {
namespace {

const DataType i32 = DataType::Int(32);
const DataType f32 = DataType::Float(32);
Expr c(int64_t v) { return make_const(v); }

IRModule small_module() {
  Var handle = Var::make_handle("a");
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var i = Var::make("i", i32);
  Stmt body = SeqStmt::make({
      Evaluate::make(c(0)),
      For::make(i, c(0), c(16), ForKind::kSerial,
                BufferStore::make(a, FloatImm::make(f32, 0), {i})),
  });
  return IRModule::from_function("main", PrimFunc::make({handle}, {{handle, a}}, body));
}

// A deliberately broken pass: appends a use of a variable nobody defines.
Pass breaking_pass() {
  return Pass{"BreakScoping", "test only", [](const IRModule& m, const PassArgs&) {
                PrimFunc f = m->lookup("main");
                Stmt body = SeqStmt::make({f->body, Evaluate::make(Var::make("ghost", i32))});
                return m.with_function("main", f.with_body(body));
              }};
}

TEST(PassManager, UnknownPassNamesTheRegisteredOnes) {
  try {
    run_passes(small_module(), std::vector<std::string>{"NoSuchPass"});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("unknown pass 'NoSuchPass'"), std::string::npos) << text;
    EXPECT_NE(text.find("FlattenBuffer"), std::string::npos) << text;
  }
}

TEST(PassManager, SplitsPassListsWithArguments) {
  EXPECT_EQ(split_pass_list("A,Specialize{n=1;m=2},B"),
            (std::vector<std::string>{"A", "Specialize{n=1;m=2}", "B"}));
  // A comma inside braces separates options, not passes.
  EXPECT_EQ(split_pass_list("A,Specialize{n=1,m=2},B{x=1}"),
            (std::vector<std::string>{"A", "Specialize{n=1,m=2}", "B{x=1}"}));
  EXPECT_ERROR_CONTAINS(run_passes(small_module(), std::vector<std::string>{"RemoveNoOp{x=1}"}),
                        "pass RemoveNoOp has no option 'x'; it takes no options");
}

// A module whose function has two shape variables, n and m.
IRModule two_dims_module() {
  return parse(R"(@I.ir_module
class Module:
    @T.prim_func
    def main(a: T.handle):
        n = T.int32()
        m = T.int32()
        A = T.match_buffer(a, (n, m), "float32")
        A[0, 0] = T.float32(1)
)");
}

TEST(PassOptions, CommaAndSemicolonSeparateOptions) {
  IRModule with_comma = run_passes(two_dims_module(), {"Specialize{n=4,m=8}"});
  IRModule with_semicolon = run_passes(two_dims_module(), {"Specialize{n=4;m=8}"});
  std::string text = print(with_comma);
  EXPECT_NE(text.find("T.Buffer((4, 8), \"float32\")"), std::string::npos) << text;
  EXPECT_TRUE(structural_equal(with_comma, with_semicolon));
  // The same through a --passes style list.
  IRModule listed =
      run_passes(two_dims_module(), split_pass_list("Specialize{n=4,m=8},RemoveNoOp"));
  EXPECT_TRUE(structural_equal(with_comma, listed));
}

TEST(PassOptions, UnknownOptionNamesThePassTheOptionAndTheAcceptedOnes) {
  EXPECT_ERROR_CONTAINS(
      run_passes(small_module(), {"UnrollLoops{limit=4}"}),
      "pass UnrollLoops has no option 'limit'; accepted options:\n  max=int >= 0 (default 4096): "
      "the most iterations a T.unroll loop is unrolled for");
}

TEST(PassOptions, IllTypedValueNamesTheExpectedType) {
  EXPECT_ERROR_CONTAINS(run_passes(small_module(), {"UnrollLoops{max=-1}"}),
                        "pass UnrollLoops: option 'max' must be an int >= 0, got '-1'");
  EXPECT_ERROR_CONTAINS(run_passes(small_module(), {"UnrollLoops{max=4x}"}),
                        "option 'max' must be an int >= 0, got '4x'");
  EXPECT_ERROR_CONTAINS(run_passes(small_module(), {"MergeSharedMemoryAllocations{static=2}"}),
                        "option 'static' must be a bool, got '2'");
  EXPECT_ERROR_CONTAINS(run_passes(small_module(), {"Specialize{n=x}"}),
                        "pass Specialize: option 'n' must be an int, got 'x'");
}

TEST(PassOptions, ParseConvertsEachValueToItsDeclaredType) {
  std::vector<PassOption> declared = {
      {"count", PassOption::Type::kInt, "3", "how many", 1},
      {"fast", PassOption::Type::kBool, "false", "go fast"},
      {"label", PassOption::Type::kString, "", "a name"},
  };
  auto parsed =
      parse_pass_options("Test", declared, {{"count", "7"}, {"fast", "true"}, {"label", "x,y"}});
  ASSERT_EQ(parsed.size(), 3u);
  EXPECT_EQ(parsed[0].first, "count");
  EXPECT_EQ(std::get<int64_t>(parsed[0].second), 7);
  EXPECT_EQ(std::get<bool>(parsed[1].second), true);
  EXPECT_EQ(std::get<std::string>(parsed[2].second), "x,y");
  EXPECT_EQ(std::get<bool>(parse_pass_options("Test", declared, {{"fast", "0"}})[0].second), false);
  EXPECT_ERROR_CONTAINS(parse_pass_options("Test", declared, {{"count", "0"}}),
                        "pass Test: option 'count' must be an int >= 1, got '0'");
  EXPECT_EQ(describe_option(declared[0]), "count=int >= 1 (default 3): how many");
  EXPECT_EQ(describe_option(declared[2]), "label=string: a name");
}

TEST(PassOptions, EveryRegisteredPassDeclaresItsOptions) {
  auto options_of = [](std::string_view name) {
    std::vector<std::string> names;
    for (const PassOption& option : get_pass(name).options) names.push_back(option.name);
    return names;
  };
  EXPECT_EQ(options_of("UnrollLoops"), std::vector<std::string>{"max"});
  EXPECT_EQ(options_of("Specialize"), std::vector<std::string>{"<name>"});
  EXPECT_EQ(options_of("MergeSharedMemoryAllocations"), std::vector<std::string>{"static"});
  EXPECT_TRUE(options_of("FlattenBuffer").empty());
}

TEST(PassManager, VerifyEachNamesThePassThatBrokeTheIR) {
  RunOptions options;
  options.verify_each = true;
  try {
    run_passes(small_module(), std::vector<Pass>{breaking_pass()}, options);
    FAIL() << "expected verify-each to reject the broken pass";
  } catch (const Error& e) {
    std::string text = e.what();
    EXPECT_NE(text.find("not well formed after pass BreakScoping"), std::string::npos) << text;
    EXPECT_NE(text.find("undefined variable 'ghost'"), std::string::npos) << text;
  }
  // Without verification the broken module goes through (and is caught later).
  IRModule broken = run_passes(small_module(), std::vector<Pass>{breaking_pass()});
  EXPECT_FALSE(well_formed_errors(broken).empty());
}

TEST(PassManager, VerifyEachFromTheEnvironment) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        setenv("PRIMJIT_VERIFY_EACH", "1", 1);
        try {
          run_passes(small_module(), std::vector<Pass>{breaking_pass()});
        } catch (const Error&) {
          std::_Exit(0);
        }
        std::_Exit(1);
      },
      ::testing::ExitedWithCode(0), "");
}

TEST(PassManager, DumpsEveryStageAndRecordsTimings) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("primjit_dump_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<PassTiming> timings;
  RunOptions options;
  options.dump_dir = dir.string();
  options.timings = &timings;
  IRModule out =
      run_passes(small_module(), std::vector<std::string>{"RemoveNoOp", "FlattenBuffer"}, options);
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    files.push_back(entry.path().filename().string());
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{"00_input.tir", "01_RemoveNoOp.tir",
                                             "02_FlattenBuffer.tir"}));
  std::ifstream in(dir / "01_RemoveNoOp.tir");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_TRUE(structural_equal(parse(text.str()), out)) << text.str();
  ASSERT_EQ(timings.size(), 2u);
  EXPECT_EQ(timings[0].pass, "RemoveNoOp");
  EXPECT_GE(timings[1].milliseconds, 0.0);
  std::filesystem::remove_all(dir);
}

TEST(PassManager, PrintAfterAll) {
  std::ostringstream out;
  RunOptions options;
  options.print_after_all = true;
  options.print_stream = &out;
  run_passes(small_module(), std::vector<std::string>{"RemoveNoOp"}, options);
  EXPECT_NE(out.str().find("# IR after RemoveNoOp"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("for i in range(16)"), std::string::npos) << out.str();
}

// --- ConvertSSA ------------------------------------------------------------------------------

TEST(ConvertSSA, RenamesASecondDefinitionInTheSameFunction) {
  Buffer a = Buffer::make("A", f32, {c(16)});
  Var handle = Var::make_handle("a");
  Var x = Var::make("x", i32);
  Var i = Var::make("i", i32);
  Var j = Var::make("j", i32);
  Stmt body = SeqStmt::make({
      For::make(
          i, c(0), c(4), ForKind::kSerial,
          SeqStmt::make({Bind::make(x, i), BufferStore::make(a, FloatImm::make(f32, 1), {x})})),
      For::make(
          j, c(0), c(4), ForKind::kSerial,
          SeqStmt::make({Bind::make(x, j), BufferStore::make(a, FloatImm::make(f32, 2), {x})})),
  });
  IRModule m = IRModule::from_function("main", PrimFunc::make({handle}, {{handle, a}}, body));
  ASSERT_FALSE(well_formed_errors(m).empty());
  IRModule out = run_passes(m, std::vector<std::string>{"ConvertSSA"});
  EXPECT_TRUE(well_formed_errors(out).empty()) << well_formed_errors(out).front();
  // Same structure, now with two distinct variables.
  const auto* seq = out->lookup("main")->body.as<SeqStmt>();
  ASSERT_NE(seq, nullptr);
  const auto* first = seq->seq[0].as<For>()->body.as<SeqStmt>()->seq[0].as<Bind>();
  const auto* second = seq->seq[1].as<For>()->body.as<SeqStmt>()->seq[0].as<Bind>();
  EXPECT_TRUE(first->var.same_as(x));
  EXPECT_FALSE(second->var.same_as(x));
  EXPECT_EQ(second->var->name, "x");
  const auto* store = seq->seq[1].as<For>()->body.as<SeqStmt>()->seq[1].as<BufferStore>();
  EXPECT_TRUE(store->indices[0].same_as(second->var));
  // Idempotent on an SSA module: the same nodes come back.
  EXPECT_TRUE(run_passes(out, std::vector<std::string>{"ConvertSSA"}).same_as(out));
}

TEST(ConvertSSA, RenamesAcrossFunctionsButKeepsRelaunchedThreadVariables) {
  Var n = Var::make("n", i32);
  Var tx = Var::make("threadIdx_x", i32);
  auto launch = [&](Stmt body) {
    return AttrStmt::make(IterVar::make(tx, "threadIdx.x"), attr::kThreadExtent, c(32), body);
  };
  PrimFunc f = PrimFunc::make(
      {n}, {},
      SeqStmt::make({launch(Evaluate::make(Add::make(tx, n))), launch(Evaluate::make(tx))}));
  PrimFunc g = PrimFunc::make({n}, {}, launch(Evaluate::make(Mul::make(tx, n))));
  IRModule m = IRModule::make({{GlobalVar::make("f"), f}, {GlobalVar::make("g"), g}});
  ASSERT_FALSE(well_formed_errors(m).empty());
  IRModule out = run_passes(m, std::vector<std::string>{"ConvertSSA"});
  EXPECT_TRUE(well_formed_errors(out).empty()) << well_formed_errors(out).front();
  PrimFunc f2 = out->lookup("f");
  PrimFunc g2 = out->lookup("g");
  EXPECT_TRUE(f2.same_as(f)) << "the first function is already SSA";
  EXPECT_FALSE(g2->params[0].same_as(n));
  const auto* attr = g2->body.as<AttrStmt>();
  EXPECT_FALSE(attr->iter_var()->var.same_as(tx));
  EXPECT_TRUE(structural_equal(g2, g));
}

// --- Specialize from C++ ----------------------------------------------------------------------

TEST(Specialize, BindsAVariableToAnExpression) {
  Var n = Var::make("n", i32);
  Var m = Var::make("m", i32);
  Var handle = Var::make_handle("a");
  Buffer a = Buffer::make(Var::make_pointer("A", f32), f32, {n}, {}, Expr(), "A");
  Var i = Var::make("i", i32);
  PrimFunc f = PrimFunc::make(
      {handle, m}, {{handle, a}},
      For::make(i, c(0), n, ForKind::kSerial, BufferStore::make(a, FloatImm::make(f32, 0), {i})));
  PrimFunc s = specialize(f, {{n.get(), Mul::make(m, c(2))}});
  EXPECT_TRUE(structural_equal(s->buffer_of(handle)->shape[0], Mul::make(m, c(2))));
  EXPECT_TRUE(structural_equal(s->body.as<For>()->extent, Mul::make(m, c(2))));
  Var stranger = Var::make("stranger", i32);
  EXPECT_THROW(specialize(f, {{stranger.get(), c(1)}}), Error);
}

// VerifyDeviceMemory reads a thread-bound loop as device code (a golden would put this cuda
// function, which cuda cannot compile yet, into the GPU crosscheck).
TEST(PassManager, VerifyDeviceMemoryReadsThreadBoundLoopsAsDeviceCode) {
  const IRModule m = parse(R"(
@T.prim_func
def main(A: T.Buffer((32,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    for k in T.thread_binding(32, thread="threadIdx.x"):
        A[k] = T.float32(1)
    A[0] = T.float32(2)
)");
  // The loop's store passes; the store after it is host code.
  try {
    passes::get_pass("VerifyDeviceMemory").run(m, {});
    FAIL() << "the host store should be refused";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("host code writes buffer 'A' in `A[0] = T.float32(2.0)`"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace primjit::passes
