// Tiered compilation (JitOptions::tiered): a call with a new shape runs at once on the kernel's
// generic (kDynamic) variant while its own variant compiles in the background; later calls
// switch to it. Every result is checked against a reference computed here.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "jit/runtime/background_compile.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::same_bits;

using test::LogLines;

// kExact unless the test says otherwise: each new length is a new variant.
Kernel vector_add(Jit& jit, KernelOptions options = {.policy = Policy::kExact}) {
  return jit.kernel(parse(test::kVectorAddText)->lookup("vadd"), options);
}

// A, B and C = A + B of length n, A[i] = i + 0.5, B[i] = 2 i.
struct Vectors {
  Tensor a, b, c;
  explicit Vectors(int64_t n) {
    a = Tensor::zeros({n}, DataType::Float(32));
    b = Tensor::zeros({n}, DataType::Float(32));
    c = Tensor::zeros({n}, DataType::Float(32));
    for (int64_t i = 0; i < n; ++i) {
      a.data<float>()[i] = static_cast<float>(i) + 0.5f;
      b.data<float>()[i] = 2.0f * static_cast<float>(i);
    }
  }
  // Clears C, so that a call that did nothing is seen.
  void clear() { std::memset(c.data<float>(), 0xff, static_cast<size_t>(c.numel()) * 4); }
  bool added() const {
    for (int64_t i = 0; i < c.numel(); ++i) {
      if (c.data<float>()[i] != a.data<float>()[i] + b.data<float>()[i]) return false;
    }
    return true;
  }
};

// Waits until `k` has made `n` variants in the background (at most a minute).
void wait_for_switch_overs(const Kernel& k, uint64_t n) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (k.stats().switch_overs < n) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline)
        << "the background compiles did not finish: " << k.stats().switch_overs << " of " << n;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

JitOptions tiered_options() {
  return JitOptions{.disk_cache = DiskCacheMode::kDisabled, .tiered = true};
}

// While it lives, background compiles do not start: they stay queued (and ~Jit cancels them).
struct HoldBackgroundCompiles {
  HoldBackgroundCompiles() { jit::BackgroundCompiles::hold_for_testing(true); }
  ~HoldBackgroundCompiles() { jit::BackgroundCompiles::hold_for_testing(false); }
};

// The signature of a vector_add call of length n.
Signature vector_signature(int64_t n) {
  ArgSpec spec{.is_tensor = true, .dtype = DataType::Float(32), .shape = {n}};
  return {spec, spec, spec};
}

