// The remote (Redis) tier against a real redis-server started on a free port in a temporary
// directory: values signed with the team's key and verified by readers, read-only machines,
// another team's key, tampered and oversized values, a server that is down or killed mid-run,
// and two processes sharing compiled variants.
#include <arpa/inet.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "jit/runtime/remote_cache.h"
#include "primjit/jit.h"
#include "primjit/version.h"
#include "tests/redis_server.h"
#include "tests/unit/jit/disk_cache_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using namespace test::disk;
using test::free_port;
using test::RedisServer;
using Keys = test::TeamKeyFiles;

#define REQUIRE_REDIS(server)                                                             \
  if (!(server).available()) {                                                            \
    GTEST_SKIP() << "redis-server is not installed (tools/deps.sh installs it): skipped"; \
  }

jit::RemoteCache remote(const RedisServer& server, const std::string& key_file,
                        uint64_t max_bytes = uint64_t{1} << 20) {
  jit::RemoteOptions o;
  std::string problem;
  EXPECT_TRUE(jit::parse_redis_url(server.url(), &o, &problem)) << problem;
  o.max_value_bytes = max_bytes;
  return jit::RemoteCache(o, jit::TeamKey::load(key_file));
}

TEST(RemoteCache, SignedValuesRoundTripAndReadersCannotWrite) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir dir;
  Keys keys(dir);
  jit::RemoteCache writer = remote(server, keys.writer), reader = remote(server, keys.reader);
  std::string problem;
  EXPECT_EQ(reader.get("k\n").status, jit::RemoteCache::Status::kMissing);
  ASSERT_TRUE(writer.put("k\n", "payload bytes", &problem)) << problem;
  jit::RemoteCache::Lookup found = reader.get("k\n");
  ASSERT_EQ(found.status, jit::RemoteCache::Status::kHit) << found.problem;
  EXPECT_EQ(found.payload, "payload bytes");
  EXPECT_FALSE(reader.can_write());
  EXPECT_FALSE(reader.put("k2\n", "x", &problem));
  EXPECT_EQ(problem, "this machine's team key is read-only");
  EXPECT_EQ(server.command({"EXISTS", writer.server_key("k2\n")}), "0");
}

TEST(RemoteCache, TamperedForeignOversizedAndMisplacedValuesAreRejected) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir dir, other_dir;
  Keys keys(dir), other(other_dir);
  jit::RemoteCache writer = remote(server, keys.writer);
  std::string problem;
  ASSERT_TRUE(writer.put("k\n", "good code", &problem)) << problem;
  std::string key = writer.server_key("k\n");
  std::string good = server.command({"GET", key});
  auto expect_rejected = [&](jit::RemoteCache& cache, const std::string& why) {
    jit::RemoteCache::Lookup found = cache.get("k\n");
    EXPECT_EQ(found.status, jit::RemoteCache::Status::kRejected) << why;
    EXPECT_NE(found.problem.find(why), std::string::npos) << found.problem;
  };
  // Someone with write access to the server changes the code: the signature fails.
  std::string tampered = good;
  tampered.back() ^= 1;
  server.command({"SET", key, tampered});
  expect_rejected(writer, "fails its signature check");
  // Another team's properly signed value.
  jit::RemoteCache theirs = remote(server, other.writer);
  server.command({"SET", key, theirs.seal("k\n", "their code")});
  expect_rejected(writer, "fails its signature check");
  // Our own signed value for another variant, moved to this variant's name.
  server.command({"SET", key, writer.seal("other\n", "other code")});
  expect_rejected(writer, "was written for another variant");
  server.command({"SET", key, std::string(64, 'x')});
  expect_rejected(writer, "is not a primjit value");
  // Larger than the cap: refused without reading it whole.
  jit::RemoteCache small = remote(server, keys.writer, 100);
  server.command({"SET", key, good + std::string(200, 'y')});
  expect_rejected(small, "is larger than the limit of 100 bytes");
  server.command({"SET", key, good});
  EXPECT_EQ(writer.get("k\n").status, jit::RemoteCache::Status::kHit);
}

TEST(RemoteCache, AServerThatIsDownCostsOneTimeoutThenNothing) {
  TempDir dir;
  Keys keys(dir);
  jit::RemoteOptions o;
  o.port = free_port();  // nothing listens there
  jit::RemoteCache cache(o, jit::TeamKey::load(keys.writer));
  Warnings warnings;
  EXPECT_EQ(cache.get("k\n").status, jit::RemoteCache::Status::kUnavailable);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(cache.get("k\n").status, jit::RemoteCache::Status::kUnavailable);
  }
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::milliseconds(50));
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("compiling locally"), std::string::npos) << lines[0];
}

