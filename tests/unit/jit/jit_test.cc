// The JIT runtime API on the CPU target: laziness, the shape-keyed cache, policies, the
// recompile limit, single-flight compilation under concurrency, eviction, argument checks.
#include <gtest/gtest.h>

#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <thread>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/tensor.h"
#include "tests/unit/jit/jit_test_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

using test::Pair;
using test::scale_function;

TEST(Jit, CompilesLazilyOncePerShape) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  EXPECT_EQ(k.stats().misses, 0u);  // nothing compiled yet
  Pair p8(8), p16(16);
  k(p8.a, p8.b, 2.0f);
  p8.expect_scaled(2.0f);
  k(p8.a, p8.b, 3.0f);
  p8.expect_scaled(3.0f);
  k(p16.a, p16.b, 0.5f);
  p16.expect_scaled(0.5f);
  k(p8.a.dl(), p8.b.dl(), 1.0);  // a DLTensor* and a double work the same
  KernelStats s = k.stats();
  EXPECT_EQ(s.calls, 4u);
  EXPECT_EQ(s.misses, 2u);
  EXPECT_EQ(s.hits, 2u);
  ASSERT_EQ(s.reasons.size(), 2u);
  EXPECT_EQ(s.reasons[0], "first call");
  EXPECT_EQ(s.reasons[1], "n: 8 -> 16");  // by the shape variable, once
  EXPECT_GT(s.compile.passes_ms, 0);
  EXPECT_GT(s.compile.host_ms, 0);
}

// A kernel is its function and what that function calls: a module's other functions do not
// change its fingerprint, so kernels of two modules that differ only there share a variant.
TEST(Jit, FunctionsTheKernelDoesNotReachAreNoPartOfIt) {
  auto module_with = [](const std::string& other) {
    return parse(R"(
@T.prim_func
def other(a: T.handle):
    T.func_attr({"target": T.target("llvm")})
    A = T.match_buffer(a, (4,), "float32")
    A[0] = T.float32()" +
                 other + ")\n")
        .with_function("scale", scale_function());
  };
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k1 = jit.kernel(module_with("1"), "scale");
  Kernel k2 = jit.kernel(module_with("2"), "scale");
  Pair p(8);
  k1(p.a, p.b, 2.0f);
  p.expect_scaled(2.0f);
  k2(p.a, p.b, 3.0f);
  p.expect_scaled(3.0f);
  EXPECT_EQ(k1.stats().misses, 1u);
  EXPECT_EQ(k2.stats().misses, 0u) << "the unrelated function made a variant of its own";
}

TEST(Jit, DynamicPolicyCompilesOneVariant) {
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kDynamic});
  for (int64_t n : {3, 8, 100}) {
    Pair p(n);
    k(p.a, p.b, 2.0f);
    p.expect_scaled(2.0f);
  }
  EXPECT_EQ(k.stats().misses, 1u);
  // Shapes that disagree about a dimension are refused before the call.
  Pair p(4);
  Tensor short_b = Tensor::zeros({3}, DataType::Float(32));
  EXPECT_ERROR_CONTAINS(k(p.a, short_b, 1.0f),
                        "argument #1 ('B') of 'scale': expected shape[0] to match A.shape[0] = 4 "
                        "(both are n), got 3");
  EXPECT_EQ(k.stats().misses, 1u);
}

TEST(Jit, AutoPolicyMakesAChangingDimensionSymbolic) {
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kAuto, .auto_threshold = 2});
  for (int64_t n : {4, 5, 6, 7, 8, 9}) {
    Pair p(n);
    k(p.a, p.b, 2.0f);
    p.expect_scaled(2.0f);
  }
  KernelStats s = k.stats();
  // 4 and 5 exact; 6 is a third value: A.shape[0] and B.shape[0] become symbolic; 7.. hit.
  EXPECT_EQ(s.misses, 3u);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_NE(s.reasons.back().find("n: 5 -> symbolic"), std::string::npos)  // the latest
      << s.reasons.back();
}

