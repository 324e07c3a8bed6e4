#include "jit/cuda/driver.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "jit/cuda/nvrtc_compiler.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

std::string load_error(const std::string& library) {
  try {
    CudaDriver::load(library);
  } catch (const Error& error) {
    return error.what();
  }
  return "";
}

TEST(CudaDriver, MissingLibraryIsReportedAsNoCudaDriver) {
  std::string text = load_error("libprimjit-no-such-driver.so.1");
  EXPECT_EQ(text.rfind("no CUDA driver: cannot load 'libprimjit-no-such-driver.so.1'", 0), 0u)
      << text;
  EXPECT_NE(text.find("use the 'llvm' or 'emu' target"), std::string::npos) << text;
}

TEST(CudaDriver, ToolkitStubIsNotMistakenForADriver) {
  if (!std::filesystem::exists(PRIMJIT_CUDA_STUB_LIBRARY)) {
    GTEST_SKIP() << "this machine's toolkit has no stub library at " << PRIMJIT_CUDA_STUB_LIBRARY;
  }
  std::string text = load_error(PRIMJIT_CUDA_STUB_LIBRARY);
  EXPECT_EQ(text.rfind("no CUDA driver: ", 0), 0u) << text;
  EXPECT_NE(text.find("stub"), std::string::npos) << text;
}

TEST(CudaDriver, ProcessDriverIsEitherUsableOrExplained) {
  std::string reason;
  CudaDriver* driver = CudaDriver::try_get(&reason);
  if (driver == nullptr) {
    EXPECT_EQ(reason.rfind("no CUDA driver: ", 0), 0u) << reason;
    try {
      CudaDriver::get();
      FAIL() << "get() must throw when try_get() found no driver";
    } catch (const Error& error) {
      EXPECT_EQ(std::string(error.what()), reason);
    }
  } else {
    EXPECT_TRUE(reason.empty());
    EXPECT_GE(driver->version(), 12000);
  }
}

// --- GPU tests: run where a driver and a device exist (the GPU bundle), skip elsewhere. ---

CudaDriver* gpu_or_skip(std::string* reason) {
  CudaDriver* driver = CudaDriver::try_get(reason);
  if (driver != nullptr && driver->device_count() == 0) {
    *reason = "the driver reports no device";
    return nullptr;
  }
  return driver;
}

// The machine's driver runs what this NVRTC makes (CUDA 13 needs an R580 driver or newer);
// otherwise every cuda compile says which driver to install.
TEST(CudaDriverGpu, DriverIsNewEnoughForNvrtc) {
  std::string reason;
  CudaDriver* driver = gpu_or_skip(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  NvrtcInfo nvrtc = nvrtc_info();
  EXPECT_NO_THROW(driver->check_supports(nvrtc.major * 1000 + nvrtc.minor * 10, "NVRTC"));
  try {
    driver->check_supports(driver->version() + 10, "a future NVRTC");
    FAIL() << "a newer requirement than the driver must be refused";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("update the NVIDIA driver"), std::string::npos)
        << error.what();
  }
}

TEST(CudaDriverGpu, DescribesDevice0) {
  std::string reason;
  CudaDriver* driver = gpu_or_skip(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  DeviceInfo info = driver->device_info(0);
  EXPECT_FALSE(info.name.empty());
  EXPECT_GE(info.arch(), 75);
  EXPECT_GT(info.multiprocessors, 0);
  EXPECT_GE(info.max_shared_per_block_optin, 48u * 1024);
  EXPECT_THROW(driver->device_info(driver->device_count()), Error);
}

void run_saxpy(CudaDriver& driver, const DeviceImage& image) {
  driver.make_current(0);
  constexpr int n = 10000;
  std::vector<float> x(n), y(n);
  for (int i = 0; i < n; ++i) {
    x[i] = static_cast<float>(i);
    y[i] = 1.0f;
  }
  DevicePtr dx = driver.alloc(n * sizeof(float));
  DevicePtr dy = driver.alloc(n * sizeof(float));
  driver.copy_to_device(dx, x.data(), n * sizeof(float));
  driver.copy_to_device(dy, y.data(), n * sizeof(float));
  CUmod_st* module = driver.load_module(image.data);
  EXPECT_THROW(driver.function(module, "not_a_kernel"), Error);
  float a = 2.0f;
  int count = n;
  void* args[] = {&a, &dx, &dy, &count};
  driver.launch(driver.function(module, "saxpy"), {(n + 255) / 256}, {256}, 0, args);
  driver.synchronize();
  driver.copy_to_host(y.data(), dy, n * sizeof(float));
  driver.unload_module(module);
  driver.free(dx);
  driver.free(dy);
  for (int i = 0; i < n; ++i) ASSERT_EQ(y[i], 2.0f * i + 1.0f) << "element " << i;
}

constexpr const char* kSaxpy = R"(extern "C" __global__ void saxpy(float a, const float* x,
                                                                   float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
)";

TEST(CudaDriverGpu, LaunchesCubinCompiledForTheDevice) {
  std::string reason;
  CudaDriver* driver = gpu_or_skip(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  DeviceImage image =
      nvrtc_compile({"saxpy.cu", kSaxpy}, NvrtcOptions{.arch = driver->device_info(0).arch()});
  run_saxpy(*driver, image);
}

TEST(CudaDriverGpu, LaunchesPtxThroughTheDriverJit) {
  std::string reason;
  CudaDriver* driver = gpu_or_skip(&reason);
  if (driver == nullptr) GTEST_SKIP() << reason;
  DeviceImage image = nvrtc_compile(
      {"saxpy.cu", kSaxpy}, NvrtcOptions{.arch = driver->device_info(0).arch(), .force_ptx = true});
  ASSERT_EQ(image.kind, DeviceImage::Kind::kPtx);
  run_saxpy(*driver, image);
}

}  // namespace
}  // namespace primjit::jit
