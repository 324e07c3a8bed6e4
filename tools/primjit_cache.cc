// primjit-cache: inspect and maintain the persistent cache of compiled variants.
//
//   primjit-cache [--dir DIR] ls | stats | verify | clear [--older-than D]
//
// The directory is --dir, else the one the runtime uses ($PRIMJIT_CACHE_DIR, else
// $XDG_CACHE_HOME/primjit, else ~/.cache/primjit). It is opened under the same trust rules as
// the runtime's (docs/cache.md): one that is not private to you is refused.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "jit/runtime/disk_cache.h"
#include "jit/runtime/remote_cache.h"
#include "primjit/error.h"
#include "primjit/version.h"
#include "tools/tool_main.h"

namespace {

namespace pj = primjit;

constexpr const char* kUsage =
    "usage: primjit-cache [--dir DIR] ls | stats | verify | clear [--older-than D]\n"
    "       primjit-cache keygen FILE\n"
    "  ls        every variant: file, size, last use, function and argument shapes\n"
    "  stats     entries and bytes on disk, and the hits, misses (compiles) and rejected\n"
    "            entries of every process that used the directory, per tier\n"
    "  verify    read every entry and check its MAC, key and contents; exit 1 if any is bad\n"
    "  clear     remove every entry, or with --older-than D those last used more than D ago\n"
    "            (D: a number with s, m, h or d, e.g. 7d); never removes other files\n"
    "  keygen    make a team key pair for the remote cache: FILE (public and secret key, mode\n"
    "            0600: for machines that may write) and FILE.pub (public key only: read-only\n"
    "            machines); point PRIMJIT_CACHE_KEY_FILE at one of them\n"
    "  --dir DIR the cache directory (default: as the runtime picks it)\n"
    "  --version print primjit's version\n"
    "environment: PRIMJIT_CACHE_DIR (the directory), PRIMJIT_CACHE_MAX_BYTES (the size cap,\n"
    "  e.g. 512M; default 1G), PRIMJIT_CACHE=0 (the runtime uses no disk cache),\n"
    "  PRIMJIT_CACHE_REMOTE=redis://host:port[/db] and PRIMJIT_CACHE_KEY_FILE (the remote\n"
    "  tier and the team key), PRIMJIT_LOG\n";

[[noreturn]] void usage_error(const std::string& message) {
  throw pj::Error(message + "\n" + kUsage);
}

// "7d", "12h", "30m", "45s" (a bare number is seconds).
std::chrono::seconds parse_age(const std::string& text) {
  size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    end = std::string::npos;
  }
  std::string_view unit = end == std::string::npos ? "?" : std::string_view(text).substr(end);
  uint64_t scale = unit.empty() || unit == "s" ? 1
                   : unit == "m"               ? 60
                   : unit == "h"               ? 3600
                   : unit == "d"               ? 86400
                                               : 0;
  if (scale == 0 || text.empty() || text[0] == '-' || value > UINT64_MAX / 86400 / 1000000000) {
    usage_error("--older-than '" + text + "' is not an age: write a number with s, m, h or d");
  }
  return std::chrono::seconds(value * scale);
}

// The value of a "NAME value" line of a key text.
std::string key_line(const std::string& key, const std::string& name) {
  size_t at = 0;
  while (at < key.size()) {
    size_t end = key.find('\n', at);
    if (end == std::string::npos) end = key.size();
    std::string_view line(key.data() + at, end - at);
    if (line.starts_with(name + " ")) return std::string(line.substr(name.size() + 1));
    at = end + 1;
  }
  return "";
}

std::string local_time(int64_t ns) {
  std::time_t t = static_cast<std::time_t>(ns / 1000000000);
  std::tm tm{};
  localtime_r(&t, &tm);
  char text[32];
  std::strftime(text, sizeof(text), "%Y-%m-%d %H:%M:%S", &tm);
  return text;
}

// Writes a team key pair: FILE (0600, both keys) and FILE.pub (public key). Never overwrites.
int keygen(const std::string& file) {
  if (file.empty()) usage_error("keygen needs a FILE");
  std::string writer, reader;
  pj::jit::TeamKey::generate(&writer, &reader);
  auto write = [](const std::string& path, const std::string& text, mode_t mode) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    PRIMJIT_USER_CHECK(fd >= 0) << "cannot create '" << path << "' (" << std::strerror(errno)
                                << "); keygen never overwrites a key";
    bool ok = ::fchmod(fd, mode) == 0 &&
              ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
    ok = ::close(fd) == 0 && ok;
    PRIMJIT_USER_CHECK(ok) << "cannot write '" << path << "'";
  };
  write(file, writer, 0600);
  write(file + ".pub", reader, 0644);
  std::printf("wrote %s (secret: machines that may write) and %s.pub (read-only machines)\n",
              file.c_str(), file.c_str());
  return 0;
}

