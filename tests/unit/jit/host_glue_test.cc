// The host code around a kernel (the packed wrapper's argument checks, launches) costs the
// compile little: its size grows linearly with the number of parameters, and the engine gives
// glue functions a light pipeline while loop nests get the full one.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/dlpack.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "tests/many_params.h"
#include "tests/unit/jit/jit_test_util.h"
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

// A float32 tensor of any shape over `storage` elements of `fill` (the argument checks use
// shapes far larger than their storage: the checks read no data).
struct Tensor {
  std::vector<float> data;
  std::vector<int64_t> shape;
  DLTensor dl{};
  explicit Tensor(std::vector<int64_t> dims, size_t storage = 64, float fill = 0.0f)
      : data(storage, fill), shape(std::move(dims)) {
    dl.data = data.data();
    dl.device = {kDLCPU, 0};
    dl.ndim = static_cast<int32_t>(shape.size());
    dl.dtype = {kDLFloat, 32, 1};
    dl.shape = shape.data();
  }
  PJValue arg() {
    PJValue v{};
    v.type_index = kPJDLTensorPtr;
    v.v_ptr = &dl;
    return v;
  }
};

// n float32 ones.
struct Vector : Tensor {
  explicit Vector(int64_t n) : Tensor({n}, static_cast<size_t>(n), 1.0f) {}
};

// A thousand parameters compile, run, and a bad last argument still gets the whole message.
// (The wrapper's checks are one runtime call with a constant table, T.check_args: its code is a
// few loads per parameter, which the full pipeline and code generator handle in linear time.)
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

// Whether the function defined by `define` (the start of its line in `ir`) is marked glue.
bool is_glue(const std::string& ir, const std::string& define) {
  const size_t at = ir.find(define);
  EXPECT_NE(at, std::string::npos) << define << "\n" << ir;
  if (at == std::string::npos) return false;
  const size_t open = ir.find(") #", at);
  const std::string group = ir.substr(open + 2, ir.find(' ', open + 2) - open - 2);
  const size_t attrs = ir.find("attributes " + group + " = {");
  if (attrs == std::string::npos) return false;
  return ir.substr(attrs, ir.find('\n', attrs) - attrs).find(kGlueFunctionAttr) !=
         std::string::npos;
}

