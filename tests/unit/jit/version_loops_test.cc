// VersionLoops in JIT variants with symbolic dimensions: the dynamic variant of a loop nest has a
// fast path for multiples of 16 and the general path, both give the bits the exact variants
// give (no reassociation); a kBucketed variant keeps only the version its key allows.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"

namespace primjit {
namespace {

using test::same_bits;

// Row sums in the serial order (an unmarked float reduction: its order is the result), and a
// tiled copy with guards for partial tiles.
constexpr const char* kRowSums = R"(
@T.prim_func
def row_sums(a: T.handle, s: T.handle, c: T.handle):
    T.func_attr({"target": T.target("llvm")})
    m = T.int32()
    n = T.int32()
    A = T.match_buffer(a, (m, n), "float32")
    S = T.match_buffer(s, (m,), "float32")
    C = T.match_buffer(c, (m, n), "float32")
    for i in range(m):
        S[i] = T.float32(0)
        for j in range(n):
            S[i] = S[i] + A[i, j] * T.float32(0.1)
    for io in range((m + 31) // 32):
        for ii, j in T.grid(32, n):
            if io * 32 + ii < m:
                C[io * 32 + ii, j] = A[io * 32 + ii, j] * T.float32(3)
)";

Signature signature(int64_t m, int64_t n) {
  return {ArgSpec::tensor(DataType::Float(32), {m, n}), ArgSpec::tensor(DataType::Float(32), {m}),
          ArgSpec::tensor(DataType::Float(32), {m, n})};
}

// The outputs of one call with (m, n) inputs that make the summation order visible.
std::vector<float> run(Kernel& k, int64_t m, int64_t n) {
  Tensor a = Tensor::zeros({m, n}, DataType::Float(32));
  Tensor s = Tensor::zeros({m}, DataType::Float(32));
  Tensor c = Tensor::zeros({m, n}, DataType::Float(32));
  for (int64_t i = 0; i < m * n; ++i) {
    a.data<float>()[i] = static_cast<float>((i * 7919) % 1000) * 1.37e-3f + (i % 3 ? 1e4f : 0);
  }
  k(a, s, c);
  std::vector<float> out(s.data<float>(), s.data<float>() + m);
  out.insert(out.end(), c.data<float>(), c.data<float>() + m * n);
  return out;
}

TEST(VersionLoops, DynamicVariantHasFastAndGeneralPaths) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(parse(kRowSums)->lookup("row_sums"), {.policy = Policy::kDynamic});
  std::string text = print(k.lowered(signature(64, 48)));
  EXPECT_NE(text.find("n % 16 == 0"), std::string::npos) << text;
  EXPECT_NE(text.find("m % 32 == 0"), std::string::npos) << text;
  EXPECT_NE(text.find("n_16 * 16"), std::string::npos) << text;
}

TEST(VersionLoops, BothPathsGiveTheExactVariantsBits) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  PrimFunc f = parse(kRowSums)->lookup("row_sums");
  Kernel dynamic = jit.kernel(f, {.policy = Policy::kDynamic});
  Kernel exact = jit.kernel(f, {.policy = Policy::kExact});
  Kernel bucketed = jit.kernel(f, {.policy = Policy::kBucketed});
  // Fast path (both multiples), general path (n, m or both not), tiny and empty shapes.
  for (auto [m, n] : std::vector<std::pair<int64_t, int64_t>>{
           {64, 48}, {64, 50}, {70, 32}, {33, 17}, {1, 16}, {0, 16}, {32, 0}}) {
    std::vector<float> want = run(exact, m, n);
    EXPECT_TRUE(same_bits(run(dynamic, m, n), want)) << m << " x " << n;
    EXPECT_TRUE(same_bits(run(bucketed, m, n), want)) << m << " x " << n;
  }
  EXPECT_EQ(dynamic.stats().misses, 1u);
}

// The key of a kBucketed variant decides the version: a multiple of 16 keeps the fast path only,
// another length the general path only.
TEST(VersionLoops, BucketedVariantKeepsTheVersionItsKeyAllows) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(parse(kRowSums)->lookup("row_sums"), {.policy = Policy::kBucketed});
  std::string multiple = print(k.lowered(signature(64, 48)));
  EXPECT_NE(multiple.find("n_16 * 16"), std::string::npos) << multiple;
  EXPECT_EQ(multiple.find("n % 16 == 0 and"), std::string::npos) << multiple;
  EXPECT_EQ(multiple.find("if n % 16 == 0"), std::string::npos) << multiple;
  std::string other = print(k.lowered(signature(64, 50)));
  EXPECT_EQ(other.find("n_16"), std::string::npos) << other;
}

}  // namespace
}  // namespace primjit
