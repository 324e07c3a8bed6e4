// Differential pass checking: every runnable input of tests/passes/*.tir and every builder
// example goes through the default pipeline with the module run before and after each pass;
// a deliberately wrong pass is caught and named.
#include <gtest/gtest.h>

#include <filesystem>

#include "examples/kernels.h"
#include "primjit/ir/functor.h"
#include "tests/unit/emu/emu_test_util.h"

namespace primjit::jit::emu {
namespace {

using test::parse_module;

// The input sections of a golden file (each input is followed by its expected output, which is
// skipped; error cases are skipped too).
std::vector<std::string> golden_inputs(const std::string& text) {
  std::vector<std::string> sections(1);
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line == "# -----") {
      sections.emplace_back();
    } else {
      sections.back() += line + "\n";
    }
  }
  std::vector<std::string> inputs;
  for (size_t i = 0; i < sections.size(); ++i) {
    if (sections[i].find("@T.prim_func") == std::string::npos) continue;
    if (sections[i].find("# expected-error:") != std::string::npos) continue;
    inputs.push_back(sections[i]);
    ++i;  // the expected output
  }
  return inputs;
}

DifferentialOptions emu_options() {
  DifferentialOptions options;
  options.default_target = Target::emu();  // functions without a target run as emu kernels
  return options;
}

TEST(EmuDifferential, GoldenInputsThroughTheDefaultPipeline) {
  const std::string dir = std::string(PRIMJIT_TEST_SOURCE_DIR) + "/passes";
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".tir") files.push_back(entry.path().string());
  }
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 10u);
  int sections = 0, checked = 0, skipped = 0;
  std::string skipped_reasons;
  for (const std::string& file : files) {
    const std::vector<std::string> inputs = golden_inputs(test::read_file(file));
    for (size_t k = 0; k < inputs.size(); ++k) {
      ++sections;
      const std::string where =
          std::filesystem::path(file).filename().string() + " input " + std::to_string(k + 1);
      SCOPED_TRACE(where);
      IRModule m;
      try {
        m = parse(inputs[k]);
      } catch (const Error& e) {
        ADD_FAILURE() << "cannot parse: " << e.what();
        continue;
      }
      DifferentialReport report = check_pipeline(m, passes::default_pipeline(), emu_options());
      EXPECT_EQ(report.first_change(), nullptr) << report.str() << "\n" << inputs[k];
      checked += report.num_checked();
      skipped += report.num_skipped();
      if (report.num_skipped()) skipped_reasons += where + ":\n" + report.str();
    }
  }
  // Most inputs run: every skip has a reason (ill-formed inputs stop at VerifyWellFormed, kernels
  // with pointer parameters have no inputs to generate, ...).
  EXPECT_GE(sections, 90);
  EXPECT_GE(checked, 80) << "skipped " << skipped << ":\n" << skipped_reasons;
  RecordProperty("checked", checked);
  RecordProperty("skipped", skipped);
}

TEST(EmuDifferential, BuilderExamplesThroughTheDefaultPipeline) {
  for (const PrimFunc& f : {examples::vector_add_cpu(), examples::vector_add_cuda(),
                            examples::row_softmax(), examples::matmul_relu()}) {
    const std::string name = f->global_symbol();
    SCOPED_TRACE(name);
    DifferentialOptions options;
    options.dims["m"] = 2;  // rows of row_softmax
    DifferentialReport report =
        check_pipeline(IRModule::from_function(name, f), passes::default_pipeline(), options);
    ASSERT_EQ(report.functions.size(), 1u);
    EXPECT_TRUE(report.ok()) << report.str();
    EXPECT_EQ(report.num_checked(), 1) << report.str();
    EXPECT_GE(report.functions[0].runs, 2) << report.str();  // the input and each changed stage
  }
}

