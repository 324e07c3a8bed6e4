// CUDA C code generation: lowered kernels -> source text, compiled by NVRTC to an sm_90 CUBIN
// (no GPU needed). The CodegenCudaGpu tests at the end also run kernels; they skip where there
// is no driver or device.
#include "jit/cuda/codegen_cuda.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/cuda/source_printer.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"
#include "primjit/passes.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string builder_example(const std::string& name) {
  return read_file(std::string(PRIMJIT_TEST_IR_DIR) + "/builder/" + name + ".tir");
}

IRModule lower(const std::string& text) {
  return passes::run_passes(parse(text), passes::default_pipeline(), {.verify_each = true});
}

CudaModuleSource generate(const std::string& text, const CudaCodegenOptions& options = {}) {
  return codegen_cuda(lower(text), options);
}

DeviceImage compile(const CudaModuleSource& source) {
  return nvrtc_compile({"codegen_cuda_test.cu", source.code}, NvrtcOptions{.arch = 90});
}

bool is_elf(const std::string& data) {
  return data.size() > 4 && data.compare(0, 4,
                                         "\x7f"
                                         "ELF") == 0;
}

::testing::AssertionResult has(const std::string& code, const std::string& needle) {
  if (code.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' not in:\n" << code;
}
::testing::AssertionResult lacks(const std::string& code, const std::string& needle) {
  if (code.find(needle) == std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << needle << "' unexpectedly in:\n" << code;
}
::testing::AssertionResult matches(const std::string& code, const std::string& pattern) {
  if (std::regex_search(code, std::regex(pattern))) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "no match for /" << pattern << "/ in:\n" << code;
}

// The source of one function: from its signature to the closing brace at column 0.
std::string function_text(const std::string& code, const std::string& name) {
  size_t start = code.find(" " + name + "(");
  if (start == std::string::npos) return "";
  start = code.rfind('\n', start) + 1;
  size_t end = code.find("\n}\n", start);
  return code.substr(start, end == std::string::npos ? std::string::npos : end + 3 - start);
}

// The seed's two sibling launches, each merging two shared.dyn buffers (in the first, A and B
// are live together, so B sits 512 bytes after A; in the second, D reuses C's bytes).
constexpr const char* kTwoLaunches = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        with T.launch_thread("threadIdx.x", 128) as tx0:
            A = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A[tx0] = X[tx0]
            B[tx0] = A[tx0]
            X[tx0] = B[tx0]
        with T.launch_thread("threadIdx.x", 128) as tx1:
            C = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            D = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            C[tx1] = Y[tx1]
            Y[tx1] = C[tx1]
            D[tx1] = Y[tx1]
            Y[tx1] = D[tx1]
)";

// A kernel written directly in lowered form (no pipeline): `attrs` go into its func_attr.
std::string kernel_module(const std::string& params, const std::string& attrs,
                          const std::string& body) {
  return "# from tvm.script import ir as I\n# from tvm.script import tir as T\n"
         "@I.ir_module\nclass Module:\n    @T.prim_func\n    def k(" +
         params +
         "):\n        T.func_attr({\"calling_conv\": 2, \"global_symbol\": \"k\", \"target\": "
         "T.target(\"cuda\", arch=\"sm_90\")" +
         attrs + "})\n" + body;
}

// --- every builder example compiles -----------------------------------------------------------

class CodegenCudaBuilderExample : public ::testing::TestWithParam<const char*> {};

TEST_P(CodegenCudaBuilderExample, CompilesToAnSm90Cubin) {
  CudaModuleSource source = generate(builder_example(GetParam()));
  ASSERT_FALSE(source.kernels.empty());
  EXPECT_EQ(source.arch, "sm_90");
  for (const CudaKernelInfo& kernel : source.kernels) {
    EXPECT_TRUE(has(source.code,
                    "extern \"C\" __global__ void __launch_bounds__(256) " + kernel.name + "("));
    EXPECT_EQ(kernel.static_threads, 256);
  }
  DeviceImage image = compile(source);
  EXPECT_EQ(image.kind, DeviceImage::Kind::kCubin);
  EXPECT_TRUE(is_elf(image.data));
}

INSTANTIATE_TEST_SUITE_P(CodegenCuda, CodegenCudaBuilderExample,
                         ::testing::Values("vector_add_cuda", "row_softmax", "matmul_relu"));

// --- the shape of the source ------------------------------------------------------------------

TEST(CodegenCuda, VectorAddSignatureFollowsTheParameterAbi) {
  CudaModuleSource source = generate(builder_example("vector_add_cuda"));
  ASSERT_EQ(source.kernels.size(), 1u);
  const CudaKernelInfo& k = source.kernels[0];
  EXPECT_EQ(k.name, "vector_add_cuda_kernel");
  EXPECT_EQ(k.param_types, (std::vector<DataType>{DataType::Handle(), DataType::Handle(),
                                                  DataType::Handle(), DataType::Int(32)}));
  EXPECT_EQ(k.launch_params, (std::vector<std::string>{"blockIdx.x", "threadIdx.x"}));
  EXPECT_EQ(k.dyn_shared_align, 0);
  // The grid is symbolic ((n + 255) // 256) but the block is not: the bound is printed.
  EXPECT_TRUE(has(source.code,
                  "extern \"C\" __global__ void __launch_bounds__(256) vector_add_cuda_kernel("
                  "float* __restrict__ A, float* __restrict__ B, float* __restrict__ C, int n) {"));
  EXPECT_TRUE(has(source.code, "int blockIdx_x = (int)blockIdx.x;"));
  EXPECT_TRUE(has(source.code, "int threadIdx_x = (int)threadIdx.x;"));
  EXPECT_TRUE(has(source.code, "C[i] = A[i] + B[i];"));
}

TEST(CodegenCuda, MatmulReluDeclaresTheMergedDynamicSharedBufferWithTypedViews) {
  CudaModuleSource source = generate(builder_example("matmul_relu"));
  ASSERT_EQ(source.kernels.size(), 2u);
  for (const CudaKernelInfo& k : source.kernels) {
    EXPECT_EQ(k.launch_params,
              (std::vector<std::string>{"blockIdx.x", "threadIdx.x", attr::kUseDynSharedMemory}));
    EXPECT_EQ(k.dyn_shared_align, 64);
    EXPECT_EQ(k.static_threads, 256);
  }
  std::string first = function_text(source.code, "matmul_relu_kernel");
  EXPECT_TRUE(has(first, "extern __shared__ __align__(64) uint8_t buf_dyn_shmem[];"));
  EXPECT_TRUE(has(first, "float* A_tile = (float*)buf_dyn_shmem;"));
  // B_tile lives 1024 bytes (256 floats) into the merged buffer, A_tile at byte 0: B_tile's
  // pointer starts there, so its indices carry no offset.
  EXPECT_TRUE(has(first, "float* B_tile = (float*)(buf_dyn_shmem + 1024);"));
  EXPECT_TRUE(matches(first, R"(B_tile\[[^\]+]*\] = B\[)"));
  EXPECT_TRUE(matches(first, R"(A_tile\[[^\]+]*\] = A\[)"));
  EXPECT_TRUE(lacks(first, "+ 256]"));
  EXPECT_TRUE(has(first, "__syncthreads();"));
  EXPECT_TRUE(has(first, "float acc[1];"));
  EXPECT_TRUE(has(first, "float* __restrict__ A, float* __restrict__ B"));
  // A single shared.dyn buffer is not merged: it is the extern array itself.
  std::string second = function_text(source.code, "matmul_relu_kernel_1");
  EXPECT_TRUE(has(second, "extern __shared__ __align__(64) float staged[];"));
  EXPECT_TRUE(has(second, "max(staged[threadIdx_x_1], 0.0f)"));
}

TEST(CodegenCuda, SeedTwoLaunchesGetOneMergedBufferEach) {
  CudaModuleSource source = generate(kTwoLaunches);
  ASSERT_EQ(source.kernels.size(), 2u);
  EXPECT_EQ(source.kernels[0].name, "main_kernel");
  EXPECT_EQ(source.kernels[1].name, "main_kernel_1");
  std::string first = function_text(source.code, "main_kernel");
  std::string second = function_text(source.code, "main_kernel_1");
  EXPECT_TRUE(has(first,
                  "extern \"C\" __global__ void __launch_bounds__(128) main_kernel("
                  "float* __restrict__ X) {"));
  EXPECT_TRUE(has(first, "extern __shared__ __align__(64) uint8_t buf_dyn_shmem[];"));
  EXPECT_TRUE(has(first, "float* A = (float*)buf_dyn_shmem;"));
  // Live together: B is 128 floats (512 bytes) after A; B's pointer starts there.
  EXPECT_TRUE(has(first, "float* B = (float*)(buf_dyn_shmem + 512);"));
  EXPECT_TRUE(has(first, "A[tx0] = X[tx0];"));
  EXPECT_TRUE(has(first, "B[tx0] = A[tx0];"));
  EXPECT_TRUE(has(first, "X[tx0] = B[tx0];"));
  // Without the base pointers every index carries the merged offset.
  std::string unfolded =
      function_text(generate(kTwoLaunches, {.fold_view_offsets = false}).code, "main_kernel");
  EXPECT_TRUE(has(unfolded, "float* B = (float*)buf_dyn_shmem;"));
  EXPECT_TRUE(has(unfolded, "B[tx0 + 128] = A[tx0];"));
  // Not live together: D reuses C's bytes. Extern array names are unique in the source.
  EXPECT_TRUE(has(second, "extern __shared__ __align__(64) uint8_t buf_dyn_shmem_1[];"));
  EXPECT_TRUE(has(second, "float* D = (float*)buf_dyn_shmem_1;"));
  EXPECT_TRUE(has(second, "D[tx1] = Y[tx1];"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, RowSoftmaxUsesStaticSharedMemoryAndMath) {
  CudaModuleSource source = generate(builder_example("row_softmax"));
  EXPECT_TRUE(has(source.code, "__shared__ __align__(64) float red[256];"));
  EXPECT_TRUE(lacks(source.code, "extern __shared__"));
  EXPECT_TRUE(has(source.code, "expf("));
  EXPECT_TRUE(lacks(source.code, "__expf("));
  EXPECT_EQ(source.kernels[0].dyn_shared_align, 0);
  // Fast math switches to the intrinsic.
  CudaModuleSource fast = generate(builder_example("row_softmax"), {.fast_math = true});
  EXPECT_TRUE(has(fast.code, "__expf("));
  EXPECT_TRUE(is_elf(compile(fast).data));
}

TEST(CodegenCuda, SymbolicBlockSizeHasNoLaunchBounds) {
  CudaModuleSource source =
      codegen_cuda(parse(kernel_module("A: T.handle(\"float32\", \"global\"), n: T.int32",
                                       ", \"tirx.kernel_launch_params\": [\"threadIdx.x\"]",
                                       "        A_1 = T.decl_buffer((n,), \"float32\", data=A)\n"
                                       "        tx = T.launch_thread(\"threadIdx.x\", n)\n"
                                       "        A_1[tx] = T.float32(1)\n")));
  ASSERT_EQ(source.kernels.size(), 1u);
  EXPECT_EQ(source.kernels[0].static_threads, 0);
  EXPECT_TRUE(has(source.code, "extern \"C\" __global__ void k(float* A, int n) {"));
  EXPECT_TRUE(lacks(source.code, "__launch_bounds__"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, ScalarParametersAndNoaliasFollowTheAbi) {
  const std::string params =
      "A: T.handle(\"float32\", \"global\"), a: T.int8, b: T.int16, c: T.int32, d: T.int64, "
      "e: T.uint8, f: T.uint16, g: T.uint32, h: T.uint64, p: T.float16, q: T.float32, "
      "r: T.float64, s: T.bool, t: T.bfloat16";
  const std::string body =
      "        A_1 = T.decl_buffer((4,), \"float32\", data=A)\n"
      "        A_1[0] = T.Cast(\"float32\", p) + q + T.Cast(\"float32\", r) + T.Cast(\"float32\", "
      "a) + T.Cast(\"float32\", b + T.int16(1)) + T.Cast(\"float32\", c * 2) + T.Cast(\"float32\", "
      "d) + T.Cast(\"float32\", e) + T.Cast(\"float32\", f) + T.Cast(\"float32\", g) + "
      "T.Cast(\"float32\", h) + T.Cast(\"float32\", s) + T.Cast(\"float32\", t)\n";
  CudaModuleSource plain = codegen_cuda(parse(kernel_module(params, "", body)));
  EXPECT_TRUE(has(plain.code,
                  "extern \"C\" __global__ void __launch_bounds__(1) k(float* A, int8_t a, "
                  "int16_t b, int c, long long d, uint8_t e, uint16_t f, unsigned int g, "
                  "uint64_t h, half p, float q, double r, bool s, __nv_bfloat16 t) {"));
  EXPECT_EQ(plain.kernels[0].param_types,
            (std::vector<DataType>{DataType::Handle(), DataType::Int(8), DataType::Int(16),
                                   DataType::Int(32), DataType::Int(64), DataType::UInt(8),
                                   DataType::UInt(16), DataType::UInt(32), DataType::UInt(64),
                                   DataType::Float(16), DataType::Float(32), DataType::Float(64),
                                   DataType::Bool(), DataType::BFloat16()}));
  // int16 arithmetic wraps in its own type, as in the IR.
  EXPECT_TRUE(has(plain.code, "(int16_t)(b + 1)"));
  EXPECT_TRUE(is_elf(compile(plain).data));
  CudaModuleSource noalias =
      codegen_cuda(parse(kernel_module(params, ", \"tirx.noalias\": True", body)));
  EXPECT_TRUE(has(noalias.code, "k(float* __restrict__ A, int8_t a,"));
}

// --- low-precision floating point -------------------------------------------------------------

constexpr const char* kLowPrecision = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def lowp(H: T.Buffer((256,), "float16"), B: T.Buffer((256,), "bfloat16"), E4: T.Buffer((256,), "float8_e4m3fn"), E5: T.Buffer((256,), "float8_e5m2"), F: T.Buffer((256,), "float32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        tx = T.launch_thread("threadIdx.x", 256)
        H[tx] = H[tx] * H[tx] + T.float16(1.5)
        H[tx] = T.exp(H[tx])
        B[tx] = T.max(B[tx], T.Cast("bfloat16", F[tx])) / B[tx]
        E4[tx] = E4[tx] * E4[tx] + T.float8_e4m3fn(0.5)
        E5[tx] = T.Cast("float8_e5m2", T.Cast("float32", E5[tx]) + F[tx])
        F[tx] = T.Cast("float32", H[tx]) + T.Cast("float32", B[tx]) + T.Cast("float32", E4[tx]) + T.Cast("float32", E5[tx])
)";

TEST(CodegenCuda, Fp16Bf16AndFp8KernelsCompile) {
  CudaModuleSource source = generate(kLowPrecision);
  EXPECT_TRUE(has(source.code, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(has(source.code, "#include <cuda_bf16.h>"));
  EXPECT_TRUE(has(source.code, "#include <cuda_fp8.h>"));
  for (const char* param : {"half* __restrict__ H", "__nv_bfloat16* __restrict__ B",
                            "__nv_fp8_e4m3* __restrict__ E4", "__nv_fp8_e5m2* __restrict__ E5"}) {
    EXPECT_TRUE(has(source.code, param));
  }
  // half computes natively; its math and all float8 arithmetic go through float.
  EXPECT_TRUE(has(source.code, "__float2half_rn(1.5f)"));
  EXPECT_TRUE(has(source.code, "__float2half_rn(expf(__half2float("));
  EXPECT_TRUE(has(source.code, "__hmax("));
  EXPECT_TRUE(matches(source.code, R"(__nv_fp8_e4m3\(\(float\)\w+ \* \(float\)\w+\))"));
  EXPECT_TRUE(has(source.code, "__nv_fp8_e5m2("));
  DeviceImage image = compile(source);
  EXPECT_TRUE(is_elf(image.data));
}

TEST(CodegenCuda, StorageLegalizedTypesCompileForSm75) {
  // Before sm_80 the pipeline stores bfloat16 as uint16 and float8 as uint8 and computes in
  // float32 (bit manipulation, Lets): the generator needs none of the toolkit's bf16/fp8 types.
  std::string text = kLowPrecision;
  text.replace(text.find("sm_90"), 5, "sm_75");
  CudaModuleSource source = generate(text);
  EXPECT_EQ(source.arch, "sm_75");
  EXPECT_TRUE(lacks(source.code, "__nv_bfloat16"));
  EXPECT_TRUE(lacks(source.code, "__nv_fp8"));
  EXPECT_TRUE(has(source.code, "uint16_t* __restrict__ B"));
  EXPECT_TRUE(has(source.code, "primjit_reinterpret<float, unsigned int>("));
  DeviceImage image = nvrtc_compile({"legalized.cu", source.code}, NvrtcOptions{.arch = 75});
  EXPECT_EQ(image.kind, DeviceImage::Kind::kCubin);
  EXPECT_TRUE(is_elf(image.data));
}

TEST(CodegenCuda, FloatOnlyKernelsIncludeNoFloatHeaders) {
  CudaModuleSource source = generate(builder_example("vector_add_cuda"));
  EXPECT_TRUE(lacks(source.code, "#include <cuda_fp16.h>"));
  EXPECT_TRUE(lacks(source.code, "#include <cuda_fp8.h>"));
}

// Every scalar dtype cast to every other and every math builtin on every floating dtype: the
// conversions and functions the generator picks must exist in the toolkit headers.
TEST(CodegenCuda, EveryCastAndMathFunctionCompiles) {
  const std::vector<std::string> types = {"bool",     "int8",          "int16",      "int32",
                                          "int64",    "uint8",         "uint16",     "uint32",
                                          "uint64",   "float16",       "float32",    "float64",
                                          "bfloat16", "float8_e4m3fn", "float8_e5m2"};
  const std::vector<std::string> floats = {"float16",  "float32",       "float64",
                                           "bfloat16", "float8_e4m3fn", "float8_e5m2"};
  std::string params = "O: T.handle(\"float64\", \"global\")";
  for (const std::string& t : types) params += ", p_" + t + ": T." + t;
  std::string body = "        O_1 = T.decl_buffer((4096,), \"float64\", data=O)\n";
  int slot = 0;
  auto store = [&](const std::string& value) {
    body += "        O_1[" + std::to_string(slot++) + "] = T.Cast(\"float64\", " + value + ")\n";
  };
  for (const std::string& from : types) {
    for (const std::string& to : types) {
      if (from != to) store("T.Cast(\"" + to + "\", p_" + from + ")");
    }
  }
  for (const std::string& t : floats) {
    for (const char* fn :
         {"exp", "exp2", "exp10", "log", "log2", "log10", "log1p", "sqrt",  "rsqrt", "sin",
          "cos", "tan",  "tanh",  "erf", "fabs", "floor", "ceil",  "round", "trunc", "sigmoid"}) {
      store(std::string("T.") + fn + "(p_" + t + ")");
    }
    store("T.pow(p_" + t + ", p_" + t + ")");
    store("T.fmod(p_" + t + ", p_" + t + ")");
    store("p_" + t + " // p_" + t + " + p_" + t + " % p_" + t);
    store("T.min(p_" + t + ", p_" + t + ") - T.max(p_" + t + ", p_" + t + ")");
    store("T.Select(T.isnan(p_" + t + ") or T.isinf(p_" + t + ") or not T.isfinite(p_" + t +
          "), p_" + t + ", p_" + t + " / p_" + t + ")");
  }
  for (const auto& [a, b] :
       std::vector<std::pair<std::string, std::string>>{{"float32", "int32"},
                                                        {"uint32", "float32"},
                                                        {"float64", "int64"},
                                                        {"float16", "uint16"},
                                                        {"bfloat16", "int16"},
                                                        {"float8_e4m3fn", "uint8"},
                                                        {"float8_e5m2", "int8"}}) {
    store("T.reinterpret(\"" + a + "\", p_" + b + ")");
  }
  for (std::string t : {"int8", "int16", "int64", "uint8", "uint16", "uint64"}) {
    store("p_" + t + " * p_" + t + " - p_" + t + " // p_" + t + " + T.shift_left(p_" + t + ", p_" +
          t + ") + T.bitwise_not(p_" + t + ")");
  }
  for (bool fast : {false, true}) {
    CudaModuleSource source =
        codegen_cuda(parse(kernel_module(params, "", body)), {.fast_math = fast});
    EXPECT_TRUE(has(source.code, "__nv_fp8_e5m2("));
    EXPECT_TRUE(has(source.code, fast ? "__expf(" : "expf("));
    EXPECT_TRUE(is_elf(compile(source).data)) << (fast ? "fast math" : "precise math");
  }
}

// --- integer semantics ------------------------------------------------------------------------

constexpr const char* kFloorDivision = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def floors(X: T.Buffer((256,), "int32"), Y: T.Buffer((256,), "int32"), Q: T.Buffer((256,), "int32"), R: T.Buffer((256,), "int32"), W: T.Buffer((256,), "int64"), P: T.Buffer((256,), "int32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        tx = T.launch_thread("threadIdx.x", 256)
        Q[tx] = X[tx] // Y[tx]
        R[tx] = X[tx] % Y[tx]
        W[tx] = W[tx] // T.int64(7) + W[tx] % T.int64(7)
        P[tx] = (tx - 128) // 8 + tx // 8 + tx % 8
)";

TEST(CodegenCuda, FloorDivisionRoundsTowardNegativeInfinity) {
  CudaModuleSource source = generate(kFloorDivision);
  // Operands of unknown sign go through the helpers ...
  EXPECT_TRUE(matches(source.code, R"(Q\[tx\] = primjit_floordiv\(\w+, \w+\);)"));
  EXPECT_TRUE(matches(source.code, R"(R\[tx\] = primjit_floormod\(\w+, \w+\);)"));
  EXPECT_TRUE(has(source.code, "primjit_floordiv(tx - 128, 8)"));
  EXPECT_TRUE(matches(source.code, R"(primjit_floordiv\(\w+, 7LL\))"));
  // ... provably non-negative ones (a thread index and a constant) use C's operators.
  EXPECT_TRUE(has(source.code, "tx / 8"));
  EXPECT_TRUE(has(source.code, "tx % 8"));
  // The helpers: truncating division by a divisor that is never 0 or -1 where C's is undefined
  // (docs/semantics.md: x // 0 is -1, x % 0 is x, MIN // -1 is MIN), corrected when the
  // remainder and divisor differ in sign.
  EXPECT_TRUE(has(source.code,
                  "__device__ __forceinline__ int primjit_floordiv(int a, int b) {\n"
                  "  int d = (b == 0 || (a == (-2147483647 - 1) && b == -1)) ? 1 : b;\n"
                  "  int q = a / d;\n"
                  "  int r = a % d;\n"
                  "  return b == 0 ? -1 : (r != 0 && ((r < 0) != (d < 0))) ? q - 1 : q;\n}"));
  EXPECT_TRUE(has(source.code,
                  "__device__ __forceinline__ long long primjit_floormod(long long a, long long b) "
                  "{\n  long long d = (b == 0 || (a == (-9223372036854775807LL - 1LL) && b == -1)) "
                  "? 1 : b;\n  long long r = a % d;\n"
                  "  return b == 0 ? a : (r != 0 && ((r < 0) != (d < 0))) ? r + d : r;\n}"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, TruncatingDivisionIsCDivisionOnlyWhereItIsDefined) {
  CudaModuleSource source = codegen_cuda(
      parse(kernel_module("A: T.handle(\"int32\", \"global\"), n: T.int32", "",
                          "        A_1 = T.decl_buffer((4,), \"int32\", data=A)\n"
                          "        A_1[0] = T.truncdiv(A_1[1], n) + T.truncmod(A_1[2], n)\n"
                          "        A_1[3] = T.truncdiv(A_1[1], 3) + T.truncmod(A_1[2], -3)\n")));
  // n may be 0 or -1: the helpers give the table's results; a literal 3 or -3 cannot.
  EXPECT_TRUE(has(source.code, "A[0] = primjit_truncdiv(A[1], n) + primjit_truncmod(A[2], n);"));
  EXPECT_TRUE(has(source.code, "A[3] = A[1] / 3 + A[2] % -3;"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

// --- expressions and statements ---------------------------------------------------------------

constexpr const char* kConditionals = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def conds(A: T.Buffer((256,), "float32"), Idx: T.Buffer((256,), "int32")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        tx = T.launch_thread("threadIdx.x", 256)
        A[tx] = T.if_then_else(Idx[tx] >= 0, A[Idx[tx]], T.float32(0))
        A[tx] = T.Select(A[tx] > T.float32(1), A[tx], T.float32(1))
        A[tx] = T.Let(v * v, where={v: A[tx] + T.float32(1)})
        for k in T.unroll(4):
            A[tx] = A[tx] + T.Cast("float32", k)
        for j in range(3):
            A[tx] = A[tx] * T.float32(0.5)
        if tx < 64:
            A[tx] = T.float32(1)
        elif tx < 128:
            A[tx] = T.float32(2)
        else:
            A[tx] = T.float32(-2.5)
        while A[0] > T.float32(8):
            A[0] = A[0] * T.float32(0.5)
)";

TEST(CodegenCuda, ConditionalsLetsAndLoops) {
  CudaModuleSource source = generate(kConditionals);
  // if_then_else evaluates only the chosen branch: the load A[I[tx]] is guarded.
  EXPECT_TRUE(matches(source.code, R"(A\[tx\] = \w+ >= 0 \? A\[\w+\] : 0.0f;)"));
  EXPECT_TRUE(matches(source.code, R"(A\[tx\] = \w+ > 1.0f \? \w+ : 1.0f;)"));
  // Let: a scoped temporary in an immediately invoked lambda.
  EXPECT_TRUE(
      matches(source.code, R"(\[&\]\(\) -> float \{ float v = .* \+ 1.0f; return v \* v; \}\(\))"));
  EXPECT_TRUE(has(source.code, "#pragma unroll\n  for (int k = 0; k < 4; ++k) {"));
  EXPECT_TRUE(has(source.code, "\n  for (int j = 0; j < 3; ++j) {"));
  EXPECT_TRUE(lacks(source.code, "#pragma unroll\n  for (int j"));
  EXPECT_TRUE(has(source.code, "} else if (tx < 128) {"));
  EXPECT_TRUE(has(source.code, "A[tx] = -2.5f;"));
  EXPECT_TRUE(has(source.code, "while (A[0] > 8.0f) {"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, SelectWithSideEffectsEvaluatesEveryOperand) {
  CudaModuleSource source = codegen_cuda(parse(kernel_module(
      "A: T.handle(\"float32\", \"global\")", "",
      "        A_1 = T.decl_buffer((4,), \"float32\", data=A)\n"
      "        A_1[0] = T.Select(A_1[1] > T.float32(0), T.call_extern(\"float32\", \"sinf\", "
      "A_1[2]), T.call_extern(\"float32\", \"cosf\", A_1[3]))\n")));
  EXPECT_TRUE(has(source.code,
                  "A[0] = [&]() -> float { bool cond = A[1] > 0.0f; float true_value = "
                  "sinf(A[2]); float false_value = cosf(A[3]); return cond ? true_value : "
                  "false_value; }();"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

constexpr const char* kVectors = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
    @T.prim_func
    def vec(A: T.Buffer((1024,), "float32"), B: T.Buffer((1024,), "float32"), H: T.Buffer((1024,), "float16")):
        T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
        tx = T.launch_thread("threadIdx.x", 128)
        B[T.Ramp(tx * 4, 1, 4)] = A[T.Ramp(tx * 4, 1, 4)] * T.Broadcast(T.float32(2), 4)
        B[T.Ramp(tx * 4 + 513, 1, 4)] = A[T.Ramp(tx * 4 + 514, 1, 4)]
        B[T.Ramp(tx, 128, 3)] = T.Broadcast(A[tx], 3)
        H[T.Ramp(tx * 2, 1, 2)] = H[T.Ramp(tx * 2, 1, 2)] + H[T.Ramp(tx * 2 + 256, 1, 2)]
)";

TEST(CodegenCuda, VectorsUseCudaVectorTypesWhenAlignedElseLanes) {
  CudaModuleSource source = generate(kVectors);
  // Aligned and contiguous: one float4 store of lane-wise values read through float4.
  EXPECT_TRUE(matches(
      source.code,
      R"(\*\(float4\*\)\(B \+ \w+\) = make_float4\(\(\(const float4\*\)\(A \+ \w+\)\)->x \* 2.0f,)"));
  // Misaligned (offset 513 floats): lane by lane, every lane computed before the stores.
  EXPECT_TRUE(matches(source.code, R"(float lanes\[4\] = \{A\[\w+ \+ 514\], A\[\w+ \+ 515\],)"));
  EXPECT_TRUE(matches(source.code, R"(B\[\w+ \+ 513\] = lanes\[0\];)"));
  // Strided, three lanes.
  EXPECT_TRUE(has(source.code, "B[tx + 256] = lanes_1[2];"));
  EXPECT_TRUE(has(source.code, "*(half2*)(H + "));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, AsyncCopiesAndPointerBuiltins) {
  CudaModuleSource source = codegen_cuda(parse(kernel_module(
      "A: T.handle(\"float32\", \"global\"), P: T.handle(\"float32\", \"global\")",
      ", \"tirx.noalias\": True",
      "        A_1 = T.decl_buffer((128,), \"float32\", data=A)\n"
      "        P_1 = T.decl_buffer((4,), \"float32\", data=P)\n"
      "        tx = T.launch_thread(\"threadIdx.x\", 32)\n"
      "        S = T.alloc_buffer((128,), \"float32\", scope=\"shared\")\n"
      "        T.ptx_cp_async(S.data, tx * 4, A, tx * 4, 16)\n"
      "        T.ptx_commit_group()\n"
      "        T.ptx_wait_group(0)\n"
      "        T.tvm_storage_sync(\"shared\")\n"
      "        q: T.handle(\"float32\", \"global\") = T.address_of(A_1[tx])\n"
      "        r: T.handle(\"float32\", \"shared\") = T.tvm_access_ptr(T.float32(0), S.data, 4, "
      "4, 3)\n"
      "        P_1[0] = T.Cast(\"float32\", T.Cast(\"uint64\", q) - T.Cast(\"uint64\", r))\n")));
  EXPECT_TRUE(has(source.code, "primjit_cp_async<16>(S + tx * 4, A + tx * 4);"));
  EXPECT_TRUE(has(source.code, "primjit_cp_async_commit();"));
  EXPECT_TRUE(has(source.code, "primjit_cp_async_wait<0>();"));
  EXPECT_TRUE(has(source.code, "float* q = (float*)&A[tx];"));
  EXPECT_TRUE(has(source.code, "float* r = (float*)(S + 4);"));
  DeviceImage ptx =
      nvrtc_compile({"async.cu", source.code}, NvrtcOptions{.arch = 90, .force_ptx = true});
  EXPECT_TRUE(has(ptx.data, "cp.async.ca.shared.global ["));
  EXPECT_TRUE(has(ptx.data, "cp.async.commit_group;"));
  EXPECT_TRUE(has(ptx.data, "cp.async.wait_group 0;"));
}

// --- errors -----------------------------------------------------------------------------------

TEST(CodegenCuda, NvrtcSyntaxErrorsAreReadableErrors) {
  CudaModuleSource source = codegen_cuda(parse(kernel_module(
      "A: T.handle(\"float32\", \"global\")", "",
      "        A_1 = T.decl_buffer((4,), \"float32\", data=A)\n"
      "        A_1[0] = T.call_extern(\"float32\", \"no_such_function\", A_1[1])\n")));
  EXPECT_TRUE(has(source.code, "A[0] = no_such_function(A[1]);"));
  std::string message = test::error_of([&] { compile(source); });
  EXPECT_TRUE(has(message, "NVRTC could not compile 'codegen_cuda_test.cu'"));
  EXPECT_TRUE(has(message, "identifier \"no_such_function\" is undefined"));
  EXPECT_TRUE(matches(message, R"(\n +\d+ \| +A\[0\] = no_such_function\(A\[1\]\);)"))
      << "the numbered source shows the failing line";
}

TEST(CodegenCuda, UnsupportedConstructsNameTheConstructAndTheKernel) {
  EXPECT_ERROR_CONTAINS(
      codegen_cuda(parse(kernel_module("A: T.handle(\"float32\", \"global\")", "",
                                       "        G = T.alloc_buffer((4,), \"float32\")\n"
                                       "        G[0] = T.float32(1)\n"))),
      "buffer 'G' in kernel 'k' is allocated in scope \"global\"");
  EXPECT_ERROR_CONTAINS(codegen_cuda(parse(kernel_module(
                            "n: T.int32", "",
                            "        L = T.alloc_buffer((n,), \"float32\", scope=\"local\")\n"
                            "        L[0] = T.float32(1)\n"))),
                        "local buffer 'L' in kernel 'k' needs a constant, positive size");
  EXPECT_ERROR_CONTAINS(
      codegen_cuda(parse(kernel_module("n: T.int32", "", "        T.call_packed(\"f\", n)\n"))),
      "T.call_packed is not supported in device code (in kernel 'k')");
  EXPECT_ERROR_CONTAINS(
      codegen_cuda(parse(kernel_module("n: T.int32", "",
                                       "        tx = T.launch_thread(\"threadIdx.x\", 2048)\n"
                                       "        T.evaluate(0)\n"))),
      "kernel 'k' launches 2048 threads per block");
}

// --- names and determinism --------------------------------------------------------------------

TEST(CodegenCudaNames, SanitizesAndDeduplicates) {
  NameTable names;
  EXPECT_EQ(names.unique("a.b"), "a_b");
  EXPECT_EQ(names.unique("a.b"), "a_b_1");
  EXPECT_EQ(names.unique("a_b_1"), "a_b_1_1");
  EXPECT_EQ(names.unique("_x"), "v_x");
  EXPECT_EQ(names.unique("3d"), "v3d");
  EXPECT_EQ(names.unique(""), "v");
  EXPECT_EQ(names.unique("a__b"), "a_b_2");
  // Keywords and CUDA names are taken from the start.
  EXPECT_EQ(names.unique("int"), "int_1");
  EXPECT_EQ(names.unique("threadIdx"), "threadIdx_1");
  EXPECT_EQ(names.unique("float4"), "float4_1");
  EXPECT_EQ(names.unique("min"), "min_1");
  EXPECT_TRUE(NameTable::is_valid_identifier("main_kernel"));
  EXPECT_FALSE(NameTable::is_valid_identifier("for"));
  EXPECT_FALSE(NameTable::is_valid_identifier("a-b"));
}

TEST(CodegenCudaNames, LocalsNeverHideFunctionsTheKernelCalls) {
  CudaModuleSource source = codegen_cuda(parse(kernel_module(
      "A: T.handle(\"float32\", \"global\")", "",
      "        A_1 = T.decl_buffer((4,), \"float32\", data=A)\n"
      "        sinf: T.float32 = A_1[1]\n"
      "        max: T.float32 = A_1[2]\n"
      "        A_1[0] = T.call_extern(\"float32\", \"sinf\", sinf) + T.max(max, sinf)\n")));
  EXPECT_TRUE(has(source.code, "float sinf_1 = A[1];"));
  EXPECT_TRUE(has(source.code, "float max_1 = A[2];"));
  EXPECT_TRUE(has(source.code, "A[0] = sinf(sinf_1) + primjit_fmax(max_1, sinf_1);"));
  EXPECT_TRUE(is_elf(compile(source).data));
}

TEST(CodegenCuda, OutputIsDeterministic) {
  for (const char* name : {"matmul_relu", "row_softmax"}) {
    std::string text = builder_example(name);
    CudaModuleSource a = generate(text);
    CudaModuleSource b = generate(text);  // parsed and lowered again: new nodes, same text
    EXPECT_EQ(a.code, b.code) << name;
    IRModule lowered = lower(text);
    EXPECT_EQ(codegen_cuda(lowered).code, codegen_cuda(lowered).code) << name;
  }
}

TEST(CodegenCuda, ModuleWithoutKernelsGivesNoFunctions) {
  CudaModuleSource source = generate(builder_example("vector_add_cpu"));
  EXPECT_TRUE(source.kernels.empty());
  EXPECT_TRUE(source.arch.empty());
  EXPECT_TRUE(lacks(source.code, "__global__"));
}

// --- on a GPU ---------------------------------------------------------------------------------

// Kernel arguments in the kernel's parameter order, picked by parameter name from `by_name`.
std::vector<void*> kernel_args(const IRModule& module, const std::string& symbol,
                               const std::map<std::string, DevicePtr*>& by_name) {
  std::vector<void*> args;
  for (const auto& [gvar, func] : module->functions) {
    if (func->global_symbol() != symbol) continue;
    for (const Var& p : func->params) {
      auto it = by_name.find(p->name);
      EXPECT_NE(it, by_name.end()) << "no value for parameter " << p->name << " of " << symbol;
      args.push_back(it == by_name.end() ? nullptr : it->second);
    }
  }
  return args;
}

// The grid, block and dynamic shared memory the lowered host code launches `symbol` with.
struct LaunchConfig {
  Dim3 grid, block;
  unsigned shared = 0;
};
LaunchConfig launch_config(const IRModule& module, const CudaKernelInfo& kernel) {
  LaunchConfig config;
  for (const auto& [gvar, func] : module->functions) {
    post_order_visit(func->body, [&](const Ref<Object>& node) {
      const auto* call = node.as<Call>();
      if (call == nullptr || !call->is_op("call_packed")) return;
      const auto* symbol = call->args[0].as<StringImm>();
      if (symbol == nullptr || symbol->value != kernel.name) return;
      size_t first = call->args.size() - kernel.launch_params.size();
      for (size_t i = 0; i < kernel.launch_params.size(); ++i) {
        std::optional<int64_t> value = as_const_int(call->args[first + i]);
        EXPECT_TRUE(value.has_value()) << "launch argument " << i << " of " << kernel.name;
        auto v = static_cast<unsigned>(value.value_or(1));
        const std::string& tag = kernel.launch_params[i];
        if (tag == attr::kUseDynSharedMemory) config.shared = v;
        unsigned* dims[2][3] = {{&config.grid.x, &config.grid.y, &config.grid.z},
                                {&config.block.x, &config.block.y, &config.block.z}};
        if (tag.size() == 11 || tag.size() == 10) {  // "threadIdx.x" / "blockIdx.x"
          *dims[tag[0] == 't'][tag.back() - 'x'] = v;
        }
      }
    });
  }
  return config;
}

TEST(CodegenCudaGpu, FloorDivisionOfNegativesMatchesTheIr) {
  std::string reason;
  CudaDriver* driver = primjit::test::gpu_driver(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  driver->make_current(0);
  IRModule lowered = lower(kFloorDivision);
  CudaModuleSource source = codegen_cuda(lowered);
  DeviceImage image = nvrtc_compile({"floors.cu", source.code},
                                    NvrtcOptions{.arch = driver->device_info(0).arch()});
  constexpr int n = 256;
  std::vector<int32_t> x(n), y(n), q(n), r(n), p(n);
  std::vector<int64_t> w(n);
  for (int i = 0; i < n; ++i) {
    x[i] = (i % 2 == 0 ? -1 : 1) * (i * 7 + 3);
    y[i] = (i % 3 == 0 ? -1 : 1) * (i % 5 + 1);
    w[i] = static_cast<int64_t>(x[i]) * 1000003;
  }
  auto upload = [&](const void* data, size_t bytes) {
    DevicePtr d = driver->alloc(bytes);
    driver->copy_to_device(d, data, bytes);
    return d;
  };
  DevicePtr dx = upload(x.data(), n * 4), dy = upload(y.data(), n * 4);
  DevicePtr dq = upload(q.data(), n * 4), dr = upload(r.data(), n * 4);
  DevicePtr dw = upload(w.data(), n * 8), dp = upload(p.data(), n * 4);
  CUmod_st* module = driver->load_module(image.data);
  std::vector<void*> args =
      kernel_args(lowered, source.kernels.at(0).name,
                  {{"X", &dx}, {"Y", &dy}, {"Q", &dq}, {"R", &dr}, {"W", &dw}, {"P", &dp}});
  LaunchConfig config = launch_config(lowered, source.kernels.at(0));
  driver->launch(driver->function(module, source.kernels[0].name), config.grid, config.block,
                 config.shared, args.data());
  driver->synchronize();
  std::vector<int64_t> w_out(n);
  driver->copy_to_host(q.data(), dq, n * 4);
  driver->copy_to_host(r.data(), dr, n * 4);
  driver->copy_to_host(w_out.data(), dw, n * 8);
  driver->copy_to_host(p.data(), dp, n * 4);
  driver->unload_module(module);
  for (DevicePtr d : {dx, dy, dq, dr, dw, dp}) driver->free(d);
  auto floordiv = [](int64_t a, int64_t b) {
    int64_t t = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? t - 1 : t;
  };
  auto floormod = [&](int64_t a, int64_t b) { return a - floordiv(a, b) * b; };
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(q[i], floordiv(x[i], y[i])) << x[i] << " // " << y[i];
    ASSERT_EQ(r[i], floormod(x[i], y[i])) << x[i] << " % " << y[i];
    ASSERT_EQ(w_out[i], floordiv(w[i], 7) + floormod(w[i], 7)) << w[i];
    ASSERT_EQ(p[i], floordiv(i - 128, 8) + i / 8 + i % 8) << i;
  }
  EXPECT_EQ(floordiv(-7, 2), -4);  // the reference itself follows expr.h
  EXPECT_EQ(floormod(-7, 2), 1);
}

TEST(CodegenCudaGpu, MatmulReluMatchesTheReference) {
  std::string reason;
  CudaDriver* driver = primjit::test::gpu_driver(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  driver->make_current(0);
  IRModule lowered = lower(builder_example("matmul_relu"));
  CudaModuleSource source = codegen_cuda(lowered);
  ASSERT_EQ(source.kernels.size(), 2u);
  DeviceImage image = nvrtc_compile({"matmul_relu.cu", source.code},
                                    NvrtcOptions{.arch = driver->device_info(0).arch()});
  constexpr int n = 128;
  std::vector<float> a(n * n), b(n * n), c(n * n, 0.0f), d(n * n, 0.0f);
  for (int i = 0; i < n * n; ++i) {  // small integers: every sum is exact in float
    a[i] = static_cast<float>((i * 7) % 5 - 2);
    b[i] = static_cast<float>((i * 3) % 7 - 3);
  }
  const size_t bytes = n * n * sizeof(float);
  DevicePtr da = driver->alloc(bytes), db = driver->alloc(bytes);
  DevicePtr dc = driver->alloc(bytes), dd = driver->alloc(bytes);
  driver->copy_to_device(da, a.data(), bytes);
  driver->copy_to_device(db, b.data(), bytes);
  CUmod_st* module = driver->load_module(image.data);
  for (const CudaKernelInfo& kernel : source.kernels) {
    std::vector<void*> args =
        kernel_args(lowered, kernel.name, {{"A", &da}, {"B", &db}, {"C", &dc}, {"D", &dd}});
    LaunchConfig config = launch_config(lowered, kernel);
    EXPECT_GT(config.shared, 0u) << kernel.name << " uses dynamic shared memory";
    driver->launch(driver->function(module, kernel.name), config.grid, config.block, config.shared,
                   args.data());
  }
  driver->synchronize();
  driver->copy_to_host(c.data(), dc, bytes);
  driver->copy_to_host(d.data(), dd, bytes);
  driver->unload_module(module);
  for (DevicePtr p : {da, db, dc, dd}) driver->free(p);
  int negatives = 0;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0.0f;
      for (int k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];
      ASSERT_EQ(c[i * n + j], sum) << "C[" << i << ", " << j << "]";  // the first launch
      ASSERT_EQ(d[i * n + j], std::max(sum, 0.0f)) << "D[" << i << ", " << j << "]";
      negatives += sum < 0.0f;
    }
  }
  EXPECT_GT(negatives, 0);  // the ReLU did something
}

}  // namespace
}  // namespace primjit::jit
