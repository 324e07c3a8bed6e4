// The JIT runtime: argument checks, cache keys, single-flight compilation, LRU eviction.
#include "primjit/jit.h"

#include <tbb/concurrent_hash_map.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <future>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <unordered_set>

#include "jit/cuda/driver.h"
#include "jit/cuda/nvrtc_compiler.h"
#include "jit/emu/interpreter.h"
#include "jit/llvm/orc_engine.h"
#include "jit/runtime/argument_memory.h"
#include "jit/runtime/build_id.h"
#include "jit/runtime/device_code.h"
#include "jit/runtime/disk_cache.h"
#include "jit/runtime/host_program.h"
#include "jit/runtime/host_runtime.h"
#include "jit/runtime/remote_cache.h"
#include "primjit/error.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/log.h"
#include "primjit/passes.h"
#include "primjit/version.h"

namespace primjit {
namespace {

using Clock = std::chrono::steady_clock;

double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

// Key values are int64; a dimension left symbolic is this marker.
constexpr int64_t kSymbolic = INT64_MIN;

// Keys up to this many values are built on the stack (no allocation on a hit).
constexpr size_t kInlineKey = 48;

struct KeyBuffer {
  int64_t inline_values[kInlineKey];
  std::vector<int64_t> overflow;
  size_t size = 0;

  // Only with room (the fast path checks the key's size once per kernel).
  void push_inline(int64_t v) { inline_values[size++] = v; }
  void push(int64_t v) {
    if (size < kInlineKey) [[likely]] {
      inline_values[size++] = v;
      return;
    }
    if (overflow.empty()) overflow.assign(inline_values, inline_values + kInlineKey);
    overflow.push_back(v);
    ++size;
  }
  const int64_t* data() const { return size <= kInlineKey ? inline_values : overflow.data(); }
  uint64_t hash(uint64_t seed) const {
    uint64_t h = seed ^ 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < size; ++i) {
      h ^= static_cast<uint64_t>(data()[i]) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    }
    return h;
  }
  bool equals(const std::vector<int64_t>& key) const {
    return key.size() == size && std::equal(key.begin(), key.end(), data());
  }
};

// Where in the signature each parameter's argument goes and what it must be.
// What a dimension of a parameter buffer must be: a constant, the value of a shape variable
// (index into the call's variable values), or an expression the packed API checks.
struct DimRule {
  enum Kind : uint8_t { kConstant, kVariable, kExpression } kind = kExpression;
  int64_t value = 0;  // kConstant
  int variable = -1;  // kVariable
  // The largest extent the dimension's dtype holds: an int32 shape variable cannot take 2^31
  // (the compiled code would see it truncated).
  int64_t max = INT64_MAX;
};

struct ParamInfo {
  std::string name;  // buffer name for buffers, else the parameter's name
  Buffer buffer;     // undefined for scalars
  DataType dtype;    // buffer element dtype or the scalar's dtype
  std::vector<DimRule> dims;
};

// Shape variables per kernel checked on the stack (more are left to the packed API).
constexpr int kMaxCheckedVars = 32;

// Parameters of a kernel whose cached calls take the fast path (their byte ranges are kept on
// the stack for the overlap check).
constexpr size_t kMaxFastParams = 64;

}  // namespace

// --- variants and the cache ------------------------------------------------------------------

namespace jit_detail {

struct Variant {
  std::vector<int64_t> key;
  // Target emu: the whole lowered module runs in the interpreter, which then knows every
  // tensor's extent and checks every access.
  std::unique_ptr<jit::emu::Interpreter> interpreter;
  std::string function;
  std::unique_ptr<jit::DeviceCode> device;  // declared before host: destroyed after it
  std::unique_ptr<jit::HostProgram> host;
  PJPackedFunc entry = nullptr;
  std::weak_ptr<Kernel::State> kernel;  // the kernel that made it, for eviction statistics
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
};

}  // namespace jit_detail

using jit_detail::Entry;
using jit_detail::Outcome;
using jit_detail::Variant;

// The variant of a finished compile, or the compile's error, thrown in this thread.
std::shared_ptr<Variant> variant_of(const Entry& entry) {
  const Outcome& outcome = entry.future.get();
  if (outcome.variant == nullptr) PRIMJIT_USER_ERROR() << outcome.error;
  return outcome.variant;
}

