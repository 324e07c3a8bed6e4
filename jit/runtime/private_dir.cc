#include "jit/runtime/private_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "primjit/error.h"

namespace primjit::jit {
namespace {

constexpr const char* kTempSuffix = ".pjtmp";

std::string octal_mode(mode_t mode) {
  char text[8];
  std::snprintf(text, sizeof(text), "%04o", static_cast<unsigned>(mode & 07777));
  return text;
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
  return "not a regular file";
}

// Why a file with these attributes is not trusted; empty when it is.
std::string distrust(const struct stat& st, bool secret) {
  if (!S_ISREG(st.st_mode))
    return std::string("is ") + file_kind(st.st_mode) + ", not a regular file";
  if (st.st_uid != ::geteuid()) {
    return "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
           std::to_string(::geteuid()) + ")";
  }
  if ((st.st_mode & 022) != 0) {
    return "is writable by group or others (mode " + octal_mode(st.st_mode) + ")";
  }
  if (secret && (st.st_mode & 077) != 0) {
    return "is readable by group or others (mode " + octal_mode(st.st_mode) + ")";
  }
  return "";
}

bool all_hex(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

std::string hex64(uint64_t v) {
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(v));
  return text;
}

// NAME.PID.NONCE.COUNTER.pjtmp: unique across processes, threads and restarts.
std::string temp_name(std::string_view name) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t nonce = (uint64_t{std::random_device{}()} << 32) ^ std::random_device{}();
  return std::string(name) + "." + std::to_string(::getpid()) + "." + hex64(nonce) + "." +
         std::to_string(counter.fetch_add(1)) + kTempSuffix;
}

bool write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

int64_t mtime_of(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

}  // namespace

PrivateDir::PrivateDir(const std::string& path) : path_(path) {
  PRIMJIT_USER_CHECK(!path_.empty())
      << "the disk cache needs a directory: set PRIMJIT_CACHE_DIR (or HOME), or disable it with "
         "PRIMJIT_CACHE=0";
  const char* fix =
      "; use a directory of your own with mode 0700 (PRIMJIT_CACHE_DIR), or disable the cache "
      "with PRIMJIT_CACHE=0";
  bool created = false;
  struct stat st {};
  if (::stat(path_.c_str(), &st) != 0 && errno == ENOENT) {
    std::filesystem::path p(path_);
    std::error_code ec;
    if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
    if (::mkdir(path_.c_str(), 0700) == 0) {
      created = true;
    } else {
      PRIMJIT_USER_CHECK(errno == EEXIST)
          << "cannot create the disk cache directory '" << path_ << "' (" << std::strerror(errno)
          << "); set PRIMJIT_CACHE_DIR to a writable directory, or disable the cache with "
             "PRIMJIT_CACHE=0";
    }
  }
  fd_ = ::open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  PRIMJIT_USER_CHECK(fd_ >= 0) << "cannot create the disk cache directory '" << path_ << "' ("
                               << std::strerror(errno)
                               << "); set PRIMJIT_CACHE_DIR to a writable directory, or disable "
                                  "the cache with PRIMJIT_CACHE=0";
  if (created) ::fchmod(fd_, 0700);  // mkdir's mode went through the umask
  std::string problem;
  if (::fstat(fd_, &st) != 0) {
    problem = std::string("cannot be examined (") + std::strerror(errno) + ")";
  } else if (st.st_uid != ::geteuid()) {
    problem = "is owned by uid " + std::to_string(st.st_uid) + ", not by you (uid " +
              std::to_string(::geteuid()) + ")";
  } else if ((st.st_mode & 022) != 0) {
    problem = "is writable by group or others (mode " + octal_mode(st.st_mode) + ")";
  }
  if (!problem.empty()) {
    ::close(fd_);
    fd_ = -1;
    std::error_code ec;
    bool link = std::filesystem::is_symlink(path_, ec);
    throw Error("refusing the disk cache directory '" + path_ + "'" +
                (link ? " (a symbolic link)" : "") + ": it " + problem + ", so another user " +
                "could plant code that primjit would run" + fix);
  }
}

PrivateDir::~PrivateDir() {
  if (fd_ >= 0) ::close(fd_);
}

PrivateDir::Read PrivateDir::read(std::string_view name, uint64_t max_bytes, bool secret,
                                  bool touch) const {
  Read result;
  std::string file(name);
  // O_NONBLOCK: opening a FIFO returns at once (and fstat refuses it) instead of waiting for a
  // writer. O_NOFOLLOW: a symbolic link at the name is an error, never followed.
  int fd = ::openat(fd_, file.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) {
    if (errno == ENOENT) return result;
    result.status = Status::kRefused;
    if (errno == ELOOP) {
      result.problem = "is a symbolic link, which is never followed";
    } else if (errno == ENXIO) {
      result.problem = "is a socket, not a regular file";
    } else {
      result.problem = std::string("cannot be opened (") + std::strerror(errno) + ")";
    }
    return result;
  }
  struct stat st {};
  result.status = Status::kRefused;
  if (::fstat(fd, &st) != 0) {
    result.problem = std::string("cannot be examined (") + std::strerror(errno) + ")";
  } else if (std::string why = distrust(st, secret); !why.empty()) {
    result.problem = why;
  } else if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    result.problem = "is " + std::to_string(st.st_size) + " bytes, more than the limit of " +
                     std::to_string(max_bytes) + ": not read";
  } else {
    result.bytes.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    while (done < result.bytes.size()) {
      ssize_t n = ::pread(fd, result.bytes.data() + done, result.bytes.size() - done,
                          static_cast<off_t>(done));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      done += static_cast<size_t>(n);
    }
    if (done != result.bytes.size()) {
      result.problem = "changed size while it was read";
      result.bytes.clear();
    } else {
      result.status = Status::kOk;
      if (touch) ::futimens(fd, nullptr);
    }
  }
  ::close(fd);
  return result;
}

