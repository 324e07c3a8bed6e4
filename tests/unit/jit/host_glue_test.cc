// The host code around a kernel (the packed wrapper's argument checks, launches) costs the
// compile little: its size grows linearly with the number of parameters, and the engine gives
// glue functions a light pipeline while loop nests get the full one.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/dlpack.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/many_params.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

IRModule lower(const std::string& text) {
  return passes::run_passes(parse(text), passes::default_pipeline(), {});
}

using test::many_params;

size_t llvm_text_size(int params) {
  return to_llvm_text(codegen_llvm(passes::lower_for_host(lower(many_params(params))))).size();
}

// Every check of an argument names the function's signature, which grows with the number of
// parameters: emitted once per check, the module was quadratic (288 MB of IR for 1,000).
TEST(HostGlue, ModuleSizeIsLinearInTheNumberOfParameters) {
  const size_t small = llvm_text_size(100);
  const size_t large = llvm_text_size(1000);
  EXPECT_LT(large, 12 * small) << "100 parameters: " << small << " bytes, 1000: " << large;
  EXPECT_LT(large, size_t{16} << 20);
}

struct Vector {
  std::vector<float> data;
  int64_t shape[1];
  DLTensor dl{};
  explicit Vector(int64_t n) : data(static_cast<size_t>(n), 1.0f), shape{n} {
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = 1;
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape;
  }
  PJValue arg() {
    PJValue v{};
    v.type_index = kPJDLTensorPtr;
    v.v_ptr = &dl;
    return v;
  }
};

// A thousand parameters compile, run, and a bad last argument still gets the whole message.
// (The wrapper's code is generated at CodeGenOptLevel::None: the optimizing register allocator
// took minutes on it.)
TEST(HostGlue, AThousandParametersCompileAndCheckTheirArguments) {
  constexpr int kParams = 1000;
  OrcEngine engine;
  HostProgram program(engine, lower(many_params(kParams)));
  HostEntry f = program.function("f");
  std::vector<std::unique_ptr<Vector>> vectors;
  std::vector<PJValue> args;
  for (int k = 0; k < kParams; ++k) {
    vectors.push_back(std::make_unique<Vector>(k == kParams - 1 ? 5 : 4));
    args.push_back(vectors.back()->arg());
  }
  EXPECT_ERROR_CONTAINS(call_packed(f, args.data(), kParams),
                        "Mismatched A999.shape[0] on argument #999 when calling:\n  `f(A0: "
                        "Tensor([m], float32), A1: Tensor([m], float32)");
  EXPECT_ERROR_CONTAINS(call_packed(f, args.data(), kParams),
                        "A999: Tensor([m], float32))`,\n  expected to match A0.shape[0], got 5");
  EXPECT_ERROR_CONTAINS(call_packed(f, args.data(), kParams - 1),
                        "Expected 1000 arguments when calling:\n  `f(A0: Tensor([m], float32)");
  Vector last(4);
  last.data = {1, 2, 3, 4};
  args[kParams - 1] = last.arg();
  call_packed(f, args.data(), kParams);
  EXPECT_EQ(vectors[0]->data, (std::vector<float>{2, 3, 4, 5}));
}

constexpr const char* kVectorAdd = R"(
@T.prim_func
def vadd(a: T.handle, b: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int64()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(n):
        C[i] = A[i] + B[i]
)";

// The wrapper (checks and binds, no loop) is glue; the compute scope holding the loop is not.
TEST(HostGlue, OnlyLooplessFunctionsAreGlue) {
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lower(kVectorAdd))));
  const size_t wrapper = ir.find("define i32 @vadd(");
  const size_t scope = ir.find("define internal i32 @vadd_compute_(");
  ASSERT_NE(wrapper, std::string::npos) << ir;
  ASSERT_NE(scope, std::string::npos) << ir;
  // Attribute groups: the wrapper's `#N` carries the glue attribute, the scope's does not.
  auto group_of = [&](size_t define) {
    size_t open = ir.find(") #", define);
    return ir.substr(open + 2, ir.find(' ', open + 2) - open - 2);
  };
  auto group_text = [&](const std::string& group) {
    size_t at = ir.find("attributes " + group + " = {");
    return at == std::string::npos ? std::string() : ir.substr(at, ir.find('\n', at) - at);
  };
  EXPECT_NE(group_text(group_of(wrapper)).find(kGlueFunctionAttr), std::string::npos) << ir;
  EXPECT_EQ(group_text(group_of(scope)).find(kGlueFunctionAttr), std::string::npos) << ir;
}

// After optimization the glue is kept out of the full pipeline (optnone) and the loop is
// vectorized as before.
TEST(HostGlue, GlueGetsTheLightPipelineAndLoopsTheFullOne) {
  OrcEngine engine(OrcOptions{.opt_level = 3, .keep_optimized_ir = true});
  std::string text = to_llvm_text(codegen_llvm(passes::lower_for_host(lower(kVectorAdd))));
  OrcEngine::ModuleKey key = engine.add_ir_text(text, "vadd");
  std::string ir = engine.optimized_ir(key);
  EXPECT_NE(ir.find("optnone"), std::string::npos) << ir;
  EXPECT_EQ(ir.find(kGlueFunctionAttr), std::string::npos) << ir;
  EXPECT_NE(ir.find(" x float>"), std::string::npos) << ir;
  engine.remove(key);
}

// Large glue and the loop nests are compiled to two objects, which one bundle carries
// through a cache; a damaged bundle is an error that names the module.
TEST(HostGlue, GlueAndLoopNestsLinkFromOneBundle) {
  constexpr int kParams = 60;  // a wrapper large enough to be compiled apart
  OrcEngine engine;
  HostImage image = compile_host(engine, lower(many_params(kParams)));
  engine.register_runtime_once(register_host_runtime);
  OrcEngine::ModuleKey key = engine.add_object(image.object, "many bundle");
  auto* fn = reinterpret_cast<PJPackedFunc>(engine.lookup("f" + image.suffix));
  std::vector<std::unique_ptr<Vector>> vectors;
  std::vector<PJValue> args;
  for (int k = 0; k < kParams; ++k) {
    vectors.push_back(std::make_unique<Vector>(3));
    args.push_back(vectors.back()->arg());
  }
  vectors.back()->data = {1, 2, 3};
  call_packed(HostEntry{fn, nullptr}, args.data(), kParams);
  EXPECT_EQ(vectors[0]->data, (std::vector<float>{2, 3, 4}));
  engine.remove(key);
  EXPECT_ERROR_CONTAINS(engine.add_object(image.object.substr(0, image.object.size() / 2), "half"),
                        "cannot link 'half': its object bundle is truncated");
}

}  // namespace
}  // namespace primjit::jit