namespace {
PJValue run_variant(const Variant& v, std::span<const Arg> args);
}  // namespace

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
  bool try_run(const KeyBuffer& key, std::span<const Arg> args, std::atomic<uint64_t>& clock,
               PJValue* out) {
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

 private:
  struct alignas(64) Slot {
    std::atomic<uint64_t> entered{0};
    std::atomic<uint64_t> exited{0};  // written only by the slot's thread
    std::atomic<uint64_t> hits{0};    // written only by the slot's thread
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

struct Jit::State {
  JitOptions options;
  jit::OrcEngine engine;
  std::unique_ptr<jit::DiskCache> disk;      // null when disabled
  std::unique_ptr<jit::RemoteCache> remote;  // null when not configured
  std::string host_key;  // what host code depends on besides the function: versions, CPU
  // Counters of kernels that are gone, for the disk cache's record of this process.
  std::atomic<uint64_t> memory_hits{0}, disk_hits{0}, remote_hits{0}, compiles{0};
  // Nodes come from std::allocator, not TBB's scalable allocator: memory that an eviction
  // frees and a later insert reuses then goes through malloc/free, which ThreadSanitizer
  // follows (it does not see tbbmalloc's reuse and would report it as a race).
  using Cache =
      tbb::concurrent_hash_map<uint64_t, std::shared_ptr<Entry>, tbb::tbb_hash_compare<uint64_t>,
                               std::allocator<std::pair<const uint64_t, std::shared_ptr<Entry>>>>;
  Cache cache;
  std::atomic<uint64_t> clock{0};
  // Every cached entry by hash, for eviction: the concurrent map cannot be walked while
  // other threads insert, so the LRU scan walks this copy under its mutex.
  std::mutex lru_mutex;
  std::map<uint64_t, std::weak_ptr<Entry>> lru;

  explicit State(JitOptions o);
  ~State();
  void setup_remote();

  void evict_if_needed(uint64_t keep_hash);
};

struct Kernel::State {
  std::shared_ptr<Jit::State> jit;
  PrimFunc func;      // with the target applied
  PrimFunc original;  // as given
  IRModule module;    // the function and its private callees
  std::string name;
  KernelOptions options;
  Target target;
  uint64_t fingerprint = 0;
  std::vector<ParamInfo> params;
  std::vector<std::string> param_names;  // ParamInfo::name, for the memory check's messages
  jit::MemoryRule memory;                // alignment and overlap rules of the arguments

  // What a cached call checks, as plain integers (see fast_key).
  struct FastParam {
    bool tensor = false;
    uint32_t dtype = 0;  // the DLDataType's bytes
    int32_t ndim = 0;
    int32_t device = 0;
    uintptr_t align_mask = 0;  // data + byte_offset must have these bits clear
    uint32_t element_bytes = 0;
  };
  std::vector<FastParam> fast;
  bool fast_ok = false;                    // keys fit inline, at most 64 dimensions
  std::atomic<uint64_t> symbolic_mask{0};  // kAuto: symbolic dimensions, in key order
  std::atomic<uint64_t> slow_calls{0};

  RecentVariants recent;

  std::atomic<uint64_t> hits{0}, misses{0}, disk_hits{0}, remote_hits{0}, evictions{0},
      failed{0};  // + recent.fast_hits()
  std::atomic<uint64_t> dump_count{0};
  std::mutex mutex;  // guards the fields below
  StageTimes times;
  // History for diagnostics and the recompile limit, bounded whatever the number of variants:
  // the reasons of the last kMaxReasons compiles (reason i is reasons[i - reasons_dropped]),
  // the hashes of the distinct keys compiled (the limit counts keys, not compiles), the last
  // few keys (a new key's reason names what differs from the closest of them) and, per
  // dimension, how many compiles changed it (the limit's message names the worst one).
  static constexpr size_t kMaxReasons = 256;
  static constexpr size_t kRecentKeys = 8;
  std::deque<std::string> reasons;
  uint64_t reasons_dropped = 0;
  std::unordered_set<uint64_t> distinct_keys;
  std::deque<std::vector<int64_t>> recent_keys;
  std::map<std::pair<size_t, size_t>, uint64_t> dim_changes;
  uint64_t compiles_started = 0;
  // kAuto: distinct values seen per (parameter, dimension), and the dimensions made symbolic.
  std::map<std::pair<size_t, size_t>, std::set<int64_t>> seen;
  std::set<std::pair<size_t, size_t>> symbolic;
  std::atomic<bool> fell_back{false};  // the recompile limit switched to the dynamic variant

  // The disk cache key of the kernel's variants up to the argument key (made on first use).
  std::once_flag disk_once;
  std::string disk_prefix;  // empty: no disk cache for this kernel

  ~State() {
    jit->memory_hits += hits + recent.fast_hits();
    jit->disk_hits += disk_hits;
    jit->remote_hits += remote_hits;
    jit->compiles += misses;
  }
};

namespace {

// Tensor and scalar checks that must hold before anything is compiled.
void check_arguments(const Kernel::State& k, std::span<const Arg> args) {
  auto where = [&](size_t i) {
    return "argument #" + std::to_string(i) + " ('" + k.params[i].name + "') of '" + k.name + "'";
  };
  PRIMJIT_USER_CHECK(args.size() == k.params.size())
      << "'" << k.name << "' takes " << k.params.size() << " arguments, got " << args.size();
  for (size_t i = 0; i < args.size(); ++i) {
    const PJValue& v = args[i].value;
    const ParamInfo& p = k.params[i];
    if (!p.buffer.defined()) {
      PRIMJIT_USER_CHECK(v.type_index != kPJDLTensorPtr)
          << where(i) << ": expected a " << p.dtype << " scalar, got a tensor";
      continue;
    }
    PRIMJIT_USER_CHECK(v.type_index == kPJDLTensorPtr)
        << where(i) << ": expected a tensor (" << p.buffer->dtype << "), got a "
        << type_index_name(v.type_index);
    const auto* t = static_cast<const DLTensor*>(v.v_ptr);
    PRIMJIT_USER_CHECK(t != nullptr) << where(i) << ": expected a tensor, got a null DLTensor*";
    DataType got;
    bool known = DataType::from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes, &got);
    PRIMJIT_USER_CHECK(known && got == p.buffer->dtype)
        << where(i) << ": expected dtype " << p.buffer->dtype << ", got " << dtype_name(t->dtype);
    PRIMJIT_USER_CHECK(t->ndim == static_cast<int>(p.buffer->shape.size()))
        << where(i) << ": expected " << p.buffer->shape.size() << " dimensions, got " << t->ndim
        << " (" << describe(*t) << ")";
    PRIMJIT_USER_CHECK(t->ndim == 0 || t->shape != nullptr)
        << where(i) << ": the DLTensor has no shape array";
    int expected_device = k.target->kind == "cuda" ? kDLCUDA : kDLCPU;
    PRIMJIT_USER_CHECK(t->device.device_type == expected_device ||
                       (expected_device == kDLCUDA && t->device.device_type == kDLCUDAManaged))
        << where(i) << ": expected a tensor on " << (expected_device == kDLCUDA ? "cuda" : "cpu")
        << " (target " << k.target.str() << "), got " << describe(*t);
    PRIMJIT_USER_CHECK(expected_device != kDLCUDA || t->device.device_id == 0)
        << where(i) << ": kernels run on CUDA device 0, got a tensor on device "
        << t->device.device_id << " (more than one GPU is not supported yet; copy it to device 0)";
    PRIMJIT_USER_CHECK(t->data != nullptr || num_elements(*t) == 0)
        << where(i) << ": the tensor's data pointer is null";
    for (int d = 0; d < t->ndim; ++d) {
      PRIMJIT_USER_CHECK(t->shape[d] >= 0)
          << where(i) << ": dimension " << d << " is negative (" << t->shape[d] << ")";
      const Expr& dim = p.buffer->shape[static_cast<size_t>(d)];
      PRIMJIT_USER_CHECK(t->shape[d] <= p.dims[static_cast<size_t>(d)].max)
          << where(i) << ": shape[" << d << "] = " << t->shape[d] << " does not fit in "
          << dim.dtype() << ", the dtype of " << p.name << ".shape[" << d << "]"
          << (dim.as<VarNode>() ? " ('" + dim.as<VarNode>()->name + "')" : std::string())
          << "; declare the shape as " << DataType::Int(64)
          << " (e.g. n = T.int64()) for dimensions of 2^31 or more";
    }
  }
  // Shapes against constants and against each other (a variable's first appearance binds it).
  int64_t values[kMaxCheckedVars];
  int first[kMaxCheckedVars][2];  // parameter, dimension that bound the variable
  bool bound[kMaxCheckedVars] = {};
  for (size_t i = 0; i < args.size(); ++i) {
    const ParamInfo& p = k.params[i];
    if (!p.buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    for (size_t d = 0; d < p.dims.size(); ++d) {
      const DimRule& rule = p.dims[d];
      int64_t got = t->shape[d];
      if (rule.kind == DimRule::kConstant) {
        PRIMJIT_USER_CHECK(got == rule.value)
            << where(i) << ": expected shape[" << d << "] = " << rule.value << ", got " << got
            << " (" << describe(*t) << ")";
      } else if (rule.kind == DimRule::kVariable) {
        int v = rule.variable;
        if (!bound[v]) {
          bound[v] = true;
          values[v] = got;
          first[v][0] = static_cast<int>(i);
          first[v][1] = static_cast<int>(d);
          continue;
        }
        PRIMJIT_USER_CHECK(got == values[v])
            << where(i) << ": expected shape[" << d << "] to match " << k.params[first[v][0]].name
            << ".shape[" << first[v][1] << "] = " << values[v] << " (both are "
            << p.buffer->shape[d].as<VarNode>()->name << "), got " << got;
      }
    }
  }
}

// The key of a call: per tensor its dtype and ndim, and under kExact/kAuto its dimensions
// (symbolic ones as kSymbolic).
void build_key(const Kernel::State& k, std::span<const Arg> args, bool dynamic,
               const std::set<std::pair<size_t, size_t>>& symbolic, KeyBuffer* key) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    key->push((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) | t->dtype.lanes);
    key->push(t->ndim);
    for (int d = 0; d < t->ndim; ++d) {
      bool sym = dynamic || symbolic.count({i, static_cast<size_t>(d)}) > 0;
      key->push(sym ? kSymbolic : t->shape[d]);
    }
  }
}

std::string dim_name(const Kernel::State& k, size_t param, size_t dim) {
  return k.params[param].name + ".shape[" + std::to_string(dim) + "]";
}

// Why a new key compiles: the dimensions that differ from the closest earlier variant.
// Walks the layout build_key writes: for each tensor parameter i, f(i, -1, pos) at its dtype
// entry, then f(i, d, pos) for each dimension d.
template <typename F>
void for_each_key_entry(const Kernel::State& k, const std::vector<int64_t>& key, F&& f) {
  size_t pos = 0;
  for (size_t i = 0; i < k.params.size() && pos + 1 < key.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    f(i, -1, pos);
    size_t ndim = static_cast<size_t>(key[pos + 1]);
    pos += 2;
    for (size_t d = 0; d < ndim && pos < key.size(); ++d, ++pos) f(i, static_cast<int>(d), pos);
  }
}

// Why a new key compiles: what differs from the closest of the last few keys (a bounded
// search: the cost does not grow with the number of variants made).
std::string compile_reason(const Kernel::State& k, const std::vector<int64_t>& key, uint64_t hash) {
  if (k.recent_keys.empty()) return "first call";
  if (k.distinct_keys.count(hash)) return "compiled again after its eviction";
  const std::vector<int64_t>* best = nullptr;
  size_t best_diff = SIZE_MAX;
  for (auto it = k.recent_keys.rbegin(); it != k.recent_keys.rend(); ++it) {  // newest first
    const std::vector<int64_t>& old = *it;
    if (old.size() != key.size()) continue;
    size_t diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff += old[i] != key[i];
    if (diff < best_diff) {
      best_diff = diff;
      best = &old;
    }
  }
  if (best == nullptr) return "new dtype or rank";
  std::string out;
  auto text = [](int64_t v) {
    return v == kSymbolic ? std::string("symbolic") : std::to_string(v);
  };
  for_each_key_entry(k, key, [&](size_t i, int d, size_t pos) {
    if ((*best)[pos] == key[pos]) return;
    out += out.empty() ? "" : ", ";
    out += d < 0 ? k.params[i].name + ".dtype"
                 : dim_name(k, i, static_cast<size_t>(d)) + ": " + text((*best)[pos]) + " -> " +
                       text(key[pos]);
  });
  return out.empty() ? "new signature" : out;
}

void add_times(Kernel::State& k, const StageTimes& t) {
  std::lock_guard<std::mutex> lock(k.mutex);
  k.times.passes_ms += t.passes_ms;
  k.times.host_ms += t.host_ms;
  k.times.device_codegen_ms += t.device_codegen_ms;
  k.times.device_compile_ms += t.device_compile_ms;
  k.times.load_ms += t.load_ms;
  k.times.disk_ms += t.disk_ms;
}

// PRIMJIT_DUMP_IR=DIR: each variant's passes go to DIR/<kernel>.vN/NN_<pass>.tir.
passes::RunOptions dump_options(Kernel::State& k) {
  passes::RunOptions options;
  if (const char* dir = std::getenv("PRIMJIT_DUMP_IR"); dir != nullptr && *dir != 0) {
    options.dump_dir =
        std::string(dir) + "/" + k.name + ".v" + std::to_string(k.dump_count.fetch_add(1));
  }
  return options;
}

// The persistent key of a variant (disk and remote tiers): everything its code depends on, as
// text. Empty when the kernel's variants are not kept beyond memory (both tiers off, emu, or
// cuda without a driver: such a compile fails anyway, with the driver's error).
std::string disk_key(Kernel::State& k, const std::vector<int64_t>& key) {
  if ((k.jit->disk == nullptr && k.jit->remote == nullptr) || k.target->kind == "emu") return "";
  std::call_once(k.disk_once, [&] {
    try {
      std::ostringstream out;
      out << k.jit->host_key << "target " << k.target.str() << "\nchecked_arithmetic "
          << k.options.checked_arithmetic << " fp_contract " << k.options.fp_contract << "\n";
      if (k.target->kind == "cuda") {
        jit::CudaDriver* driver = jit::CudaDriver::try_get();
        if (driver == nullptr || driver->device_count() == 0) return;
        jit::NvrtcInfo nvrtc = jit::nvrtc_info();
        out << "nvrtc " << nvrtc.major << "." << nvrtc.minor << " driver " << driver->version()
            << " device sm_" << driver->device_info(0).arch() << " fast_math "
            << k.options.fast_math
#ifndef NDEBUG
            << " line_info"
#endif
            << "\n";
      }
      if (k.options.max_unroll != passes::kDefaultMaxUnroll) {
        out << "max_unroll " << k.options.max_unroll << "\n";
      }
      out << "function " << k.name << "\n" << print(k.module);
      k.disk_prefix = out.str();
    } catch (const Error& e) {
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "' is not cached on disk: " << e.what();
    }
  });
  if (k.disk_prefix.empty()) return "";
  std::string text = k.disk_prefix + "\nkey";
  for (int64_t v : key) text += " " + std::to_string(v);
  // The same key for people (primjit-cache ls): each tensor's dtype and shape.
  text += "\nargs";
  std::string tensor;  // the tensor being written, closed by the next one or the end
  for_each_key_entry(k, key, [&](size_t i, int d, size_t pos) {
    if (d >= 0) {
      tensor += (d > 0 ? "," : "") + (key[pos] == kSymbolic ? "?" : std::to_string(key[pos]));
      return;
    }
    if (!tensor.empty()) text += tensor + "]";
    DataType dtype;
    int64_t code = key[pos];
    bool known =
        DataType::from_dlpack(static_cast<int>(code >> 24), static_cast<int>((code >> 16) & 0xff),
                              static_cast<int>(code & 0xffff), &dtype);
    tensor = " " + k.params[i].name + ":" + (known ? dtype.str() : "?") + "[";
  });
  if (!tensor.empty()) text += tensor + "]";
  return text + "\n";
}

// Gives the host code of a variant the handles of the kernels it launches.
void bind_kernels(Variant& v) {
  jit::DeviceCode* device = v.device.get();
  v.host->bind_kernels([device](const std::string& symbol) -> jit::KernelHandle* {
    if (device == nullptr) return nullptr;
    auto it = device->kernels.find(symbol);
    return it == device->kernels.end() ? nullptr : it->second.get();
  });
}

jit::DeviceOptions device_options(const Kernel::State& k) {
  return jit::DeviceOptions{k.options.fast_math, k.options.cuda_stream, k.options.max_unroll};
}

// What the disk cache had for a variant.
enum class DiskLoad {
  kOff,  // no disk cache for this kernel
  kLoaded,
  kMissing,  // no entry, or a damaged one (reported): compile and store
  kInUse,    // a good entry whose code this Jit has linked already (another kernel with other
             // device options, e.g. another stream): compile, and leave the entry alone
};

// Links and loads a cached image into `v`; false (and why) when it cannot be used.
bool load_image(Kernel::State& k, const jit::CachedVariant& image, Variant& v,
                std::string* problem) {
  try {
    StageTimes ignored;  // the whole load counts as cache time
    v.device = jit::load_device_binary(image.device, device_options(k), &ignored);
    v.host = std::make_unique<jit::HostProgram>(k.jit->engine, image.host);
    v.entry = v.host->function(k.name);
    bind_kernels(v);
    return true;
  } catch (const Error& e) {
    *problem = e.what();
    v.host.reset();
    v.device.reset();
    v.entry = nullptr;
    return false;
  }
}

// A variant from the disk cache; a rejected or unloadable entry is reported, and the caller
// compiles and replaces it.
DiskLoad load_from_disk(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times) {
  if (k.jit->disk == nullptr) return DiskLoad::kOff;
  Clock::time_point start = Clock::now();
  jit::DiskCache::Lookup found = k.jit->disk->load(key);
  if (found.status == jit::DiskCache::Status::kMissing) return DiskLoad::kMissing;
  if (found.status == jit::DiskCache::Status::kRejected) {
    PRIMJIT_LOG_WARNING << found.problem << "; compiling kernel '" << k.name
                        << "' again and replacing the entry";
    return DiskLoad::kMissing;
  }
  if (jit::HostProgram::is_linked(k.jit->engine, found.variant.host.suffix)) {
    return DiskLoad::kInUse;
  }
  std::string problem;
  if (!load_image(k, found.variant, v, &problem)) {
    PRIMJIT_LOG_WARNING << "disk cache entry '" << k.jit->disk->path_of(key)
                        << "' cannot be loaded (" << problem << "); compiling kernel '" << k.name
                        << "' again";
    return DiskLoad::kMissing;
  }
  times->disk_ms += ms_since(start);
  PRIMJIT_LOG_INFO << "kernel '" << k.name << "': variant loaded from the disk cache";
  return DiskLoad::kLoaded;
}

// A variant from the remote tier (written to disk too, for this machine's next process);
// false when it has none that checks out (a bad value is reported: compile).
bool load_from_remote(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times) {
  if (k.jit->remote == nullptr) return false;
  Clock::time_point start = Clock::now();
  jit::RemoteCache::Lookup found = k.jit->remote->get(key);
  if (found.status == jit::RemoteCache::Status::kRejected) {
    PRIMJIT_LOG_WARNING << found.problem << "; compiling kernel '" << k.name << "' locally";
  }
  if (found.status != jit::RemoteCache::Status::kHit) return false;
  jit::CachedVariant image;
  std::string problem;
  if (!jit::decode_variant(found.payload, &image, &problem) ||
      jit::HostProgram::is_linked(k.jit->engine, image.host.suffix) ||
      !load_image(k, image, v, &problem)) {
    if (!problem.empty()) {
      PRIMJIT_LOG_WARNING << "remote cache value for kernel '" << k.name << "' cannot be used ("
                          << problem << "); compiling it locally";
    }
    return false;
  }
  if (k.jit->disk != nullptr) k.jit->disk->store(key, image, &problem);
  times->disk_ms += ms_since(start);
  PRIMJIT_LOG_INFO << "kernel '" << k.name << "': variant loaded from the remote cache";
  return true;
}

// Where a variant came from.
enum class Source { kCompiled, kDisk, kRemote };

// Makes one variant: from the disk cache, else the remote one, else by lowering and compiling
// it (and storing it on disk and, when this machine may write, remotely). `*source` says which.
std::shared_ptr<Variant> compile_variant(Kernel::State& k, std::span<const Arg> args,
                                         std::vector<int64_t> key, bool dynamic,
                                         const std::set<std::pair<size_t, size_t>>& symbolic,
                                         Source* source) {
  auto variant = std::make_shared<Variant>();
  variant->key = std::move(key);
  StageTimes times;
  *source = Source::kCompiled;
  std::string cache_key = disk_key(k, variant->key);
  DiskLoad disk =
      cache_key.empty() ? DiskLoad::kOff : load_from_disk(k, cache_key, *variant, &times);
  if (disk == DiskLoad::kLoaded) {
    *source = Source::kDisk;
    add_times(k, times);
    return variant;
  }
  if (disk != DiskLoad::kInUse && !cache_key.empty() &&
      load_from_remote(k, cache_key, *variant, &times)) {
    *source = Source::kRemote;
    add_times(k, times);
    return variant;
  }

  Clock::time_point start = Clock::now();
  PrimFunc func = k.func;
  if (!dynamic) {
    std::unordered_map<const VarNode*, Expr> values;
    for (size_t i = 0; i < args.size(); ++i) {
      const Buffer& b = k.params[i].buffer;
      if (!b.defined()) continue;
      const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
      for (size_t d = 0; d < b->shape.size(); ++d) {
        const auto* var = b->shape[d].as<VarNode>();
        if (var == nullptr || symbolic.count({i, d}) || values.count(var)) continue;
        values.emplace(var, IntImm::make(var->dtype, t->shape[d]));
      }
    }
    func = passes::specialize(func, values);
  }
  passes::PipelineOptions pipeline;
  pipeline.checked_arithmetic = k.options.checked_arithmetic;
  pipeline.fp_contract = k.options.fp_contract;
  IRModule lowered = passes::run_passes(k.module.with_function(k.name, func),
                                        passes::default_pipeline(pipeline), dump_options(k));
  times.passes_ms = ms_since(start);

  if (k.target->kind == "emu") {
    start = Clock::now();
    variant->interpreter = std::make_unique<jit::emu::Interpreter>(lowered);
    variant->function = k.name;
    times.load_ms = ms_since(start);
    add_times(k, times);
    return variant;
  }
  // Device code (NVRTC, module load) and host code (LLVM, ORC) compile at the same time. A
  // plain thread (not a TBB task): a compile costs milliseconds, and ThreadSanitizer sees it.
  jit::CachedVariant image;
  std::thread device_thread;
  std::exception_ptr device_error;
  StageTimes device_times;
  if (k.target->is_device()) {
    device_thread = std::thread([&] {
      try {
        image.device =
            jit::compile_device_code(lowered, k.target, device_options(k), &device_times);
        variant->device = jit::load_device_binary(image.device, device_options(k), &device_times);
      } catch (...) {
        device_error = std::current_exception();
      }
    });
  }
  std::exception_ptr host_error;
  try {
    start = Clock::now();
    image.host = jit::compile_host(k.jit->engine, lowered, {k.options.max_unroll});
    variant->host = std::make_unique<jit::HostProgram>(k.jit->engine, image.host);
    variant->entry = variant->host->function(k.name);
    times.host_ms = ms_since(start);
  } catch (...) {
    host_error = std::current_exception();
  }
  if (device_thread.joinable()) device_thread.join();
  if (device_error) std::rethrow_exception(device_error);
  if (host_error) std::rethrow_exception(host_error);
  times.device_codegen_ms = device_times.device_codegen_ms;
  times.device_compile_ms = device_times.device_compile_ms;
  times.load_ms = device_times.load_ms;
  bind_kernels(*variant);

  if (disk == DiskLoad::kMissing || (disk == DiskLoad::kOff && !cache_key.empty())) {
    start = Clock::now();
    std::string problem;
    if (k.jit->disk != nullptr && !k.jit->disk->store(cache_key, image, &problem)) {
      PRIMJIT_LOG_WARNING << problem << "; kernel '" << k.name
                          << "' works, but later processes will compile it again";
    }
    if (k.jit->remote != nullptr && k.jit->remote->can_write() &&
        !k.jit->remote->put(cache_key, jit::encode_variant(image), &problem)) {
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "' not stored in the remote cache: " << problem;
    }
    times.disk_ms = ms_since(start);
  }
  add_times(k, times);
  return variant;
}

PJValue run_interpreted(const Variant& v, std::span<const Arg> args) {
  std::vector<jit::emu::Arg> values;
  values.reserve(args.size());
  for (const Arg& a : args) {
    const PJValue& p = a.value;
    switch (p.type_index) {
      case kPJDLTensorPtr:
        values.emplace_back(static_cast<DLTensor*>(p.v_ptr));
        break;
      case kPJFloat:
        values.emplace_back(p.v_float64);
        break;
      case kPJBool:
        values.emplace_back(p.v_int64 != 0);
        break;
      case kPJInt:
        values.emplace_back(p.v_int64);
        break;
      default:
        values.push_back(jit::emu::Arg::pointer(p.v_ptr));
        break;
    }
  }
  std::optional<jit::emu::Arg> r = v.interpreter->run(v.function, values);
  PJValue out{};
  out.type_index = kPJNone;
  if (!r) return out;
  switch (r->kind()) {
    case jit::emu::Arg::Kind::kInt:
      out.type_index = kPJInt;
      out.v_int64 = r->as_int();
      break;
    case jit::emu::Arg::Kind::kBool:
      out.type_index = kPJBool;
      out.v_int64 = r->as_bool();
      break;
    case jit::emu::Arg::Kind::kFloat:
      out.type_index = kPJFloat;
      out.v_float64 = r->as_float();
      break;
    default:
      break;
  }
  return out;
}

static_assert(sizeof(Arg) == sizeof(PJValue) && std::is_standard_layout_v<Arg>,
              "an Arg is a PJValue: arguments go to compiled code as they are");

PJValue run_variant(const Variant& v, std::span<const Arg> args) {
  if (v.interpreter != nullptr) return run_interpreted(v, args);
  return jit::call_packed(v.entry, reinterpret_cast<const PJValue*>(args.data()),
                          static_cast<int32_t>(args.size()));
}

}  // namespace

