// The persistent disk cache: the file format and its checks, the Jit's use of it across
// processes (the tests spawn copies of this test program), corruption recovery, concurrent
// writers, the size cap; prewarm and compile_async.
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "jit/runtime/disk_cache.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/tensor.h"
#include "primjit/version.h"
#include "tests/unit/jit/disk_cache_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;

using test::TempDir;
using namespace test::disk;

TEST(DiskCacheFormat, PayloadRoundTrips) {
  jit::CachedVariant v = sample_variant();
  std::string payload = jit::encode_variant(v);
  jit::CachedVariant back;
  std::string problem;
  ASSERT_TRUE(jit::decode_variant(payload, &back, &problem)) << problem;
  expect_same(v, back);
}

TEST(DiskCacheFormat, EveryTruncationAndTrailingByteIsRejected) {
  std::string payload = jit::encode_variant(sample_variant());
  for (size_t n = 0; n < payload.size(); ++n) {
    jit::CachedVariant back;
    std::string problem;
    EXPECT_FALSE(jit::decode_variant(std::string_view(payload).substr(0, n), &back, &problem))
        << "prefix of " << n << " bytes decoded";
  }
  jit::CachedVariant back;
  std::string problem;
  EXPECT_FALSE(jit::decode_variant(payload + "x", &back, &problem));
  EXPECT_NE(problem.find("malformed"), std::string::npos);
}

TEST(DiskCacheFormat, HashSeesEveryByte) {
  std::string bytes(1000, 'a');
  uint64_t h = jit::hash_bytes(bytes);
  for (size_t i = 0; i < bytes.size(); i += 7) {
    std::string flipped = bytes;
    flipped[i] ^= 1;
    EXPECT_NE(jit::hash_bytes(flipped), h) << "byte " << i;
  }
  EXPECT_NE(jit::hash_bytes(bytes.substr(0, 999)), h);
  EXPECT_NE(jit::hash_bytes(bytes, 1), h);
}

TEST(DiskCacheFiles, StoreThenLoad) {
  TempDir dir;
  jit::DiskCache cache(dir.str(), 1 << 20);
  EXPECT_EQ(cache.load("key one\n").status, jit::DiskCache::Status::kMissing);
  std::string problem;
  ASSERT_TRUE(cache.store("key one\n", sample_variant(), &problem)) << problem;
  jit::DiskCache::Lookup found = cache.load("key one\n");
  ASSERT_EQ(found.status, jit::DiskCache::Status::kHit) << found.problem;
  expect_same(found.variant, sample_variant());
  EXPECT_EQ(cache.load("key two\n").status, jit::DiskCache::Status::kMissing);
  EXPECT_EQ(dir.files(kEntry).size(), 1u);
  EXPECT_TRUE(dir.files(".tmp").empty());
}

