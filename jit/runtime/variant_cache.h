// The variants of kernels and where they are kept: the Jit's cache (single-flight entries,
// evicted least recently used first) and each kernel's few recent variants, which a cached
// call runs without a lock or a reference count.
#pragma once

#include <tbb/concurrent_hash_map.h>

#include <atomic>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/cuda/device_code.h"
#include "jit/emu/interpreter.h"
#include "jit/runtime/cache_key.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// One compiled specialization of a kernel.
struct Variant {
  std::vector<int64_t> key;
  int cuda_device = 0;  // cuda: the device ordinal its kernels are compiled for and loaded on
  // Target emu: the whole lowered module runs in the interpreter, which then knows every
  // tensor's extent and checks every access.
  std::unique_ptr<emu::Interpreter> interpreter;
  std::string function;
  std::unique_ptr<DeviceCode> device;  // declared before host: destroyed after it
  std::unique_ptr<HostProgram> host;
  HostEntry entry;                      // the host code's packed entry point and its kernel table
  std::weak_ptr<Kernel::State> kernel;  // the kernel that made it, for eviction statistics
  // Sizes of its host object and device image, compiled or loaded (Jit::stats).
  uint64_t host_code_bytes = 0;
  uint64_t device_code_bytes = 0;
  // Its last call served by a kernel's recent variants, as 2 × the Jit's use clock + 1: after
  // the map use that set the clock (2 × clock), before the next one. Calls through the Jit's
  // map mark their Entry instead; eviction takes the later of the two.
  std::atomic<uint64_t> last_use{0};
  // Set when the Jit evicts it: no kernel takes it into its recent variants again, and every
  // kernel that holds it there (holders, by registration) is told to drop it.
  std::atomic<bool> evicted{false};
  std::mutex holders_mutex;
  std::vector<std::weak_ptr<Kernel::State>> holders;
};

// A compile's result: the variant, or the message of its failure. Each waiter throws its own
// copy of the error (sharing one exception object across threads is not worth the risk).
struct Outcome {
  std::shared_ptr<Variant> variant;
  std::string error;
};

struct Entry {
  uint64_t fingerprint = 0;  // the kernels' function, target and options
  std::vector<int64_t> key;
  std::shared_future<Outcome> future;
  std::atomic<uint64_t> last_use{0};
  // Made by a background compile (JitOptions::tiered); set before the entry is in the map.
  bool background = false;
};

/// The variant of a finished compile, or the compile's error, thrown in this thread.
std::shared_ptr<Variant> variant_of(const Entry& entry);

/// Runs a variant of target emu in its interpreter.
PJValue run_interpreted(const Variant& v, std::span<const Arg> args);

static_assert(sizeof(Arg) == sizeof(PJValue) && std::is_standard_layout_v<Arg>,
              "an Arg is a PJValue: arguments go to compiled code as they are");

/// Runs a variant (inline: the cached-call path).
inline PJValue run_variant(const Variant& v, std::span<const Arg> args) {
  if (v.interpreter != nullptr) return run_interpreted(v, args);
  return call_packed(v.entry, reinterpret_cast<const PJValue*>(args.data()),
                     static_cast<int32_t>(args.size()));
}

// A small index owned by the calling thread while it lives (-1 beyond kThreadSlots threads):
// each thread gets its own slot in every kernel's RecentVariants.
constexpr int kThreadSlots = 64;

class ThreadSlots {
 public:
  static int mine() {
    if (t_slot != kUnassigned) [[likely]]
      return t_slot;
    thread_local Holder holder;  // gives the slot back when the thread ends
    t_slot = holder.slot;
    return t_slot;
  }
  // One more than the highest slot ever handed out: slots at or above it were never used.
  static int high_water() { return high_water_.load(std::memory_order_seq_cst); }

 private:
  struct Holder {
    int slot = acquire();
    ~Holder() { release(slot); }
  };
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  static uint64_t& used() {
    static uint64_t bits = 0;
    return bits;
  }
  static int acquire() {
    std::lock_guard<std::mutex> lock(mutex());
    for (int i = 0; i < kThreadSlots; ++i) {
      if (!(used() >> i & 1)) {
        used() |= uint64_t{1} << i;
        if (i >= high_water_.load()) high_water_.store(i + 1, std::memory_order_seq_cst);
        return i;
      }
    }
    return -1;
  }
  static void release(int slot) {
    if (slot < 0) return;
    std::lock_guard<std::mutex> lock(mutex());
    used() &= ~(uint64_t{1} << slot);
  }
  static constexpr int kUnassigned = -2;
  static inline thread_local int t_slot = kUnassigned;  // plain TLS: no guard on each call
  static inline std::atomic<int> high_water_{0};
};