// Calls `k` with `v` while every compile fails (an unknown dump option): the call runs the
// generic variant, and the variant of its shape fails to compile in the background. Returns
// once that compile has failed (the kernel's misses reach `misses`).
void fail_in_background(const Kernel& k, Vectors& v, uint64_t misses) {
  setenv("PRIMJIT_DUMP", "no_such_dump_option", 1);
  v.clear();
  k(v.a, v.b, v.c);
  EXPECT_TRUE(v.added());
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (k.stats().misses < misses && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  unsetenv("PRIMJIT_DUMP");
  ASSERT_EQ(k.stats().misses, misses);
}

int count_ending_with(const std::vector<std::string>& lines, const std::string& suffix) {
  int n = 0;
  for (const std::string& line : lines) {
    n += line.size() >= suffix.size() &&
         line.compare(line.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return n;
}

TEST(Tiered, ANewShapeRunsTheGenericVariantUntilItsOwnIsReady) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit);
  Vectors v8(8), v24(24);
  // The first call compiles the generic variant (and waits for it), its own in the background.
  k(v8.a, v8.b, v8.c);
  EXPECT_TRUE(v8.added());
  KernelStats st = k.stats();
  EXPECT_EQ(st.tiered_calls, 1u);
  wait_for_switch_overs(k, 1);
  EXPECT_EQ(k.stats().misses, 2u);  // the generic variant and n = 8
  // A new shape: served at once by the generic variant, nothing compiled in the call.
  k(v24.a, v24.b, v24.c);
  EXPECT_TRUE(v24.added());
  EXPECT_EQ(k.stats().tiered_calls, 2u);
  wait_for_switch_overs(k, 2);
  // Switched: these calls run the specialized variants (hits, not tiered calls).
  for (Vectors* v : {&v8, &v24, &v8}) {
    v->clear();
    k(v->a, v->b, v->c);
    EXPECT_TRUE(v->added());
  }
  st = k.stats();
  EXPECT_EQ(st.tiered_calls, 2u);
  EXPECT_EQ(st.hits, 3u);
  EXPECT_EQ(st.calls, 5u);
  EXPECT_EQ(st.misses, 3u);  // generic, n = 8, n = 24
  EXPECT_EQ(st.variants, 3u);
  // The specialized variants are the policy's: their reasons name the shapes.
  EXPECT_EQ(st.reasons,
            (std::vector<std::string>{"first call", "generic variant (tiered)", "n: 8 -> 24"}));
  JitStats js = jit.stats();
  EXPECT_EQ(js.tiered_hits, 2u);
  EXPECT_EQ(js.switch_overs, 2u);
  EXPECT_NE(to_json(js).find(R"("tiered":2},"switch_overs":2,)"), std::string::npos) << to_json(js);
}

// Several threads call with shapes that are new while the background compiles run and finish:
// 8 threads, 1000 calls each over 20 new shapes, every result checked; some calls run the
// generic variant, some a specialized one, some race with the switch. In the end every shape
// runs its own variant.
TEST(Tiered, SwitchOverUnderConcurrentCallers) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit);
  const std::vector<int64_t> sizes = {1,  2,  3,  7,   15,  16,  17,  31,  32,  33,
                                      63, 64, 65, 100, 127, 128, 129, 257, 500, 1000};
  constexpr int kThreads = 8, kCalls = 1000;
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<Vectors> mine;
      for (int64_t n : sizes) mine.emplace_back(n);
      for (int call = 0; call < kCalls; ++call) {
        Vectors& v = mine[static_cast<size_t>(call + t) % mine.size()];
        v.clear();
        k(v.a, v.b, v.c);
        if (!v.added()) ++wrong;
      }
      ++done;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(done.load(), kThreads);
  EXPECT_EQ(wrong.load(), 0);
  wait_for_switch_overs(k, sizes.size());
  KernelStats st = k.stats();
  EXPECT_EQ(st.calls, uint64_t{kThreads} * kCalls);
  EXPECT_EQ(st.switch_overs, sizes.size());
  EXPECT_EQ(st.misses, sizes.size() + 1);  // each shape once, and the generic variant
  EXPECT_GE(st.tiered_calls, sizes.size());
  // After the switch, calls run the specialized variants only.
  uint64_t tiered = st.tiered_calls;
  for (int64_t n : sizes) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added()) << n;
  }
  EXPECT_EQ(k.stats().tiered_calls, tiered);
}

