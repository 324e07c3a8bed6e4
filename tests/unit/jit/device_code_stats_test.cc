// device_code_stats.h: ptxas's -v report, SASS sizes from a CUBIN and PTX's innermost loops,
// on literal texts and on what NVRTC makes of small kernels (no GPU needed).
#include "jit/cuda/device_code_stats.h"

#include <gtest/gtest.h>

#include <string>

#include "jit/cuda/nvrtc_compiler.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

TEST(DeviceCodeStats, PtxasReportPerEntryFunction) {
  const std::string log = R"(ptxas info    : 0 bytes gmem
ptxas info    : Function properties for helper
    8 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Compiling entry function 'first' for 'sm_90'
ptxas info    : Function properties for first
    16 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 40 registers, used 1 barriers, 2048 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function 'second' for 'sm_90'
ptxas info    : Function properties for second
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 12 registers, used 0 barriers
)";
  auto info = parse_ptxas_info(log);
  ASSERT_EQ(info.size(), 2u);  // the device function `helper` is no entry
  EXPECT_EQ(info["first"].registers, 40);
  EXPECT_EQ(info["first"].stack_bytes, 16);
  EXPECT_EQ(info["first"].spill_store_bytes, 4);
  EXPECT_EQ(info["first"].spill_load_bytes, 12);
  EXPECT_EQ(info["first"].static_shared_bytes, 2048);
  EXPECT_EQ(info["first"].barriers, 1);
  EXPECT_EQ(info["second"].registers, 12);
  EXPECT_EQ(info["second"].static_shared_bytes, 0);
  EXPECT_EQ(info["second"].spill_load_bytes, 0);
}

TEST(DeviceCodeStats, InnermostPtxLoops) {
  // An outer loop around an inner one, then a second loop; `two` has none.
  const std::string ptx = R"(
.visible .entry one(
	.param .u64 one_param_0
)
{
	.reg .b32 	%r<9>;
	mov.u32 	%r1, 0;
$L__BB0_1:
	mov.u32 	%r2, 0;
$L__BB0_2:
	add.s32 	%r2, %r2, 1;
	setp.lt.s32 	%p1, %r2, 16;
	@%p1 bra 	$L__BB0_2;
	add.s32 	%r1, %r1, 1;
	setp.lt.s32 	%p2, %r1, 16;
	@%p2 bra 	$L__BB0_1;
$L__BB0_3:
	// a comment;
	add.s32 	%r3, %r3, 1;
	@!%p2 bra.uni 	$L__BB0_3;
	bra.uni 	$L__BB0_4;
$L__BB0_4:
	ret;
}
.visible .entry two()
{
	ret;
}
)";
  auto loops = ptx_inner_loop_instructions(ptx);
  ASSERT_EQ(loops.size(), 2u);
  EXPECT_EQ(loops["one"], (std::vector<int64_t>{3, 2}));  // the outer loop is not innermost
  EXPECT_TRUE(loops["two"].empty());
}

constexpr const char* kKernels = R"(
extern "C" __global__ void small(float* a) { a[threadIdx.x] = 1.0f; }
extern "C" __global__ void looped(float* a, int n) {
  float acc = 0.0f;
  for (int i = 0; i < n; ++i) acc += a[i * 7 + threadIdx.x];
  a[threadIdx.x] = acc;
}
)";

TEST(DeviceCodeStats, SassAndLoopsOfNvrtcOutput) {
  DeviceImage cubin = nvrtc_compile(
      {"stats.cu", kKernels}, NvrtcOptions{.arch = 90, .extra_options = {"--ptxas-options=-v"}});
  auto sass = sass_instruction_counts(cubin.data);
  ASSERT_EQ(sass.count("small"), 1u);
  ASSERT_EQ(sass.count("looped"), 1u);
  for (const auto& [name, size] : sass) {
    EXPECT_EQ(size.section_bytes % 16, 0) << name;
    EXPECT_GT(size.instructions, 0) << name;
    EXPECT_LT(size.instructions, size.section_bytes / 16) << name << ": NOP padding counted";
  }
  // small: load the index, store 1.0 (a handful of instructions); the loop adds many.
  EXPECT_LE(sass["small"].instructions, 16);
  EXPECT_GT(sass["looped"].instructions, sass["small"].instructions + 8);
  auto resources = parse_ptxas_info(cubin.log);
  EXPECT_GT(resources["looped"].registers, 0) << cubin.log;
  EXPECT_EQ(resources["small"].spill_store_bytes, 0);

  DeviceImage ptx =
      nvrtc_compile({"stats.cu", kKernels}, NvrtcOptions{.arch = 90, .force_ptx = true});
  auto loops = ptx_inner_loop_instructions(ptx.data);
  EXPECT_TRUE(loops["small"].empty());
  ASSERT_FALSE(loops["looped"].empty()) << ptx.data;
  EXPECT_GE(loops["looped"].front(), 3);  // at least a load, an add and the branch
}

TEST(DeviceCodeStats, MalformedCubinsAreErrors) {
  EXPECT_ERROR_CONTAINS(sass_instruction_counts(".version 8.0\n.target sm_90\n"),
                        "not a little-endian ELF64 CUBIN");
  DeviceImage cubin = nvrtc_compile({"stats.cu", kKernels}, NvrtcOptions{.arch = 90});
  EXPECT_ERROR_CONTAINS(sass_instruction_counts(cubin.data.substr(0, 200)), "truncated");
}

}  // namespace
}  // namespace primjit::jit
