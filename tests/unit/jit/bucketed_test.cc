// Policy::kBucketed: dimensions up to bucket_limit keyed on their value, larger ones on their
// divisibility by 16, data on 16-byte alignment; the variant of a bucket serves every shape in
// it and never one outside it; prewarm and compile_async key like calls. (The tests of the
// buckets alone set promote_after = 0: no exact variant for the first or a hot shape.)
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::Pair;
using test::scale_function;

Signature scale_signature(int64_t n) {
  return {ArgSpec::tensor(DataType::Float(32), {n}), ArgSpec::tensor(DataType::Float(32), {n}),
          ArgSpec::scalar(DataType::Float(32))};
}

// Calls the kernel with length n and checks the result; returns whether it compiled.
bool call_compiles(Kernel& k, int64_t n) {
  uint64_t before = k.stats().misses;
  Pair p(n);
  k(p.a, p.b, 2.0f);
  p.expect_scaled(2.0f);
  return k.stats().misses > before;
}

TEST(Bucketed, BoundariesAroundSixteen) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(),
                        {.policy = Policy::kBucketed, .bucket_limit = 16, .promote_after = 0});
  EXPECT_TRUE(call_compiles(k, 15));   // small: its value
  EXPECT_TRUE(call_compiles(k, 16));   // still small (the limit itself)
  EXPECT_TRUE(call_compiles(k, 17));   // above: not a multiple of 16
  EXPECT_FALSE(call_compiles(k, 33));  // same bucket as 17
  EXPECT_FALSE(call_compiles(k, 1001));
  EXPECT_TRUE(call_compiles(k, 32));   // above: a multiple of 16
  EXPECT_FALSE(call_compiles(k, 48));  // same bucket as 32
  EXPECT_FALSE(call_compiles(k, 4096));
  EXPECT_FALSE(call_compiles(k, 15));  // small values are exact
  EXPECT_FALSE(call_compiles(k, 16));
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 4u);
  ASSERT_EQ(s.reasons.size(), 4u);
  EXPECT_EQ(s.reasons[1], "n: 15 -> 16");  // the shape variable both buffers share
  EXPECT_NE(s.reasons[2].find("n: 16 -> bucket n (larger, not a multiple of 16)"),
            std::string::npos)
      << s.reasons[2];
  // The reasons say which bucket changed.
  EXPECT_NE(s.reasons[3].find("n: bucket n (larger, not a multiple of 16) -> bucket "
                              "16k (a larger multiple of 16)"),
            std::string::npos)
      << s.reasons[3];
}

TEST(Bucketed, OneIsItsOwnBucketWithTheSmallestLimit) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(),
                        {.policy = Policy::kBucketed, .bucket_limit = 1, .promote_after = 0});
  EXPECT_TRUE(call_compiles(k, 1));
  EXPECT_TRUE(call_compiles(k, 2));   // not a multiple of 16
  EXPECT_FALSE(call_compiles(k, 3));  // same bucket
  EXPECT_TRUE(call_compiles(k, 16));  // a multiple of 16
  EXPECT_FALSE(call_compiles(k, 1));
  EXPECT_EQ(k.stats().misses, 3u);
  EXPECT_ERROR_CONTAINS(
      jit.kernel(scale_function(), {.policy = Policy::kBucketed, .bucket_limit = 0}),
      "KernelOptions::bucket_limit must be >= 1");
}