void Jit::State::evict_if_needed(uint64_t keep_hash) {
  std::lock_guard<std::mutex> lock(lru_mutex);
  while (lru.size() > options.cache_capacity) {
    uint64_t victim = 0;
    uint64_t oldest = UINT64_MAX;
    bool found = false;
    for (auto it = lru.begin(); it != lru.end();) {
      std::shared_ptr<Entry> e = it->second.lock();
      if (e == nullptr) {
        it = lru.erase(it);
        continue;
      }
      bool ready = e->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      uint64_t used = e->last_use.load();
      if (ready && e->future.get().variant != nullptr) {
        used = std::max(used, e->future.get().variant->last_use.load());
      }
      if (it->first != keep_hash && ready && used < oldest) {
        oldest = used;
        victim = it->first;
        found = true;
      }
      ++it;
    }
    if (!found) return;
    lru.erase(victim);
    decltype(cache)::accessor acc;
    if (!cache.find(acc, victim)) continue;
    std::shared_ptr<Entry> entry = acc->second;
    cache.erase(acc);
    acc.release();
    if (std::shared_ptr<Variant> v = entry->future.get().variant) {
      if (auto ks = v->kernel.lock()) ++ks->evictions;
      v->evicted.store(true, std::memory_order_seq_cst);
      std::vector<std::weak_ptr<Kernel::State>> holders;
      {
        std::lock_guard<std::mutex> holders_lock(v->holders_mutex);
        holders = v->holders;
      }
      for (const std::weak_ptr<Kernel::State>& h : holders) {
        if (auto ks = h.lock()) ks->recent.forget(v.get());
      }
    }
    // The variant is unloaded when the last call holding it returns.
  }
}