int run(int argc, char** argv) {
  std::string dir, command, keygen_file;
  std::optional<std::chrono::seconds> older_than;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&](const std::string& flag) -> std::string {
      if (a.starts_with(flag + "=")) return a.substr(flag.size() + 1);
      if (i + 1 >= argc) usage_error(flag + " needs a value");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::cout << kUsage << pj::tools::kEnvironmentHelp;
      return 0;
    } else if (a == "--version") {
      std::cout << "primjit-cache " << pj::version() << "\n";
      return 0;
    } else if (a == "--dir" || a.starts_with("--dir=")) {
      dir = value("--dir");
    } else if (a == "--older-than" || a.starts_with("--older-than=")) {
      older_than = parse_age(value("--older-than"));
    } else if (!a.starts_with("-") && command.empty()) {
      command = a;
    } else if (!a.starts_with("-") && command == "keygen" && keygen_file.empty()) {
      keygen_file = a;
    } else {
      usage_error("unexpected argument '" + a + "'");
    }
  }
  if (command == "keygen") return keygen(keygen_file);
  if (command != "ls" && command != "stats" && command != "verify" && command != "clear") {
    usage_error(command.empty() ? "no command given" : "unknown command '" + command + "'");
  }
  if (older_than && command != "clear") usage_error("--older-than goes with clear");
  if (dir.empty()) dir = pj::jit::DiskCache::default_dir();
  PRIMJIT_USER_CHECK(!dir.empty()) << "no cache directory: set PRIMJIT_CACHE_DIR or HOME, or "
                                      "give --dir";
  std::error_code ec;
  if (!std::filesystem::exists(dir, ec)) {
    std::cout << "no cache at '" << dir << "'\n";
    return 0;
  }
  pj::jit::DiskCache cache(
      dir, pj::jit::DiskCache::max_bytes_from_env(pj::jit::DiskCache::kDefaultMaxBytes));

  if (command == "ls") {
    std::vector<pj::jit::DiskCache::Entry> entries = cache.entries(/*verify=*/false);
    std::printf("%-20s %10s  %-19s  %s\n", "file", "bytes", "last use", "function and arguments");
    for (const auto& e : entries) {
      std::string what = e.problem.empty()
                             ? key_line(e.key, "function") + "  " + key_line(e.key, "args")
                             : "(unreadable: " + e.problem + ")";
      std::printf("%-20s %10" PRIu64 "  %-19s  %s\n", e.file.c_str(), e.bytes,
                  local_time(e.last_use_ns).c_str(), what.c_str());
    }
    std::printf("%zu entries\n", entries.size());
    return 0;
  }
  if (command == "stats") {
    uint64_t bytes = 0;
    std::vector<pj::jit::DiskCache::Entry> entries = cache.entries(/*verify=*/false);
    for (const auto& e : entries) bytes += e.bytes;
    pj::jit::DiskCache::Counters c = cache.recorded();
    std::printf("directory      %s\n", cache.dir().c_str());
    std::printf("entries        %zu\n", entries.size());
    std::printf("bytes          %" PRIu64 " (cap %" PRIu64 ")\n", bytes, cache.max_bytes());
    std::printf("memory hits    %" PRIu64 "\n", c.memory_hits);
    std::printf("disk hits      %" PRIu64 "\n", c.disk_hits);
    std::printf("remote hits    %" PRIu64 "\n", c.remote_hits);
    std::printf("misses         %" PRIu64 " (compiled)\n", c.compiles);
    std::printf("rejected       %" PRIu64 " (entries that failed a check; recompiled)\n",
                c.rejected);
    std::printf("stores         %" PRIu64 "\n", c.stores);
    std::printf("evictions      %" PRIu64 "\n", c.evictions);
    return 0;
  }
  if (command == "verify") {
    size_t bad = 0;
    std::vector<pj::jit::DiskCache::Entry> entries = cache.entries(/*verify=*/true);
    for (const auto& e : entries) {
      if (e.problem.empty()) continue;
      ++bad;
      std::printf("BAD %s: %s\n", e.file.c_str(), e.problem.c_str());
    }
    std::printf("%zu entries, %zu good, %zu bad\n", entries.size(), entries.size() - bad, bad);
    return bad == 0 ? 0 : 1;
  }
  pj::jit::DiskCache::Removed removed = cache.clear(older_than);
  std::printf("removed %zu files, %" PRIu64 " bytes\n", removed.files, removed.bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  return primjit::tools::run_tool("primjit-cache", argc, argv, run);
}