// The variant of the multiples of 16 assumes n % 16 == 0 (asserted, so the simplifier uses it,
// and its loops run n_16 * 16 times, a visible multiple) and is never run for another length:
// such a call compiles the other bucket, and running the variant directly with it fails instead
// of computing a wrong result. The other bucket's variant asserts n % 16 != 0.
TEST(Bucketed, MultipleOfSixteenVariantNeverRunsAnotherLength) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 0});
  std::string divisible = print(k.lowered(scale_signature(64)));
  std::string other = print(k.lowered(scale_signature(65)));
  EXPECT_NE(divisible.find("is a multiple of 16 in this variant"), std::string::npos) << divisible;
  EXPECT_NE(divisible.find("n_16 * 16"), std::string::npos) << divisible;
  EXPECT_NE(other.find("n is not a multiple of 16 in this variant"), std::string::npos) << other;
  EXPECT_EQ(other.find("n_16"), std::string::npos) << other;
  EXPECT_TRUE(call_compiles(k, 64));
  EXPECT_TRUE(call_compiles(k, 65));
  EXPECT_FALSE(call_compiles(k, 80));
  EXPECT_FALSE(call_compiles(k, 81));
  CompiledVariant v = k.compiled(scale_signature(64));
  Pair p(65);
  Arg wrong[] = {Arg(p.a), Arg(p.b), Arg(2.0f)};
  EXPECT_ERROR_CONTAINS(v.call(wrong), "n is a multiple of 16 in this variant");
  Pair q(96);
  Arg right[] = {Arg(q.a), Arg(q.b), Arg(2.0f)};
  v.call(right);
  q.expect_scaled(2.0f);
}

// Data 16-byte aligned or not are different keys (the tensor's own memory is aligned).
TEST(Bucketed, KeysDataAlignment) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 0});
  Tensor a = Tensor::zeros({36}, DataType::Float(32));
  Tensor b = Tensor::zeros({36}, DataType::Float(32));
  for (int i = 0; i < 36; ++i) a.data<float>()[i] = static_cast<float>(i);
  DLTensor da = *a.dl(), db = *b.dl();
  int64_t shape[1] = {32};
  da.shape = db.shape = shape;
  k(&da, &db, 2.0f);
  // One float (4 bytes) further: not 16-byte aligned.
  da.data = a.data<float>() + 1;
  db.data = b.data<float>() + 1;
  k(&da, &db, 3.0f);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(b.data<float>()[1 + i], 3.0f * (i + 1)) << i;
  da.data = a.data<float>() + 4;  // 16 bytes further: aligned again
  db.data = b.data<float>() + 4;
  k(&da, &db, 4.0f);
  for (int i = 0; i < 32; ++i) ASSERT_EQ(b.data<float>()[4 + i], 4.0f * (i + 4)) << i;
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 1u);
  ASSERT_EQ(s.reasons.size(), 2u);
  EXPECT_NE(s.reasons[1].find("A layout: compact -> not 16-byte aligned"), std::string::npos)
      << s.reasons[1];
}

// Prewarm and compile_async key with the policy: a prewarmed bucket serves every shape in it.
TEST(Bucketed, PrewarmedBucketServesEveryShapeInIt) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 0});
  k.prewarm({scale_signature(64), scale_signature(8)});
  k.compile_async(scale_signature(100)).get();
  EXPECT_EQ(k.stats().misses, 3u);
  for (int64_t n : {16 * 2, 16 * 3, 16 * 70, 8, 17, 99, 1235}) {
    EXPECT_FALSE(call_compiles(k, n)) << n;
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.hits, 7u);
  EXPECT_TRUE(call_compiles(k, 9));  // small values are exact
}

// Calls the kernel `times` times in a row with length n, checking every result.
void call_repeatedly(Kernel& k, int64_t n, int times) {
  Pair p(n);
  for (int i = 0; i < times; ++i) {
    k(p.a, p.b, 2.0f);
    ASSERT_NO_FATAL_FAILURE(p.expect_scaled(2.0f)) << "call " << i << " with n = " << n;
  }
}