Jit::State::State(JitOptions o)
    : options(std::move(o)), engine(jit::OrcOptions{options.opt_level, false}) {
  const char* env = std::getenv("PRIMJIT_CACHE");
  std::string off = env != nullptr ? env : "";
  bool enabled = options.disk_cache == DiskCacheMode::kEnabled ||
                 (options.disk_cache == DiskCacheMode::kEnvironment && off != "0" && off != "off" &&
                  off != "false");
  if (enabled) {
    std::string dir = options.cache_dir.empty() ? jit::DiskCache::default_dir() : options.cache_dir;
    try {
      uint64_t max_bytes =
          options.disk_cache_max_bytes != 0
              ? options.disk_cache_max_bytes
              : jit::DiskCache::max_bytes_from_env(jit::DiskCache::kDefaultMaxBytes);
      disk = std::make_unique<jit::DiskCache>(dir, max_bytes);
    } catch (const Error& e) {
      if (options.disk_cache == DiskCacheMode::kEnabled) throw;
      // Once per process and problem: every Jit of a program would repeat it.
      static std::mutex mutex;
      static std::set<std::string> warned;
      std::lock_guard<std::mutex> lock(mutex);
      if (warned.insert(e.what()).second) {
        PRIMJIT_LOG_WARNING << e.what() << "; continuing without the disk cache";
      }
    }
  }
  setup_remote();
  std::ostringstream key;
  // Variant format 2: the defined integer division, shift, conversion and min/max semantics
  // and no contraction (docs/semantics.md); format 1 code computed some of them differently.
  key << "primjit-variant 2\nprimjit " << version() << " build " << jit::library_build_id()
      << "\nllvm " << jit::llvm_version() << " " << engine.target_triple() << " "
      << engine.cpu_name() << " " << engine.cpu_features() << " O" << engine.opt_level() << "\n";
  host_key = key.str();
}

