// The disk cache's trust model (docs/cache.md), tried as an attacker on a shared machine
// would: permissions whatever the umask, directories and entries of other users, links, FIFOs,
// sockets and huge files at an entry's name, entries planted with another key, the key file,
// the sweep of temporary files, and the size cap's running total.
#include <dlfcn.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "jit/runtime/build_id.h"
#include "jit/runtime/disk_cache.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"
#include "primjit/jit.h"
#include "primjit/passes.h"
#include "primjit/version.h"
#include "tests/unit/jit/disk_cache_util.h"
#include "tests/unit/test_util.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;
using test::TempDir;
using namespace test::disk;

mode_t mode_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & 07777;
}

// The uid files are given to when a test plays another user (nobody).
constexpr uid_t kOtherUser = 65534;

// Sets an environment variable for the life of the object.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) {
    const char* old = std::getenv(name);
    had_ = old != nullptr;
    if (had_) old_ = old;
    if (value != nullptr) {
      setenv(name, value, 1);
    } else {
      unsetenv(name);
    }
  }
  ~ScopedEnv() {
    if (had_) {
      setenv(name_, old_.c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  bool had_ = false;
  std::string old_;
};

class ScopedUmask {
 public:
  explicit ScopedUmask(mode_t mask) : old_(::umask(mask)) {}
  ~ScopedUmask() { ::umask(old_); }

 private:
  mode_t old_;
};

std::string refusal_of(const std::string& dir) {
  return test::error_of([&] { jit::DiskCache cache(dir, 1 << 20); });
}

TEST(DiskCacheTrust, DirectoryKeyAndEntriesArePrivateWhateverTheUmask) {
  for (mode_t mask : {mode_t{0}, mode_t{0022}, mode_t{0277}}) {
    SCOPED_TRACE("umask " + std::to_string(mask));
    TempDir dir;
    std::string path = dir.str() + "/cache";
    std::string problem;
    {
      ScopedUmask umask(mask);
      jit::DiskCache cache(path, 1 << 20);
      ASSERT_TRUE(cache.store("k\n", sample_variant(), &problem)) << problem;
      EXPECT_EQ(mode_of(path), 0700u);
      EXPECT_EQ(mode_of(cache.path_of("k\n")), 0600u);
      fs::path key = fs::path(path) / jit::DiskCache::kKeyFile;
      EXPECT_EQ(mode_of(key), 0600u);
      EXPECT_EQ(fs::file_size(key), 32u);
      EXPECT_EQ(cache.load("k\n").status, jit::DiskCache::Status::kHit);
    }
  }
}

TEST(DiskCacheTrust, RefusesADirectoryOthersMayWrite) {
  for (fs::perms extra : {fs::perms::group_write, fs::perms::others_write}) {
    TempDir dir;
    fs::permissions(dir.path(), extra, fs::perm_options::add);
    std::string message = refusal_of(dir.str());
    EXPECT_NE(message.find("refusing the disk cache directory '" + dir.str() + "'"),
              std::string::npos)
        << message;
    EXPECT_NE(message.find("is writable by group or others"), std::string::npos) << message;
    EXPECT_NE(message.find("PRIMJIT_CACHE=0"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(dir.path() / jit::DiskCache::kKeyFile));  // nothing written
  }
}

TEST(DiskCacheTrust, RefusesASymbolicLinkToSuchADirectoryButNotToAGoodOne) {
  TempDir dir;
  fs::create_directory(dir.path() / "open");
  fs::permissions(dir.path() / "open", fs::perms::all);
  fs::create_directory_symlink(dir.path() / "open", dir.path() / "link");
  std::string message = refusal_of(dir.str() + "/link");
  EXPECT_NE(message.find("(a symbolic link)"), std::string::npos) << message;
  EXPECT_NE(message.find("writable by group or others (mode 0777)"), std::string::npos) << message;

  fs::create_directory(dir.path() / "mine");
  fs::permissions(dir.path() / "mine", fs::perms::owner_all);
  fs::create_directory_symlink(dir.path() / "mine", dir.path() / "good_link");
  EXPECT_EQ(refusal_of(dir.str() + "/good_link"), "");
}

TEST(DiskCacheTrust, RefusesADirectoryOfAnotherUser) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give a directory to another user";
  TempDir dir;
  fs::create_directory(dir.path() / "theirs");
  ASSERT_EQ(::chown((dir.path() / "theirs").c_str(), kOtherUser, kOtherUser), 0);
  std::string message = refusal_of(dir.str() + "/theirs");
  EXPECT_NE(message.find("is owned by uid 65534, not by you (uid 0)"), std::string::npos)
      << message;
}

// What a refusal does to a program: one warning, no disk cache, right results.
TEST(DiskCacheTrust, RefusedDirectoryWarnsOnceAndTheJitRunsWithoutIt) {
  TempDir dir;
  fs::permissions(dir.path(), fs::perms::others_write, fs::perm_options::add);
  ScopedEnv on("PRIMJIT_CACHE", "1");
  JitOptions options = on_disk(dir.str());
  options.disk_cache = DiskCacheMode::kEnvironment;
  Warnings warnings;
  for (int i = 0; i < 2; ++i) {
    Jit jit(options);
    Kernel k = jit.kernel(axpb_function());
    EXPECT_TRUE(run_sizes(k));
    EXPECT_EQ(k.stats().misses, 3u);
  }
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("writable by group or others"), std::string::npos) << lines[0];
  EXPECT_NE(lines[0].find("continuing without the disk cache"), std::string::npos) << lines[0];
  EXPECT_TRUE(dir.files(kEntry).empty());
  // Asked for explicitly, the cache's refusal is an error.
  EXPECT_ERROR_CONTAINS(Jit(on_disk(dir.str())), "writable by group or others");
}

// The attack of the issue: another user replaces an entry with her own code, sealed with her
// own key (she cannot read the victim's). The victim's next call must not run it.
TEST(DiskCacheTrust, APlantedEntryIsNeverRun) {
  TempDir victim_dir, attacker_dir;
  {
    Jit jit(on_disk(victim_dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function(1))));
  }
  {
    Jit jit(on_disk(attacker_dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function(2)), 2.0f));
  }
  jit::DiskCache victim(victim_dir.str(), 1 << 30), attacker(attacker_dir.str(), 1 << 30);
  std::vector<jit::DiskCache::Entry> mine = victim.entries(true), theirs = attacker.entries(true);
  ASSERT_EQ(mine.size(), 3u);
  ASSERT_EQ(theirs.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    // Her code for the victim's key, at the victim's file: only the MAC can tell.
    std::string bytes = read_bytes(attacker_dir.path() / theirs[i].file);
    std::string_view key, payload;
    std::string problem;
    ASSERT_TRUE(attacker.unseal(bytes, &key, &payload, &problem)) << problem;
    for (const auto& m : mine) {
      if (m.key.find("\nkey ") == std::string::npos) continue;
      // Same argument key line: the same shapes.
      auto key_of = [](const std::string& text) { return text.substr(text.find("\nkey ")); };
      if (key_of(m.key) == key_of(std::string(key))) {
        write_bytes(victim_dir.path() / m.file, attacker.seal(m.key, payload));
      }
    }
  }
  Warnings warnings;
  Jit jit(on_disk(victim_dir.str()));
  Kernel k = jit.kernel(axpb_function(1));
  EXPECT_TRUE(run_sizes(k, 1.0f));  // her code would give offset 2
  EXPECT_EQ(k.stats().disk_hits, 0u);
  EXPECT_EQ(k.stats().misses, 3u);
  std::vector<std::string> lines = warnings.lines();
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_NE(lines[0].find("fails its MAC check"), std::string::npos) << lines[0];
}