// KernelOptions::promote_after: the kernel's first shape gets its exact variant at once (a
// program with one shape compiles what kExact would), and a shape called promote_after times
// in a row on its bucket's variant gets its own later; their calls run those variants, other
// shapes of their bucket the bucket's.
TEST(Bucketed, AHotShapeGetsItsOwnVariant) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 8});
  call_repeatedly(k, 116, 5);  // the first shape: its exact variant, then its fast calls
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 1u);
  EXPECT_EQ(s.promotions, 1u);
  EXPECT_EQ(s.promoted_calls, 4u);
  call_repeatedly(k, 100, 8);  // its bucket's variant, then a run of 7
  s = k.stats();
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.promotions, 1u);
  call_repeatedly(k, 100, 1);  // the eighth in a row: promoted after it ran
  s = k.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.promotions, 2u);
  ASSERT_EQ(s.reasons.size(), 3u);
  EXPECT_EQ(s.reasons[0], "first call");
  EXPECT_NE(s.reasons[1].find("n: 116 -> bucket n (larger, not a multiple of 16)"),
            std::string::npos)
      << s.reasons[1];
  EXPECT_NE(s.reasons[2].find("n: bucket n (larger, not a multiple of 16) -> 100"),
            std::string::npos)
      << s.reasons[2];
  call_repeatedly(k, 100, 20);
  s = k.stats();
  EXPECT_EQ(s.promoted_calls, 24u);
  EXPECT_EQ(s.misses, 3u);
  // The same bucket, another shape: the bucket's variant, not a promoted one.
  call_repeatedly(k, 132, 3);
  s = k.stats();
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.promoted_calls, 24u);
  // A shape whose dimensions are all at most the limit is exact already: nothing to promote.
  call_repeatedly(k, 12, 30);
  EXPECT_EQ(k.stats().promotions, 2u);
  EXPECT_EQ(k.stats().misses, 4u);
}

// The promoted variants have every dimension compiled in: their lowering (PRIMJIT_DUMP_IR) has
// n = 116 and n = 100 where the bucket's variant keeps n, with the bucket's fact asserted.
TEST(Bucketed, APromotedVariantHasEveryDimensionCompiledIn) {
  test::TempDir dir("primjit_promoted_dump");
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 4});
  setenv("PRIMJIT_DUMP_IR", dir.str().c_str(), 1);
  call_repeatedly(k, 116, 1);  // v0: the first shape's exact variant
  call_repeatedly(k, 100, 6);  // v1: the bucket's; v2: n = 100's, promoted
  unsetenv("PRIMJIT_DUMP_IR");
  ASSERT_EQ(k.stats().promotions, 2u);
  auto read = [&](const std::string& variant) {
    std::ifstream in(dir.path() / variant / "00_input.tir");
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  const std::string first = read("scale.v0"), bucket = read("scale.v1"), hot = read("scale.v2");
  EXPECT_NE(bucket.find("n is not a multiple of 16 in this variant"), std::string::npos) << bucket;
  EXPECT_NE(bucket.find("n = T.int32()"), std::string::npos) << bucket;
  for (const auto& [text, n] : {std::pair{first, "116"}, std::pair{hot, "100"}}) {
    EXPECT_EQ(text.find("multiple of 16"), std::string::npos) << text;
    EXPECT_NE(text.find(n), std::string::npos) << text;
    EXPECT_EQ(text.find("n = T.int32()"), std::string::npos) << text;
  }
}

TEST(Bucketed, AlternatingShapesAreNotPromoted) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 4});
  for (int round = 0; round < 20; ++round) {
    call_repeatedly(k, 100, 1);
    call_repeatedly(k, 116, 1);
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 2u);      // n = 100's exact variant (the first shape), the bucket's
  EXPECT_EQ(s.promotions, 1u);  // the first shape only
  Kernel never = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 0});
  call_repeatedly(never, 100, 300);
  EXPECT_EQ(never.stats().promotions, 0u);
  EXPECT_ERROR_CONTAINS(
      jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = -1}),
      "KernelOptions::promote_after must be >= 0");
}

