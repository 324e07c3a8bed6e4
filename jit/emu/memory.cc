// Allocations, the address registry and the checked memory access.
#include "jit/emu/memory.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <sstream>

#include "jit/emu/machine.h"
#include "primjit/error.h"

namespace primjit::jit::emu {

Allocation::Allocation(std::string name, std::string scope, AllocKind kind, uint8_t* base,
                       int64_t size)
    : name(std::move(name)), scope(std::move(scope)), kind(kind), base(base), size(size) {}

std::unique_ptr<Allocation> Allocation::make_owned(std::string name, std::string scope,
                                                   int64_t size, int64_t alignment, bool track_init,
                                                   bool track_races) {
  alignment = std::max<int64_t>(alignment, 16);
  auto storage = std::make_unique<uint8_t[]>(static_cast<size_t>(size + alignment));
  uint64_t start = reinterpret_cast<uint64_t>(storage.get());
  uint64_t aligned = (start + static_cast<uint64_t>(alignment) - 1) /
                     static_cast<uint64_t>(alignment) * static_cast<uint64_t>(alignment);
  auto alloc = std::make_unique<Allocation>(std::move(name), std::move(scope), AllocKind::kData,
                                            reinterpret_cast<uint8_t*>(aligned), size);
  alloc->storage_ = std::move(storage);
  if (track_init) alloc->written.assign(static_cast<size_t>(size), 0);
  if (track_races) alloc->races.assign(static_cast<size_t>(size), RaceCell{});
  return alloc;
}

void Allocation::reset_tracking() {
  std::fill(written.begin(), written.end(), 0);
  std::fill(races.begin(), races.end(), RaceCell{});
}

Allocation* AllocTable::find(const void* key) const {
  for (const auto& [k, alloc] : items_) {
    if (k == key) return alloc.get();
  }
  return nullptr;
}

Allocation* AllocTable::insert(const void* key, std::unique_ptr<Allocation> alloc) {
  for (auto& [k, existing] : items_) {
    if (k == key) {
      existing = std::move(alloc);
      return existing.get();
    }
  }
  items_.emplace_back(key, std::move(alloc));
  return items_.back().second.get();
}

void Registry::add(Allocation* alloc) {
  std::unique_lock lock(mutex_);
  by_start_.emplace(reinterpret_cast<uint64_t>(alloc->base), alloc);
}

Allocation* Registry::find(uint64_t address, int64_t bytes) const {
  std::shared_lock lock(mutex_);
  auto it = by_start_.upper_bound(address);
  Allocation* partial = nullptr;
  // Allocations may nest (a tensor's data inside another's): look at a few starting below.
  for (int steps = 0; it != by_start_.begin() && steps < 16; ++steps) {
    --it;
    if (it->second->contains(address, bytes)) return it->second;
    if (partial == nullptr && it->second->contains(address, 1)) partial = it->second;
  }
  return partial;
}

// --- checked access -------------------------------------------------------------------------

namespace {

std::string alloc_text(const Allocation& a) {
  std::ostringstream os;
  os << "allocation '" << a.name << "'";
  if (!a.scope.empty())
    os << " (" << a.scope << ", " << a.size << " bytes)";
  else
    os << " (" << a.size << " bytes)";
  return os.str();
}

[[noreturn]] __attribute__((noinline, cold)) void report_race(const Exec& ex, const Allocation& a,
                                                              int64_t byte, bool is_write,
                                                              const char* other_kind, int32_t other,
                                                              const CStmt* other_site,
                                                              const AccessDesc& what) {
  PRIMJIT_USER_ERROR() << "shared memory race in block " << ex.block->coords() << " of function '"
                       << ex.frame->func->name << "': thread " << ex.block->thread_coords(ex.thread)
                       << " " << (is_write ? "writes" : "reads") << " byte " << byte << " of "
                       << alloc_text(a) << " (" << what.str() << ") in `"
                       << (ex.stmt ? stmt_text(ex.stmt->stmt) : "?") << "`, which thread "
                       << ex.block->thread_coords(other) << " " << other_kind << " in `"
                       << (other_site ? stmt_text(other_site->stmt) : "?")
                       << "` since the last barrier; separate the accesses with a barrier "
                          "(T.tvm_storage_sync(\"shared\"))";
}

void track_race(Exec& ex, Allocation& a, int64_t offset, int64_t bytes, bool is_write,
                const AccessDesc& what) {
  const uint32_t epoch = ex.block->epoch;
  const int32_t me = static_cast<int32_t>(ex.thread);
  for (int64_t k = 0; k < bytes; ++k) {
    RaceCell& c = a.races[static_cast<size_t>(offset + k)];
    if (c.write_epoch == epoch && c.writer != me) {
      report_race(ex, a, offset + k, is_write, "wrote", c.writer, c.write_site, what);
    }
    if (c.read_epoch != epoch) {
      c.read_epoch = epoch;
      c.readers[0] = c.readers[1] = -1;
    }
    if (is_write) {
      for (int r = 0; r < 2; ++r) {
        if (c.readers[r] >= 0 && c.readers[r] != me) {
          report_race(ex, a, offset + k, true, "read", c.readers[r], c.read_sites[r], what);
        }
      }
      c.write_epoch = epoch;
      c.writer = me;
      c.write_site = ex.stmt;
    } else if (c.readers[0] < 0) {
      c.readers[0] = me;
      c.read_sites[0] = ex.stmt;
    } else if (c.readers[0] != me) {
      c.readers[1] = me;
      c.read_sites[1] = ex.stmt;
    }
  }
}

}  // namespace

std::string AccessDesc::str() const {
  std::string text = kind;
  if (buffer != nullptr) text += " of buffer '" + buffer->name + "'";
  if (element >= 0 || buffer != nullptr) text += " element " + std::to_string(element);
  return text;
}

Allocation* allocation_of(Exec& ex, const Scalar& ptr) {
  if (ptr.alloc != nullptr) return ptr.alloc;
  return ex.session.resolve(ptr.u);
}

namespace {

// The failures of check_access and flat_index, out of line: the hot paths keep small frames.
#define PRIMJIT_EMU_COLD __attribute__((noinline, cold))

[[noreturn]] PRIMJIT_EMU_COLD void bad_access(const Exec& ex, const Scalar& ptr,
                                              const Allocation* a, uint64_t address, int64_t bytes,
                                              const AccessDesc& what) {
  PRIMJIT_USER_CHECK(ptr.u != 0) << what.str() << " through a null pointer" << ex.where();
  PRIMJIT_USER_CHECK(a != nullptr)
      << what.str() << " at address 0x" << std::hex << address << std::dec
      << ", which is in no allocation the interpreter knows (not a tensor argument nor memory "
         "the code allocated)"
      << ex.where();
  const int64_t start = static_cast<int64_t>(address - reinterpret_cast<uint64_t>(a->base));
  PRIMJIT_USER_ERROR() << "out-of-bounds access: " << what.str() << " touches bytes [" << start
                       << ", " << start + bytes << ") of " << alloc_text(*a) << ex.where();
}

PRIMJIT_EMU_COLD void uninitialized_read(Exec& ex, const Allocation& a, int64_t byte, bool shared,
                                         const AccessDesc& what) {
  std::ostringstream os;
  os << "read of uninitialized memory: " << what.str() << " reads byte " << byte << " of "
     << alloc_text(a) << ", which nothing has written" << ex.where();
  // In shared memory, another thread may still write the byte before the next barrier: that is
  // a race, reported when it happens; otherwise this read is reported at the barrier.
  if (!shared) throw Error(os.str());
  if (ex.block->pending_error.empty()) ex.block->pending_error = os.str();
}

[[noreturn]] PRIMJIT_EMU_COLD void index_out_of_bounds(Exec& ex, const CBuffer& b,
                                                       const int64_t* indices, const char* what) {
  const size_t ndim = b.buffer->shape.size();
  std::ostringstream os;
  os << "out-of-bounds access: " << what << " of buffer '" << b.buffer->name << "' at index [";
  for (size_t k = 0; k < ndim; ++k) os << (k ? ", " : "") << indices[k];
  os << "], outside its shape (";
  for (size_t k = 0; k < ndim; ++k) {
    os << (k ? ", " : "") << (b.shape_is_const ? b.const_shape[k] : b.shape[k]->eval(ex).i);
  }
  os << (ndim == 1 ? ",)" : ")");
  PRIMJIT_USER_ERROR() << os.str() << ex.where();
}

[[noreturn]] PRIMJIT_EMU_COLD void async_copy_race(Exec& ex, const Allocation& a,
                                                   const Block::AsyncCopy& c, int64_t start,
                                                   bool is_write, const AccessDesc& what) {
  PRIMJIT_USER_ERROR() << "asynchronous copy race: " << what.str() << " "
                       << (is_write ? "writes" : "reads") << " byte " << start << " of "
                       << alloc_text(a) << ", the destination of a T.ptx_cp_async of thread "
                       << ex.block->thread_coords(c.thread)
                       << " that has not been waited for (its bytes land at some time before "
                          "the wait); wait first: T.ptx_commit_group() then T.ptx_wait_group(0) "
                          "in the copying thread (and a barrier when other threads read)"
                       << ex.where();
}

// Throws when [start, start + bytes) of `a` overlaps a copy not waited for.
void check_async_copies(Exec& ex, const Allocation& a, int64_t start, int64_t bytes, bool is_write,
                        const AccessDesc& what) {
  for (const Block::AsyncCopy& c : ex.block->async_copies) {
    if (c.alloc == &a && start < c.start + c.bytes && c.start < start + bytes) {
      async_copy_race(ex, a, c, std::max(start, c.start), is_write, what);
    }
  }
}

}  // namespace

void record_async_copy(Exec& ex, const Scalar& ptr, int64_t offset, int64_t bytes) {
  if (!ex.checked() || ex.block == nullptr) return;
  const Allocation* a = allocation_of(ex, ptr);
  if (a == nullptr) return;
  const int64_t start = static_cast<int64_t>(ptr.u + static_cast<uint64_t>(offset) -
                                             reinterpret_cast<uint64_t>(a->base));
  ex.block->async_copies.push_back(Block::AsyncCopy{a, start, bytes, ex.thread, 0});
}

void commit_async_copies(Exec& ex) {
  if (!ex.checked() || ex.block == nullptr) return;
  const int64_t group = ++ex.block->async_commits[ex.thread];
  for (Block::AsyncCopy& c : ex.block->async_copies) {
    if (c.thread == ex.thread && c.group == 0) c.group = group;
  }
}

void wait_async_copies(Exec& ex, int64_t n) {
  PRIMJIT_USER_CHECK(n >= 0) << "T.ptx_wait_group(" << n
                             << "): the number of groups left pending must be 0 or more"
                             << ex.where();
  if (!ex.checked() || ex.block == nullptr) return;
  // Done: the thread's committed groups but the newest n (copies not committed stay pending).
  const int64_t done = ex.block->async_commits[ex.thread] - n;
  std::erase_if(ex.block->async_copies, [&](const Block::AsyncCopy& c) {
    return c.thread == ex.thread && c.group != 0 && c.group <= done;
  });
}

uint8_t* check_access(Exec& ex, const Scalar& ptr, int64_t offset, int64_t bytes, bool is_write,
                      const AccessDesc& what) {
  const uint64_t address = ptr.u + static_cast<uint64_t>(offset);
  if (!ex.checked()) return reinterpret_cast<uint8_t*>(address);
  // A pointer knows its allocation, except one read from memory or made from an integer: look
  // that one up. An access outside the known allocation is out of bounds even when the bytes
  // belong to some other allocation.
  Allocation* a = ptr.alloc != nullptr ? ptr.alloc : ex.session.registry.find(address, bytes);
  if (ptr.u == 0 || a == nullptr || !a->contains(address, bytes)) {
    bad_access(ex, ptr, a, address, bytes, what);
  }
  const int64_t start = static_cast<int64_t>(address - reinterpret_cast<uint64_t>(a->base));
  const bool shared = !a->races.empty() && ex.block != nullptr;
  if (!a->written.empty()) {
    uint8_t* w = a->written.data() + start;
    if (is_write) {
      std::memset(w, 1, static_cast<size_t>(bytes));
    } else {
      for (int64_t k = 0; k < bytes; ++k) {
        if (w[k] == 0) {
          uninitialized_read(ex, *a, start + k, shared, what);
          break;
        }
      }
    }
  }
  if (shared) track_race(ex, *a, start, bytes, is_write, what);
  if (ex.block != nullptr && !ex.block->async_copies.empty()) {
    check_async_copies(ex, *a, start, bytes, is_write, what);
  }
  return reinterpret_cast<uint8_t*>(address);
}

// --- buffers --------------------------------------------------------------------------------

int64_t CBuffer::flat_index(Exec& ex, const int64_t* indices, const char* what) const {
  const size_t ndim = const_shape.size();
  const bool check = ex.checked();
  int64_t flat = 0;
  for (size_t d = 0; d < ndim; ++d) {
    const int64_t extent = shape_is_const ? const_shape[d] : shape[d]->eval(ex).i;
    if (check && (indices[d] < 0 || indices[d] >= extent)) {
      index_out_of_bounds(ex, *this, indices, what);
    }
    flat =
        strides.empty() ? flat * extent + indices[d] : flat + indices[d] * strides[d]->eval(ex).i;
  }
  if (elem_offset) flat += elem_offset->eval(ex).i;
  return flat;
}

uint8_t* CBuffer::address(Exec& ex, int64_t flat, bool is_write, const char* what) const {
  const Scalar& ptr = ex.slot(data_slot);
  if (!ex.checked()) {
    return reinterpret_cast<uint8_t*>(ptr.u + static_cast<uint64_t>(flat * elem_bytes));
  }
  return check_access(ex, ptr, flat * elem_bytes, elem_bytes, is_write,
                      AccessDesc{what, buffer.get(), flat});
}

}  // namespace primjit::jit::emu