TEST(DiskCacheTrust, EntriesOfOthersOrWritableByOthersAreNotRead) {
  TempDir dir;
  jit::DiskCache cache(dir.str(), 1 << 20);
  std::string problem;
  ASSERT_TRUE(cache.store("k\n", sample_variant(), &problem)) << problem;
  std::string path = cache.path_of("k\n");
  ASSERT_EQ(::chmod(path.c_str(), 0666), 0);
  jit::DiskCache::Lookup found = cache.load("k\n");
  EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected);
  EXPECT_NE(found.problem.find("is writable by group or others (mode 0666)"), std::string::npos)
      << found.problem;
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_EQ(cache.load("k\n").status, jit::DiskCache::Status::kHit);
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give an entry to another user";
  ASSERT_EQ(::chown(path.c_str(), kOtherUser, kOtherUser), 0);
  found = cache.load("k\n");
  EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected);
  EXPECT_NE(found.problem.find("is owned by uid 65534"), std::string::npos) << found.problem;
}

// Links, FIFOs, directories and sockets at an entry's name: refused at once, never followed,
// never waited on.
TEST(DiskCacheTrust, OddFilesAtAnEntryNameAreRefusedWithoutBlocking) {
  TempDir dir;
  jit::DiskCache cache(dir.str(), 1 << 20);
  std::string problem;
  ASSERT_TRUE(cache.store("good\n", sample_variant(), &problem));
  std::string path = cache.path_of("k\n");
  auto expect_refused = [&](const std::string& why) {
    jit::DiskCache::Lookup found = cache.load("k\n");
    EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected) << why;
    EXPECT_NE(found.problem.find(why), std::string::npos) << found.problem;
    fs::remove_all(path);
  };
  fs::create_symlink(cache.path_of("good\n"), path);
  expect_refused("is a symbolic link, which is never followed");
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  expect_refused("is a FIFO, not a regular file");
  fs::create_directory(path);
  expect_refused("is a directory, not a regular file");
  int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  ASSERT_LT(path.size(), sizeof(addr.sun_path));
  std::strcpy(addr.sun_path, path.c_str());
  ASSERT_EQ(::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  expect_refused("is a socket, not a regular file");
  ::close(s);
  // And a store replaces the odd file with a good entry.
  ASSERT_EQ(::mkfifo(path.c_str(), 0600), 0);
  ASSERT_TRUE(cache.store("k\n", sample_variant(), &problem)) << problem;
  EXPECT_EQ(cache.load("k\n").status, jit::DiskCache::Status::kHit);
}