// The remote tier, when an address is configured: it needs the team key (never trusted
// without it). Set explicitly in JitOptions, a problem is an error; from the environment, a
// warning once and no remote tier.
void Jit::State::setup_remote() {
  auto env = [](const char* name) {
    const char* v = std::getenv(name);
    return std::string(v != nullptr ? v : "");
  };
  bool explicit_url = !options.remote_cache.empty();
  std::string url = explicit_url ? options.remote_cache : env("PRIMJIT_CACHE_REMOTE");
  if (url.empty() || options.disk_cache == DiskCacheMode::kDisabled) return;
  try {
    jit::RemoteOptions remote_options;
    std::string problem;
    PRIMJIT_USER_CHECK(jit::parse_redis_url(url, &remote_options, &problem)) << problem;
    remote_options.budget = std::chrono::milliseconds(options.remote_budget_ms);
    std::string key_file =
        options.remote_key_file.empty() ? env("PRIMJIT_CACHE_KEY_FILE") : options.remote_key_file;
    PRIMJIT_USER_CHECK(!key_file.empty())
        << "the remote cache " << url
        << " needs the team's key (PRIMJIT_CACHE_KEY_FILE): its values are never trusted "
           "without it";
    remote = std::make_unique<jit::RemoteCache>(remote_options, jit::TeamKey::load(key_file));
  } catch (const Error& e) {
    if (explicit_url) throw;
    static std::once_flag once;
    std::call_once(
        once, [&] { PRIMJIT_LOG_WARNING << e.what() << "; continuing without the remote cache"; });
  }
}

Jit::State::~State() {
  if (disk != nullptr) {
    disk->record({.memory_hits = memory_hits,
                  .disk_hits = disk_hits,
                  .remote_hits = remote_hits,
                  .compiles = compiles});
  }
}

Jit::Jit(JitOptions options) {
  PRIMJIT_USER_CHECK(options.cache_capacity > 0) << "JitOptions::cache_capacity must be positive";
  state_ = std::make_shared<State>(std::move(options));
}
Jit::~Jit() = default;

Target Jit::default_target() {
  if (jit::CudaDriver* driver = jit::CudaDriver::try_get()) {
    try {
      if (driver->device_count() > 0) {
        return Target::cuda("sm_" + std::to_string(driver->device_info(0).arch()));
      }
    } catch (const Error&) {
    }
  }
  return Target::llvm();
}

Kernel Jit::kernel(const PrimFunc& func, KernelOptions options) {
  std::string name = func->global_symbol().empty() ? "main" : func->global_symbol();
  PrimFunc f = func->global_symbol().empty() ? func.with_attr(attr::kGlobalSymbol, name) : func;
  return kernel(IRModule::from_function(name, f), name, std::move(options));
}