bool PrivateDir::write(std::string_view name, std::string_view bytes, std::string* problem,
                       bool replace, bool* exists) const {
  if (exists != nullptr) *exists = false;
  std::string temp = temp_name(name), file(name);
  int fd = ::openat(fd_, temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    *problem = "cannot create '" + path_of(temp) + "' (" + std::strerror(errno) + ")";
    return false;
  }
  bool ok = ::fchmod(fd, 0600) == 0 && write_all(fd, bytes);
  int saved = errno;
  ok = (::close(fd) == 0) && ok;
  if (!ok) {
    ::unlinkat(fd_, temp.c_str(), 0);
    *problem = "cannot write '" + path_of(temp) + "' (" + std::strerror(saved) + ")";
    return false;
  }
  // rename replaces atomically; link creates only when the name is free.
  int rc = replace ? ::renameat(fd_, temp.c_str(), fd_, file.c_str())
                   : ::linkat(fd_, temp.c_str(), fd_, file.c_str(), 0);
  saved = errno;
  if (rc != 0 || !replace) ::unlinkat(fd_, temp.c_str(), 0);
  if (rc != 0) {
    if (!replace && saved == EEXIST && exists != nullptr) *exists = true;
    *problem = "cannot move '" + path_of(temp) + "' to '" + path_of(file) + "' (" +
               std::strerror(saved) + ")";
    return false;
  }
  return true;
}

std::vector<PrivateDir::File> PrivateDir::list(bool (*filter)(std::string_view name)) const {
  std::vector<File> files;
  int fd = ::dup(fd_);
  if (fd < 0) return files;
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return files;
  }
  ::rewinddir(dir);
  while (const dirent* e = ::readdir(dir)) {
    std::string_view name = e->d_name;
    if (name == "." || name == ".." || !filter(name)) continue;
    struct stat st {};
    if (::fstatat(fd_, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    files.push_back(File{std::string(name), static_cast<uint64_t>(st.st_size), mtime_of(st),
                         distrust(st, false).empty()});
  }
  ::closedir(dir);
  std::sort(files.begin(), files.end(),
            [](const File& a, const File& b) { return a.name < b.name; });
  return files;
}

bool PrivateDir::remove(std::string_view name) const {
  return ::unlinkat(fd_, std::string(name).c_str(), 0) == 0;
}

int64_t PrivateDir::mtime_ns(std::string_view name) const {
  struct stat st {};
  if (::fstatat(fd_, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return -1;
  return mtime_of(st);
}

bool PrivateDir::is_temp_name(std::string_view name) {
  // NAME.PID.NONCE.COUNTER.pjtmp, as temp_name makes them.
  if (name.size() <= std::strlen(kTempSuffix) || !name.ends_with(kTempSuffix)) return false;
  name.remove_suffix(std::strlen(kTempSuffix));
  for (int field = 0; field < 3; ++field) {
    size_t dot = name.rfind('.');
    if (dot == std::string_view::npos) return false;
    std::string_view part = name.substr(dot + 1);
    bool ok = field == 1 ? part.size() == 16 && all_hex(part) : all_digits(part);
    if (!ok) return false;
    name = name.substr(0, dot);
  }
  return !name.empty();
}

}  // namespace primjit::jit