// Each kind of damage is reported with what is wrong, and the entry is not used.
TEST(DiskCacheFiles, DamagedFilesAreRejectedWithAReason) {
  TempDir dir;
  jit::DiskCache cache(dir.str(), 1 << 20);
  const std::string key = "primjit 1\nllvm 19\nkey 8\n";
  std::string problem;
  ASSERT_TRUE(cache.store(key, sample_variant(), &problem));
  const fs::path path = cache.path_of(key);
  const std::string good = read_bytes(path);

  auto expect_rejected = [&](const std::string& bytes, const std::string& why) {
    write_bytes(path, bytes);
    jit::DiskCache::Lookup found = cache.load(key);
    EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected) << why;
    EXPECT_NE(found.problem.find(why), std::string::npos) << found.problem;
    EXPECT_NE(found.problem.find(path.string()), std::string::npos) << found.problem;
  };
  for (size_t at : {good.size() - 1, good.size() / 2, size_t{50}, size_t{12}}) {
    std::string flipped = good;
    flipped[at] ^= 0x10;
    expect_rejected(flipped, "fails its MAC check");
  }
  expect_rejected(good.substr(0, good.size() - 3), "truncated");
  expect_rejected(good.substr(0, 20), "not a primjit cache file");
  expect_rejected(good + "extra", "truncated or has trailing bytes");
  expect_rejected(std::string(4096, '\x5a'), "not a primjit cache file");
  expect_rejected("", "not a primjit cache file");

  // A valid entry for another key at this key's path (another version wrote it).
  std::string payload = jit::encode_variant(sample_variant());
  expect_rejected(cache.seal("primjit 2\nllvm 19\nkey 8\n", payload),
                  "expected 'primjit 1', found 'primjit 2'");
  // An entry of the format before kernel handles came through `self` (its host code would
  // read handles from globals nobody fills): refused by its format, though its MAC is good.
  expect_rejected(with_format(good, kOldFormat, dir.str()), "has format 2, this primjit writes 3");
  // The same entry sealed with another directory's key (someone else's cache): never trusted.
  jit::DiskCache other(dir.str() + "/other", 1 << 20);
  expect_rejected(other.seal(key, payload), "fails its MAC check");

  write_bytes(path, good);  // and the good file still loads
  EXPECT_EQ(cache.load(key).status, jit::DiskCache::Status::kHit);
}

TEST(DiskCacheFiles, SizeCapRemovesTheLeastRecentlyUsed) {
  TempDir dir;
  std::string payload = jit::encode_variant(sample_variant());
  // Room for about three entries.
  jit::DiskCache cache(dir.str(), 3 * (payload.size() + 100));
  std::string problem;
  auto age = [&](const std::string& key, int seconds_ago) {
    fs::last_write_time(cache.path_of(key),
                        fs::file_time_type::clock::now() - std::chrono::seconds(seconds_ago));
  };
  ASSERT_TRUE(cache.store("a\n", sample_variant(), &problem));
  age("a\n", 300);
  ASSERT_TRUE(cache.store("b\n", sample_variant(), &problem));
  age("b\n", 200);
  ASSERT_TRUE(cache.store("c\n", sample_variant(), &problem));
  age("c\n", 100);
  ASSERT_EQ(cache.load("a\n").status, jit::DiskCache::Status::kHit);  // a is now the newest
  ASSERT_TRUE(cache.store("d\n", sample_variant(), &problem));
  // Over the cap, a batch goes, down to 90 % of it: room for two of the four.
  EXPECT_EQ(dir.files(kEntry).size(), 2u);
  EXPECT_EQ(cache.load("b\n").status, jit::DiskCache::Status::kMissing);  // the oldest went,
  EXPECT_EQ(cache.load("c\n").status, jit::DiskCache::Status::kMissing);  // then the next
  EXPECT_EQ(cache.load("a\n").status, jit::DiskCache::Status::kHit);
  EXPECT_EQ(cache.load("d\n").status, jit::DiskCache::Status::kHit);
}

TEST(DiskCacheFiles, UncreatableDirectoryIsAnError) {
  TempDir dir;
  write_bytes(dir.str() + "/file", "x");
  try {
    jit::DiskCache cache(dir.str() + "/file/sub", 1 << 20);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot create the disk cache directory"),
              std::string::npos);
    EXPECT_NE(std::string(e.what()).find("PRIMJIT_CACHE_DIR"), std::string::npos);
  }
}

// --- the Jit with a disk cache ---------------------------------------------------------------

// The child process: runs the three sizes against PRIMJIT_TEST_CHILD_DIR and writes its stats
// to PRIMJIT_TEST_CHILD_OUT. Run only by the tests below (it is disabled otherwise).
TEST(DiskCacheChild, DISABLED_Run) {
  const char* dir = std::getenv("PRIMJIT_TEST_CHILD_DIR");
  const char* out = std::getenv("PRIMJIT_TEST_CHILD_OUT");
  ASSERT_TRUE(dir != nullptr && out != nullptr);
  Jit jit(on_disk(dir));
  Kernel k = jit.kernel(axpb_function());
  bool ok = run_sizes(k);
  KernelStats s = k.stats();
  std::ofstream(out) << s.misses << " " << s.disk_hits << " " << s.compile.host_ms << " "
                     << s.compile.passes_ms << " " << ok << " " << s.remote_hits << "\n";
}