Kernel Jit::kernel(const IRModule& module, const std::string& name, KernelOptions options) {
  PrimFunc func = module->lookup(name);
  PRIMJIT_USER_CHECK(!func->global_symbol().empty())
      << "Jit::kernel: function '" << name << "' is private; only public functions are kernels";
  PRIMJIT_USER_CHECK(options.auto_threshold >= 1) << "KernelOptions::auto_threshold must be >= 1";
  PRIMJIT_USER_CHECK(options.recompile_limit >= 1) << "KernelOptions::recompile_limit must be >= 1";
  PRIMJIT_USER_CHECK(options.max_unroll >= 0) << "KernelOptions::max_unroll must be >= 0";
  auto state = std::make_shared<Kernel::State>();
  state->jit = state_;
  state->original = func;
  state->name = name;
  state->options = options;
  Target target = options.target.defined()   ? options.target
                  : func->target().defined() ? func->target()
                                             : default_target();
  if (target->is_device() && !target->host.defined()) {
    target = Target::make(target->kind, target->arch, Target::llvm());
  }
  state->target = target;
  state->func = func.with_attr(attr::kTarget, AttrValue(target));
  state->module = module.with_function(name, state->func);
  // Variants are shared by kernels of one function, target and device options.
  state->fingerprint =
      structural_hash(state->module) ^ std::hash<std::string>()(target.str()) ^
      (std::hash<void*>()(options.cuda_stream) * 31) ^ (options.fast_math ? 0x5bd1e995u : 0u) ^
      (std::hash<int64_t>()(options.max_unroll) * 0x9e3779b97f4a7c15u) ^
      (options.checked_arithmetic ? 0x27d4eb2fu : 0u) ^ (options.fp_contract ? 0x165667b1u : 0u);
  std::map<const VarNode*, int> variables;
  for (const Var& p : func->params) {
    Buffer b = func->buffer_of(p);
    ParamInfo info{b.defined() ? b->name : p->name, b, b.defined() ? b->dtype : p.dtype(), {}};
    for (size_t d = 0; b.defined() && d < b->shape.size(); ++d) {
      DimRule rule;
      rule.max = b->shape[d].dtype().max_int_value();
      if (auto c = as_const_int(b->shape[d])) {
        rule.kind = DimRule::kConstant;
        rule.value = *c;
      } else if (const auto* v = b->shape[d].as<VarNode>()) {
        auto it = variables.find(v);
        if (it == variables.end() && static_cast<int>(variables.size()) < kMaxCheckedVars) {
          it = variables.emplace(v, static_cast<int>(variables.size())).first;
        }
        if (it != variables.end()) {
          rule.kind = DimRule::kVariable;
          rule.variable = it->second;
        }
      }
      info.dims.push_back(rule);
    }
    state->param_names.push_back(info.name);
    state->params.push_back(std::move(info));
  }
  state->memory = jit::memory_rule(func, target);
  size_t key_size = 0, dims = 0;
  for (const ParamInfo& p : state->params) {
    Kernel::State::FastParam fp;
    if (p.buffer.defined()) {
      DLDataType dt = to_dlpack(p.dtype);
      fp.tensor = true;
      std::memcpy(&fp.dtype, &dt, sizeof(fp.dtype));
      fp.ndim = static_cast<int32_t>(p.buffer->shape.size());
      fp.device = target->kind == "cuda" ? kDLCUDA : kDLCPU;
      fp.align_mask = state->memory.align[state->fast.size()] - 1;
      fp.element_bytes = static_cast<uint32_t>((p.dtype.bits() * p.dtype.lanes() + 7) / 8);
      key_size += 2 + p.buffer->shape.size();
      dims += p.buffer->shape.size();
    }
    state->fast.push_back(fp);
  }
  state->fast_ok = key_size <= kInlineKey && dims <= 64 && state->params.size() <= kMaxFastParams;
  PRIMJIT_LOG_DEBUG << "kernel '" << name << "' for " << target.str();
  return Kernel(std::move(state));
}

// Appends `suffix` to the reason of compile `index`, unless it has been dropped already.
static void mark_reason(Kernel::State& k, uint64_t index, const char* suffix) {
  if (index >= k.reasons_dropped) k.reasons[index - k.reasons_dropped] += suffix;
}

// A failed compile counts as a miss but is not cached: the next call with the key compiles
// again. Its reason stays, marked; its key no longer counts toward the recompile limit.
static void forget_failed_compile(Jit::State& jit, Kernel::State& k, uint64_t hash,
                                  const std::shared_ptr<Entry>& entry,
                                  const std::vector<int64_t>& key, uint64_t reason_index) {
  ++k.misses;
  ++k.failed;
  {
    decltype(jit.cache)::accessor acc;
    if (jit.cache.find(acc, hash) && acc->second == entry) jit.cache.erase(acc);
  }
  std::lock_guard<std::mutex> lock(k.mutex);
  // Other keys may have been added since (compiles run in parallel): remove this one.
  auto it = std::find(k.recent_keys.rbegin(), k.recent_keys.rend(), key);
  if (it != k.recent_keys.rend()) k.recent_keys.erase(std::next(it).base());
  k.distinct_keys.erase(hash);
  mark_reason(k, reason_index, " (failed)");
}

// kAuto's symbolic dimensions as bits, in the order their values appear in the key.
static uint64_t symbolic_mask(const Kernel::State& k) {
  uint64_t mask = 0;
  size_t bit = 0;
  for (size_t i = 0; i < k.params.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    for (size_t d = 0; d < k.params[i].buffer->shape.size(); ++d, ++bit) {
      if (bit < 64 && k.symbolic.count({i, d})) mask |= uint64_t{1} << bit;
    }
  }
  return mask;
}

// The key of a call whose arguments pass the cheap checks of a cached call, as build_key makes
// it; false when anything is unusual (the full checks then run and name the problem). What the
// cheap checks leave out, the key's equality with an earlier, fully checked call's key implies
// (shapes against constants and each other), or the compiled code checks (symbolic shapes).
static inline bool fast_key(const Kernel::State& k, std::span<const Arg> args, KeyBuffer* key) {
  if (!k.fast_ok || args.size() != k.fast.size()) return false;
  const bool dynamic =
      k.options.policy == Policy::kDynamic || k.fell_back.load(std::memory_order_relaxed);
  const uint64_t mask = k.symbolic_mask.load(std::memory_order_relaxed);
  size_t bit = 0;
  int64_t values[kMaxCheckedVars];  // shape variables bound so far
  uint32_t bound = 0;
  const bool disjoint = !k.memory.disjoint.empty();
  uintptr_t begin[kMaxFastParams],
      end[kMaxFastParams];  // of the tensors, when some must not overlap
  for (size_t i = 0; i < args.size(); ++i) {
    const PJValue& v = args[i].value;
    const Kernel::State::FastParam& p = k.fast[i];
    if (!p.tensor) {
      if (v.type_index == kPJDLTensorPtr) return false;
      continue;
    }
    if (v.type_index != kPJDLTensorPtr) return false;
    const auto* t = static_cast<const DLTensor*>(v.v_ptr);
    if (t == nullptr || t->data == nullptr || t->ndim != p.ndim ||
        (p.ndim > 0 && t->shape == nullptr) || (jit::data_address(*t) & p.align_mask) != 0) {
      return false;
    }
    if (t->device.device_type != p.device &&
        !(p.device == kDLCUDA && t->device.device_type == kDLCUDAManaged)) {
      return false;
    }
    if (p.device == kDLCUDA && t->device.device_id != 0) return false;
    uint32_t dtype;
    std::memcpy(&dtype, &t->dtype, sizeof(dtype));
    if (dtype != p.dtype) return false;
    key->push_inline((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) |
                     t->dtype.lanes);
    key->push_inline(t->ndim);
    int64_t elements = 1;
    for (int d = 0; d < p.ndim; ++d, ++bit) {
      int64_t extent = t->shape[d];
      const DimRule& rule = k.params[i].dims[static_cast<size_t>(d)];
      if (extent < 0 || extent > rule.max) return false;
      if (__builtin_mul_overflow(elements, extent, &elements)) return false;  // the slow path
      if (!dynamic && !(mask >> bit & 1)) {
        key->push_inline(extent);
        continue;
      }
      // A symbolic dimension is not in the key: check it against its rule here.
      key->push_inline(kSymbolic);
      if (rule.kind == DimRule::kConstant && extent != rule.value) return false;
      if (rule.kind == DimRule::kVariable) {
        uint32_t b = uint32_t{1} << rule.variable;
        if (!(bound & b)) {
          bound |= b;
          values[rule.variable] = extent;
        } else if (values[rule.variable] != extent) {
          return false;
        }
      }
    }
    if (disjoint) {
      begin[i] = jit::data_address(*t);
      end[i] = begin[i] + static_cast<uintptr_t>(elements) * p.element_bytes;
      if (t->strides != nullptr || elements == 0) {
        jit::ByteRange r = jit::byte_range(*t, elements);
        begin[i] = r.begin;
        end[i] = r.end;
      }
    }
  }
  for (const auto& [i, j] : k.memory.disjoint) {
    if (begin[i] < end[j] && begin[j] < end[i]) return false;
  }
  return true;
}

