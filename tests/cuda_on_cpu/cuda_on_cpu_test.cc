// CUDA-on-CPU: the CUDA C generated for the GPU test kernels, the examples, the lit inputs with
// kernels, the shared-memory-merge goldens and random fuzzer programs runs on the CPU and must
// agree with the interpreter (harness.h). Planted printer bugs must be caught.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "examples/kernels.h"
#include "primjit/builder.h"
#include "primjit/ir/stmt.h"
#include "primjit/ir/text.h"
#include "tests/cuda_on_cpu/harness.h"
#include "tests/fuzz/program_generator.h"

namespace primjit::cuda_on_cpu {
namespace {

namespace fs = std::filesystem;

IRModule module_of(const PrimFunc& f, const std::string& name) {
  return IRModule::from_function(name, f);
}

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The sections of a golden file (lines `# -----` separate them).
std::vector<std::string> sections(const std::string& text) {
  std::vector<std::string> out(1);
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("# -----", 0) == 0) {
      out.emplace_back();
    } else {
      out.back() += line + "\n";
    }
  }
  return out;
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) {
    s.replace(at, from.size(), to);
  }
}

// Checks `m`; expects it to run and agree. Returns its kernel count.
int expect_agrees(const IRModule& m, const CheckOptions& o = {}) {
  CheckResult r = check_module(m, o);
  EXPECT_TRUE(r.ok()) << r.str();
  return r.kernels;
}

// --- the GPU test kernels and the examples ------------------------------------------------------

TEST(CudaOnCpu, VectorAddWithARaggedLastBlock) {
  EXPECT_EQ(expect_agrees(module_of(examples::vector_add_cuda(), "vector_add_cuda"),
                          {.dims = {{"n", 1000}}}),
            1);
}

TEST(CudaOnCpu, RowSoftmaxWithSharedMemoryAndBarriers) {
  EXPECT_EQ(expect_agrees(module_of(examples::row_softmax(), "row_softmax"), {.dims = {{"m", 5}}}),
            1);
}

TEST(CudaOnCpu, TwoLaunchMatmulReluWithMergedSharedMemory) {
  EXPECT_EQ(expect_agrees(module_of(examples::matmul_relu(), "matmul_relu")), 2);
}

TEST(CudaOnCpu, JitDemoTiledMatmul) {
  EXPECT_EQ(expect_agrees(module_of(examples::tiled_matmul(), "tiled_matmul"),
                          {.dims = {{"M", 32}, {"N", 48}, {"K", 64}}}),
            1);
}