// A background compile that fails is logged; calls with its key keep running the generic
// variant (correctly) and do not compile it again.
TEST(Tiered, ABackgroundCompileErrorKeepsTheGenericVariantServing) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit);
  Vectors v8(8), v32(32);
  k(v8.a, v8.b, v8.c);
  wait_for_switch_overs(k, 1);
  LogLines warnings(LogLevel::kWarning);
  {
    // Every compile started now fails (an unknown dump option), the generic variant is made.
    setenv("PRIMJIT_DUMP", "no_such_dump_option", 1);
    k(v32.a, v32.b, v32.c);
    EXPECT_TRUE(v32.added());
    auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    while (k.stats().misses < 3 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    unsetenv("PRIMJIT_DUMP");
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.misses, 3u);
  EXPECT_EQ(st.variants, 2u);  // the failed one is not a variant
  EXPECT_EQ(st.switch_overs, 1u);
  ASSERT_FALSE(st.reasons.empty());
  EXPECT_NE(st.reasons.back().find("(failed)"), std::string::npos) << st.reasons.back();
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 1u) << ::testing::PrintToString(lines);
  EXPECT_NE(lines[0].find("kernel 'vadd'"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("keep running the generic variant"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("no_such_dump_option"), std::string::npos) << lines[0];
  // Later calls with that shape run the generic variant; nothing compiles again.
  for (int i = 0; i < 3; ++i) {
    v32.clear();
    k(v32.a, v32.b, v32.c);
    EXPECT_TRUE(v32.added());
  }
  st = k.stats();
  EXPECT_EQ(st.misses, 3u);
  EXPECT_EQ(st.tiered_calls, 5u);  // the first call, the failing shape's four
  EXPECT_EQ(warnings.lines().size(), 1u);
  // Other shapes still switch.
  Vectors v40(40);
  k(v40.a, v40.b, v40.c);
  EXPECT_TRUE(v40.added());
  wait_for_switch_overs(k, 2);
}

// B = 2A + 1 through a host allocation of symbolic size: its generic variant does not compile
// (host allocations need a constant size), its specialized ones do.
PrimFunc twice_without_generic_variant() {
  return parse(R"(
@T.prim_func
def twice(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    tmp = T.alloc_buffer((n,), "float32")
    for i in range(n):
        tmp[i] = A[i] * T.float32(2)
    for i in range(n):
        B[i] = tmp[i] + T.float32(1)
)")
      ->lookup("twice");
}

// A kernel whose generic variant does not compile (its host allocation needs a constant
// size): the kernel stops tiering, and each call waits for its own variant, as untiered (the
// first call's own variant was already compiling in the background: it waits for that one).
TEST(Tiered, WithoutAGenericVariantCallsWaitForTheirOwn) {
  Jit jit(tiered_options());
  Kernel k = jit.kernel(twice_without_generic_variant(), {.policy = Policy::kExact});
  LogLines info(LogLevel::kInfo);
  for (int64_t n : {8, 16, 8}) {
    Vectors v(n);
    k(v.a, v.b);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(v.b.data<float>()[i], v.a.data<float>()[i] * 2 + 1) << n;
    }
  }
  // The background thread counts its switch-over just after the waiting call got the variant.
  wait_for_switch_overs(k, 1);
  KernelStats st = k.stats();
  EXPECT_EQ(st.tiered_calls, 0u);
  EXPECT_EQ(st.switch_overs, 1u);
  EXPECT_EQ(st.variants, 2u);
  EXPECT_EQ(st.hits, 1u);
  int said = 0;
  for (const std::string& line : info.lines()) {
    said += line.find("its generic variant does not compile") != std::string::npos;
  }
  EXPECT_EQ(said, 1);
}

// A float kernel whose specialized and generic variants could differ if specializing changed
// float semantics: math functions, a division by the float value of n, an unmarked reduction
// (exact order) and a T.vectorized one (fixed partial order, whatever n is).
constexpr const char* kFloatKernel = R"(
@T.prim_func
def mix(a: T.handle, b: T.handle, s: T.handle):
    T.func_attr({"target": T.target("llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    S = T.match_buffer(s, (2,), "float32")
    acc = T.alloc_buffer((1,), scope="local")
    plain = T.alloc_buffer((1,), scope="local")
    acc[0] = T.float32(0)
    plain[0] = T.float32(0)
    for i in range(n):
        B[i] = T.exp(A[i]) / T.Cast("float32", n) + T.sqrt(A[i] * T.float32(0.3)) * A[i] + T.Cast("float32", i) / T.float32(7)
    for i in T.vectorized(n):
        acc[0] = acc[0] + A[i] * A[i]
    for i in range(n):
        plain[0] = plain[0] + A[i] * T.float32(1.1)
    S[0] = acc[0]
    S[1] = plain[0]
)";

struct FloatRun {
  std::vector<float> b, s;
};

FloatRun run_mix(const Kernel& k, int64_t n) {
  Tensor a = Tensor::zeros({n}, DataType::Float(32));
  Tensor b = Tensor::zeros({n}, DataType::Float(32));
  Tensor s = Tensor::zeros({2}, DataType::Float(32));
  for (int64_t i = 0; i < n; ++i) {
    a.data<float>()[i] = std::sin(static_cast<float>(i) * 0.37f) * 3.0f + 0.01f * i;
  }
  k(a, b, s);
  return {{b.data<float>(), b.data<float>() + n}, {s.data<float>(), s.data<float>() + 2}};
}

TEST(Tiered, GenericAndSpecializedVariantsGiveBitIdenticalFloatResults) {
  for (Policy policy : {Policy::kExact, Policy::kBucketed}) {
    Jit jit(tiered_options());
    Kernel k = jit.kernel(parse(kFloatKernel)->lookup("mix"), {.policy = policy});
    uint64_t switches = 0;
    for (int64_t n : {1, 7, 15, 16, 17, 31, 32, 33, 100, 1000}) {
      uint64_t tiered = k.stats().tiered_calls;
      FloatRun generic = run_mix(k, n);
      bool ran_generic = k.stats().tiered_calls == tiered + 1;
      if (!ran_generic) continue;  // a bucket already compiled: nothing to compare
      wait_for_switch_overs(k, ++switches);
      FloatRun specialized = run_mix(k, n);
      ASSERT_EQ(k.stats().tiered_calls, tiered + 1) << "n = " << n;
      EXPECT_TRUE(same_bits(generic.b, specialized.b)) << "n = " << n;
      EXPECT_TRUE(same_bits(generic.s, specialized.s))
          << "n = " << n << ": " << generic.s[0] << " " << specialized.s[0] << ", " << generic.s[1]
          << " " << specialized.s[1];
    }
    EXPECT_GE(switches, policy == Policy::kExact ? 10u : 5u);
  }
}

// Off (the default): the first call with a new shape compiles its variant and runs it; there
// is no generic variant.
TEST(Tiered, OffCompilesTheNewShapesVariantInTheCall) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = vector_add(jit);
  for (int64_t n : {8, 24, 8}) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added());
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.misses, 2u);
  EXPECT_EQ(st.variants, 2u);
  EXPECT_EQ(st.hits, 1u);
  EXPECT_EQ(st.tiered_calls, 0u);
  EXPECT_EQ(st.switch_overs, 0u);
  EXPECT_EQ(st.reasons, (std::vector<std::string>{"first call", "n: 8 -> 24"}));
}

