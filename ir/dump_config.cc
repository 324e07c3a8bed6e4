#include "ir/dump_config.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <vector>

#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit {
namespace {

struct Kind {
  const char* name;
  bool DumpConfig::*flag;
};

constexpr Kind kKinds[] = {
    {"ir", &DumpConfig::ir},
    {"llvm", &DumpConfig::llvm},
    {"llvm-opt", &DumpConfig::llvm_opt},
    {"asm", &DumpConfig::assembly},
    {"cuda", &DumpConfig::cuda},
    {"ptx", &DumpConfig::ptx},
};

std::string trim(const std::string& s) {
  size_t begin = s.find_first_not_of(" \t");
  if (begin == std::string::npos) return "";
  return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
}

// The process's default dump directory: mkdtemp makes it with mode 0700 and a random name, and
// fails rather than reuse an existing path, so no other user can prepare it.
std::string default_dump_dir() {
  static std::mutex mutex;
  static std::string dir;
  std::lock_guard<std::mutex> lock(mutex);
  if (!dir.empty()) return dir;
  const char* tmp = std::getenv("TMPDIR");
  std::string base = tmp != nullptr && *tmp == '/' ? tmp : "/tmp";
  std::string pattern = base + "/primjit-dump-XXXXXX";
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  PRIMJIT_USER_CHECK(::mkdtemp(buffer.data()) != nullptr)
      << "PRIMJIT_DUMP: cannot create a dump directory '" << pattern
      << "': " << std::strerror(errno) << "; set PRIMJIT_DUMP_DIR to a writable directory";
  dir = buffer.data();
  PRIMJIT_LOG_WARNING << "PRIMJIT_DUMP: writing dumps to " << dir
                      << " (set PRIMJIT_DUMP_DIR to choose the directory)";
  return dir;
}

}  // namespace

const char* dump_kinds_text() { return "ir, llvm, llvm-opt, asm, cuda, ptx (or all)"; }

void parse_dump_kinds(const std::string& text, DumpConfig* config) {
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t comma = text.find(',', pos);
    if (comma == std::string::npos) comma = text.size();
    std::string entry = trim(text.substr(pos, comma - pos));
    pos = comma + 1;
    if (entry.empty()) continue;
    bool known = false;
    for (const Kind& kind : kKinds) {
      if (entry == kind.name || entry == "all") {
        config->*kind.flag = true;
        known = true;
      }
    }
    PRIMJIT_USER_CHECK(known) << "PRIMJIT_DUMP: unknown value '" << entry << "' in '" << text
                              << "'; valid values (comma separated): " << dump_kinds_text();
  }
}

DumpConfig dump_config_from_env() {
  DumpConfig config;
  const char* kinds = std::getenv("PRIMJIT_DUMP");
  if (kinds != nullptr) parse_dump_kinds(kinds, &config);
  const char* dir = std::getenv("PRIMJIT_DUMP_DIR");
  if (dir != nullptr && *dir != 0) config.dir = dir;
  // The older variable: the IR dump into its directory.
  if (const char* ir_dir = std::getenv("PRIMJIT_DUMP_IR"); ir_dir != nullptr && *ir_dir != 0) {
    config.ir = true;
    if (config.dir.empty()) config.dir = ir_dir;
  }
  if (!config.any()) {
    config.dir.clear();
  } else if (config.dir.empty()) {
    config.dir = default_dump_dir();
  }
  return config;
}

void make_dump_dir(const std::string& dir, const char* what) {
  // Each missing directory is made 0700 (create_directories would use the umask's mode).
  std::filesystem::path path;
  for (const std::filesystem::path& part : std::filesystem::path(dir)) {
    path /= part;
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST) {
      PRIMJIT_USER_ERROR() << what << ": cannot create directory '" << path.string()
                           << "': " << std::strerror(errno) << "; choose a writable directory";
    }
  }
  struct stat st {};
  PRIMJIT_USER_CHECK(::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
      << what << ": '" << dir << "' is not a directory; choose a writable directory";
}

void write_dump_file(const std::string& dir, const std::string& name, const std::string& text) {
  make_dump_dir(dir, "PRIMJIT_DUMP_DIR");
  std::filesystem::path path = std::filesystem::path(dir) / name;
  // Never through a link someone left there, never blocking on a FIFO, only a regular file.
  const int fd = ::open(path.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  struct stat st {};
  bool ok = fd >= 0 && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  for (size_t done = 0; ok && done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<size_t>(n);
  }
  if (fd >= 0) ::close(fd);
  PRIMJIT_USER_CHECK(ok) << "PRIMJIT_DUMP: cannot write '" << path.string()
                         << "' (it must be a regular file or absent); set PRIMJIT_DUMP_DIR to a "
                            "writable directory of yours";
}

}  // namespace primjit
