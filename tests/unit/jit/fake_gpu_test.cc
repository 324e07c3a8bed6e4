// The cuda path against the fake driver (tests/fake_cuda/): code generation, NVRTC for the fake
// device's architecture, module load and launch, checked in the fake's log of driver calls.
// The test environment (tests/CMakeLists.txt) names the fake in PRIMJIT_CUDA_DRIVER_LIBRARY and
// gives it two devices, sm_90 and sm_80 (FAKE_CUDA_DEVICES=90,80). Kernels are not executed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "examples/kernels.h"
#include "jit/cuda/driver.h"
#include "primjit/error.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/fake_cuda/fake_cuda.h"

namespace primjit {
namespace {

constexpr DLDevice kGpu0{kDLCUDA, 0};

// The fake's log lines that start with `prefix`.
std::vector<std::string> log_lines(const std::string& prefix) {
  std::vector<std::string> lines;
  std::istringstream in(fake_cuda_log());
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(prefix, 0) == 0) lines.push_back(line);
  }
  return lines;
}

class FakeGpu : public testing::Test {
 protected:
  void SetUp() override {
    const char* library = std::getenv("PRIMJIT_CUDA_DRIVER_LIBRARY");
    ASSERT_TRUE(library != nullptr && std::string(library).find("fake") != std::string::npos)
        << "run through ctest: PRIMJIT_CUDA_DRIVER_LIBRARY must name the fake driver";
    jit::CudaDriver::get();  // loads the fake (cuInit) before the log is cleared
    fake_cuda_reset();
  }
};

TEST_F(FakeGpu, VectorAddCompilesLoadsAndLaunchesOnce) {
  Jit jit;
  Kernel k = jit.kernel(examples::vector_add_cuda(), {.target = Target::cuda()});
  Tensor a = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  Tensor b = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  Tensor c = Tensor::zeros({1000}, DataType::Float(32), kGpu0);
  fake_cuda_reset();
  k(a, b, c);
  // NVRTC made a CUBIN for the device's sm_90, which the driver loaded on device 0.
  EXPECT_EQ(log_lines("moduleLoad"),
            std::vector<std::string>{"moduleLoad ctx=0 kind=cubin arch=90"});
  // One launch: ceil(1000 / 256) = 4 blocks of 256 threads, no shared memory.
  EXPECT_EQ(log_lines("launch"),
            std::vector<std::string>{"launch fn=vector_add_cuda_kernel ctx=0 stream=0 grid=4,1,1 "
                                     "block=256,1,1 shared=0 static=0"});
  // The module stays loaded as long as the variant lives.
  EXPECT_EQ(fake_cuda_get("modules"), 1);
  // The second call reuses the loaded module.
  fake_cuda_reset();
  k(a, b, c);
  EXPECT_TRUE(log_lines("moduleLoad").empty());
  EXPECT_EQ(log_lines("launch").size(), 1u);
  EXPECT_EQ(k.stats().misses, 1u);
}

}  // namespace
}  // namespace primjit