// The generic variant is not one of the recompile limit's keys; past the limit, the fallback
// (the dynamic variant) is the generic variant itself.
TEST(Tiered, TheRecompileLimitCountsTheSpecializedKeysOnly) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit, {.policy = Policy::kExact,
                              .recompile_limit = 2,
                              .on_recompile_limit = OnRecompileLimit::kFallbackToDynamic});
  uint64_t switches = 0;
  for (int64_t n : {8, 16, 24, 32}) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added()) << n;
    if (n <= 16) wait_for_switch_overs(k, ++switches);
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.misses, 3u);  // the generic variant, n = 8 and n = 16
  EXPECT_EQ(st.switch_overs, 2u);
  EXPECT_EQ(st.tiered_calls, 2u);  // n = 8 and 16; 24 and 32 run the fallback as hits
  EXPECT_EQ(st.hits, 2u);
}

// A kDynamic kernel has nothing to specialize: tiered or not, its one variant serves.
TEST(Tiered, DynamicKernelsAreNotTiered) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit, {.policy = Policy::kDynamic});
  for (int64_t n : {8, 24}) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added());
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.misses, 1u);
  EXPECT_EQ(st.tiered_calls, 0u);
  EXPECT_EQ(st.switch_overs, 0u);
}

// Destroying the Jit settles its background compiles: each has finished, or was cancelled
// before it started. The kernel outlives the Jit and its calls go on, right.
TEST(Tiered, TheJitSettlesItsBackgroundCompiles) {
  Vectors v(48);
  Kernel k;  // outlives the Jit
  {
    Jit jit(tiered_options());
    k = vector_add(jit);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added());
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.switch_overs + count_ending_with(st.reasons, " (cancelled)"), 1u)
      << ::testing::PrintToString(st.reasons);
  v.clear();
  k(v.a, v.b, v.c);  // its variant, or one compiled in this call
  EXPECT_TRUE(v.added());
  EXPECT_EQ(k.stats().tiered_calls, 1u);
}

