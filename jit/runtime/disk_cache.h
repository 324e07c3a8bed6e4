// The persistent cache: one file per compiled variant, loadable without compiling.
//
// A file holds a header (magic, format version, the variant's full key as text, a checksum)
// and the payload: the host object with its symbol table and, for device targets, the device
// image with each kernel's launch layout. The key text names every version and option the code
// depends on (primjit, LLVM and its target CPU, NVRTC and the device architecture, the
// function's text), and the file name is a hash of it. Files are written to a temporary file
// in the same directory and renamed, so a reader sees a complete file or none, and two
// processes storing the same key both succeed. A file that does not check out (truncated,
// corrupt, another version's key) is reported and never used. The directory is kept under a
// size cap by removing the least recently used files.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "jit/runtime/device_code.h"
#include "jit/runtime/host_program.h"

namespace primjit::jit {

struct CachedVariant {
  HostImage host;
  DeviceBinary device;
};

/// The payload encoding (exposed for tests).
std::string encode_variant(const CachedVariant& variant);
/// Decodes a payload; false (and what is wrong in `problem`) when it is malformed.
bool decode_variant(std::string_view payload, CachedVariant* variant, std::string* problem);

/// A fast 64-bit hash (not cryptographic): file names and checksums.
uint64_t hash_bytes(std::string_view bytes, uint64_t seed = 0);

class DiskCache {
 public:
  /// Uses `dir` (created when missing); throws primjit::Error when it cannot be created.
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

  /// The default directory: $PRIMJIT_CACHE_DIR, else $XDG_CACHE_HOME/primjit, else
  /// $HOME/.cache/primjit; empty when none of them is set.
  static std::string default_dir();

 private:
  void enforce_cap() const;
  std::string dir_;
  uint64_t max_bytes_;
};

}  // namespace primjit::jit