TEST(RemoteCache, KeyFilesAndAddressesAreChecked) {
  TempDir dir;
  Keys keys(dir);
  fs::permissions(keys.writer, fs::perms::group_read, fs::perm_options::add);
  EXPECT_ERROR_CONTAINS(jit::TeamKey::load(keys.writer),
                        "holds the secret (write) key and is readable by others");
  fs::permissions(keys.reader, fs::perms::others_write, fs::perm_options::add);
  EXPECT_ERROR_CONTAINS(jit::TeamKey::load(keys.reader), "is writable by group or others");
  EXPECT_ERROR_CONTAINS(jit::TeamKey::load(dir.str() + "/none"), "primjit-cache keygen");
  jit::RemoteOptions o;
  std::string problem;
  EXPECT_TRUE(jit::parse_redis_url("redis://cache.example:7000/2", &o, &problem));
  EXPECT_EQ(o.host, "cache.example");
  EXPECT_EQ(o.port, 7000);
  EXPECT_EQ(o.db, 2);
  EXPECT_FALSE(jit::parse_redis_url("http://x:1", &o, &problem));
  EXPECT_FALSE(jit::parse_redis_url("redis://x:99999", &o, &problem));
  EXPECT_NE(problem.find("the port must be a number from 1 to 65535"), std::string::npos);
}

JitOptions with_remote(const std::string& dir, const RedisServer& server, const std::string& key) {
  JitOptions o = on_disk(dir);
  o.remote_cache = server.url();
  o.remote_key_file = key;
  return o;
}

// Two machines (two Jits with their own disk caches): the second loads what the first
// compiled, and stores it on its own disk.
TEST(JitRemoteCache, ASecondMachineLoadsWhatTheFirstCompiled) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir keys_dir, disk_a, disk_b;
  Keys keys(keys_dir);
  {
    Jit jit(with_remote(disk_a.str(), server, keys.writer));
    Kernel k = jit.kernel(axpb_function());
    ASSERT_TRUE(run_sizes(k));
    EXPECT_EQ(k.stats().misses, 3u);
  }
  EXPECT_EQ(server.command({"DBSIZE"}), "3");
  // Namespaced by version and target.
  EXPECT_EQ(server.command({"EVAL", "return #redis.call('keys', ARGV[1])", "0",
                            std::string("primjit:") + version() + ":llvm:*"}),
            "3")
      << server.command({"RANDOMKEY"});
  {
    Jit jit(with_remote(disk_b.str(), server, keys.reader));
    Kernel k = jit.kernel(axpb_function());
    ASSERT_TRUE(run_sizes(k));
    KernelStats s = k.stats();
    EXPECT_EQ(s.misses, 0u);
    EXPECT_EQ(s.remote_hits, 3u);
    EXPECT_EQ(s.compile.host_ms, 0.0);
    ASSERT_EQ(s.reasons.size(), 3u);
    EXPECT_EQ(s.reasons[0], "first call (remote cache)");
  }
  EXPECT_EQ(disk_b.files(kEntry).size(), 3u);  // and now on this machine's disk too
  // A read-only machine compiles what the server lacks, but does not write it.
  Jit jit(with_remote(disk_b.str() + "/fresh", server, keys.reader));
  Kernel k = jit.kernel(axpb_function(5));
  ASSERT_TRUE(run_sizes(k, 5.0f));
  EXPECT_EQ(k.stats().misses, 3u);
  EXPECT_EQ(server.command({"DBSIZE"}), "3");
}

TEST(JitRemoteCache, TwoProcessesShareVariantsThroughTheServer) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir keys_dir, disk_a, disk_b;
  Keys keys(keys_dir);
  setenv("PRIMJIT_CACHE_REMOTE", server.url().c_str(), 1);
  setenv("PRIMJIT_CACHE_KEY_FILE", keys.writer.c_str(), 1);
  std::string out_a = disk_a.str() + "/a.out", out_b = disk_b.str() + "/b.out";
  ChildStats a = wait_child(spawn_child(disk_a.str(), out_a), out_a);
  setenv("PRIMJIT_CACHE_KEY_FILE", keys.reader.c_str(), 1);
  ChildStats b = wait_child(spawn_child(disk_b.str(), out_b), out_b);
  unsetenv("PRIMJIT_CACHE_REMOTE");
  unsetenv("PRIMJIT_CACHE_KEY_FILE");
  EXPECT_EQ(a.ok, 1);
  EXPECT_EQ(a.misses, 3u);
  EXPECT_EQ(b.ok, 1);
  EXPECT_EQ(b.misses, 0u);
  EXPECT_EQ(b.remote_hits, 3u);
}

// The server dies mid-run: every call still computes the right result, and one warning says
// so.
TEST(JitRemoteCache, AServerKilledMidRunBreaksNothing) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir keys_dir, disk;
  Keys keys(keys_dir);
  Warnings warnings;
  Jit jit(with_remote(disk.str(), server, keys.writer));
  Kernel k = jit.kernel(axpb_function());
  ASSERT_TRUE(run_sizes(k));
  server.stop(SIGKILL);
  for (int offset : {2, 3, 4}) {
    Kernel other = jit.kernel(axpb_function(offset));
    EXPECT_TRUE(run_sizes(other, static_cast<float>(offset)));
    EXPECT_EQ(other.stats().misses, 3u);
  }
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("remote cache redis://127.0.0.1:"), std::string::npos) << lines[0];
}

TEST(JitRemoteCache, WithoutTheTeamKeyTheServerIsNotUsed) {
  RedisServer server;
  REQUIRE_REDIS(server);
  TempDir disk;
  JitOptions o = on_disk(disk.str());
  o.remote_cache = server.url();
  EXPECT_ERROR_CONTAINS(Jit(o), "needs the team's key (PRIMJIT_CACHE_KEY_FILE)");
}

}  // namespace
}  // namespace primjit