// A (sparse) 64 GiB file at an entry's name is refused from its size, before any read.
TEST(DiskCacheTrust, AHugeEntryIsRefusedBeforeItIsRead) {
  TempDir dir;
  jit::DiskCache cache(dir.str(), uint64_t{1} << 40);
  std::string path = cache.path_of("k\n");
  int fd = ::open(path.c_str(), O_CREAT | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, off_t{64} << 30), 0);
  ::close(fd);
  jit::DiskCache::Lookup found = cache.load("k\n");
  EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected);
  EXPECT_NE(found.problem.find("is 68719476736 bytes, more than the limit of 268435456: not read"),
            std::string::npos)
      << found.problem;
}

TEST(DiskCacheTrust, TheKeyFileMustBeSecretAndWhole) {
  TempDir dir;
  { jit::DiskCache cache(dir.str(), 1 << 20); }
  fs::path key = dir.path() / jit::DiskCache::kKeyFile;
  ASSERT_EQ(::chmod(key.c_str(), 0644), 0);
  std::string message = refusal_of(dir.str());
  EXPECT_NE(message.find("its MAC key '" + key.string() + "' is readable by group or others"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("delete it"), std::string::npos) << message;
  ASSERT_EQ(::chmod(key.c_str(), 0600), 0);
  fs::resize_file(key, 5);
  EXPECT_NE(refusal_of(dir.str()).find("has 5 bytes, not 32"), std::string::npos);
  fs::remove(key);
  fs::create_symlink("/dev/zero", key);
  EXPECT_NE(refusal_of(dir.str()).find("is a symbolic link"), std::string::npos);
  fs::remove(key);
  EXPECT_EQ(refusal_of(dir.str()), "");  // a new key is made
  EXPECT_EQ(fs::file_size(key), 32u);
}

// A new key makes every earlier entry fail its MAC: they are recompiled, not trusted.
TEST(DiskCacheTrust, EntriesOfAnEarlierKeyAreNotTrusted) {
  TempDir dir;
  std::string problem;
  {
    jit::DiskCache cache(dir.str(), 1 << 20);
    ASSERT_TRUE(cache.store("k\n", sample_variant(), &problem));
  }
  fs::remove(dir.path() / jit::DiskCache::kKeyFile);
  jit::DiskCache cache(dir.str(), 1 << 20);
  jit::DiskCache::Lookup found = cache.load("k\n");
  EXPECT_EQ(found.status, jit::DiskCache::Status::kRejected);
  EXPECT_NE(found.problem.find("fails its MAC check"), std::string::npos) << found.problem;
}

// PRIMJIT_CACHE_DIR=$HOME must not cost the user files: the sweep and the cap remove only the
// names primjit makes.
TEST(DiskCacheTrust, OnlyPrimjitsOwnFilesAreEverRemoved) {
  TempDir dir;
  const std::vector<std::string> theirs = {"notes.tmp",  "draft.pjv",     "0123.pjv",
                                           "report.pdf", "x.1.2.3.pjtmp", "old.tmp"};
  for (const std::string& name : theirs) write_bytes(dir.path() / name, "user data");
  std::string stale = "0123456789abcdef.pjv.77.0123456789abcdef.3.pjtmp";
  std::string fresh = "0123456789abcdef.pjv.78.0123456789abcdef.4.pjtmp";
  write_bytes(dir.path() / stale, "dead writer");
  write_bytes(dir.path() / fresh, "live writer");
  auto age = fs::file_time_type::clock::now() - std::chrono::hours(2);
  for (const std::string& name : theirs) fs::last_write_time(dir.path() / name, age);
  fs::last_write_time(dir.path() / stale, age);
  ASSERT_TRUE(jit::PrivateDir::is_temp_name(stale));
  ASSERT_FALSE(jit::PrivateDir::is_temp_name("x.1.2.3.pjtmp"));

  std::string problem;
  uint64_t entry =
      jit::DiskCache(dir.str(), 1 << 20).seal("a\n", jit::encode_variant(sample_variant())).size();
  jit::DiskCache cache(dir.str(), entry + entry / 2);  // room for one entry
  ASSERT_TRUE(cache.store("a\n", sample_variant(), &problem));
  ASSERT_TRUE(cache.store("b\n", sample_variant(), &problem));
  EXPECT_FALSE(fs::exists(dir.path() / stale));
  EXPECT_TRUE(fs::exists(dir.path() / fresh));
  EXPECT_EQ(dir.files(kEntry).size(), 3u);  // b, and the user's draft.pjv and 0123.pjv
  EXPECT_EQ(cache.load("b\n").status, jit::DiskCache::Status::kHit);
  jit::DiskCache::Removed removed = cache.clear(std::nullopt);
  EXPECT_EQ(removed.files, 2u);  // b and the live writer's temporary file
  for (const std::string& name : theirs) EXPECT_TRUE(fs::exists(dir.path() / name)) << name;
  EXPECT_TRUE(fs::exists(dir.path() / jit::DiskCache::kKeyFile));
}

// The cap keeps a running total: storing does not scan the directory each time, and going over
// the cap evicts a batch (down to 90 %) so the next scan is many stores away.
TEST(DiskCacheTrust, TheCapKeepsARunningTotalAndEvictsInBatches) {
  TempDir dir;
  std::string problem;
  {
    jit::DiskCache roomy(dir.str(), uint64_t{1} << 30);
    for (int i = 0; i < 200; ++i) {
      ASSERT_TRUE(roomy.store("roomy " + std::to_string(i) + "\n", sample_variant(), &problem));
    }
    EXPECT_EQ(roomy.scans(), 1u);  // the first store counts the directory once
    EXPECT_EQ(roomy.clear(std::nullopt).files, 200u);
  }
  jit::DiskCache probe(dir.str(), uint64_t{1} << 30);
  ASSERT_TRUE(probe.store("probe\n", sample_variant(), &problem));
  uint64_t entry = fs::file_size(probe.path_of("probe\n"));
  probe.clear(std::nullopt);

  jit::DiskCache cache(dir.str(), 100 * entry);
  for (int i = 0; i < 300; ++i) {
    std::string key = "tight " + std::to_string(i) + "\n";
    ASSERT_TRUE(cache.store(key, sample_variant(), &problem));
    // Keep the order of last use strict (file times can tie within a clock tick).
    fs::last_write_time(cache.path_of(key),
                        fs::file_time_type::clock::now() - std::chrono::seconds(1000 - i));
  }
  EXPECT_LE(cache.scans(), 30u);  // a scan every ten stores or so, not 300
  size_t left = dir.files(kEntry).size();
  EXPECT_LE(left, 100u);
  EXPECT_GE(left, 90u);
  // The least recently used went first: the last ones stored are all there.
  for (int i = 300 - 89; i < 300; ++i) {
    EXPECT_EQ(cache.load("tight " + std::to_string(i) + "\n").status, jit::DiskCache::Status::kHit)
        << i;
  }
}

TEST(DiskCacheTrust, TheCapComesFromTheEnvironment) {
  {
    ScopedEnv unset("PRIMJIT_CACHE_MAX_BYTES", nullptr);
    EXPECT_EQ(jit::DiskCache::max_bytes_from_env(7), 7u);
  }
  const std::pair<const char*, uint64_t> good[] = {{"100", 100},
                                                   {"512M", uint64_t{512} << 20},
                                                   {"2G", uint64_t{2} << 30},
                                                   {"3KiB", 3072},
                                                   {"1T", uint64_t{1} << 40}};
  for (const auto& [text, value] : good) {
    ScopedEnv env("PRIMJIT_CACHE_MAX_BYTES", text);
    EXPECT_EQ(jit::DiskCache::max_bytes_from_env(7), value) << text;
  }
  for (const char* bad : {"abc", "-5", "12Q", "1.5G", "99999999999999999999", "20000000T", "M"}) {
    ScopedEnv env("PRIMJIT_CACHE_MAX_BYTES", bad);
    std::string message = test::error_of([] { jit::DiskCache::max_bytes_from_env(7); });
    EXPECT_NE(message.find(std::string("PRIMJIT_CACHE_MAX_BYTES='") + bad + "' is not a size"),
              std::string::npos)
        << message;
  }
  // A Jit without an explicit cap takes the variable's: room for one entry keeps one.
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  std::vector<fs::path> files = dir.files(kEntry);
  ASSERT_EQ(files.size(), 3u);
  uint64_t biggest = 0;
  for (const fs::path& f : files) biggest = std::max<uint64_t>(biggest, fs::file_size(f));
  fs::remove_all(dir.path());
  fs::create_directory(dir.path());
  fs::permissions(dir.path(), fs::perms::owner_all);
  ScopedEnv env("PRIMJIT_CACHE_MAX_BYTES", std::to_string(biggest + biggest / 2).c_str());
  {
    Jit jit(on_disk(dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  EXPECT_EQ(dir.files(kEntry).size(), 1u);
}

// Entries name the build of the libraries that compiled them: a rebuilt primjit of the same
// version (a fixed pass) never loads the old build's code. The GNU build-ids of the objects that
// hold the IR library, the passes and the runtime are that name, one per object: a pass fixed in
// libprimjit_passes alone changes it too (it once named the runtime's object only).
TEST(DiskCacheTrust, KeysNameTheLibrarysBuild) {
  const std::string& id = jit::library_build_id();
  std::set<std::string> objects;  // the files holding each library's code
  for (const void* f : {reinterpret_cast<const void*>(
                            static_cast<IRModule (*)(std::string_view, std::string_view)>(&parse)),
                        reinterpret_cast<const void*>(&passes::default_pipeline),
                        reinterpret_cast<const void*>(&jit::library_build_id)}) {
    Dl_info info{};
    ASSERT_NE(dladdr(f, &info), 0);
    objects.insert(info.dli_fname);
  }
  std::vector<std::string> parts;
  std::stringstream in(id);
  for (std::string part; std::getline(in, part, '+');) parts.push_back(part);
  EXPECT_EQ(parts.size(), objects.size()) << id;
  EXPECT_EQ(std::set<std::string>(parts.begin(), parts.end()).size(), parts.size()) << id;
  for (const std::string& part : parts) {
    EXPECT_EQ(part.size(), 40u) << id;  // SHA-1 build-id, as the linker writes it
    EXPECT_EQ(part.find_first_not_of("0123456789abcdef"), std::string::npos) << id;
  }
  TempDir dir;
  {
    Jit jit(on_disk(dir.str()));
    ASSERT_TRUE(run_sizes(jit.kernel(axpb_function())));
  }
  jit::DiskCache cache(dir.str(), 1 << 30);
  for (const jit::DiskCache::Entry& e : cache.entries(true)) {
    EXPECT_NE(e.key.find("\nprimjit " + std::string(version()) + " build " + id + "\n"),
              std::string::npos)
        << e.key.substr(0, 200);
  }
}

}  // namespace
}  // namespace primjit
