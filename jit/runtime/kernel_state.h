// The state behind the public Jit and Kernel handles, shared by the runtime's parts: the key
// (cache_key.h), the policy (specialization_policy.h), the caches (variant_cache.h), compile
// orchestration (compile_variant.h) and the API glue (jit.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <vector>

#include "jit/llvm/orc_engine.h"
#include "jit/runtime/argument_memory.h"
#include "jit/runtime/background_compile.h"
#include "jit/runtime/cache_key.h"
#include "jit/runtime/disk_cache.h"
#include "jit/runtime/remote_cache.h"
#include "jit/runtime/variant_cache.h"
#include "primjit/jit.h"

namespace primjit {

struct Jit::State {
  JitOptions options;
  jit::OrcEngine engine;
  std::unique_ptr<jit::DiskCache> disk;      // null when disabled
  std::unique_ptr<jit::RemoteCache> remote;  // null when not configured
  std::string host_key;  // what host code depends on besides the function: versions, CPU
  // Counters of kernels that are gone, for the disk cache's record of this process.
  std::atomic<uint64_t> memory_hits{0}, disk_hits{0}, remote_hits{0}, compiles{0};
  std::atomic<uint64_t> tiered_hits{0}, switch_overs{0};
  // For Jit::stats (guarded by stats_mutex): compile times and code sizes of every variant
  // made, and the live kernels (whose counters are not in the ones above yet). A kernel
  // leaves the set and adds its counters above in one step, so stats count it once.
  std::mutex stats_mutex;
  StageTimes times;
  uint64_t host_code_bytes = 0, device_code_bytes = 0;
  std::set<Kernel::State*> live_kernels;
  jit::VariantCache cache;
  // JitOptions::tiered: the compiles queued or running in the background (~Jit cancels or
  // waits for them).
  std::shared_ptr<jit::BackgroundCompiles> background = std::make_shared<jit::BackgroundCompiles>();

  explicit State(JitOptions o);
  ~State();
};

struct Kernel::State {
  std::shared_ptr<Jit::State> jit;
  PrimFunc func;      // with the target applied
  PrimFunc original;  // as given
  IRModule module;    // the function and its private callees
  std::string name;
  KernelOptions options;
  Target target;
  bool cuda = false;  // target cuda: calls set the stream their kernels launch on
  uint64_t fingerprint = 0;
  std::vector<jit::ParamInfo> params;
  jit::MemoryRule memory;  // alignment and overlap rules of the arguments

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

  jit::RecentVariants recent;

  // kBucketed: the exact shapes (as fast_key hashes them) promoted to variants of their own
  // (KernelOptions::promote_after). Written under `mutex`, each entry before the count that
  // publishes it; read without a lock. A promotion whose compile failed is not tried again.
  static constexpr int kMaxPromotions = 8;
  std::atomic<uint64_t> promoted[kMaxPromotions] = {};
  std::atomic<int> promoted_count{0};
  std::atomic<uint32_t> promotion_failed{0};  // bit i: promoted[i]'s compile failed
  // The first call's shape was promoted or could not be (promotion.h); no shape will be
  // promoted any more (8 are, or the recompile limit is near).
  std::atomic<bool> first_shape_settled{false}, promotions_closed{false};
  // The index of `shape` among the promoted shapes, or -1.
  int promotion_of(uint64_t shape) const {
    const int n = promoted_count.load(std::memory_order_acquire);
    for (int i = 0; i < n; ++i) {
      if (promoted[i].load(std::memory_order_relaxed) == shape) return i;
    }
    return -1;
  }

  std::atomic<uint64_t> hits{0}, misses{0}, disk_hits{0}, remote_hits{0}, evictions{0},
      failed{0};  // + recent.fast_hits()
  // JitOptions::tiered: calls served by the generic variant; variants made in the background.
  std::atomic<uint64_t> tiered_hits{0}, switch_overs{0};
  std::atomic<bool> no_generic{false};  // its generic variant failed to compile: not tiered
  std::atomic<uint64_t> dump_count{0};
  std::mutex mutex;  // guards the fields below
  StageTimes times;
  jit::KeyHistory history;
  // kAuto: distinct values seen per (parameter, dimension), and the dimensions made symbolic.
  std::map<std::pair<size_t, size_t>, std::set<int64_t>> seen;
  jit::DimSet symbolic;
  std::atomic<bool> fell_back{false};  // the recompile limit switched to the dynamic variant

  // The persistent key of the kernel's variants up to the argument key (made on first use).
  std::once_flag disk_once;
  std::string disk_prefix;  // empty: no disk cache for this kernel

  ~State() {
    std::lock_guard<std::mutex> lock(jit->stats_mutex);
    jit->live_kernels.erase(this);
    jit->memory_hits += hits + recent.fast_hits();
    jit->disk_hits += disk_hits;
    jit->remote_hits += remote_hits;
    jit->compiles += misses;
    jit->tiered_hits += tiered_hits;
    jit->switch_overs += switch_overs;
  }
};

namespace jit {

/// The variant a call with `args` (checked) and its `key` selects, compiled or loaded now if it
/// is not in memory; counted like a prewarm, not as a hit (jit.cc's lookup, for the compiles
/// ahead of calls in kernel_signatures.cc).
std::shared_ptr<Variant> variant_for_call(const std::shared_ptr<Kernel::State>& state,
                                          std::span<const Arg> args, const KeyBuffer& key,
                                          bool dynamic);

}  // namespace jit
}  // namespace primjit