// The wrapper (checks and binds, no loop) is glue; the compute scope holding the loop is not,
// nor one whose only loop is a while loop.
TEST(HostGlue, OnlyLooplessFunctionsAreGlue) {
  std::string ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lower(kVectorAdd))));
  EXPECT_TRUE(is_glue(ir, "define i32 @vadd("));
  EXPECT_FALSE(is_glue(ir, "define internal i32 @vadd_compute_("));
  ir = to_llvm_text(codegen_llvm(passes::lower_for_host(lower(R"(
@T.prim_func
def halve(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, (1,), "int32")
    while A[0] > 1:
        A[0] = A[0] // 2
)"))));
  EXPECT_TRUE(is_glue(ir, "define i32 @halve("));
  EXPECT_FALSE(is_glue(ir, "define internal i32 @halve_compute_(")) << ir;
}

// After optimization the glue is kept out of the full pipeline (optnone) and the loop is
// vectorized as before.
TEST(HostGlue, GlueGetsTheLightPipelineAndLoopsTheFullOne) {
  const std::string ir = test::optimized_ir_of(lower(kVectorAdd));
  EXPECT_NE(ir.find("optnone"), std::string::npos) << ir;
  EXPECT_EQ(ir.find(kGlueFunctionAttr), std::string::npos) << ir;
  EXPECT_NE(ir.find(" x float>"), std::string::npos) << ir;
}

// Small glue is compiled on a second thread, in its own LLVM context, beside the loop nests
// (two objects in one bundle) where the host has a second thread; the optimized IR lists the
// glue first, and the glue declares only the nest functions it calls.
TEST(HostGlue, SmallGlueCompilesBesideTheLoopNests) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one hardware thread";
  OrcEngine engine(OrcOptions{.opt_level = 3, .keep_optimized_ir = true});
  const std::string text = to_llvm_text(codegen_llvm(passes::lower_for_host(lower(kVectorAdd))));
  HostImage image = compile_host(engine, lower(kVectorAdd));
  EXPECT_EQ(image.object.substr(0, 7), std::string("\x7fPJOBJS"));
  OrcEngine::ModuleKey key = engine.add_ir_text(text, "vadd");
  const std::string ir = engine.optimized_ir(key);
  // The line that defines or declares `name`, from `from` on.
  auto line_of = [&](const std::string& word, const std::string& name, size_t from = 0) {
    for (size_t at = ir.find("\n" + word + " ", from); at != std::string::npos;
         at = ir.find("\n" + word + " ", at + 1)) {
      const size_t end = ir.find('\n', at + 1);
      if (ir.substr(at, end - at).find("@" + name + "(") != std::string::npos) return at;
    }
    return std::string::npos;
  };
  const size_t wrapper = line_of("define", "vadd");
  const size_t declared = line_of("declare", "vadd_compute_");  // the glue calls it
  const size_t loop = line_of("define", "vadd_compute_");
  ASSERT_NE(wrapper, std::string::npos) << ir;
  ASSERT_NE(declared, std::string::npos) << ir;
  ASSERT_NE(loop, std::string::npos) << ir;
  EXPECT_LT(wrapper, loop) << ir;
  EXPECT_LT(declared, loop) << ir;
  EXPECT_NE(ir.find(" x float>"), std::string::npos) << ir;
  auto* fn = reinterpret_cast<PJPackedFunc>(engine.lookup("vadd"));
  Vector a(100), b(100), c(100);
  for (int i = 0; i < 100; ++i) {
    a.data[static_cast<size_t>(i)] = static_cast<float>(i);
    b.data[static_cast<size_t>(i)] = 0.5f;
  }
  PJValue args[3] = {a.arg(), b.arg(), c.arg()};
  call_packed(HostEntry{fn, nullptr}, args, 3);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(c.data[static_cast<size_t>(i)], i + 0.5f) << i;
  // A bad call is still refused by the wrapper from the glue's object.
  Vector shorter(99);
  args[1] = shorter.arg();
  EXPECT_ERROR_CONTAINS(call_packed(HostEntry{fn, nullptr}, args, 3), "vadd");
  engine.remove(key);
}

// A loop that VectorizeLoop turns into vector code leaves its function loopless (glue) calling
// a vector math helper, which the split exports: the helpers of two images linked into one
// engine must not clash.
TEST(HostGlue, TwoImagesExportingVectorMathHelpersLinkTogether) {
  auto text = [](const std::string& name, const std::string& scale) {
    return "@T.prim_func\ndef " + name +
           R"((A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    for i in T.vectorized(8):
        B[i] = T.log(A[i]) * T.float32()" +
           scale + ")\n";
  };
  OrcEngine engine;
  engine.register_runtime_once(register_host_runtime);
  std::vector<OrcEngine::ModuleKey> keys;
  std::vector<PJPackedFunc> fns;
  for (const auto& [name, scale] : {std::pair("one", "1"), std::pair("two", "2")}) {
    IRModule lowered = lower(text(name, scale));
    if (to_llvm_text(codegen_llvm(passes::lower_for_host(lowered))).find("primjit_vmath_") ==
        std::string::npos) {
      GTEST_SKIP() << "no vector math library on this host";
    }
    HostImage image = compile_host(engine, lowered);
    keys.push_back(engine.add_object(image.object, name));
    fns.push_back(reinterpret_cast<PJPackedFunc>(engine.lookup(name + image.suffix)));
  }
  for (size_t f = 0; f < fns.size(); ++f) {
    Vector a(8), b(8);
    for (int i = 0; i < 8; ++i) a.data[static_cast<size_t>(i)] = 1.5f + static_cast<float>(i);
    PJValue args[2] = {a.arg(), b.arg()};
    call_packed(HostEntry{fns[f], nullptr}, args, 2);
    for (int i = 0; i < 8; ++i) {
      EXPECT_NEAR(b.data[static_cast<size_t>(i)],
                  std::log(1.5f + static_cast<float>(i)) * static_cast<float>(f + 1), 1e-6f)
          << f << " " << i;
    }
  }
  for (OrcEngine::ModuleKey key : keys) engine.remove(key);
}

// The wrapper loads each field it checks once: only the good path goes on past the inline
// checks (a refused call returns from the slow path), and the light pipeline reuses loads
// across the checks' blocks.
TEST(HostGlue, TheWrapperLoadsEachFieldOnce) {
  const std::string ir = test::optimized_ir_of(lower(kVectorAdd));
  const size_t begin = ir.find("@vadd(");
  ASSERT_NE(begin, std::string::npos) << ir;
  const std::string wrapper = ir.substr(begin, ir.find("\n}\n", begin) - begin);
  std::set<std::string> loads;
  size_t count = 0;
  for (size_t at = wrapper.find(" = load "); at != std::string::npos;
       at = wrapper.find(" = load ", at + 1)) {
    const size_t from = at + 8;
    std::string what = wrapper.substr(from, wrapper.find(", align", from) - from);
    EXPECT_TRUE(loads.insert(what).second) << "loaded twice: " << what << "\n" << wrapper;
    ++count;
  }
  EXPECT_GT(count, 10u) << wrapper;
}

// Large glue and the loop nests are compiled to two objects, which one bundle carries
// through a cache; a damaged bundle is an error that names the module.
TEST(HostGlue, GlueAndLoopNestsLinkFromOneBundle) {
  // A wrapper large enough to be compiled apart (about 5 LLVM instructions per tensor parameter
  // once T.check_args does the checks).
  constexpr int kParams = 2000;
  OrcEngine engine;
  HostImage image = compile_host(engine, lower(many_params(kParams)));
  ASSERT_EQ(image.object.substr(0, 7), std::string("\x7fPJOBJS")) << "not compiled apart";
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

// A module with vectorizable math keeps its helpers on llvm.compiler.used until the vectorizer
// has run; the list goes with the loop nests, and large glue is still compiled apart (by the
// fast code generator). Small glue is compiled apart on a second thread where the host has
// one (below).
void check_vector_math_module(int params) {
  const std::string last = "A" + std::to_string(params - 1) + "[i]";
  std::string text = many_params(params);
  const size_t at = text.find(last + " + T.float32(1)");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, last.size() + 15, "T.log(" + last + ")");  // libmvec (exp is inline)
  IRModule lowered = lower(text);
  if (to_llvm_text(codegen_llvm(passes::lower_for_host(lowered))).find("llvm.compiler.used") ==
      std::string::npos) {
    GTEST_SKIP() << "no vector math library on this host";
  }
  OrcEngine engine;
  HostImage image = compile_host(engine, lowered);
  ASSERT_EQ(image.object.substr(0, 7) == std::string("\x7fPJOBJS"),
            params > 1000 || std::thread::hardware_concurrency() > 1);
  engine.register_runtime_once(register_host_runtime);
  OrcEngine::ModuleKey key = engine.add_object(image.object, "vector math bundle");
  auto* fn = reinterpret_cast<PJPackedFunc>(engine.lookup("f" + image.suffix));
  std::vector<std::unique_ptr<Vector>> vectors;
  std::vector<PJValue> args;
  for (int k = 0; k < params; ++k) {
    vectors.push_back(std::make_unique<Vector>(64));
    args.push_back(vectors.back()->arg());
  }
  for (int i = 0; i < 64; ++i) vectors.back()->data[static_cast<size_t>(i)] = 0.125f * i + 0.5f;
  call_packed(HostEntry{fn, nullptr}, args.data(), params);
  for (int i = 0; i < 64; ++i) {
    const float x = 0.125f * i + 0.5f;
    EXPECT_NEAR(vectors[0]->data[static_cast<size_t>(i)], std::log(x), 4e-7f) << i;
  }
  engine.remove(key);
}

TEST(HostGlue, VectorMathBesideSmallGlue) { check_vector_math_module(4); }

TEST(HostGlue, GlueIsCompiledApartFromLoopNestsWithVectorMath) { check_vector_math_module(2000); }

constexpr const char* kChecked = R"(
@T.prim_func
def g(a: T.handle, b: T.handle, c: T.handle, n: T.int32, x: T.float32):
    T.func_attr({"target": T.target("llvm")})
    k = T.int32()
    A = T.match_buffer(a, (k, 4), "float32")
    B = T.match_buffer(b, (k,), "float32")
    C = T.match_buffer(c, (n,), "float32")
    for i in range(k):
        B[i] = A[i, 0] + x
)";

