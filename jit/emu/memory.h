// Memory of the reference interpreter: allocations with their checking state, and the registry
// that maps host addresses back to allocations.
//
// In checked mode every access goes through check_access() (machine.h): the byte range must lie
// inside one allocation; reads of bytes never written are reported when the allocation tracks
// initialization; shared memory tracks, per byte, which thread last wrote and read it since the
// block's last barrier, so two threads touching one byte between barriers (one of them writing)
// are reported as a race.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <map>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

namespace primjit::jit::emu {

class CStmt;

enum class AllocKind : uint8_t {
  kData,          // buffer storage (AllocBuffer, a tensor's data)
  kTensorHeader,  // a DLTensor struct
  kShapeArray,    // a DLTensor's shape or strides array
  kPackedValues,  // a PJValue array (packed arguments or result)
};

/// Per-byte access history of shared memory within the current barrier interval (epoch): the
/// last writer and up to two distinct readers.
struct RaceCell {
  uint32_t write_epoch = 0;
  uint32_t read_epoch = 0;
  int32_t writer = -1;
  int32_t readers[2] = {-1, -1};
  const CStmt* write_site = nullptr;
  const CStmt* read_sites[2] = {nullptr, nullptr};
};

class Allocation {
 public:
  /// A view of memory owned elsewhere (a user tensor, a DLTensor struct, ...): all initialized.
  Allocation(std::string name, std::string scope, AllocKind kind, uint8_t* base, int64_t size);
  /// Memory owned by the allocation, zero-filled, aligned to `alignment`. `track_init`: reads of
  /// bytes never written are errors; `track_races`: shared-memory race detection.
  static std::unique_ptr<Allocation> make_owned(std::string name, std::string scope, int64_t size,
                                                int64_t alignment, bool track_init,
                                                bool track_races);

  bool contains(uint64_t address, int64_t bytes) const {
    const uint64_t start = reinterpret_cast<uint64_t>(base);
    return address >= start && bytes >= 0 && address - start <= static_cast<uint64_t>(size) &&
           static_cast<uint64_t>(size) - (address - start) >= static_cast<uint64_t>(bytes);
  }
  /// Forgets what was written (a fresh allocation in the same storage).
  void reset_tracking();

  std::string name;
  std::string scope;
  AllocKind kind;
  uint8_t* base;
  int64_t size;
  std::vector<uint8_t> written;  // per byte; empty when not tracked (all initialized)
  std::vector<RaceCell> races;   // per byte; empty when not tracked
  // kTensorHeader: the tensor and the allocations of its data, shape and strides.
  const DLTensor* tensor = nullptr;
  Allocation* data = nullptr;
  Allocation* shape = nullptr;
  Allocation* strides = nullptr;

 private:
  std::unique_ptr<uint8_t[]> storage_;
};

/// Allocations made by AllocBuffer statements, keyed by the statement: executing the same
/// statement again (a loop) reuses the storage as a fresh allocation.
class AllocTable {
 public:
  Allocation* find(const void* key) const;
  Allocation* insert(const void* key, std::unique_ptr<Allocation> alloc);

 private:
  std::vector<std::pair<const void*, std::unique_ptr<Allocation>>> items_;
};

/// Host addresses → allocations, for pointers whose allocation the interpreter lost track of
/// (pointers read from memory, from DLTensors, from packed arguments). Thread-safe.
class Registry {
 public:
  void add(Allocation* alloc);
  /// The allocation holding [address, address + bytes), or the one holding `address` when
  /// none holds the whole range; nullptr when none.
  Allocation* find(uint64_t address, int64_t bytes) const;

 private:
  mutable std::shared_mutex mutex_;
  std::multimap<uint64_t, Allocation*> by_start_;
};

}  // namespace primjit::jit::emu