// The storage legalizations compute bfloat16/float8 in float32 and round once, where the input
// rounds every operation: outputs stay within the dtype's tolerance.
TEST(EmuDifferential, NarrowFloatLegalizationStaysWithinTolerance) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((64,), "bfloat16"), B: T.Buffer((64,), "bfloat16"), C: T.Buffer((64,), "bfloat16"), F: T.Buffer((64,), "float8_e4m3fn")):
    T.func_attr({"target": T.target("llvm")})
    for i in range(64):
        C[i] = A[i] * B[i] + A[i] / B[i]
        F[i] = T.Cast("float8_e4m3fn", T.Cast("float32", C[i]) * T.float32(3))
)");
  DifferentialReport report = check_pipeline(m, passes::default_pipeline());
  EXPECT_TRUE(report.ok()) << report.str();
  EXPECT_EQ(report.num_checked(), 1) << report.str();
  // The same function with a float8 result stored without rounding would be caught: compare
  // an exact copy against one that scales by 4 instead of 3.
  IRModule changed = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((64,), "bfloat16"), B: T.Buffer((64,), "bfloat16"), C: T.Buffer((64,), "bfloat16"), F: T.Buffer((64,), "float8_e4m3fn")):
    T.func_attr({"target": T.target("llvm")})
    for i in range(64):
        C[i] = A[i] * B[i] + A[i] / B[i]
        F[i] = T.Cast("float8_e4m3fn", T.Cast("float32", C[i]) * T.float32(4))
)");
  passes::Pass replace{"ReplaceModule", "swaps in another module",
                       [changed](const IRModule&, const passes::PassArgs&) { return changed; }};
  report = check_pipeline(m, std::vector<passes::Pass>{replace});
  ASSERT_NE(report.first_change(), nullptr) << report.str();
  EXPECT_NE(report.first_change()->detail.find("buffer 'F' (argument #3)"), std::string::npos)
      << report.str();
}

// A pass that keeps a stale fact about memory (`if A[0] == n: A[0] += 1; if A[0] == n: ...`
// with the inner test dropped) changes the result only when the branch is taken; random
// inputs (A[0] in [0, 10), n = 19) never take it, the uniform ones (zeros) do.
TEST(EmuDifferential, BranchesOnMemoryAreTakenBothWays) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((1,), "int32"), n: T.int32):
    T.func_attr({"target": T.target("llvm")})
    if A[0] == n:
        A[0] = A[0] + 1
        if A[0] == n:
            A[0] = 0
)");
  IRModule stale = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((1,), "int32"), n: T.int32):
    T.func_attr({"target": T.target("llvm")})
    if A[0] == n:
        A[0] = A[0] + 1
        A[0] = 0
)");
  passes::Pass replace{"StaleFact", "drops a test it wrongly believes true",
                       [stale](const IRModule&, const passes::PassArgs&) { return stale; }};
  DifferentialOptions random_only;
  random_only.uniform_inputs = false;
  EXPECT_TRUE(check_pipeline(m, std::vector<passes::Pass>{replace}, random_only).ok());
  DifferentialReport report = check_pipeline(m, std::vector<passes::Pass>{replace});
  ASSERT_NE(report.first_change(), nullptr) << report.str();
  EXPECT_EQ(report.first_change()->pass, "StaleFact");
  EXPECT_NE(report.first_change()->detail.find("buffer 'A' (argument #0) element [0]: before 1"),
            std::string::npos)
      << report.first_change()->detail;
  // And the real pipeline keeps the test.
  EXPECT_TRUE(check_pipeline(m, passes::default_pipeline()).ok());
}