// The table's checks (T.check_args, one runtime call) report what the generated asserts they
// replace did, word for word, and in their order: every early check (type, null, ndim, dtype,
// shape array, range) of every argument before any late one (matches, strides, offset,
// device, data); the check against a scalar parameter stays generated code.
TEST(HostGlue, TableChecksGiveTheMessagesOfTheGeneratedChecks) {
  OrcEngine engine;
  HostProgram program(engine, lower(kChecked));
  HostEntry g = program.function("g");
  const std::string sig =
      "`g(A: Tensor([k, 4], float32), B: Tensor([k], float32), C: Tensor([n], float32), n: "
      "int32, x: float32)`";
  auto on = [&](const std::string& what, int i, const std::string& expected) {
    return what + " on argument #" + std::to_string(i) + " when calling:\n  " + sig +
           ",\n  expected " + expected;
  };
  Tensor a({3, 4}), b({3}), c({5});
  PJValue n{}, x{};
  n.type_index = kPJInt;
  n.v_int64 = 5;
  x.type_index = kPJFloat;
  x.v_float64 = 1.5;
  auto call = [&](int num_args = 5) {
    std::vector<PJValue> args = {a.arg(), b.arg(), c.arg(), n, x};
    return test::error_of([&] { call_packed(g, args.data(), num_args); });
  };
  EXPECT_EQ(call(), "");
  EXPECT_EQ(b.data[2], 1.5f);
  EXPECT_EQ(call(4), "Expected 5 arguments when calling:\n  " + sig + ", got 4");
  EXPECT_EQ(test::error_of([&] { call_packed(g, nullptr, 5); }),
            "args pointer is NULL when calling:\n  " + sig);
  x = a.arg();
  EXPECT_EQ(call(), on("Mismatched type", 4, "float, got Tensor"));
  x.type_index = kPJInt;
  x.v_int64 = 2;
  EXPECT_EQ(call(), "");  // an int passes as a float
  a.dl.ndim = 1;
  EXPECT_EQ(call(), on("Mismatched A.ndim", 0, "2, got 1"));
  a.dl.ndim = 2;
  b.dl.dtype = {kDLInt, 32, 1};
  EXPECT_EQ(call(), on("Mismatched B.dtype", 1, "float32, got int32"));
  b.dl.dtype = {kDLFloat, 32, 1};
  a.dl.shape = nullptr;
  EXPECT_EQ(call(), on("Mismatched A.shape", 0, "a shape array, got NULL"));
  a.dl.shape = a.shape.data();
  a.shape[0] = int64_t{1} << 31;
  EXPECT_EQ(call(), on("Invalid A.shape[0]", 0,
                       "at most 2147483647 (k is int32; declare it int64 for larger dimensions), "
                       "got 2147483648"));
  a.shape = {3, 5};
  a.dl.shape = a.shape.data();
  EXPECT_EQ(call(), on("Invalid A.shape[1]", 0, "4, got 5"));
  a.shape[1] = 4;
  b.shape[0] = 2;
  EXPECT_EQ(call(), on("Mismatched B.shape[0]", 1, "to match A.shape[0], got 2"));
  b.shape[0] = 3;
  c.shape[0] = 6;
  EXPECT_EQ(call(), on("Mismatched C.shape[0]", 2, "to match n, got 6"));
  c.shape[0] = 5;
  int64_t strides[] = {8, 1};
  a.dl.strides = strides;
  EXPECT_EQ(call(), on("Mismatched A.strides", 0, "to be compact array"));
  strides[0] = 4;
  EXPECT_EQ(call(), "");  // compact strides pass
  b.dl.byte_offset = 4;
  EXPECT_EQ(call(), on("Mismatched B.byte_offset", 1, "0, got 4"));
  b.dl.byte_offset = 0;
  c.dl.device = {kDLCUDA, 0};
  EXPECT_EQ(call(), on("Mismatched C.device_type", 2, "cpu, got cuda"));
  // Early checks of a later argument come before the late checks of an earlier one.
  b.dl.ndim = 0;
  EXPECT_EQ(call(), on("Mismatched B.ndim", 1, "1, got 0"));
  b.dl.ndim = 1;
  c.dl.device = {kDLCPU, 0};
  b.dl.data = nullptr;
  EXPECT_EQ(call(), "B data pointer is NULL on argument #1 when calling:\n  " + sig +
                        ",\n  expected non-NULL data pointer");
  a.shape[0] = b.shape[0] = 0;  // an empty tensor may have a null data pointer
  EXPECT_EQ(call(), "");
  b.dl.data = b.data.data();
  PJValue none{};
  std::vector<PJValue> args = {none, b.arg(), c.arg(), n, x};
  EXPECT_EQ(test::error_of([&] { call_packed(g, args.data(), 5); }),
            on("Mismatched type", 0, "Tensor, got None"));
}