// The key of a call under the kernel's policy; returns whether the variant is fully dynamic.
static bool build_call_key(Kernel::State& k, std::span<const Arg> args, KeyBuffer* key) {
  bool dynamic = k.options.policy == Policy::kDynamic;
  if (k.options.policy == Policy::kAuto || k.fell_back.load()) {
    std::lock_guard<std::mutex> lock(k.mutex);
    dynamic = dynamic || k.fell_back;
    build_key(k, args, dynamic, k.symbolic, key);
  } else {
    build_key(k, args, dynamic, {}, key);
  }

  return dynamic;
}

static void count_source(Kernel::State& k, Source source) {
  ++(source == Source::kDisk ? k.disk_hits : source == Source::kRemote ? k.remote_hits : k.misses);
}

// Records a compile about to start (k.mutex held): its reason, its key among the distinct and
// the recent ones, and which dimensions changed from the previous key.
static void record_compile(Kernel::State& k, const std::vector<int64_t>& key, uint64_t hash,
                           const std::string& reason) {
  if (!k.recent_keys.empty() && k.recent_keys.back().size() == key.size()) {
    const std::vector<int64_t>& last = k.recent_keys.back();
    for_each_key_entry(k, key, [&](size_t i, int d, size_t pos) {
      if (d >= 0 && last[pos] != key[pos]) ++k.dim_changes[{i, static_cast<size_t>(d)}];
    });
  }
  ++k.compiles_started;
  k.reasons.push_back(reason);
  if (k.reasons.size() > Kernel::State::kMaxReasons) {
    k.reasons.pop_front();
    ++k.reasons_dropped;
  }
  k.distinct_keys.insert(hash);
  k.recent_keys.push_back(key);
  if (k.recent_keys.size() > Kernel::State::kRecentKeys) k.recent_keys.pop_front();
}

// Steps 2-4 of a call after the recent-variant check: the Jit's cache, else a new variant
// (compiled once however many threads ask). `count_hit`: a found variant counts as a hit.
static std::shared_ptr<Variant> find_variant(const std::shared_ptr<Kernel::State>& state,
                                             std::span<const Arg> args, const KeyBuffer& key,
                                             bool dynamic, bool count_hit) {
  Kernel::State& k = *state;
  // 2. The Jit's cache.
  uint64_t hash = key.hash(k.fingerprint);
  Jit::State& jit = *k.jit;
  {
    decltype(jit.cache)::const_accessor acc;
    if (jit.cache.find(acc, hash) && acc->second->fingerprint == k.fingerprint &&
        key.equals(acc->second->key)) {
      std::shared_ptr<Entry> entry = acc->second;
      acc.release();
      entry->last_use = 2 * ++jit.clock;
      std::shared_ptr<Variant> v = variant_of(*entry);  // may wait for another thread's compile
      if (count_hit) {
        ++k.hits;
        k.recent.store(v, state);
      }
      return v;
    }
  }

  // 3. A miss: decide what to compile (kAuto may make dimensions symbolic, the limit may apply).
  std::vector<int64_t> full_key(key.data(), key.data() + key.size);
  std::string reason;
  std::set<std::pair<size_t, size_t>> symbolic;
  // The key after the policy changed what is symbolic.
  auto rekey = [&](bool all_dynamic) {
    KeyBuffer again;
    build_key(k, args, all_dynamic, symbolic, &again);
    full_key.assign(again.data(), again.data() + again.size);
    hash = again.hash(k.fingerprint);
  };
  {
    std::lock_guard<std::mutex> lock(k.mutex);
    dynamic = dynamic || k.fell_back;
    symbolic = k.symbolic;
    if (k.options.policy == Policy::kAuto && !dynamic) {
      bool changed = false;
      for (size_t i = 0; i < args.size(); ++i) {
        if (!k.params[i].buffer.defined()) continue;
        const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
        for (int d = 0; d < t->ndim; ++d) {
          std::pair<size_t, size_t> at{i, static_cast<size_t>(d)};
          if (k.symbolic.count(at)) continue;
          std::set<int64_t>& values = k.seen[at];
          values.insert(t->shape[d]);
          if (static_cast<int>(values.size()) > k.options.auto_threshold) {
            k.symbolic.insert(at);
            changed = true;
            PRIMJIT_LOG_INFO << "kernel '" << k.name << "': " << dim_name(k, i, d) << " took "
                             << values.size() << " values; it is symbolic from now on";
            k.seen.erase(at);  // no longer needed: memory stays bounded
          }
        }
      }
      if (changed) {
        symbolic = k.symbolic;
        k.symbolic_mask.store(symbolic_mask(k), std::memory_order_relaxed);
        rekey(false);
      }
    }
    // The limit counts distinct keys: a variant compiled again after its eviction is free.
    if (!dynamic && static_cast<int>(k.distinct_keys.size()) >= k.options.recompile_limit &&
        !k.distinct_keys.count(hash)) {
      // Name the dimension that changed in the most compiles.
      std::string culprit = "the argument shapes";
      uint64_t most = 0;
      for (const auto& [at, changes] : k.dim_changes) {
        if (changes > most) {
          most = changes;
          culprit = dim_name(k, at.first, at.second) + " (changed in " + std::to_string(changes) +
                    " of " + std::to_string(k.compiles_started) + " compiles)";
        }
      }
      if (k.options.on_recompile_limit == OnRecompileLimit::kError) {
        PRIMJIT_USER_ERROR() << "kernel '" << k.name << "' reached its recompile limit of "
                             << k.options.recompile_limit
                             << " distinct argument keys (variants compiled again after an "
                                "eviction do not count); "
                             << culprit
                             << " keeps changing. Use Policy::kDynamic or kAuto for it, or "
                                "OnRecompileLimit::kFallbackToDynamic";
      }
      k.fell_back = true;
      dynamic = true;
      symbolic.clear();
      rekey(true);
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "': recompile limit reached (" << culprit
                       << "); falling back to the dynamic variant";
    }
  }

  // 4. Single flight: the thread that inserts the entry compiles, the others wait for it.
  std::shared_ptr<Entry> entry;
  std::promise<Outcome> promise;
  bool owner = false;
  {
    decltype(jit.cache)::accessor acc;
    if (jit.cache.insert(acc, hash)) {
      acc->second = std::make_shared<Entry>();
      acc->second->fingerprint = k.fingerprint;
      acc->second->key = full_key;
      acc->second->future = promise.get_future().share();
      owner = true;
    } else if (acc->second->fingerprint != k.fingerprint || !(acc->second->key == full_key)) {
      // A 64-bit hash collision with another kernel or key: compile without caching.
      acc.release();
      Source source = Source::kCompiled;
      std::shared_ptr<Variant> v = compile_variant(k, args, full_key, dynamic, symbolic, &source);
      count_source(k, source);
      return v;
    }
    entry = acc->second;
  }
  entry->last_use = 2 * ++jit.clock;
  if (owner) {
    uint64_t reason_index = 0;
    {
      std::lock_guard<std::mutex> lock(k.mutex);
      reason = compile_reason(k, full_key, hash);
      record_compile(k, full_key, hash, reason);
      reason_index = k.compiles_started - 1;
    }
    PRIMJIT_LOG_INFO << "kernel '" << k.name << "': making a variant (" << reason << ")";
    try {
      Source source = Source::kCompiled;
      std::shared_ptr<Variant> v = compile_variant(k, args, full_key, dynamic, symbolic, &source);
      v->kernel = state;
      count_source(k, source);
      if (source != Source::kCompiled) {
        std::lock_guard<std::mutex> lock(k.mutex);
        mark_reason(k, reason_index, source == Source::kDisk ? " (disk cache)" : " (remote cache)");
      }
      promise.set_value(Outcome{v, ""});
    } catch (const std::exception& e) {
      promise.set_value(Outcome{nullptr, e.what()});
      forget_failed_compile(jit, k, hash, entry, full_key, reason_index);
      throw;
    } catch (...) {
      promise.set_value(Outcome{nullptr, "compiling kernel '" + k.name + "' failed"});
      forget_failed_compile(jit, k, hash, entry, full_key, reason_index);
      throw;
    }
    {
      std::lock_guard<std::mutex> lock(jit.lru_mutex);
      jit.lru[hash] = entry;
    }
    jit.evict_if_needed(hash);
  } else if (count_hit) {
    ++k.hits;
  }
  std::shared_ptr<Variant> v = variant_of(*entry);
  if (count_hit) k.recent.store(v, state);  // prewarm leaves the hot variants in place
  return v;
}