// A "pass" that turns the first floating-point Add into a Sub.
passes::Pass flip_add_to_sub() {
  return passes::Pass{"FlipAddToSub", "a deliberately wrong pass",
                      [](const IRModule& m, const passes::PassArgs&) {
                        class Flip : public StmtExprMutator {
                         public:
                          Expr mutate(const Add* op) override {
                            if (done_ || !op->dtype.is_floating())
                              return StmtExprMutator::mutate(op);
                            done_ = true;
                            return Sub::make(op->a, op->b);
                          }
                          bool done_ = false;
                        };
                        IRModule out = m;
                        for (const auto& [gvar, func] : m->functions) {
                          Flip flip;
                          Stmt body = flip.mutate_stmt(func->body);
                          if (!body.same_as(func->body))
                            out = out.with_function(gvar->name, func.with_body(body));
                        }
                        return out;
                      }};
}

// A "pass" that drops every barrier.
passes::Pass drop_barriers() {
  return passes::Pass{"DropBarriers", "a deliberately wrong pass",
                      [](const IRModule& m, const passes::PassArgs&) {
                        class Drop : public StmtExprMutator {
                         public:
                          Stmt mutate(const Evaluate* op) override {
                            const auto* call = op->value.as<Call>();
                            if (call != nullptr && call->is_op("tvm_storage_sync"))
                              return Evaluate::make(make_const(0));
                            return StmtExprMutator::mutate(op);
                          }
                        };
                        IRModule out = m;
                        for (const auto& [gvar, func] : m->functions) {
                          Stmt body = Drop().mutate_stmt(func->body);
                          if (!body.same_as(func->body))
                            out = out.with_function(gvar->name, func.with_body(body));
                        }
                        return out;
                      }};
}

std::vector<passes::Pass> default_with(const passes::Pass& wrong, const std::string& after) {
  std::vector<passes::Pass> out;
  for (const std::string& name : passes::default_pipeline()) {
    out.push_back(passes::get_pass(name));
    if (name == after) out.push_back(wrong);
  }
  return out;
}

TEST(EmuDifferential, WrongPassIsCaughtAndNamed) {
  IRModule m = IRModule::from_function("vector_add_cuda", examples::vector_add_cuda());
  DifferentialReport report = check_pipeline(m, default_with(flip_add_to_sub(), "Simplify"));
  const FunctionOutcome* bad = report.first_change();
  ASSERT_NE(bad, nullptr) << report.str();
  EXPECT_EQ(bad->pass, "FlipAddToSub");
  EXPECT_EQ(bad->function, "vector_add_cuda");
  // C[0] = A[0] + B[0] became A[0] - B[0]: the report names the buffer, index and values.
  EXPECT_NE(bad->detail.find("buffer 'C' (argument #2) element [0]: before "), std::string::npos)
      << bad->detail;
  EXPECT_NE(report.str().find("vector_add_cuda: changed by pass 'FlipAddToSub'"), std::string::npos)
      << report.str();
  EXPECT_FALSE(report.ok());
}

TEST(EmuDifferential, DroppedBarrierIsCaughtAsARace) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared.dyn")
    S[tx] = A[tx]
    T.tvm_storage_sync("shared.dyn")
    B[tx] = S[127 - tx]
)");
  DifferentialReport report = check_pipeline(m, default_with(drop_barriers(), "SplitHostDevice"));
  const FunctionOutcome* bad = report.first_change();
  ASSERT_NE(bad, nullptr) << report.str();
  EXPECT_EQ(bad->pass, "DropBarriers");
  EXPECT_NE(bad->detail.find("the function now fails: shared memory race"), std::string::npos)
      << bad->detail;
}

// A "pass" that, after FlattenBuffer, stores B's row i at i * 4 instead of i * 8: into the
// gaps between B's rows, which only a comparison of the whole storage sees.
passes::Pass compact_stores_to_b() {
  return passes::Pass{"CompactStoresToB", "a deliberately wrong pass",
                      [](const IRModule& m, const passes::PassArgs&) {
                        class Shift : public StmtExprMutator {
                         public:
                          Stmt mutate(const BufferStore* op) override {
                            if (op->buffer->name != "B" || op->indices.size() != 1) {
                              return StmtExprMutator::mutate(op);
                            }
                            const Expr& index = op->indices[0];
                            Expr row = FloorDiv::make(index, make_const(8));
                            Expr moved = Sub::make(index, Mul::make(row, make_const(4)));
                            return BufferStore::make(op->buffer, op->value, {moved});
                          }
                        };
                        IRModule out = m;
                        for (const auto& [gvar, func] : m->functions) {
                          Stmt body = Shift().mutate_stmt(func->body);
                          if (!body.same_as(func->body))
                            out = out.with_function(gvar->name, func.with_body(body));
                        }
                        return out;
                      }};
}