TEST(Jit, RecompileLimitErrorNamesTheChangingDimension) {
  Jit jit;
  Kernel k = jit.kernel(scale_function(), {.recompile_limit = 2});
  Pair p1(1), p2(2), p3(3);
  k(p1.a, p1.b, 1.0f);
  k(p2.a, p2.b, 1.0f);
  EXPECT_ERROR_CONTAINS(k(p3.a, p3.b, 1.0f),
                        "reached its recompile limit of 2 distinct argument keys (variants "
                        "compiled again after an eviction do not count)");
  EXPECT_ERROR_CONTAINS(k(p3.a, p3.b, 1.0f),
                        "A.shape[0] (changed in 1 of 2 compiles) keeps changing");
  EXPECT_EQ(k.stats().misses, 2u);
}

// The limit counts distinct keys: a variant evicted and compiled again is not a new one.
TEST(Jit, RecompileLimitCountsKeysNotCompiles) {
  Jit jit(JitOptions{.cache_capacity = 1, .disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(scale_function(), {.recompile_limit = 2});
  Pair p1(1), p2(2), p3(3);
  for (int round = 0; round < 3; ++round) {  // each call evicts the other shape's variant
    k(p1.a, p1.b, 2.0f);
    p1.expect_scaled(2.0f);
    k(p2.a, p2.b, 3.0f);
    p2.expect_scaled(3.0f);
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 6u);
  EXPECT_GE(s.evictions, 5u);
  ASSERT_EQ(s.reasons.size(), 6u);
  EXPECT_EQ(s.reasons[2], "compiled again after its eviction");
  EXPECT_ERROR_CONTAINS(k(p3.a, p3.b, 1.0f), "recompile limit of 2 distinct argument keys");
}

// A kernel making variants forever keeps bounded history: the last 256 reasons.
TEST(Jit, CompileHistoryIsBounded) {
  Jit jit(JitOptions{.cache_capacity = 8, .disk_cache = DiskCacheMode::kDisabled});
  Kernel k =
      jit.kernel(scale_function(),
                 {.target = Target::emu(), .policy = Policy::kExact, .recompile_limit = 1000});
  for (int64_t n = 1; n <= 300; ++n) {
    Pair p(n);
    k(p.a, p.b, 1.0f);
  }
  KernelStats s = k.stats();
  EXPECT_EQ(s.misses, 300u);
  ASSERT_EQ(s.reasons.size(), 256u);
  EXPECT_EQ(s.reasons.back(), "n: 299 -> 300");
}

TEST(Jit, RecompileLimitCanFallBackToTheDynamicVariant) {
  Jit jit;
  Kernel k = jit.kernel(
      scale_function(),
      {.recompile_limit = 2, .on_recompile_limit = OnRecompileLimit::kFallbackToDynamic});
  for (int64_t n : {1, 2, 3, 4, 5}) {
    Pair p(n);
    k(p.a, p.b, 4.0f);
    p.expect_scaled(4.0f);
  }
  EXPECT_EQ(k.stats().misses, 3u);  // two exact variants, then one dynamic for all others
}

TEST(Jit, BadArgumentsThrowBeforeAnyCompile) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  Pair p(4);
  Tensor ints = Tensor::zeros({4}, DataType::Int(32));
  Tensor matrix = Tensor::zeros({2, 2}, DataType::Float(32));
  EXPECT_ERROR_CONTAINS(k(p.a, p.b), "'scale' takes 3 arguments, got 2");
  EXPECT_ERROR_CONTAINS(k(p.a, ints, 1.0f),
                        "argument #1 ('B') of 'scale': expected dtype float32, got int32");
  EXPECT_ERROR_CONTAINS(k(matrix, p.b, 1.0f), "expected 1 dimensions, got 2");
  EXPECT_ERROR_CONTAINS(k(p.a, 3, 1.0f), "expected a tensor (float32), got a int");
  EXPECT_ERROR_CONTAINS(k(p.a, p.b, p.a), "expected a float32 scalar, got a tensor");
  DLTensor on_gpu = *p.a.dl();
  on_gpu.device = {kDLCUDA, 0};
  EXPECT_ERROR_CONTAINS(k(&on_gpu, p.b, 1.0f), "expected a tensor on cpu");
  DLTensor null_data = *p.a.dl();
  null_data.data = nullptr;
  EXPECT_ERROR_CONTAINS(k(&null_data, p.b, 1.0f), "data pointer is null");
  EXPECT_EQ(k.stats().misses, 0u);
}

TEST(Jit, EightThreadsOneNewKeyCompileOnce) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      Pair p(64);
      k(p.a, p.b, static_cast<float>(t));
      bool ok = true;
      for (int i = 0; i < 64; ++i) ok &= p.b.data<float>()[i] == p.a.data<float>()[i] * t;
      correct += ok;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(correct.load(), 8);
  EXPECT_EQ(k.stats().misses, 1u);
  EXPECT_EQ(k.stats().calls, 8u);
}

