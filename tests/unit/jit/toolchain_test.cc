#include "primjit/toolchain.h"

#include <gtest/gtest.h>

#include "primjit/version.h"

namespace primjit {
namespace {

TEST(Toolchain, ReportNamesEveryComponent) {
  ToolchainReport report = toolchain_report();
  EXPECT_EQ(report.primjit_version, PRIMJIT_VERSION_STRING);
  EXPECT_EQ(report.llvm_version.rfind("19.1.", 0), 0u) << report.llvm_version;
  EXPECT_FALSE(report.host_triple.empty());
  EXPECT_FALSE(report.host_cpu.empty());
  EXPECT_FALSE(report.nvrtc_archs.empty());
  EXPECT_FALSE(report.cuda_include_dir.empty());
  if (report.gpu_found) {
    EXPECT_GE(report.gpu_arch, 75);
  } else {
    EXPECT_EQ(report.gpu_description.rfind("no CUDA", 0), 0u) << report.gpu_description;
  }
}

TEST(Toolchain, SelfTestRunsEveryStage) {
  SelfTestResult result = toolchain_selftest();
  EXPECT_EQ(result.host_add_result, 42);
  EXPECT_GT(result.cubin_bytes, 0u);
  EXPECT_GT(result.ptx_bytes, 0u);
  EXPECT_EQ(result.gpu_ran, result.toolchain.gpu_found);
  if (result.gpu_ran) {
    EXPECT_EQ(result.device_arch, result.toolchain.gpu_arch);
    EXPECT_EQ(result.gpu_correct, result.gpu_elements);
  } else {
    EXPECT_EQ(result.device_arch, 90);
  }
}

TEST(Toolchain, CudaHomeOverridesTheIncludeDirectory) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // oneTBB workers may already be running
  EXPECT_EXIT(
      {
        setenv("CUDA_HOME", "/opt/other-cuda", 1);
        std::_Exit(toolchain_report().cuda_include_dir == "/opt/other-cuda/include" ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace primjit
