// The interpreter refuses what CUDA refuses, with the CUDA runtime's message (launch_limits.h):
// too many threads per block, block and grid extents beyond CUDA's, more shared memory than the
// device has. A run is bounded by a step budget, so a huge grid or loop cannot hang the caller;
// expressions at the depth limit run on a fiber's stack.
#include <dlpack/dlpack.h>
#include <gtest/gtest.h>

#include <string>

#include "jit/common/launch_limits.h"
#include "jit/cuda/codegen_cuda.h"
#include "primjit/ir/expr.h"
#include "tests/unit/emu/emu_test_util.h"

namespace primjit::jit::emu {
namespace {

using test::lower;
using test::parse_module;

#define EXPECT_HAS(text, part) \
  EXPECT_NE((text).find(part), std::string::npos) << "missing '" << (part) << "' in:\n" << (text)

// A device function main(X, Y) over two float32[128] tensors with `body`.
std::string kernel(const std::string& body) {
  return R"(
@T.prim_func
def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
)" + body;
}

// Runs main(X, Y) of `module` and returns the error message ("" when it runs).
std::string run_error(const IRModule& module, Options options = {}) {
  Interpreter interp(module, options);
  HostTensor X(DataType::Float(32), {128}), Y(DataType::Float(32), {128});
  X.fill_random(1);
  Y.fill_random(2);
  return primjit::test::error_of([&] { interp.run("main", {X.dl(), Y.dl()}); });
}

// The error of CUDA code generation for `module` after the device passes.
std::string cuda_codegen_error(const IRModule& module) {
  return primjit::test::error_of([&] { codegen_cuda(lower(module, "LowerDeviceKernelLaunch")); });
}

TEST(EmuLaunchLimits, MoreThan1024ThreadsPerBlockGetTheCudaMessage) {
  IRModule m = parse_module(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 2048)
    Y[tx % 128] = X[tx % 128]
)"));
  const std::string why = threads_per_block_error(sm90_launch_limits(), 2048);
  EXPECT_EQ(why, "2048 threads per block; CUDA allows at most 1024 (reduce the threadIdx extents)");
  // As written, and launched by its host function after the device passes.
  EXPECT_HAS(run_error(m), "launching kernel 'main': " + why);
  EXPECT_HAS(run_error(lower(m, "LowerDeviceKernelLaunch")),
             "launching kernel 'main_kernel': " + why);
  // CUDA refuses it with the same words: at code generation (the count is constant here) and
  // at launch (launch_config_error, which the CUDA runtime calls before cuLaunchKernel).
  EXPECT_HAS(cuda_codegen_error(m), "CUDA code generation: kernel 'main_kernel' launches " + why);
  EXPECT_EQ(launch_config_error(sm90_launch_limits(), {1, 1, 1}, {64, 32, 1}, 0), why);
}