TEST(Jit, EightThreadsEightKeysCompileEight) {
  Jit jit;
  Kernel k = jit.kernel(scale_function());
  std::vector<std::thread> threads;
  std::atomic<int> correct{0};
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 3; ++rep) {
        Pair p(10 + t);
        k(p.a, p.b, 2.0f);
        bool ok = true;
        for (int i = 0; i < 10 + t; ++i) ok &= p.b.data<float>()[i] == p.a.data<float>()[i] * 2;
        correct += ok;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(correct.load(), 24);
  EXPECT_EQ(k.stats().misses, 8u);
}

TEST(Jit, AFailingCompileReachesEveryWaiterAndIsNotCached) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def broken(A: T.Buffer((4,), "float32")):
    T.func_attr({"target": T.target("llvm")})
    A[0] = T.call_extern("float32", "primjit_no_such_function", A[1])
)")
                            ->lookup("broken"));
  Tensor a = Tensor::zeros({4}, DataType::Float(32));
  std::vector<std::thread> threads;
  std::atomic<int> errors{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      std::string message = test::error_of([&] { k(a); });
      errors += message.find("primjit_no_such_function") != std::string::npos;
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(errors.load(), 4);
  uint64_t misses = k.stats().misses;
  EXPECT_ERROR_CONTAINS(k(a), "primjit_no_such_function");
  EXPECT_EQ(k.stats().misses, misses + 1);  // tried again, not a cached success
  KernelStats st = k.stats();
  EXPECT_EQ(st.variants, 0u);  // failed compiles leave no variant
  ASSERT_FALSE(st.reasons.empty());
  EXPECT_NE(st.reasons.back().find("(failed)"), std::string::npos) << st.reasons.back();
}

// Kernels of one function share variants; when the Jit evicts one, every kernel stops running
// it (each compiles it again), not only the kernel that made it.
TEST(Jit, EvictionReachesEveryKernelSharingTheVariant) {
  Jit jit({.cache_capacity = 1, .disk_cache = DiskCacheMode::kDisabled});
  Kernel k1 = jit.kernel(scale_function()), k2 = jit.kernel(scale_function());
  Pair a(8), b(16);
  k1(a.a, a.b, 2.0f);
  k2(a.a, a.b, 3.0f);  // k2 finds k1's variant and keeps it among its recent ones
  a.expect_scaled(3.0f);
  EXPECT_EQ(k2.stats().misses, 0u);
  k1(b.a, b.b, 2.0f);  // capacity 1: A's variant is evicted
  EXPECT_EQ(k1.stats().evictions, 1u);
  k2(a.a, a.b, 4.0f);
  a.expect_scaled(4.0f);
  EXPECT_EQ(k2.stats().misses, 1u);  // compiled again, not run from k2's recent variants
}