// Parameter buffers with strides and an element offset get inputs laid out that way (gaps
// between rows and elements included in the comparison): the default pipeline keeps the
// outputs, a pass that writes into the gaps is caught.
TEST(EmuDifferential, StridedParametersAreLaidOutAsDeclared) {
  IRModule m = parse_module(R"(
@T.prim_func
def main(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    s0 = T.int32()
    s1 = T.int32()
    off = T.int32()
    A = T.match_buffer(a, (n, 4), "float32", strides=(s0, s1), elem_offset=off)
    B = T.match_buffer(b, (n, 4), "float32", strides=(8, 1))
    for i, j in T.grid(n, 4):
        B[i, j] = A[i, j] + T.float32(1)
)");
  DifferentialReport good = check_pipeline(m, passes::default_pipeline());
  EXPECT_TRUE(good.ok()) << good.str();
  EXPECT_EQ(good.num_checked(), 1) << good.str();
  DifferentialReport report =
      check_pipeline(m, default_with(compact_stores_to_b(), "FlattenBuffer"));
  const FunctionOutcome* bad = report.first_change();
  ASSERT_NE(bad, nullptr) << report.str();
  EXPECT_EQ(bad->pass, "CompactStoresToB");
  EXPECT_NE(bad->detail.find("buffer 'B' (argument #1) element storage value"), std::string::npos)
      << bad->detail;
}

TEST(EmuDifferential, UnrunnableFunctionsAreSkippedWithAReason) {
  IRModule m = parse_module(R"(
@I.ir_module
class Module:
    @T.prim_func
    def uses_gpu_intrinsic(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        A[0] = T.call_extern("float32", "__shfl_sync", A[1])

    @T.prim_func
    def takes_pointer(p: T.handle("float32", "global")):
        T.func_attr({"target": T.target("llvm")})
        A = T.decl_buffer((4,), "float32", data=p)
        A[0] = T.float32(1)

    @T.prim_func
    def fine(A: T.Buffer((4,), "float32")):
        T.func_attr({"target": T.target("llvm")})
        A[0] = A[1] * T.float32(2)
)");
  DifferentialReport report = check_pipeline(m, passes::default_pipeline());
  EXPECT_TRUE(report.ok()) << report.str();
  EXPECT_EQ(report.num_checked(), 1) << report.str();
  EXPECT_EQ(report.num_skipped(), 2) << report.str();
  const std::string text = report.str();
  EXPECT_NE(text.find("fine: unchanged through"), std::string::npos) << text;
  EXPECT_NE(text.find("uses_gpu_intrinsic: skipped: the input module fails on the generated "
                      "inputs: T.call_extern of '__shfl_sync'"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("takes_pointer: skipped: parameter 'p' is a pointer without a buffer"),
            std::string::npos)
      << text;
}

TEST(EmuDifferential, DimensionOverridesAndTolerances) {
  IRModule m = IRModule::from_function("vector_add_cpu", examples::vector_add_cpu());
  DifferentialOptions options;
  options.dims["n"] = 3;
  DifferentialReport report =
      check_pipeline(m, std::vector<std::string>{"Specialize{n=3}", "FlattenBuffer"}, options);
  EXPECT_TRUE(report.ok()) << report.str();
  EXPECT_EQ(report.num_checked(), 1);
  // With the default n (19), specializing to 3 changes the behaviour: the function now fails
  // its shape check.
  report = check_pipeline(m, std::vector<std::string>{"Specialize{n=3}"});
  ASSERT_NE(report.first_change(), nullptr) << report.str();
  EXPECT_EQ(report.first_change()->pass, "Specialize{n=3}");

  EXPECT_EQ(comparison_tolerance(DataType::Int(32)), 0);
  EXPECT_LT(comparison_tolerance(DataType::Float(32)), comparison_tolerance(DataType::Float(16)));
  EXPECT_LT(comparison_tolerance(DataType::BFloat16()),
            comparison_tolerance(DataType::Float8E4M3FN()));
}

// check_backend: a backend that agrees passes on every input set; one that computes something
// else, fails, or cannot run is reported as such, by name.
TEST(EmuDifferential, BackendAgainstBackend) {
  IRModule m = IRModule::from_function("vector_add_cuda", examples::vector_add_cuda());
  Interpreter interp(m);
  Backend reference{"emu", [&](const std::string& name, std::span<const Arg> args) {
                      return interp.run(name, args);
                    }};
  auto candidate = [&](std::string name, std::function<void(std::span<const Arg>)> after) {
    return Backend{name, [&interp, after](const std::string& f, std::span<const Arg> args) {
                     std::optional<Arg> r = interp.run(f, args);
                     after(args);
                     return r;
                   }};
  };

  DifferentialReport same = check_backend(m, reference, candidate("same", [](auto) {}));
  ASSERT_EQ(same.functions.size(), 1u) << same.str();
  EXPECT_EQ(same.functions[0].status, FunctionOutcome::Status::kUnchanged) << same.str();
  EXPECT_EQ(same.functions[0].runs, 6) << same.str();  // random, zeros, ones: twice each
  EXPECT_TRUE(same.ok());

  // C[5] off by one (arguments: A, B, C).
  DifferentialReport off = check_backend(m, reference, candidate("cuda", [](auto args) {
                                           DLTensor* c = args[2].tensor();
                                           static_cast<float*>(c->data)[5] += 1.0f;
                                         }));
  const FunctionOutcome* bad = off.first_change();
  ASSERT_NE(bad, nullptr) << off.str();
  EXPECT_EQ(bad->pass, "cuda");
  EXPECT_NE(bad->detail.find("buffer 'C' (argument #2) element [5]: emu "), std::string::npos)
      << bad->detail;
  EXPECT_NE(bad->detail.find(", cuda "), std::string::npos) << bad->detail;

  // Within float32's tolerance is the same; beyond it is not.
  DifferentialReport close = check_backend(m, reference, candidate("cuda", [](auto args) {
                                             static_cast<float*>(args[2].tensor()->data)[0] *=
                                                 1.0f + 1e-6f;
                                           }));
  EXPECT_TRUE(close.ok()) << close.str();

  DifferentialReport fails =
      check_backend(m, reference, candidate("cuda", [](auto) -> void {
                      throw Error("launch failed: CUDA_ERROR_ILLEGAL_ADDRESS");
                    }));
  ASSERT_NE(fails.first_change(), nullptr) << fails.str();
  EXPECT_EQ(fails.first_change()->detail,
            "fails on cuda where emu runs: launch failed: CUDA_ERROR_ILLEGAL_ADDRESS");

  DifferentialReport cannot = check_backend(m, reference, candidate("cuda", [](auto) -> void {
                                              throw UnsupportedError("no GPU on this machine");
                                            }));
  EXPECT_TRUE(cannot.ok()) << cannot.str();
  EXPECT_EQ(cannot.num_checked(), 0) << cannot.str();
  EXPECT_EQ(cannot.num_skipped(), 1) << cannot.str();
  EXPECT_NE(cannot.str().find("cuda cannot run it: no GPU on this machine"), std::string::npos)
      << cannot.str();
}

}  // namespace
}  // namespace primjit::jit::emu