// The kernel's most recently used variants (a few, so that calls alternating between shapes
// stay on the fast path), which a cached call with the same key runs without a lock or a
// reference count: each thread announces itself in its own slot (one locked increment) before
// it reads the variant pointers, and a replaced variant is released only once every call that
// might still run it has left. Threads beyond kThreadSlots take the locked path (find()).
class RecentVariants {
 public:
  static constexpr int kRecent = 4;

  RecentVariants() = default;
  ~RecentVariants() = default;  // no calls are in flight when a kernel is destroyed

  // Runs the recent variant whose key is `key`; false (nothing run) when there is none.
  // `clock` is the Jit's use clock, which only calls through its map advance: the variant is
  // marked used with a plain store, and only when the clock moved since its last mark.
  // Always inlined into Kernel::call, the cached-call path (as one function it is not inlined
  // from a header, and the call through the library's symbol table costs a few ns per call).
  [[gnu::always_inline]] bool try_run(const KeyBuffer& key, std::span<const Arg> args,
                                      std::atomic<uint64_t>& clock, PJValue* out) {
    int s = ThreadSlots::mine();
    if (s < 0) return false;
    Slot& slot = slots_[s];
    slot.entered.fetch_add(1, std::memory_order_seq_cst);  // before the pointers are read
    struct Leave {
      Slot& slot;
      ~Leave() {
        slot.exited.store(slot.exited.load(std::memory_order_relaxed) + 1,
                          std::memory_order_release);
      }
    } leave{slot};
    for (const std::atomic<Variant*>& p : ptr_) {
      Variant* v = p.load(std::memory_order_seq_cst);
      if (v == nullptr || !key.equals(v->key)) continue;
      slot.hits.store(slot.hits.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
      uint64_t stamp = 2 * clock.load(std::memory_order_relaxed) + 1;
      if (v->last_use.load(std::memory_order_relaxed) != stamp) {
        v->last_use.store(stamp, std::memory_order_relaxed);
      }
      *out = run_variant(*v, args);
      return true;
    }
    return false;
  }

  // The recent variant with key `key`, or null (the locked path).
  std::shared_ptr<Variant> find(const KeyBuffer& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::shared_ptr<Variant>& v : owner_) {
      if (v != nullptr && key.equals(v->key)) return v;
    }
    return nullptr;
  }