// Variants run on CUDA device 0: a tensor on another device is refused before anything
// compiles (no driver needed to say so).
// A kernel runs on the device of its tensors (each device its own variant); tensors on two
// devices in one call are refused before anything compiles.
TEST(Jit, CudaTensorsOnTwoDevicesAreRefused) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def copy(A: T.Buffer((8,), "float32"), B: T.Buffer((8,), "float32")):
    T.func_attr({"target": T.target("cuda", host="llvm")})
    tx = T.launch_thread("threadIdx.x", 8)
    B[tx] = A[tx]
)")
                            ->lookup("copy"),
                        {.target = Target::cuda()});
  alignas(64) static float host[2][16];  // never dereferenced
  int64_t n = 8;
  DLTensor a{host[0], {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  DLTensor b{host[1], {kDLCUDA, 1}, 1, {kDLFloat, 32, 1}, &n, nullptr, 0};
  EXPECT_ERROR_CONTAINS(k(&a, &b),
                        "argument #1 ('B') of 'copy' is on CUDA device 1, but argument #0 ('A') is "
                        "on CUDA device 0: a kernel runs on one device; copy the tensors to one "
                        "device (Tensor::to)");
  EXPECT_EQ(k.stats().misses, 0u);
}

// Two kernels whose variants differ only in options that do not change the code (fast_math
// on the CPU) share one disk entry: the second compiles quietly beside the first instead of
// reporting the entry as broken and rewriting it.
TEST(Jit, KernelsSharingADiskEntryInOneSessionDoNotRewriteIt) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("primjit_jit_test_shared_entry." + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  JitOptions options;
  options.disk_cache = DiskCacheMode::kEnabled;
  options.cache_dir = dir.string();
  std::vector<std::string> warnings;
  LogLevel saved = log_level();
  set_log_level(LogLevel::kWarning);
  set_log_sink([&](LogLevel level, std::string_view text) {
    if (level == LogLevel::kWarning) warnings.emplace_back(text);
  });
  {
    Jit jit(options);
    Kernel k1 = jit.kernel(scale_function());
    Kernel k2 = jit.kernel(scale_function(), {.fast_math = true});
    Pair p(8);
    k1(p.a, p.b, 2.0f);
    auto files = [&] {  // name and contents of each entry
      std::vector<std::pair<std::string, std::string>> out;
      for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".pjv") continue;  // not the MAC key
        std::ifstream in(e.path(), std::ios::binary);
        out.emplace_back(e.path().string(), std::string(std::istreambuf_iterator<char>(in), {}));
      }
      return out;
    };
    auto before = files();
    ASSERT_EQ(before.size(), 1u);
    k2(p.a, p.b, 5.0f);
    p.expect_scaled(5.0f);
    EXPECT_EQ(k2.stats().misses, 1u);
    EXPECT_EQ(k2.stats().disk_hits, 0u);
    EXPECT_TRUE(files() == before);  // the entry was not rewritten (its suffix stays)
  }
  set_log_sink({});
  set_log_level(saved);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  std::filesystem::remove_all(dir);
}

TEST(Jit, EvictsTheLeastRecentlyUsedVariant) {
  Jit jit({.cache_capacity = 2});
  Kernel k = jit.kernel(scale_function());
  Pair p1(1), p2(2), p3(3);
  k(p1.a, p1.b, 1.0f);
  k(p2.a, p2.b, 1.0f);
  k(p1.a, p1.b, 1.0f);  // 1 is now more recent than 2
  k(p3.a, p3.b, 5.0f);  // evicts 2
  p3.expect_scaled(5.0f);
  EXPECT_EQ(k.stats().evictions, 1u);
  k(p1.a, p1.b, 6.0f);  // still cached
  p1.expect_scaled(6.0f);
  EXPECT_EQ(k.stats().misses, 3u);
  k(p2.a, p2.b, 7.0f);  // compiled again
  p2.expect_scaled(7.0f);
  EXPECT_EQ(k.stats().misses, 4u);
}