TEST(JitDiskCache, SecondProcessLoadsEveryVariantWithoutCompiling) {
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    Kernel k = jit.kernel(axpb_function());
    ASSERT_TRUE(run_sizes(k));
    KernelStats s = k.stats();
    EXPECT_EQ(s.misses, 3u);
    EXPECT_EQ(s.disk_hits, 0u);
    EXPECT_GT(s.compile.disk_ms, 0.0);  // the writes
  }
  EXPECT_EQ(dir.files(kEntry).size(), 3u);
  std::string out = dir.str() + "/child.out";
  ChildStats child = wait_child(spawn_child(dir.str(), out), out);
  EXPECT_EQ(child.ok, 1);
  EXPECT_EQ(child.misses, 0u);
  EXPECT_EQ(child.disk_hits, 3u);
  EXPECT_EQ(child.host_ms, 0.0);    // no LLVM code generation
  EXPECT_EQ(child.passes_ms, 0.0);  // not even lowering
}

TEST(JitDiskCache, DiskHitsAreCountedApartFromMemoryHits) {
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  Jit jit(on_disk(dir.str()));
  Kernel k = jit.kernel(axpb_function());
  ASSERT_TRUE(run_sizes(k));
  ASSERT_TRUE(run_sizes(k));
  KernelStats s = k.stats();
  EXPECT_EQ(s.calls, 6u);
  EXPECT_EQ(s.disk_hits, 3u);
  EXPECT_EQ(s.hits, 3u);
  EXPECT_EQ(s.misses, 0u);
  EXPECT_EQ(s.variants, 3u);
  EXPECT_GT(s.compile.disk_ms, 0.0);
  EXPECT_EQ(s.compile.host_ms, 0.0);
  ASSERT_EQ(s.reasons.size(), 3u);
  EXPECT_EQ(s.reasons[0], "first call (disk cache)");
}