// A background compile that failed is not the answer of a lookup that waits for the variant
// (Kernel::prewarm here): that lookup drops it and compiles again in its own thread, so that a
// transient failure heals, and a lasting one shows its own, current error.
TEST(Tiered, AWaitingLookupCompilesAgainWhatFailedInTheBackground) {
  Jit jit(tiered_options());
  Kernel k = vector_add(jit);
  Vectors v8(8), v32(32), v40(40);
  k(v8.a, v8.b, v8.c);
  wait_for_switch_overs(k, 1);
  fail_in_background(k, v32, 3);
  // The failure stays for tiered calls: they run the generic variant.
  uint64_t tiered = k.stats().tiered_calls;
  v32.clear();
  k(v32.a, v32.b, v32.c);
  EXPECT_TRUE(v32.added());
  EXPECT_EQ(k.stats().tiered_calls, tiered + 1);
  // The prewarm compiles it now, and it compiles: the failure was transient.
  k.prewarm({vector_signature(32)});
  KernelStats st = k.stats();
  EXPECT_EQ(st.misses, 4u);  // the generic variant, n = 8, n = 32 failed, n = 32
  EXPECT_EQ(st.variants, 3u);
  // Calls with its key run it.
  v32.clear();
  k(v32.a, v32.b, v32.c);
  EXPECT_TRUE(v32.added());
  EXPECT_EQ(k.stats().tiered_calls, tiered + 1);
  // A lasting failure: the prewarm compiles again (a miss) and throws that compile's error.
  fail_in_background(k, v40, 5);
  setenv("PRIMJIT_DUMP", "no_such_dump_option", 1);
  try {
    k.prewarm({vector_signature(40)});
    ADD_FAILURE() << "the prewarm of a variant that does not compile returned";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no_such_dump_option"), std::string::npos) << e.what();
  }
  unsetenv("PRIMJIT_DUMP");
  EXPECT_EQ(k.stats().misses, 6u);
  EXPECT_EQ(k.stats().variants, 3u);
  // It was not cached either: the next prewarm compiles it.
  k.prewarm({vector_signature(40)});
  EXPECT_EQ(k.stats().misses, 7u);
  EXPECT_EQ(k.stats().variants, 4u);
  v40.clear();
  k(v40.a, v40.b, v40.c);
  EXPECT_TRUE(v40.added());
}

// Failed background compiles stay in the Jit's cache as entries that the cache's capacity
// counts, evicted before any variant (shapes that keep failing neither fill memory nor push
// out working variants): once evicted, a tiered call with its key compiles it again.
TEST(Tiered, TheCacheCapacityBoundsFailedBackgroundCompiles) {
  JitOptions options = tiered_options();
  options.cache_capacity = 2;
  Jit jit(options);
  Kernel k = vector_add(jit);
  Vectors v8(8), v32(32), v40(40), v48(48);
  k(v8.a, v8.b, v8.c);
  wait_for_switch_overs(k, 1);
  // The cache holds the generic variant and n = 8's: each failure is evicted as it comes.
  fail_in_background(k, v32, 3);
  fail_in_background(k, v40, 4);
  fail_in_background(k, v48, 5);
  size_t reasons = k.stats().reasons.size();
  v8.clear();
  k(v8.a, v8.b, v8.c);
  EXPECT_TRUE(v8.added());
  EXPECT_EQ(k.stats().reasons.size(), reasons) << "a failure pushed out n = 8's variant";
  EXPECT_EQ(k.stats().evictions, 0u) << "a variant was evicted for a failure";
  v32.clear();
  k(v32.a, v32.b, v32.c);
  EXPECT_TRUE(v32.added());
  EXPECT_EQ(k.stats().reasons.size(), reasons + 1) << "n = 32 was not compiled again";
  wait_for_switch_overs(k, 2);
  v32.clear();
  k(v32.a, v32.b, v32.c);
  EXPECT_TRUE(v32.added());
}