PJValue Kernel::call(std::span<const Arg> args) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "call of an empty Kernel (use Jit::kernel)";
  State& k = *state_;
  // 1. A cached call: cheap checks, then the kernel's recent variants, without a lock.
  bool tried_recent = false;
  {
    KeyBuffer key;
    PJValue result;
    tried_recent = fast_key(k, args, &key) && ThreadSlots::mine() >= 0;
    if (tried_recent && k.recent.try_run(key, args, k.jit->clock, &result)) return result;
  }
  ++k.slow_calls;
  check_arguments(k, args);
  jit::check_argument_memory(k.memory, k.name, k.param_names, args, k.target);
  KeyBuffer key;
  bool dynamic = build_call_key(k, args, &key);
  // (Threads without a slot, and calls the cheap checks declined, look at the recent ones here.)
  if (std::shared_ptr<Variant> last = tried_recent ? nullptr : k.recent.find(key)) {
    ++k.hits;
    return run_variant(*last, args);
  }
  return run_variant(*find_variant(state_, args, key, dynamic, /*count_hit=*/true), args);
}

namespace {

// Arguments that look like a call with `signature` (tensors without data) for making its
// variant: what a variant depends on is dtypes, ranks, shapes and the device.
struct SignatureArgs {
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DLTensor> tensors;
  std::vector<Arg> args;

  SignatureArgs(const Kernel::State& k, const Signature& signature) {
    PRIMJIT_USER_CHECK(signature.size() == k.params.size())
        << "'" << k.name << "' takes " << k.params.size() << " arguments, the signature has "
        << signature.size();
    // Never dereferenced: variants are made, not run.
    alignas(64) static unsigned char no_data[64];
    tensors.resize(signature.size());
    shapes.resize(signature.size());
    DLDevice device{k.target->kind == "cuda" ? kDLCUDA : kDLCPU, 0};
    for (size_t i = 0; i < signature.size(); ++i) {
      const ArgSpec& spec = signature[i];
      if (!spec.is_tensor) {
        if (spec.dtype.is_floating()) {
          args.emplace_back(0.0);
        } else if (spec.dtype.is_bool()) {
          args.emplace_back(false);
        } else {
          args.emplace_back(int64_t{0});
        }
        continue;
      }
      shapes[i] = spec.shape;
      DLTensor& t = tensors[i];
      t.data = no_data;
      t.device = device;
      t.ndim = static_cast<int32_t>(spec.shape.size());
      t.dtype = to_dlpack(spec.dtype);
      t.shape = shapes[i].data();
      t.strides = nullptr;
      t.byte_offset = 0;
      args.emplace_back(&t);
    }
  }
};

}  // namespace

void Kernel::prewarm(const std::vector<Signature>& signatures) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "prewarm of an empty Kernel (use Jit::kernel)";
  // Each signature on its own thread, at most as many at once as the machine has cores.
  size_t width = std::max<size_t>(1, std::thread::hardware_concurrency());
  std::exception_ptr first_error;
  for (size_t begin = 0; begin < signatures.size(); begin += width) {
    std::vector<std::future<void>> running;
    for (size_t i = begin; i < std::min(signatures.size(), begin + width); ++i) {
      running.push_back(compile_async(signatures[i]));
    }
    for (std::future<void>& f : running) {
      try {
        f.get();
      } catch (...) {
        if (!first_error) first_error = std::current_exception();
      }
    }
  }
  if (first_error) std::rethrow_exception(first_error);
}

std::future<void> Kernel::compile_async(Signature signature) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "compile_async of an empty Kernel (use Jit::kernel)";
  std::shared_ptr<State> state = state_;
  return std::async(std::launch::async, [state, signature = std::move(signature)] {
    SignatureArgs call(*state, signature);
    std::span<const Arg> args(call.args);
    check_arguments(*state, args);
    KeyBuffer key;
    bool dynamic = build_call_key(*state, args, &key);
    find_variant(state, args, key, dynamic, /*count_hit=*/false);
  });
}

KernelStats Kernel::stats() const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "stats of an empty Kernel";
  State& k = *state_;
  KernelStats s;
  uint64_t fast_hits = k.recent.fast_hits();
  s.calls = k.slow_calls + fast_hits;
  s.hits = k.hits + fast_hits;
  s.misses = k.misses;
  s.disk_hits = k.disk_hits;
  s.remote_hits = k.remote_hits;
  s.evictions = k.evictions;
  std::lock_guard<std::mutex> lock(k.mutex);
  s.compile = k.times;
  s.reasons.assign(k.reasons.begin(), k.reasons.end());
  s.variants = s.misses + s.disk_hits + s.remote_hits - k.failed - s.evictions;
  return s;
}

const PrimFunc& Kernel::function() const { return state_->original; }
const Target& Kernel::target() const { return state_->target; }
const KernelOptions& Kernel::options() const { return state_->options; }

}  // namespace primjit