// Flipped byte, truncation, garbage, another version, an older entry format: each is reported,
// compiled again, replaced by a good entry, and the results stay right.
TEST(JitDiskCache, DamagedEntriesAreRecompiledAndReplaced) {
  using Mutation = std::function<std::string(std::string, const jit::DiskCache&)>;
  auto mutations = std::vector<std::pair<std::string, Mutation>>{
      {"flipped byte",
       [](std::string b, const jit::DiskCache&) {
         b[b.size() / 2] ^= 0x40;
         return b;
       }},
      {"truncated",
       [](std::string b, const jit::DiskCache&) { return b.substr(0, b.size() * 2 / 3); }},
      {"garbage", [](std::string, const jit::DiskCache&) { return std::string(1000, '\x13'); }},
      {"other version",
       [](std::string b, const jit::DiskCache& cache) {
         // Rewrite the key's primjit version and seal it again with the directory's own key,
         // so only the version tells the entry apart.
         std::string_view key_view, payload;
         std::string problem;
         if (!cache.unseal(b, &key_view, &payload, &problem)) return problem;
         std::string key(key_view);
         // Same version, another build of the library (a rebuilt primjit must not load it).
         std::string mine = std::string("\nprimjit ") + version() + " build ";
         size_t at = key.find(mine);
         if (at == std::string::npos) return std::string("version line not found");
         key.replace(at, mine.size(), "\nprimjit 0.0.0-other build ");
         return cache.seal(key, payload);
       }},
  };
  std::string cache_dir;  // the directory of the iteration running, for the format mutation
  mutations.emplace_back("old format", [&](std::string b, const jit::DiskCache&) {
    return with_format(std::move(b), kOldFormat, cache_dir);
  });
  for (const auto& [what, mutate] : mutations) {
    SCOPED_TRACE(what);
    TempDir dir;
    cache_dir = dir.str();
    {
      Jit jit(on_disk(dir.str()));
      ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
    }
    std::vector<fs::path> files = dir.files(kEntry);
    ASSERT_EQ(files.size(), 3u);
    {
      jit::DiskCache cache(dir.str(), 1 << 30);
      for (const fs::path& f : files) write_bytes(f, mutate(read_bytes(f), cache));
    }
    {
      Warnings warnings;
      Jit jit(on_disk(dir.str()));
      Kernel k = jit.kernel(axpb_function());
      EXPECT_TRUE(run_sizes(k));
      KernelStats s = k.stats();
      EXPECT_EQ(s.misses, 3u);
      EXPECT_EQ(s.disk_hits, 0u);
      std::vector<std::string> lines = warnings.lines();
      ASSERT_EQ(lines.size(), 3u);
      EXPECT_NE(lines[0].find("disk cache entry"), std::string::npos) << lines[0];
      EXPECT_NE(lines[0].find("compiling kernel 'axpb' again and replacing the entry"),
                std::string::npos)
          << lines[0];
      if (what == "other version") {
        EXPECT_NE(lines[0].find("found 'primjit 0.0.0-other build "), std::string::npos)
            << lines[0];
      }
      if (what == "old format") {
        EXPECT_NE(lines[0].find("has format 2, this primjit writes 3"), std::string::npos)
            << lines[0];
      }
    }
    Jit jit(on_disk(dir.str()));  // replaced: good entries again
    Kernel k = jit.kernel(axpb_function());
    EXPECT_TRUE(run_sizes(k));
    EXPECT_EQ(k.stats().disk_hits, 3u);
    EXPECT_EQ(dir.files(kEntry).size(), 3u);
  }
}

TEST(JitDiskCache, TwoProcessesWritingTheSameKeysBothSucceed) {
  TempDir dir;
  std::string out1 = dir.str() + "/one.out", out2 = dir.str() + "/two.out";
  pid_t p1 = spawn_child(dir.str(), out1);
  pid_t p2 = spawn_child(dir.str(), out2);
  ChildStats c1 = wait_child(p1, out1), c2 = wait_child(p2, out2);
  EXPECT_EQ(c1.ok, 1);
  EXPECT_EQ(c2.ok, 1);
  EXPECT_EQ(c1.misses + c1.disk_hits, 3u);
  EXPECT_EQ(c2.misses + c2.disk_hits, 3u);
  EXPECT_EQ(dir.files(kEntry).size(), 3u);
  EXPECT_TRUE(dir.files(".tmp").empty());
  Jit jit(on_disk(dir.str()));  // whichever rename won, each file is valid
  Kernel k = jit.kernel(axpb_function());
  EXPECT_TRUE(run_sizes(k));
  EXPECT_EQ(k.stats().disk_hits, 3u);
}

