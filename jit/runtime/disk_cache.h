// The persistent cache: one file per compiled variant, loadable without compiling.
//
// A file holds a header (magic, format version, lengths, a keyed MAC), the variant's full key
// as text, and the payload: the host object with its symbol table and, for device targets, the
// device image with each kernel's launch layout. The key text names every version and option
// the code depends on (primjit, LLVM and its target CPU, NVRTC, the driver and the device
// architecture, the function's text, the argument key), and the file name is a hash of it.
//
// Trust model (docs/cache.md): the directory and every file in it must belong to the current
// user and be closed to writes by others (PrivateDir); each entry is authenticated with a MAC
// under a per-user secret key kept 0600 in the directory, over the header, the key and the
// payload. Anything that fails is reported and never used: the caller compiles and replaces it.
// The size cap is kept with a running total and enforced in batches (least recently used
// first), so a store costs the same with 10 entries as with 100,000.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/hash_mix.h"
#include "jit/cuda/device_code.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/private_dir.h"

namespace primjit::jit {

struct CachedVariant {
  HostImage host;
  DeviceBinary device;
};

/// The payload encoding (exposed for tests).
std::string encode_variant(const CachedVariant& variant);
/// Decodes a payload; false (and what is wrong in `problem`) when it is malformed.
bool decode_variant(std::string_view payload, CachedVariant* variant, std::string* problem);

/// A fast 64-bit hash (not cryptographic): file names.
using hashing::hash_bytes;

class DiskCache {
 public:
  static constexpr uint64_t kDefaultMaxBytes = uint64_t{1} << 30;
  /// No single entry is larger, whatever the cap: a file beyond it is never read.
  static constexpr uint64_t kMaxEntryBytes = uint64_t{256} << 20;
  /// The name of the per-user MAC key in the directory.
  static constexpr const char* kKeyFile = "primjit-mac.key";
  /// The name of the counters file in the directory (primjit-cache stats).
  static constexpr const char* kStatsFile = "primjit-stats";

  /// Opens `dir` (created 0700 when missing) and its MAC key (created 0600 on first use).
  /// Throws primjit::Error naming the problem and the fix when the directory or the key is
  /// not private to the current user, or primjit was built without a MAC library.
  DiskCache(std::string dir, uint64_t max_bytes);

  enum class Status { kHit, kMissing, kRejected };
  struct Lookup {
    Status status = Status::kMissing;
    CachedVariant variant;  // kHit
    std::string problem;    // kRejected: why the file was not used
  };
  /// The variant stored under `key`. A hit refreshes the file's age for the size cap.
  Lookup load(const std::string& key) const;
  /// Stores a variant; false (and why in `problem`) when it cannot be written.
  bool store(const std::string& key, const CachedVariant& variant, std::string* problem) const;

  /// The file a key is stored in.
  std::string path_of(const std::string& key) const;
  const std::string& dir() const { return dir_.path(); }
  uint64_t max_bytes() const { return max_bytes_; }

  /// An entry's bytes: header, key and payload, sealed with this directory's MAC key.
  std::string seal(std::string_view key, std::string_view payload) const;
  /// Checks an entry's bytes (format, lengths, MAC); on success sets `key` and `payload` to
  /// views into `bytes`, else says what is wrong in `problem`.
  bool unseal(std::string_view bytes, std::string_view* key, std::string_view* payload,
              std::string* problem) const;

  // --- maintenance (primjit-cache) ------------------------------------------------------------
  struct Entry {
    std::string file;    // the file's name in the directory
    uint64_t bytes = 0;  // its size
    int64_t last_use_ns = 0;
    std::string key;      // the key text (verify or list with details)
    std::string problem;  // empty: the entry checks out (when verified)
  };
  /// Every entry file; with `verify`, each is read and checked (MAC, key, payload).
  std::vector<Entry> entries(bool verify) const;
  struct Removed {
    size_t files = 0;
    uint64_t bytes = 0;
  };
  /// Removes the entries (and temporary files) last used longer ago than `older_than`, or all
  /// of them. Never touches a file that primjit did not name.
  Removed clear(std::optional<std::chrono::seconds> older_than) const;

  /// Counters of the directory across processes, kept in kStatsFile.
  struct Counters {
    uint64_t memory_hits = 0, disk_hits = 0, remote_hits = 0, compiles = 0, rejected = 0,
             stores = 0, evictions = 0;
  };
  /// Adds this process's counters (and the disk tier's own) to the directory's.
  void record(Counters counters) const;
  Counters recorded() const;

  /// How often the directory was scanned for the size cap (tests: not after every store).
  uint64_t scans() const { return scans_.load(); }

  /// The default directory: $PRIMJIT_CACHE_DIR, else $XDG_CACHE_HOME/primjit, else
  /// $HOME/.cache/primjit; empty when none of them is set.
  static std::string default_dir();
  /// The cap from $PRIMJIT_CACHE_MAX_BYTES (bytes, or with a K, M, G or T suffix for binary
  /// multiples), else `fallback`. Throws primjit::Error when the variable is malformed.
  static uint64_t max_bytes_from_env(uint64_t fallback);
  /// True for the names of entry files ("<16 hex digits>.pjv").
  static bool is_entry_name(std::string_view name);

 private:
  void add_bytes(int64_t delta) const;
  void enforce_cap() const;
  std::string file_of(const std::string& key) const;

  PrivateDir dir_;
  std::string mac_key_;
  uint64_t max_bytes_;
  mutable std::mutex scan_mutex_;
  mutable std::atomic<int64_t> total_{-1};  // bytes of entries; -1 until the first scan
  mutable std::atomic<uint64_t> scans_{0};
  mutable std::atomic<uint64_t> rejected_{0}, stores_{0}, evictions_{0};
};

}  // namespace primjit::jit