// A promotion never spends the kernel's last distinct key before its recompile limit, and at
// most eight shapes are promoted.
TEST(Bucketed, PromotionsStayWithinTheRecompileLimit) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(),
                        {.policy = Policy::kBucketed, .promote_after = 2, .recompile_limit = 2});
  call_repeatedly(k, 116, 1);   // the first shape's exact variant: 1 key
  call_repeatedly(k, 100, 10);  // the bucket's: 2 keys, none left to promote n = 100
  EXPECT_EQ(k.stats().promotions, 1u);
  EXPECT_EQ(k.stats().misses, 2u);
  Jit other(JitOptions{.disk_cache = DiskCacheMode::kDisabled});  // its own variants
  Kernel many = other.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 2});
  for (int64_t n = 100; n < 100 + 16 * 12; n += 16) call_repeatedly(many, n, 3);
  EXPECT_EQ(many.stats().promotions, 8u);  // the first shape and seven hot ones
  EXPECT_EQ(many.stats().misses, 9u);      // and the bucket's variant
}

// Under JitOptions::tiered the promoted shape's variant compiles in the background; its calls
// run the bucket's variant until it is ready, then switch to it.
TEST(Bucketed, TieredPromotionCompilesInTheBackground) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled, .tiered = true});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 4});
  call_repeatedly(k, 100, 5);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (k.stats().promoted_calls == 0) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the promoted variant never ran";
    call_repeatedly(k, 100, 4);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.promotions, 1u);
  EXPECT_GE(s.switch_overs, 1u);
}

// Threads calling one hot shape at once (not the kernel's first) promote it once, and every
// result is right.
TEST(JitBucketed, ConcurrentCallersPromoteAHotShapeOnce) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 16});
  call_repeatedly(k, 300, 1);  // the first shape (300 % 16 = 12): its exact variant
  call_repeatedly(k, 200, 1);  // 200 % 16 = 8, the same bucket: the bucket's variant
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] { call_repeatedly(k, 200, 300); });
  }
  for (std::thread& t : threads) t.join();
  KernelStats s = k.stats();
  EXPECT_EQ(s.promotions, 2u);
  EXPECT_EQ(s.misses, 3u);
  EXPECT_GT(s.promoted_calls, 0u);
}

// Strided, offset or unaligned calls of a promoted shape take the bucket's variant (whose layout
// is symbolic): one variant for all of them, not one per layout.
TEST(Bucketed, OtherLayoutsOfAPromotedShapeTakeTheBucket) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kBucketed, .promote_after = 2});
  call_repeatedly(k, 100, 3);  // the first shape: promoted, compact and aligned
  ASSERT_EQ(k.stats().misses, 1u);
  Tensor a = Tensor::zeros({500}, DataType::Float(32)),
         b = Tensor::zeros({500}, DataType::Float(32));
  for (int i = 0; i < 500; ++i) a.data<float>()[i] = static_cast<float>(i);
  int64_t shape[1] = {100};
  for (int64_t stride : {2, 3, 4}) {
    for (int rep = 0; rep < 5; ++rep) {
      DLTensor da = *a.dl(), db = *b.dl();
      int64_t strides[1] = {stride};
      da.shape = db.shape = shape;
      da.strides = db.strides = strides;
      k(&da, &db, 2.0f);
      for (int64_t i = 0; i < 100; ++i) {
        ASSERT_EQ(b.data<float>()[i * stride], 2.0f * static_cast<float>(i * stride)) << stride;
      }
    }
  }
  for (int rep = 0; rep < 5; ++rep) {  // one float further: not 16-byte aligned
    DLTensor da = *a.dl(), db = *b.dl();
    da.shape = db.shape = shape;
    da.data = a.data<float>() + 1;
    db.data = b.data<float>() + 1;
    k(&da, &db, 3.0f);
    for (int64_t i = 0; i < 100; ++i) ASSERT_EQ(b.data<float>()[1 + i], 3.0f * (i + 1));
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.promotions, 1u);
  EXPECT_LE(s.misses, 3u) << "the first shape's variant, the bucket's strided and unaligned ones";
}

}  // namespace
}  // namespace primjit
