// A directory private to the current user, held open, for files whose contents primjit later
// trusts (the disk cache's entries, its MAC key, its counters).
//
// Trust rule: a file is read only when it is a regular file owned by the current user that
// neither group nor others may write (and, for secrets, read); the directory itself must be
// owned by the current user and closed to writes by group and others. Every operation goes
// through the directory's file descriptor (openat and friends) and never follows a symbolic
// link at a file's name, so replacing the path or planting a link after the directory was
// opened redirects nothing. Files are written under a temporary name with mode 0600 (whatever
// the umask) and renamed into place, so readers see the old file or the new one, never a part.
// Opening never blocks: a FIFO, socket or directory at a file's name is refused, not read.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace primjit::jit {

class PrivateDir {
 public:
  /// Opens `path`, creating it with mode 0700 (and missing parents) when absent. Throws
  /// primjit::Error naming the problem and the fix when it is not a directory, is owned by
  /// another user, or is writable by group or others (directly or through a symbolic link).
  explicit PrivateDir(const std::string& path);
  ~PrivateDir();
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;

  const std::string& path() const { return path_; }
  std::string path_of(std::string_view name) const { return path_ + "/" + std::string(name); }
  int fd() const { return fd_; }

  enum class Status { kOk, kMissing, kRefused };
  struct Read {
    Status status = Status::kMissing;
    std::string bytes;    // kOk
    std::string problem;  // kRefused: why, e.g. "is a FIFO, not a regular file"
  };
  /// Reads file `name` under the trust rule, at most `max_bytes` (a larger file is refused
  /// before any of it is read). `secret`: also refuse a file group or others may read.
  /// `touch`: set its modification time to now (the disk cache's last use).
  Read read(std::string_view name, uint64_t max_bytes, bool secret = false,
            bool touch = false) const;

  /// Writes `bytes` to `name` atomically (temporary file, mode 0600, rename). With
  /// `replace` false the file is only created: false with `*exists` set when `name` exists.
  bool write(std::string_view name, std::string_view bytes, std::string* problem,
             bool replace = true, bool* exists = nullptr) const;

  struct File {
    std::string name;
    uint64_t bytes = 0;
    int64_t mtime_ns = 0;  // last modification (the disk cache: last use)
    bool trusted = false;  // a regular file owned by the current user, not writable by others
  };
  /// Every name in the directory that `filter` accepts, with what lstat says of it, by name.
  std::vector<File> list(bool (*filter)(std::string_view name)) const;
  /// Removes file `name`; false when it was not there (or could not be removed).
  bool remove(std::string_view name) const;
  /// Modification time of `name` (without following a link), or -1.
  int64_t mtime_ns(std::string_view name) const;

  /// True for the temporary names write() makes, and only those: the sweep of files that
  /// dead writers left behind removes nothing else.
  static bool is_temp_name(std::string_view name);

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace primjit::jit