// A stream of new shapes queues at most kMaxPending background compiles per Jit: beyond
// that, calls run the generic variant and queue nothing. Destroying the Jit cancels the
// compiles that have not started (held here, none has) without waiting for them; the kernel
// outlives it and compiles in the calling thread from then on.
TEST(Tiered, TheBacklogIsBoundedAndCancelledWithTheJit) {
  constexpr int kMax = jit::BackgroundCompiles::kMaxPending;
  constexpr int kShapes = kMax + 36;
  Kernel k;
  {
    HoldBackgroundCompiles hold;
    Jit jit(tiered_options());
    k = vector_add(jit, {.policy = Policy::kExact, .recompile_limit = 1000});
    for (int64_t n = 1; n <= kShapes; ++n) {
      Vectors v(n);
      k(v.a, v.b, v.c);
      ASSERT_TRUE(v.added()) << n;
    }
    KernelStats st = k.stats();
    EXPECT_EQ(st.tiered_calls, uint64_t{kShapes});
    EXPECT_EQ(st.misses, 1u);  // the generic variant; the others are queued
    EXPECT_EQ(st.reasons.size(), size_t{kMax} + 1) << "compiles queued beyond the bound";
    // A shape refused is refused again while the backlog is full.
    Vectors v(kShapes);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added());
    EXPECT_EQ(k.stats().reasons.size(), size_t{kMax} + 1);
  }  // held: would never return if it waited for the queued compiles
  KernelStats st = k.stats();
  EXPECT_EQ(count_ending_with(st.reasons, " (cancelled)"), kMax);
  EXPECT_EQ(st.misses, uint64_t{kMax} + 1);
  EXPECT_EQ(st.variants, 1u);
  EXPECT_EQ(st.switch_overs, 0u);
  // The Jit is gone: new shapes, and those whose compiles were cancelled, compile in the call.
  const uint64_t tiered = st.tiered_calls;
  for (int64_t n : {int64_t{2}, int64_t{kShapes + 1}}) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added()) << n;
  }
  st = k.stats();
  EXPECT_EQ(st.tiered_calls, tiered);
  EXPECT_EQ(st.misses, uint64_t{kMax} + 3);
  EXPECT_EQ(st.variants, 3u);
}

// A kernel without a generic variant waits for the variant its first call queued. When that
// compile is cancelled (the Jit destroyed meanwhile, while the kernel is being called), the
// call compiles the variant itself.
TEST(Tiered, ACallWaitingForACancelledCompileCompilesItself) {
  HoldBackgroundCompiles hold;
  auto jit = std::make_unique<Jit>(tiered_options());
  Kernel k = jit->kernel(twice_without_generic_variant(), {.policy = Policy::kExact});
  Vectors v(8);
  std::string error;
  std::thread call([&] {
    try {
      k(v.a, v.b);
    } catch (const std::exception& e) {
      error = e.what();
    }
  });
  // Its variant is queued (held) and its generic variant has failed: the call waits.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (count_ending_with(k.stats().reasons, " (failed)") < 1 &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  jit.reset();  // cancels the queued compile
  call.join();
  EXPECT_EQ(error, "");
  for (int64_t i = 0; i < 8; ++i) {
    ASSERT_EQ(v.b.data<float>()[i], v.a.data<float>()[i] * 2 + 1) << i;
  }
  KernelStats st = k.stats();
  EXPECT_EQ(st.reasons,
            (std::vector<std::string>{"first call (cancelled)", "generic variant (tiered) (failed)",
                                      "first call"}))
      << ::testing::PrintToString(st.reasons);
  EXPECT_EQ(st.variants, 1u);
}

// A stress test: the Jit destroyed while threads call its kernel with new shapes. Every call
// is right (no crash, no call on a variant that went with the Jit; ThreadSanitizer runs it),
// and the kernel goes on; what ~Jit does with the queue is TheBacklogIsBoundedAndCancelled-
// WithTheJit's to check.
TEST(Tiered, TheJitCanGoWhileItsKernelIsCalled) {
  auto jit = std::make_unique<Jit>(tiered_options());
  Kernel k = vector_add(*jit, {.policy = Policy::kExact, .recompile_limit = 1000});
  constexpr int kThreads = 4;
  std::atomic<int> wrong{0}, started{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int call = 0; call < 300; ++call) {
        Vectors v(1 + (call * kThreads + t) % 40);
        k(v.a, v.b, v.c);
        if (!v.added()) ++wrong;
        if (call == 0) ++started;
      }
    });
  }
  while (started.load() < kThreads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  jit.reset();
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int64_t n : {7, 41}) {
    Vectors v(n);
    k(v.a, v.b, v.c);
    EXPECT_TRUE(v.added()) << n;
  }
}

}  // namespace
}  // namespace primjit