TEST(JitDiskCache, EnvironmentCanTurnItOff) {
  TempDir dir;
  const char* saved = std::getenv("PRIMJIT_CACHE");
  std::string saved_value = saved != nullptr ? saved : "";
  setenv("PRIMJIT_CACHE", "0", 1);
  JitOptions o = on_disk(dir.str());
  o.disk_cache = DiskCacheMode::kEnvironment;
  {
    Jit jit(o);
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  EXPECT_TRUE(dir.files(kEntry).empty());
  setenv("PRIMJIT_CACHE", "1", 1);
  {
    Jit jit(o);
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  EXPECT_EQ(dir.files(kEntry).size(), 3u);
  o.disk_cache = DiskCacheMode::kDisabled;
  {
    Jit jit(o);
    Kernel k = jit.kernel(axpb_function());
    ASSERT_TRUE(run_sizes(k));
    EXPECT_EQ(k.stats().disk_hits, 0u);
  }
  if (saved != nullptr) {
    setenv("PRIMJIT_CACHE", saved_value.c_str(), 1);
  } else {
    unsetenv("PRIMJIT_CACHE");
  }
}

TEST(JitDiskCache, OtherOptionsAndFunctionsGetTheirOwnEntries) {
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function(), {.policy = Policy::kDynamic})));
  }
  EXPECT_EQ(dir.files(kEntry).size(), 4u);  // three exact variants and the dynamic one
  {
    JitOptions o2 = on_disk(dir.str());
    o2.opt_level = 1;  // other code: its own entries
    Jit jit(o2);
    Kernel k = jit.kernel(axpb_function());
    ASSERT_TRUE(run_sizes(k));
    EXPECT_EQ(k.stats().misses, 3u);
  }
  EXPECT_EQ(dir.files(kEntry).size(), 7u);
  // emu variants compile nothing and are not stored.
  Jit jit(on_disk(dir.str()));
  Kernel emu = jit.kernel(axpb_function(), {.target = Target::emu()});
  ASSERT_TRUE(run_sizes(emu));
  EXPECT_EQ(emu.stats().disk_hits, 0u);
  EXPECT_EQ(dir.files(kEntry).size(), 7u);
  // Another function of the same name and signature: the key holds the function's text, so it
  // compiles its own variants (nothing of the first axpb is loaded) and computes its own result.
  PrimFunc other = axpb_function(2);
  ASSERT_EQ(other->global_symbol(), axpb_function()->global_symbol());
  Kernel k2 = jit.kernel(other);
  ASSERT_TRUE(run_sizes(k2, 2.0f));
  KernelStats s2 = k2.stats();
  EXPECT_EQ(s2.misses, 3u);
  EXPECT_EQ(s2.disk_hits, 0u);
  EXPECT_EQ(dir.files(kEntry).size(), 10u);
  // And a later session loads each function's own entries.
  Jit later(on_disk(dir.str()));
  Kernel first_again = later.kernel(axpb_function()), other_again = later.kernel(other);
  EXPECT_TRUE(run_sizes(first_again));
  EXPECT_TRUE(run_sizes(other_again, 2.0f));
  EXPECT_EQ(first_again.stats().disk_hits, 3u);
  EXPECT_EQ(other_again.stats().disk_hits, 3u);
  EXPECT_EQ(first_again.stats().misses + other_again.stats().misses, 0u);
}

// --- prewarm and compile_async -----------------------------------------------------------------

Signature signature(int64_t n) {
  return {ArgSpec::tensor(DataType::Float(32), {n}), ArgSpec::tensor(DataType::Float(32), {n}),
          ArgSpec::scalar(DataType::Float(32))};
}

TEST(JitPrewarm, CompilesWhatLaterCallsUse) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(axpb_function());
  k.prewarm({signature(8), signature(16), signature(24)});
  KernelStats before = k.stats();
  EXPECT_EQ(before.misses, 3u);
  EXPECT_EQ(before.calls, 0u);
  EXPECT_EQ(before.variants, 3u);
  ASSERT_TRUE(run_sizes(k));
  KernelStats after = k.stats();
  EXPECT_EQ(after.misses, 3u);  // the calls compiled nothing
  EXPECT_EQ(after.hits, 3u);
  k.prewarm({signature(8)});  // already there: nothing happens
  EXPECT_EQ(k.stats().misses, 3u);
}

