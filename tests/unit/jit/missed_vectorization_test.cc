// A T.vectorized loop that LLVM does not vectorize is one warning per loop and compiled
// variant, naming the function and the loop variable with LLVM's reason; a marked loop LLVM
// vectorizes, an unmarked loop and a call served by a compiled variant log nothing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"

namespace primjit {
namespace {

using test::LogLines;

// One function per module: a Jit compiles the whole module for a kernel.
constexpr const char* kCarried = R"(
@T.prim_func
def carried(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    for i in T.vectorized(n - 1):
        A[i + 1] = A[i + 1] + A[i]
)";

constexpr const char* kUnmarked = R"(
@T.prim_func
def unmarked(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    for j in range(n - 1):
        A[j + 1] = A[j + 1] + A[j]
)";

constexpr const char* kDoubled = R"(
@T.prim_func
def doubled(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    for m in T.vectorized(n):
        A[m] = A[m] * T.float32(2)
)";

Tensor ones(int64_t n) {
  Tensor a = Tensor::zeros({n}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) a.data<float>()[i] = 1;
  return a;
}

Kernel kernel_of(Jit& jit, const char* text, const char* name) {
  KernelOptions options;
  options.target = Target::llvm();
  options.policy = Policy::kExact;  // each shape is a variant of its own
  return jit.kernel(parse(text), name, options);
}

TEST(MissedVectorization, OneWarningPerLoopAndVariantWithLLVMsReason) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = kernel_of(jit, kCarried, "carried");
  LogLines warnings(LogLevel::kWarning);
  Tensor a = ones(1024);
  k(a);
  EXPECT_EQ(a.data<float>()[1023], 1024.0f);  // the prefix sum, computed in order
  Tensor again = ones(1024);
  k(again);  // the same variant: compiled once, warned once
  Tensor b = ones(2048);
  k(b);  // a second variant: compiled and warned again
  EXPECT_EQ(b.data<float>()[2047], 2048.0f);
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 2u);
  const std::string lead =
      "function 'carried': the T.vectorized loop over 'i' was not vectorized by LLVM: ";
  for (const std::string& line : lines) {
    EXPECT_EQ(line.rfind(lead, 0), 0u) << line;
    // LLVM's reason: the value carried from one iteration to the next.
    EXPECT_NE(line.find("could not be identified as reduction"), std::string::npos) << line;
    EXPECT_EQ(line.find("#pragma"), std::string::npos) << line;  // clang's advice is cut
  }
}

TEST(MissedVectorization, VectorizedAndUnmarkedLoopsLogNothing) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel doubled = kernel_of(jit, kDoubled, "doubled");
  Kernel unmarked = kernel_of(jit, kUnmarked, "unmarked");
  LogLines warnings(LogLevel::kWarning);
  Tensor a = ones(1024);
  doubled(a);
  EXPECT_EQ(a.data<float>()[1000], 2.0f);
  Tensor b = ones(1024);
  unmarked(b);
  EXPECT_EQ(b.data<float>()[1023], 1024.0f);
  EXPECT_EQ(warnings.lines(), std::vector<std::string>{});
}

}  // namespace
}  // namespace primjit
