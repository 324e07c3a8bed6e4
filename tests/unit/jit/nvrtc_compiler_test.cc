#include "jit/cuda/nvrtc_compiler.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "primjit/error.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

constexpr const char* kScale = R"(extern "C" __global__ void scale(float* x, float s, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}
)";

bool is_elf(const std::string& data) {
  return data.size() > 4 && data.compare(0, 4,
                                         "\x7f"
                                         "ELF") == 0;
}

TEST(Nvrtc, ReportsVersionAndArchitectures) {
  NvrtcInfo info = nvrtc_info();
  EXPECT_GE(info.major, 12);
  ASSERT_FALSE(info.archs.empty());
  EXPECT_TRUE(std::is_sorted(info.archs.begin(), info.archs.end()));
  EXPECT_NE(std::find(info.archs.begin(), info.archs.end(), 90), info.archs.end());
}

TEST(Nvrtc, CompilesCubinForSm90) {
  DeviceImage image = nvrtc_compile({"scale.cu", kScale}, NvrtcOptions{.arch = 90});
  EXPECT_EQ(image.kind, DeviceImage::Kind::kCubin);
  EXPECT_EQ(image.arch, 90);
  EXPECT_TRUE(is_elf(image.data)) << "a CUBIN is an ELF image";
}

TEST(Nvrtc, CompilesPtxWhenAsked) {
  DeviceImage image =
      nvrtc_compile({"scale.cu", kScale}, NvrtcOptions{.arch = 90, .force_ptx = true});
  EXPECT_EQ(image.kind, DeviceImage::Kind::kPtx);
  EXPECT_NE(image.data.find(".target sm_90"), std::string::npos);
  EXPECT_NE(image.data.find(".visible .entry scale("), std::string::npos);
  EXPECT_EQ(image.data.back(), '\0') << "the driver expects NUL-terminated PTX";
}

TEST(Nvrtc, FallsBackToPtxForAnArchitectureWithoutCubinSupport) {
  // sm_91 does not exist: NVRTC cannot make a CUBIN for it, so PTX for sm_90 is produced and
  // the driver can JIT it forward.
  DeviceImage image = nvrtc_compile({"scale.cu", kScale}, NvrtcOptions{.arch = 91});
  EXPECT_EQ(image.kind, DeviceImage::Kind::kPtx);
  EXPECT_EQ(image.arch, 90);
  EXPECT_NE(image.data.find(".target sm_90"), std::string::npos);
}

TEST(Nvrtc, RejectsArchitecturesOlderThanTheToolkitSupports) {
  try {
    nvrtc_compile({"scale.cu", kScale}, NvrtcOptions{.arch = 35});
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("sm_35 cannot be targeted"), std::string::npos)
        << error.what();
  }
}

TEST(Nvrtc, HalfPrecisionHeadersResolve) {
  DeviceImage image = nvrtc_compile({"half.cu", R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void h(__half* x, __nv_bfloat16* y) { x[0] = __float2half(1.0f); y[0] = __float2bfloat16(2.0f); }
)"},
                                    NvrtcOptions{.arch = 90});
  EXPECT_TRUE(is_elf(image.data));
}

TEST(Nvrtc, CompileErrorCarriesLogAndNumberedSource) {
  try {
    nvrtc_compile(
        {"broken.cu", "extern \"C\" __global__ void k(int* x) {\n  x[0] = undefined_name;\n}\n"},
        NvrtcOptions{});
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("NVRTC could not compile 'broken.cu'"), std::string::npos) << text;
    EXPECT_NE(text.find("undefined_name"), std::string::npos) << text;
    EXPECT_NE(text.find("   2 |   x[0] = undefined_name;"), std::string::npos) << text;
  }
}

TEST(Nvrtc, CompilesSeveralKernelsInParallelInInputOrder) {
  std::vector<CudaSource> sources;
  for (int i = 0; i < 4; ++i) {
    std::string name = "k" + std::to_string(i);
    sources.push_back({name + ".cu", "extern \"C\" __global__ void " + name +
                                         "(int* x) { x[threadIdx.x] = " + std::to_string(i) +
                                         "; }\n"});
  }
  std::vector<DeviceImage> images =
      nvrtc_compile_all(sources, NvrtcOptions{.arch = 90, .force_ptx = true});
  ASSERT_EQ(images.size(), 4u);
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(images[i].name, sources[i].name);
    EXPECT_NE(images[i].data.find(".entry k" + std::to_string(i) + "("), std::string::npos);
  }
}

TEST(Nvrtc, ParallelCompileReportsAFailingUnit) {
  std::vector<CudaSource> sources = {{"good.cu", "extern \"C\" __global__ void g() {}\n"},
                                     {"bad.cu", "this is not CUDA\n"}};
  EXPECT_THROW(nvrtc_compile_all(sources, NvrtcOptions{}), Error);
}

// The ptxas level reaches ptxas: -O0 leaves code that -O3 optimizes away (more instructions,
// so a larger image), and the verbose log reports its registers either way.
TEST(Nvrtc, PtxasOptimizationLevelIsPassedOn) {
  NvrtcOptions o0{.arch = 90, .ptxas_opt_level = 0};
  NvrtcOptions o3{.arch = 90, .ptxas_opt_level = 3};
  o0.extra_options = o3.extra_options = {"--ptxas-options=-v"};
  DeviceImage low = nvrtc_compile({"scale.cu", kScale}, o0);
  DeviceImage high = nvrtc_compile({"scale.cu", kScale}, o3);
  EXPECT_NE(low.data, high.data);
  EXPECT_NE(low.log.find("registers"), std::string::npos) << low.log;
  EXPECT_ERROR_CONTAINS(nvrtc_compile({"scale.cu", kScale}, NvrtcOptions{.ptxas_opt_level = 4}),
                        "ptxas optimization level must be 0, 1, 2 or 3");
}

// --minimal and precompiled headers change how NVRTC compiles, not what: a source with the
// half-precision headers gives the same CUBIN with and without them, twice in a row (the
// second compile of a process loads the precompiled headers).
TEST(Nvrtc, MinimalAndPrecompiledHeadersGiveTheSameImage) {
  const std::string source = std::string("#include <cuda_fp16.h>\n") +
                             R"(extern "C" __global__ void twice(__half* x) {
  x[threadIdx.x] = __hadd(x[threadIdx.x], x[threadIdx.x]);
}
)";
  DeviceImage plain =
      nvrtc_compile({"twice.cu", source}, NvrtcOptions{.arch = 90, .minimal = false, .pch = false});
  for (int i = 0; i < 2; ++i) {
    DeviceImage fast = nvrtc_compile({"twice.cu", source}, NvrtcOptions{.arch = 90});
    EXPECT_EQ(fast.data, plain.data) << "compile " << i;
    EXPECT_EQ(fast.log, "") << "compile " << i;  // no PCH messages
  }
}

TEST(Nvrtc, NumberedSource) { EXPECT_EQ(numbered_source("a\nb\n"), "   1 | a\n   2 | b\n"); }

}  // namespace
}  // namespace primjit::jit