TEST(JitPrewarm, CompileAsyncMakesTheSameVariantAsACall) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel lazy = jit.kernel(axpb_function());
  ASSERT_TRUE(run_sizes(lazy));
  Jit jit2(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit2.kernel(axpb_function());
  std::vector<std::future<void>> futures;
  for (int64_t n : kSizes) futures.push_back(k.compile_async(signature(n)));
  for (auto& f : futures) f.get();
  EXPECT_EQ(k.stats().misses, 3u);
  EXPECT_EQ(k.stats().reasons.size(), 3u);
  ASSERT_TRUE(run_sizes(k));
  EXPECT_EQ(k.stats().misses, 3u);
  EXPECT_EQ(k.stats().hits, 3u);
  EXPECT_EQ(lazy.stats().misses, k.stats().misses);
  // The concurrent compiles finish in any order, so their reasons do too; exactly one of
  // them came first.
  std::vector<std::string> reasons = k.stats().reasons;
  EXPECT_EQ(std::count(reasons.begin(), reasons.end(), "first call"), 1);
  // The same variants: compiled ahead of time one after the other, in the calls' order, they
  // get the calls' keys and so the lazy kernel's reasons.
  Jit jit3(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel in_order = jit3.kernel(axpb_function());
  for (int64_t n : kSizes) in_order.compile_async(signature(n)).get();
  EXPECT_EQ(in_order.stats().reasons, lazy.stats().reasons);
  ASSERT_TRUE(run_sizes(in_order));
  EXPECT_EQ(in_order.stats().misses, 3u);
  EXPECT_EQ(in_order.stats().hits, 3u);
}

TEST(JitPrewarm, LoweredIsWhatACallCompilesAndCompilesNothing) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel exact = jit.kernel(axpb_function());
  Kernel dynamic = jit.kernel(axpb_function(), {.policy = Policy::kDynamic});
  // Exact specializes each shape: two shapes, two modules. Dynamic lowers one for both.
  std::string exact8 = print(exact.lowered(signature(8)));
  EXPECT_NE(exact8, print(exact.lowered(signature(16))));
  std::string dynamic8 = print(dynamic.lowered(signature(8)));
  EXPECT_EQ(dynamic8, print(dynamic.lowered(signature(16))));
  EXPECT_NE(exact8, dynamic8);
  EXPECT_EQ(exact.stats().misses + dynamic.stats().misses, 0u);
  EXPECT_EQ(exact.stats().calls + dynamic.stats().calls, 0u);
  EXPECT_THROW(exact.lowered({ArgSpec::scalar(DataType::Float(32))}), Error);
}

TEST(JitPrewarm, BadSignaturesAreErrorsNamingTheArgument) {
  Jit jit(JitOptions{.disk_cache = DiskCacheMode::kDisabled});
  Kernel k = jit.kernel(axpb_function());
  try {
    k.prewarm({signature(8),
               {ArgSpec::tensor(DataType::Float(32), {8}),
                ArgSpec::tensor(DataType::Float(32), {9}), ArgSpec::scalar(DataType::Float(32))}});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'B'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("got 9"), std::string::npos) << e.what();
  }
  EXPECT_EQ(k.stats().misses, 1u);  // the good signature still compiled
  std::future<void> f = k.compile_async({ArgSpec::scalar(DataType::Float(32))});
  EXPECT_ERROR_CONTAINS(f.get(), "'axpb' takes 3 arguments, the signature has 1");
  try {
    k.compile_async({ArgSpec::scalar(DataType::Float(32)), ArgSpec::scalar(DataType::Float(32)),
                     ArgSpec::scalar(DataType::Float(32))})
        .get();
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a tensor"), std::string::npos) << e.what();
  }
}

TEST(JitPrewarm, WritesToTheDiskCacheForLaterProcesses) {
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    jit.kernel(axpb_function()).prewarm({signature(8), signature(16), signature(24)});
  }
  EXPECT_EQ(dir.files(kEntry).size(), 3u);
  std::string out = dir.str() + "/child.out";
  ChildStats child = wait_child(spawn_child(dir.str(), out), out);
  EXPECT_EQ(child.ok, 1);
  EXPECT_EQ(child.disk_hits, 3u);
  EXPECT_EQ(child.misses, 0u);
}

}  // namespace
}  // namespace primjit