  // Makes `v` one of the recent variants of kernel `self`, replacing the oldest. Recent variants
  // are only a cache: an evicted variant is not taken, nor is any while too many replaced ones
  // still wait for their calls to leave.
  void store(const std::shared_ptr<Variant>& v, const std::weak_ptr<Kernel::State>& self) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const std::shared_ptr<Variant>& o : owner_) {
      if (o == v) return;
    }
    {
      // Registered before `evicted` is read, and the evictor sets `evicted` before it reads the
      // holders: either this sees the flag or the evictor sees this kernel.
      std::lock_guard<std::mutex> holders_lock(v->holders_mutex);
      bool known = false;
      for (const std::weak_ptr<Kernel::State>& h : v->holders) {
        known = known || (!h.owner_before(self) && !self.owner_before(h));
      }
      if (!known) v->holders.push_back(self);
    }
    if (v->evicted.load(std::memory_order_seq_cst)) return;
    reclaim();
    if (owner_[next_] != nullptr && retired_count_ == kMaxRetired) return;
    int i = next_;
    next_ = (next_ + 1) % kRecent;
    replace(i, v);
  }

  // Drops `v` (evicted from the Jit's cache), so that it is unloaded once its calls have left.
  void forget(const Variant* v) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (int i = 0; i < kRecent; ++i) {
      if (owner_[i].get() == v) replace(i, nullptr);
    }
  }

  // Calls that ran a recent variant without a lock.
  uint64_t fast_hits() const {
    uint64_t n = 0;
    for (const Slot& slot : slots_) n += slot.hits.load(std::memory_order_relaxed);
    return n;
  }

  // The calling thread's run of calls with one exact shape `shape` (a hash, not 0; the thread
  // has a slot): true when it reaches `after` calls in a row, and the count starts again.
  [[gnu::always_inline]] bool count_run(uint64_t shape, uint32_t after) {
    Slot& slot = slots_[ThreadSlots::mine()];
    if (slot.run_shape != shape) {
      slot.run_shape = shape;
      slot.run_length = 1;
      return false;
    }
    if (++slot.run_length < after) return false;
    slot.run_length = 0;
    return true;
  }

  // Counts a call of the calling thread (which has a slot) that ran a promoted exact variant
  // with shape `shape`: it is part of the thread's runs (count_run) as any other.
  [[gnu::always_inline]] void count_promoted_call(uint64_t shape) {
    Slot& slot = slots_[ThreadSlots::mine()];
    if (slot.run_shape != shape) {
      slot.run_shape = shape;
      slot.run_length = 0;
    }
    slot.promoted_calls.store(slot.promoted_calls.load(std::memory_order_relaxed) + 1,
                              std::memory_order_relaxed);
  }
  uint64_t promoted_calls() const {
    uint64_t n = 0;
    for (const Slot& slot : slots_) n += slot.promoted_calls.load(std::memory_order_relaxed);
    return n;
  }

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> entered{0};
    std::atomic<uint64_t> exited{0};          // written only by the slot's thread
    std::atomic<uint64_t> hits{0};            // written only by the slot's thread
    std::atomic<uint64_t> promoted_calls{0};  // written only by the slot's thread
    // Only the slot's thread reads or writes these (count_run).
    uint64_t run_shape = 0;
    uint32_t run_length = 0;
  };
  struct Retired {
    std::shared_ptr<Variant> variant;
    int slots = 0;  // the slots that mattered
    uint64_t wait[kThreadSlots];
  };
  static constexpr int kMaxRetired = 8;

  // Releases each retired variant whose slots have all left as often as they had entered
  // when it was retired (unloading it when that was its last reference).
  bool left(const Retired& r) const {
    for (int i = 0; i < r.slots; ++i) {
      if (slots_[i].exited.load(std::memory_order_acquire) < r.wait[i]) return false;
    }
    return true;
  }
  void reclaim() {
    std::erase_if(overflow_, [&](const Retired& r) { return left(r); });
    for (int j = 0; j < retired_count_;) {
      Retired& r = retired_[j];
      if (!left(r)) {
        ++j;
        continue;
      }
      r.variant.reset();
      if (j != retired_count_ - 1) std::swap(r, retired_[retired_count_ - 1]);
      --retired_count_;
    }
  }
  // Puts `v` in place of recent variant i; the old one waits until its calls have left.
  void replace(int i, std::shared_ptr<Variant> v) {
    std::shared_ptr<Variant> old = std::move(owner_[i]);
    owner_[i] = std::move(v);
    ptr_[i].store(owner_[i].get(), std::memory_order_seq_cst);  // before the slots are read
    reclaim();
    if (old == nullptr) return;
    // Slots above the high-water mark have no calls in flight: their threads got them after
    // this point and will read the new pointer. When the fixed array is full (calls that
    // started long ago are still running; store() avoids it), forget() retires into overflow_.
    Retired& r =
        retired_count_ < kMaxRetired ? retired_[retired_count_++] : overflow_.emplace_back();
    r.variant = std::move(old);
    r.slots = ThreadSlots::high_water();
    for (int j = 0; j < r.slots; ++j) r.wait[j] = slots_[j].entered.load();
    reclaim();
  }

  std::atomic<Variant*> ptr_[kRecent] = {};
  Slot slots_[kThreadSlots];
  std::mutex mutex_;
  std::shared_ptr<Variant> owner_[kRecent];  // keep ptr_ alive
  int next_ = 0;                             // the oldest, replaced next
  Retired retired_[kMaxRetired];             // fixed: replacing a variant never allocates
  int retired_count_ = 0;
  std::vector<Retired> overflow_;  // forget() with the array full
};

/// The Jit's variants of all its kernels, by key hash.
struct VariantCache {
  // Nodes come from std::allocator, not TBB's scalable allocator: memory that an eviction
  // frees and a later insert reuses then goes through malloc/free, which ThreadSanitizer
  // follows (it does not see tbbmalloc's reuse and would report it as a race).
  using Map =
      tbb::concurrent_hash_map<uint64_t, std::shared_ptr<Entry>, tbb::tbb_hash_compare<uint64_t>,
                               std::allocator<std::pair<const uint64_t, std::shared_ptr<Entry>>>>;
  Map map;
  std::atomic<uint64_t> clock{0};
  // Every cached entry by hash, for eviction: the concurrent map cannot be walked while
  // other threads insert, so the LRU scan walks this copy under its mutex.
  std::mutex lru_mutex;
  std::map<uint64_t, std::weak_ptr<Entry>> lru;

  /// Evicts finished entries, except `keep_hash`'s, until at most `capacity` remain: failed
  /// compiles first, then the least recently used variants; kernels holding an evicted variant
  /// among their recent ones drop it.
  void evict_if_needed(size_t capacity, std::optional<uint64_t> keep_hash = std::nullopt);
  /// Removes `entry` (key hash `hash`) from the map and the LRU, unless another entry has
  /// replaced it there.
  void forget(uint64_t hash, const std::shared_ptr<Entry>& entry);
};

}  // namespace primjit::jit