// The table's checks of a boolean parameter (a bool or an int passes; a float does not) and
// of the device ids of a cuda function's tensors (all on the first one's device), which the
// runtime's own checks otherwise catch first.
TEST(HostGlue, TableChecksBooleansAndDeviceIds) {
  OrcEngine engine;
  HostProgram flags(engine, lower(R"(
@T.prim_func
def flag(a: T.handle, on: T.bool):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, (4,), "float32")
    if on:
        A[0] = T.float32(1)
)"));
  HostEntry flag = flags.function("flag");
  Tensor a({4});
  PJValue on{};
  auto call_flag = [&] {
    std::vector<PJValue> args = {a.arg(), on};
    return test::error_of([&] { call_packed(flag, args.data(), 2); });
  };
  on.type_index = kPJBool;
  on.v_int64 = 1;
  EXPECT_EQ(call_flag(), "");
  EXPECT_EQ(a.data[0], 1.0f);
  a.data[0] = 0;
  on.type_index = kPJInt;  // an int passes as a bool
  EXPECT_EQ(call_flag(), "");
  EXPECT_EQ(a.data[0], 1.0f);
  on.type_index = kPJFloat;
  on.v_float64 = 1.0;
  EXPECT_EQ(call_flag(),
            "Mismatched type on argument #1 when calling:\n  `flag(A: Tensor([4], float32), on: "
            "bool)`,\n  expected boolean, got float");

  HostProgram copies(engine, lower(R"(
@T.prim_func
def copy(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    A = T.match_buffer(a, (4,), "float32")
    B = T.match_buffer(b, (4,), "float32")
    tx = T.launch_thread("threadIdx.x", 4)
    B[tx] = A[tx]
)"));
  HostEntry copy = copies.function("copy");
  Tensor x({4}), y({4});
  x.dl.device = {kDLCUDA, 0};
  y.dl.device = {kDLCUDA, 1};
  std::vector<PJValue> args = {x.arg(), y.arg()};
  EXPECT_EQ(test::error_of([&] { call_packed(copy, args.data(), 2); }),
            "Mismatched B.device_id on argument #1 when calling:\n  `copy(A: Tensor([4], "
            "float32), B: Tensor([4], float32))`,\n  expected to match A.device_id, got 1");
  x.dl.device = {kDLCUDA, 1};  // one device: the checks pass (what fails then is the launch)
  EXPECT_EQ(test::error_of([&] { call_packed(copy, args.data(), 2); }).find("device_id"),
            std::string::npos);
}

// Up to 64 parameters the table's checks are inline compares (the runtime's check is called
// only to say why a call is refused); beyond, the wrapper calls the runtime's check alone.
TEST(HostGlue, SmallWrappersCheckInline) {
  auto inline_checks = [](const std::string& text) {
    return to_llvm_text(codegen_llvm(passes::lower_for_host(lower(text)))).find("args_ok") !=
           std::string::npos;
  };
  EXPECT_TRUE(inline_checks(kVectorAdd));
  EXPECT_TRUE(inline_checks(many_params(64)));
  EXPECT_FALSE(inline_checks(many_params(65)));
}

// A hand-written T.check_args whose table would make the runtime's check read out of bounds is
// refused when the host code is generated, with what is wrong.
TEST(HostGlue, AMalformedArgumentTableIsRefused) {
  auto module_with = [](const std::string& table) {
    return parse(R"tir(
@T.prim_func
def f(self_handle: T.handle, args: T.handle, num_args: T.int32, result: T.handle) -> T.int32:
    T.func_attr({"calling_conv": 1, "global_symbol": "f", "target": T.target("llvm")})
    T.check_args(args, num_args, "f(A: Tensor([4], float32))", "Afloat32", )tir" +
                 table + R"tir()
    return 0
)tir");
  };
  // One tensor parameter of ndim 1 whose dimension must be 4: well formed.
  const std::string good = "1, 1, 0, 1, 1, 7, 1, 2, 32, 1, 3, 1, -1, 0, 0, 2, 4, 0, 0, 0";
  EXPECT_FALSE(to_llvm_text(codegen_llvm(module_with(good))).empty());
  EXPECT_ERROR_CONTAINS(codegen_llvm(module_with("2, 1, 0, 1, 1, 7, 1, 2, 32, 1, 3, 1, -1, 0, 0")),
                        "the table is malformed (tensor parameter 0 has a bad ndim or too few "
                        "dimensions)");
  EXPECT_ERROR_CONTAINS(
      codegen_llvm(module_with("1, 1, 0, 1, 1, 7, 1, 2, 32, 1, 3, 1, -1, 0, 0, 3, 5, 0, 0, 0")),
      "matches no dimension of a tensor parameter");
  EXPECT_ERROR_CONTAINS(
      codegen_llvm(module_with("1, 1, 0, 99, 1, 7, 1, 2, 32, 1, 3, 1, -1, 0, 0, 2, 4, 0, 0, 0")),
      "a text of tensor parameter 0 is out of range");
  // Code 258, bits 0 would pack (compiled code compares code | bits << 8 | lanes << 16) as
  // code 2, bits 1.
  EXPECT_ERROR_CONTAINS(
      codegen_llvm(module_with("1, 1, 0, 1, 1, 7, 1, 258, 0, 1, 3, 1, -1, 0, 0, 2, 4, 0, 0, 0")),
      "tensor parameter 0 has a dtype or device out of range");
}

// A kernel compiles the functions its entry reaches, found by name: another function whose
// global_symbol equals a callee's name does not stand in for the callee.
TEST(HostGlue, ModuleCallsReachTheirCalleeByName) {
  const IRModule module = parse(R"(
@I.ir_module
class Module:
    @T.prim_func
    def a(x: T.int32) -> T.int32:
        T.func_attr({"global_symbol": "b", "target": T.target("llvm")})
        return x + 100

    @T.prim_func(private=True)
    def b(x: T.int32) -> T.int32:
        T.func_attr({"target": T.target("llvm")})
        return x * 2

    @T.prim_func
    def main(A: T.Buffer((4,), "int32")):
        T.func_attr({"target": T.target("llvm")})
        for i in range(4):
            A[i] = Module.b(i)
)");
  primjit::Jit jit;
  primjit::Kernel k = jit.kernel(module, "main");
  primjit::Tensor a = primjit::Tensor::zeros({4}, DataType::Int(32));
  k(a);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(a.data<int32_t>()[i], 2 * i) << i;
}

// Unusual tensors against the argument table, called through the packed entry itself (the
// Kernel API refuses these shapes before): a null data pointer whose extents' product wraps to
// 0 is no empty tensor; buffers of more than 64 dimensions compile.
TEST(HostGlue, ArgumentTableEdgeCases) {
  OrcEngine engine;
  HostProgram program(engine, lower(R"(
@T.prim_func
def z(a: T.handle, x: T.int64):
    T.func_attr({"target": T.target("llvm")})
    m = T.int64()
    k = T.int64()
    A = T.match_buffer(a, (m, k), "float32")
    if x > T.int64(0):
        A[0, 0] = T.float32(1)
)"));
  Tensor a({int64_t{1} << 32, int64_t{1} << 32});
  a.dl.data = nullptr;
  PJValue x{};
  x.type_index = kPJInt;
  x.v_int64 = 1;
  std::vector<PJValue> args = {a.arg(), x};
  EXPECT_NE(test::error_of([&] {
              call_packed(program.function("z"), args.data(), 2);
            }).find("A data pointer is NULL"),
            std::string::npos);
  a.shape = {0, int64_t{1} << 32};  // empty: a null data pointer is fine
  a.dl.shape = a.shape.data();
  x.v_int64 = 0;
  args = {a.arg(), x};
  EXPECT_EQ(test::error_of([&] { call_packed(program.function("z"), args.data(), 2); }), "");

  std::string dims, zeros;
  for (int d = 0; d < 65; ++d) {
    dims += std::string(d ? ", " : "") + "1";
    zeros += std::string(d ? ", " : "") + "0";
  }
  primjit::Jit jit;
  primjit::Kernel h = jit.kernel(
      parse("@T.prim_func\ndef h(A: T.Buffer((" + dims +
            "), \"float32\")):\n    T.func_attr({\"target\": T.target(\"llvm\")})\n    A[" + zeros +
            "] = T.float32(3)\n"),
      "h");
  primjit::Tensor t = primjit::Tensor::zeros(std::vector<int64_t>(65, 1), DataType::Float(32));
  h(t);
  EXPECT_EQ(t.data<float>()[0], 3.0f);
}

}  // namespace
}  // namespace primjit::jit