constexpr const char* kReverseBig = R"(
@T.prim_func
def reverse_big(A: T.Buffer((32768,), "float32"), B: T.Buffer((32768,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    bx = T.launch_thread("blockIdx.x", 2)
    tx = T.launch_thread("threadIdx.x", 1024)
    S = T.alloc_buffer((16384,), "float32", scope="shared.dyn")
    for k in range(16):
        S[k * 1024 + tx] = A[bx * 16384 + k * 1024 + tx]
    T.tvm_storage_sync("shared.dyn")
    for k in range(16):
        B[bx * 16384 + k * 1024 + tx] = S[16383 - (k * 1024 + tx)]
)";

TEST(CudaOnCpu, MoreThan48KBOfDynamicSharedMemory) {
  EXPECT_EQ(expect_agrees(parse(kReverseBig)), 1);
}

// T.ptx_cp_async / commit / wait: their portable form under PRIMJIT_CUDA_ON_CPU.
TEST(CudaOnCpu, AsyncCopiesThroughSharedMemory) {
  EXPECT_EQ(expect_agrees(parse(R"(
@T.prim_func
def async_copy(A: T.Buffer((128,), "float32"), B: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 32)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    T.ptx_cp_async(S.data, tx * 4, A.data, tx * 4, 16)
    T.ptx_commit_group()
    T.ptx_wait_group(0)
    T.tvm_storage_sync("shared")
    for k in range(4):
        B[tx * 4 + k] = S[127 - tx * 4 - k]
)")),
            1);
}

// Every lit input and the text-format tests' programs that have a kernel.
TEST(CudaOnCpu, TextInputsWithKernels) {
  int checked = 0, kernels = 0;
  for (const char* dir : {"lit/Inputs", "tvmscript"}) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(fs::path(PRIMJIT_TESTS_DIR) / dir)) {
      if (e.path().extension() == ".tir") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (const fs::path& p : files) {
      std::string text = read(p);
      if (text.find("launch_thread") == std::string::npos) continue;
      IRModule m;
      try {
        m = parse(text, p.string());
      } catch (const Error&) {
        continue;  // inputs of error tests
      }
      CheckResult r = check_module(m);
      if (!r.checked()) continue;
      EXPECT_TRUE(r.ok()) << p << ": " << r.str();
      ++checked;
      kernels += r.kernels;
    }
  }
  std::cout << "text inputs: " << checked << " programs, " << kernels << " kernels checked\n";
  EXPECT_GE(checked, 5);
}

// The shared-memory-merge goldens: inputs and expected outputs.
TEST(CudaOnCpu, MergeSharedMemoryGoldens) {
  int checked = 0, kernels = 0, total = 0;
  for (const auto& e : fs::directory_iterator(fs::path(PRIMJIT_TESTS_DIR) / "passes")) {
    const std::string name = e.path().filename().string();
    if (name.find("shared_memory") == std::string::npos) continue;
    for (const std::string& section : sections(read(e.path()))) {
      if (section.find("launch_thread") == std::string::npos) continue;
      if (section.find("expected-error") != std::string::npos) continue;
      ++total;
      CheckResult r = check_module(parse(section, name));
      if (!r.checked()) {
        std::cout << name << ": " << r.str().substr(0, 200) << "\n";
        continue;
      }
      EXPECT_TRUE(r.ok()) << name << ":\n" << section << r.str();
      ++checked;
      kernels += r.kernels;
    }
  }
  std::cout << "merge goldens: " << checked << " of " << total << " sections, " << kernels
            << " kernels checked\n";
  EXPECT_GE(checked, total * 3 / 4);
}

// 128-bit accesses through the merged shared buffer: B's view starts 2048 bytes in (its base
// pointer, not an offset in every index) and its float4 loads and stores are proven aligned.
TEST(CudaOnCpu, VectorAccessesThroughMergedSharedMemory) {
  const IRModule m =
      parse(read(fs::path(PRIMJIT_TESTS_DIR) / "lit" / "Inputs" / "shared_vectors.tir"));
  CheckResult r = check_module(m);
  ASSERT_TRUE(r.ok()) << r.str();
  EXPECT_NE(r.source.find("float* B = (float*)(buf_dyn_shmem + 2048);"), std::string::npos)
      << r.source;
  EXPECT_NE(r.source.find("*(float4*)(B + "), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("((const float4*)(A + "), std::string::npos) << r.source;
  EXPECT_NE(r.source.find("Z[tx] = B[tx + 3];"), std::string::npos) << r.source;
  // The base pointer is what places B: a wrong one gives wrong results.
  CheckOptions o;
  o.edit_source = [](std::string& s) {
    replace_all(s, "(buf_dyn_shmem + 2048)", "(buf_dyn_shmem + 2032)");
  };
  EXPECT_NE(check_module(m, o).failure.find("differs"), std::string::npos);
}

// float16, bfloat16 and float8 conversions (out-of-range values included) and arithmetic.
TEST(CudaOnCpu, NarrowFloatConversionsRoundAsTheCudaHeaders) {
  IRModule m = parse(R"(
@T.prim_func
def narrow(X: T.Buffer((256,), "float32"), H: T.Buffer((256,), "float16"), B: T.Buffer((256,), "bfloat16"), E: T.Buffer((256,), "float8_e4m3fn"), F: T.Buffer((256,), "float8_e5m2"), Y: T.Buffer((256,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 256)
    v: T.float32 = (X[tx] - T.float32(0.5)) * T.Cast("float32", tx * tx * 4 + 1)
    H[tx] = T.Cast("float16", v)
    B[tx] = T.Cast("bfloat16", v)
    E[tx] = T.Cast("float8_e4m3fn", v)
    F[tx] = T.Cast("float8_e5m2", v)
    Y[tx] = T.Cast("float32", H[tx] * H[tx] + H[tx]) + T.Cast("float32", B[tx] / B[tx]) + T.Cast("float32", E[tx]) + T.Cast("float32", F[tx])
)");
  expect_agrees(m);
}

// A scattered vector store whose index reads the buffer it stores to: every lane's index is
// computed before the first lane is stored (found by the fuzzer programs below, seed 3).
TEST(CudaOnCpu, ScatterIndexReadingTheStoredBuffer) {
  CheckResult r = check_module(parse(R"(
@T.prim_func
def scatter(X: T.Buffer((16,), "int32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 1)
    X[0] = T.min(X[0], 0)
    X[T.Ramp(X[0], 1, 4)] = T.Broadcast(7, 4)
)"));
  EXPECT_TRUE(r.ok()) << r.str();
  EXPECT_NE(r.source.find("lane_index"), std::string::npos) << r.source;
}

// --- random programs of the fuzzer as single-thread kernels -----------------------------------

// The generated program's body inside a launch of one block of one thread.
IRModule gpu_program(uint64_t seed) {
  PrimFunc f = fuzz::generate_program(seed, fuzz::Features{});
  Stmt body = f->body;
  for (const char* tag : {"threadIdx.x", "blockIdx.x"}) {
    IterVar iv = IterVar::make(Var::make(tag[0] == 't' ? "tx" : "bx", DataType::Int(32)), tag);
    body = AttrStmt::make(iv, attr::kThreadExtent, IntImm::make(DataType::Int(32), 1), body);
  }
  return IRModule::from_function("main",
                                 f.with_body(body).with_attr(attr::kTarget, Target::cuda()));
}

TEST(CudaOnCpu, FuzzerProgramsOnAGpuTarget) {
  const char* env = std::getenv("PRIMJIT_CUDA_ON_CPU_FUZZ_COUNT");
  const int count = env ? std::atoi(env) : 40;
  const char* first_env = std::getenv("PRIMJIT_CUDA_ON_CPU_FUZZ_SEED");
  const uint64_t first = first_env ? std::strtoull(first_env, nullptr, 10) : 1;
  int checked = 0;
  for (uint64_t s = first; s < first + static_cast<uint64_t>(count); ++s) {
    CheckResult r = check_module(gpu_program(s), {.seed = 7});
    if (!r.checked()) {
      std::cout << "seed " << s << ": " << r.str().substr(0, 300) << "\n";
      continue;
    }
    EXPECT_TRUE(r.ok()) << "fuzzer seed " << s << ":\n" << r.str();
    ++checked;
  }
  std::cout << "fuzzer programs: " << checked << " of " << count << " checked\n";
  EXPECT_GE(checked, count * 3 / 4);
}

// --- the harness catches printer bugs -----------------------------------------------------------

TEST(CudaOnCpu, CatchesAMissingBarrier) {
  CheckOptions o{.dims = {{"m", 3}}};
  o.edit_source = [](std::string& s) { replace_all(s, "__syncthreads();", ";"); };
  CheckResult r = check_module(module_of(examples::row_softmax(), "row_softmax"), o);
  EXPECT_TRUE(r.checked()) << r.str();
  EXPECT_NE(r.failure.find("differs"), std::string::npos) << r.str();
}

TEST(CudaOnCpu, CatchesWrongPrecedence) {
  IRModule m = parse(R"(
@T.prim_func
def affine(X: T.Buffer((64,), "float32"), Y: T.Buffer((64,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 64)
    Y[tx] = (X[tx] + T.float32(1)) * X[63 - tx]
)");
  EXPECT_TRUE(check_module(m).ok());
  CheckOptions o;
  o.edit_source = [](std::string& s) {
    size_t at = s.find("(X[");
    ASSERT_NE(at, std::string::npos) << s;
    s.erase(at, 1);
    size_t close = s.find(") *", at);
    ASSERT_NE(close, std::string::npos) << s;
    s.erase(close, 1);
  };
  CheckResult r = check_module(m, o);
  EXPECT_NE(r.failure.find("differs"), std::string::npos) << r.str();
}

TEST(CudaOnCpu, CatchesAWrongSharedMemoryOffset) {
  CheckOptions o;
  o.edit_source = [](std::string& s) { replace_all(s, "16383 - ", "16382 - "); };
  CheckResult r = check_module(parse(kReverseBig), o);
  EXPECT_NE(r.failure.find("differs"), std::string::npos) << r.str();
}

TEST(CudaOnCpu, ReportsABarrierNotAllThreadsReach) {
  CheckOptions o{.dims = {{"m", 2}}};
  // Threads 128 and up skip the first barrier: they return while the others wait.
  o.edit_source = [](std::string& s) {
    size_t at = s.find("__syncthreads();");
    s.replace(at, 16, "if (threadIdx.x < 128) __syncthreads(); else return;");
  };
  CheckResult r = check_module(module_of(examples::row_softmax(), "row_softmax"), o);
  EXPECT_NE(r.failure.find("never reaches"), std::string::npos) << r.str();
}

TEST(CudaOnCpu, ReportsSourceThatDoesNotCompile) {
  CheckOptions o;
  o.edit_source = [](std::string& s) { replace_all(s, "__syncthreads();", "__syncthreads()"); };
  CheckResult r = check_module(parse(kReverseBig), o);
  EXPECT_NE(r.failure.find("does not compile"), std::string::npos) << r.str();
}

}  // namespace
}  // namespace primjit::cuda_on_cpu