TEST(Jit, EvictionWhileAnotherThreadCallsIsSafe) {
  Jit jit({.cache_capacity = 1});
  Kernel k = jit.kernel(scale_function());
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0};
  std::thread caller([&] {
    Pair p(32);
    while (!stop) {
      k(p.a, p.b, 3.0f);
      for (int i = 0; i < 32; ++i) bad += p.b.data<float>()[i] != p.a.data<float>()[i] * 3;
    }
  });
  for (int n = 1; n <= 12; ++n) {
    Pair p(n);
    k(p.a, p.b, 2.0f);
    p.expect_scaled(2.0f);
  }
  stop = true;
  caller.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(k.stats().evictions, 0u);
}

// Threads that keep switching shapes replace the kernel's last variant under each other's
// lock-free calls, while a capacity of two evicts variants: no call may run freed code.
TEST(Jit, ThreadsSwitchingShapesUnderEvictionAllGetRightResults) {
  Jit jit({.cache_capacity = 2});
  Kernel k = jit.kernel(scale_function(), {.policy = Policy::kExact, .recompile_limit = 1000});
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      Pair small(5 + t % 2), large(40 + t / 2);  // four shapes, two cached at a time
      for (int rep = 0; rep < 60; ++rep) {
        const Pair& p = rep % 2 ? small : large;
        float s = static_cast<float>(rep % 7);
        k(p.a, p.b, s);
        for (int64_t i = 0; i < p.a.numel(); ++i)
          bad += p.b.data<float>()[i] != p.a.data<float>()[i] * s;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
  KernelStats s = k.stats();
  EXPECT_EQ(s.calls, 240u);
  EXPECT_EQ(s.hits + s.misses, 240u);
  EXPECT_GT(s.evictions, 0u);
}

TEST(Jit, EmuTargetRunsDeviceKernelsInTheInterpreterWithTheSameCaching) {
  Jit jit;
  Kernel k = jit.kernel(parse(R"(
@T.prim_func
def reverse(a: T.handle, b: T.handle):
    T.func_attr({"target": T.target("cuda", arch="sm_90", host="llvm")})
    n = T.int32()
    A = T.match_buffer(a, (n, 64), "float32")
    B = T.match_buffer(b, (n, 64), "float32")
    bx = T.launch_thread("blockIdx.x", n)
    tx = T.launch_thread("threadIdx.x", 64)
    S = T.alloc_buffer((64,), "float32", scope="shared")
    S[tx] = A[bx, tx]
    T.tvm_storage_sync("shared")
    B[bx, tx] = S[63 - tx]
)")
                            ->lookup("reverse"),
                        {.target = Target::emu()});
  for (int64_t n : {3, 5, 3}) {
    Tensor a = Tensor::zeros({n, 64}, DataType::Float(32)),
           b = Tensor::zeros({n, 64}, DataType::Float(32));
    std::iota(a.data<float>(), a.data<float>() + n * 64, 0.0f);
    k(a, b);
    for (int64_t r = 0; r < n; ++r)
      for (int c = 0; c < 64; ++c)
        ASSERT_EQ(b.data<float>()[r * 64 + c], a.data<float>()[r * 64 + 63 - c]);
  }
  EXPECT_EQ(k.stats().misses, 2u);
  EXPECT_EQ(k.stats().hits, 1u);
  // A shape that conflicts with a bound dimension is refused before anything compiles.
  Tensor a = Tensor::zeros({2, 64}, DataType::Float(32));
  Tensor b = Tensor::zeros({3, 64}, DataType::Float(32));
  EXPECT_ERROR_CONTAINS(k(a, b), "expected shape[0] to match A.shape[0] = 2 (both are n), got 3");
  Tensor wide = Tensor::zeros({2, 65}, DataType::Float(32));
  EXPECT_ERROR_CONTAINS(k(a, wide), "expected shape[1] = 64, got 65");
  EXPECT_EQ(k.stats().misses, 2u);
}

// Kernel::compiled: the variant a call with the signature runs, callable without the Kernel's
// dispatch, held past its eviction, its Kernel and its Jit.
TEST(Jit, CompiledVariantRunsTheKernelsCodeAndOutlivesItsCache) {
  const Signature eight = {ArgSpec::tensor(DataType::Float(32), {8}),
                           ArgSpec::tensor(DataType::Float(32), {8}),
                           ArgSpec::scalar(DataType::Float(32))};
  CompiledVariant outlives_jit;
  {
    Jit jit({.cache_capacity = 1, .disk_cache = DiskCacheMode::kDisabled});
    CompiledVariant v;
    {
      Kernel k = jit.kernel(scale_function());
      v = k.compiled(eight);
      EXPECT_EQ(k.stats().misses, 1u);
      EXPECT_EQ(k.stats().calls, 0u);
      Pair p8(8);
      k(p8.a, p8.b, 2.0f);  // the variant a call runs: no second compile
      p8.expect_scaled(2.0f);
      EXPECT_EQ(k.stats().misses, 1u);
      Pair p9(9);
      k(p9.a, p9.b, 1.0f);  // capacity 1: evicts the 8-element variant
      EXPECT_EQ(k.stats().evictions, 1u);
      outlives_jit = k.compiled(eight);  // compiled again
      EXPECT_EQ(k.stats().misses, 3u);
    }
    ASSERT_NE(v.packed_function(), nullptr);
    EXPECT_EQ(v.packed_self(), nullptr);  // it launches no kernel: no kernel table
    Pair p(8);
    Arg args[] = {p.a, p.b, 4.0f};
    v.call(args);
    p.expect_scaled(4.0f);
    PJValue packed[] = {args[0].value, args[1].value, Arg(5.0f).value};
    PJValue result{};
    ASSERT_EQ(v.packed_function()(v.packed_self(), packed, 3, &result), 0);
    p.expect_scaled(5.0f);
    // The compiled code still checks its arguments: this variant is for 8 elements.
    Pair p16(16);
    Arg wrong[] = {p16.a, p16.b, 1.0f};
    EXPECT_ERROR_CONTAINS(v.call(wrong), "A.shape[0]");
    // And it is checked as a Kernel call is: overlapping tensors and wrong types are refused
    // before the code runs.
    Arg same[] = {p.a, p.a, 1.0f};
    EXPECT_ERROR_CONTAINS(v.call(same), "overlap in memory");
    Arg scalar_for_tensor[] = {1.0f, p.b, 1.0f};
    EXPECT_ERROR_CONTAINS(v.call(scalar_for_tensor), "expected a tensor");
    p.expect_scaled(5.0f);  // untouched by the refused calls
  }
  Pair p(8);
  Arg args[] = {p.a, p.b, 6.0f};
  outlives_jit.call(args);
  p.expect_scaled(6.0f);
  EXPECT_ERROR_CONTAINS(CompiledVariant().call(args), "empty CompiledVariant");
  EXPECT_EQ(CompiledVariant().packed_function(), nullptr);
}

TEST(Tensor, ZerosDlpackRoundTripAndErrors) {
  Tensor t = Tensor::zeros({2, 3}, DataType::Int(16));
  EXPECT_EQ(t.numel(), 6);
  EXPECT_EQ(t.nbytes(), 12u);
  t.data<int16_t>()[5] = 7;
  DLManagedTensor* exported = t.to_dlpack();
  Tensor back = Tensor::from_dlpack(exported);  // takes ownership, shares memory
  EXPECT_EQ(back.data<int16_t>()[5], 7);
  EXPECT_EQ(back.shape(), (std::vector<int64_t>{2, 3}));
  Tensor copy = back.to({kDLCPU, 0});
  back.data<int16_t>()[5] = 8;
  EXPECT_EQ(copy.data<int16_t>()[5], 7);
  EXPECT_ERROR_CONTAINS(Tensor::zeros({-1}, DataType::Float(32)), "negative dimension");
  EXPECT_ERROR_CONTAINS(Tensor().dl(), "empty Tensor");
}

}  // namespace
}  // namespace primjit