TEST(EmuLaunchLimits, BlockAndGridExtentsBeyondCudaAreRefused) {
  EXPECT_HAS(run_error(parse_module(kernel(R"(
    tz = T.launch_thread("threadIdx.z", 128)
    Y[tz] = X[tz]
)"))),
             "launching kernel 'main': threadIdx.z extent 128 is more than CUDA's limit of 64");
  EXPECT_HAS(run_error(parse_module(kernel(R"(
    by = T.launch_thread("blockIdx.y", 70000)
    Y[0] = X[0]
)"))),
             "launching kernel 'main': blockIdx.y extent 70000 is more than CUDA's limit of 65535");
}

// A kernel of 128 threads that copies X to Y through a float32 buffer of `elements` in `scope`.
IRModule shared_copy(int elements, const std::string& scope) {
  const std::string alloc = "    S = T.alloc_buffer((" + std::to_string(elements) +
                            ",), \"float32\", scope=\"" + scope + "\")\n";
  return parse_module(kernel("    tx = T.launch_thread(\"threadIdx.x\", 128)\n" + alloc +
                             "    S[tx] = X[tx]\n"
                             "    Y[tx] = S[tx]\n"));
}

TEST(EmuLaunchLimits, MoreSharedMemoryThanTheDeviceHasIsRefused) {
  // 300,000 bytes of dynamic shared memory; an sm_90 device allows 232,448 (227 KiB).
  IRModule dynamic = shared_copy(75000, "shared.dyn");
  const std::string why =
      "needs 300000 bytes of dynamic shared memory; the device allows 232448 per block";
  EXPECT_EQ(launch_config_error(sm90_launch_limits(), {1, 1, 1}, {128, 1, 1}, 300000), why);
  EXPECT_HAS(run_error(dynamic), "launching kernel 'main': " + why);
  EXPECT_HAS(run_error(lower(dynamic, "LowerDeviceKernelLaunch")),
             "launching kernel 'main_kernel': " + why);
  // Static shared arrays: CUDA allows 48 KiB; code generation and the interpreter agree.
  IRModule fixed = shared_copy(20000, "shared");
  const std::string static_why =
      "needs 80000 bytes of static shared memory; CUDA allows at most 49152 per block (allocate "
      "larger buffers in scope \"shared.dyn\")";
  EXPECT_HAS(run_error(fixed), "launching kernel 'main': " + static_why);
  EXPECT_HAS(cuda_codegen_error(fixed), "CUDA code generation: kernel 'main_kernel' " + static_why);
  // Within the limits both run.
  EXPECT_EQ(run_error(shared_copy(128, "shared")), "");
  EXPECT_EQ(run_error(shared_copy(128, "shared.dyn")), "");
}

TEST(EmuLaunchLimits, TheDeviceIsAnOption) {
  IRModule m = parse_module(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    Y[tx] = X[tx]
)"));
  EXPECT_EQ(run_error(m), "");
  Options small;
  small.launch_limits.max_threads_per_block = 64;
  EXPECT_HAS(run_error(m, small), "128 threads per block; CUDA allows at most 64");
}

TEST(EmuStepBudget, AHugeGridStopsAtTheBudget) {
  IRModule m = parse_module(kernel(R"(
    bx = T.launch_thread("blockIdx.x", 2000000000)
    Y[bx % 128] = X[bx % 128]
)"));
  Options options;
  options.max_steps = 1000;
  options.checked = false;  // no race checks: the blocks write the same elements
  EXPECT_HAS(run_error(m, options),
             "the interpreter's step budget of 1000 steps (emu::Options::max_steps; a step is a "
             "loop iteration or a thread of a launch) is used up");
  EXPECT_EQ(Options{}.max_steps, 10'000'000'000u);
}

TEST(EmuStepBudget, LoopsCountTheirIterations) {
  // 2^40 iterations exceed even the default budget: refused before the first one.
  IRModule serial = parse_module(R"(
@T.prim_func
def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    for i in range(T.int64(1099511627776)):
        Y[0] = X[0]
)");
  EXPECT_HAS(run_error(serial), "step budget of 10000000000 steps");
  EXPECT_HAS(run_error(serial), "in `for i in range(T.int64(1099511627776)):");
  // A loop that never ends.
  IRModule forever = parse_module(R"(
@T.prim_func
def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    while X[0] < T.float32(2):
        Y[0] = X[0]
)");
  Options options;
  options.max_steps = 5000;
  EXPECT_HAS(run_error(forever, options), "step budget of 5000 steps");
  // Within the budget a run is unaffected.
  IRModule short_loop = parse_module(R"(
@T.prim_func
def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
    for i in range(128):
        Y[i] = X[i]
)");
  options.max_steps = 200;
  EXPECT_EQ(run_error(short_loop, options), "");
}

TEST(EmuExprDepth, AnExpressionJustUnderTheLimitRunsOnAFiberStack) {
  // Threads with a barrier run as fibers on small stacks; evaluate a chain 996 deep there.
  std::string sum = "S[0]";
  for (int i = 1; i < kMaxExprDepth - 5; ++i) sum += " + S[" + std::to_string(i % 4) + "]";
  IRModule m = parse_module(kernel(R"(
    tx = T.launch_thread("threadIdx.x", 128)
    S = T.alloc_buffer((128,), "float32", scope="shared")
    S[tx] = T.float32(1)
    T.tvm_storage_sync("shared")
    Y[tx] = )" + sum + "\n"));
  Interpreter interp(m);
  HostTensor X(DataType::Float(32), {128}), Y(DataType::Float(32), {128});
  interp.run("main", {X.dl(), Y.dl()});
  EXPECT_EQ(Y.get(0), static_cast<double>(kMaxExprDepth - 5));
  EXPECT_EQ(Y.get(127), static_cast<double>(kMaxExprDepth - 5));
}

}  // namespace
}  // namespace primjit::jit::emu
