// The public JIT API (primjit/jit.h) over the runtime's parts: a call's path through the
// kernel's recent variants, the Jit's cache, the specialization policy and a compile
// (single flight), and statistics; compiles ahead of calls (prewarm, compile_async, compiled)
// are in kernel_signatures.cc. See kernel_state.h for the parts.
#include "primjit/jit.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <map>
#include <mutex>
#include <sstream>
#include <thread>
#include <utility>

#include "ir/hash_mix.h"
#include "jit/cuda/driver.h"
#include "jit/runtime/background_compile.h"
#include "jit/runtime/build_id.h"
#include "jit/runtime/cache_tiers.h"
#include "jit/runtime/call_arguments.h"
#include "jit/runtime/compile_variant.h"
#include "jit/runtime/kernel_state.h"
#include "jit/runtime/prepared_call.h"
#include "jit/runtime/specialization_policy.h"
#include "primjit/error.h"
#include "primjit/ir/structural.h"
#include "primjit/log.h"
#include "primjit/version.h"

namespace primjit {

using jit::Entry;
using jit::KeyBuffer;
using jit::Outcome;
using jit::Source;
using jit::Variant;

Jit::State::State(JitOptions o)
    : options(std::move(o)), engine(jit::OrcOptions{options.opt_level, false}) {
  PRIMJIT_USER_CHECK(options.ptxas_opt_level >= -1 && options.ptxas_opt_level <= 3)
      << "JitOptions::ptxas_opt_level must be 0, 1, 2 or 3 (or -1 for ptxas's default), not "
      << options.ptxas_opt_level;
  disk = jit::open_disk_cache(options);
  remote = jit::open_remote_cache(options);
  std::ostringstream key;
  // Variant format 2: the defined integer division, shift, conversion and min/max semantics
  // and no contraction (docs/semantics.md); format 1 code computed some of them differently.
  // Format 3: kernel handles come through the packed `self` argument, not module globals.
  // Format 4: device kernels carry their parameter sizes (prepared calls copy the values).
  key << "primjit-variant 4\nprimjit " << version() << " build " << jit::library_build_id()
      << "\nllvm " << jit::llvm_version() << " " << engine.target_triple() << " "
      << engine.cpu_name() << " " << engine.cpu_features() << " O" << engine.opt_level() << "\n";
  host_key = key.str();
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
// Background compiles (JitOptions::tiered) that have not started are cancelled, the running ones
// finish first: they use the Jit's engine and caches. Kernels that outlive the Jit keep its state
// and compile in the calling thread from now on (nothing runs in the background unwatched).
Jit::~Jit() {
  if (state_ != nullptr) state_->background->close();
}

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
  PRIMJIT_USER_CHECK(options.bucket_limit >= 1)
      << "KernelOptions::bucket_limit must be >= 1 (a dimension of 1 is always its own bucket)";
  PRIMJIT_USER_CHECK(options.promote_after >= 0)
      << "KernelOptions::promote_after must be >= 0 (0: hot shapes keep their bucket's variant)";
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
  state->cuda = target->kind == "cuda";
  state->func = func.with_attr(attr::kTarget, AttrValue(target));
  state->module = jit::reachable_functions(module.with_function(name, state->func), name);
  // Variants are shared by kernels of one function, target and device options; the stream is
  // not one of them (it comes with each call).
  uint64_t fingerprint = structural_hash(state->module);
  for (uint64_t part : {hashing::fnv1a(target.str()), static_cast<uint64_t>(options.max_unroll),
                        uint64_t{options.fast_math} | uint64_t{options.checked_arithmetic} << 1 |
                            uint64_t{options.fp_contract} << 2}) {
    fingerprint = hashing::mix64(hashing::combine(fingerprint, part));
  }
  state->fingerprint = fingerprint;
  state->params = jit::param_infos(func);
  state->memory = jit::memory_rule(func, target);
  size_t key_size = 0, dims = 0;
  for (const jit::ParamInfo& p : state->params) {
    Kernel::State::FastParam fp;
    if (p.buffer.defined()) {
      DLDataType dt = to_dlpack(p.dtype);
      fp.tensor = true;
      std::memcpy(&fp.dtype, &dt, sizeof(fp.dtype));
      fp.ndim = static_cast<int32_t>(p.buffer->shape.size());
      fp.device = target->kind == "cuda" ? kDLCUDA : kDLCPU;
      fp.align_mask = state->memory.align[state->fast.size()] - 1;
      fp.element_bytes = static_cast<uint32_t>((p.dtype.bits() * p.dtype.lanes() + 7) / 8);
      key_size += 3 + p.buffer->shape.size();
      dims += p.buffer->shape.size();
    }
    state->fast.push_back(fp);
  }
  if (target->kind == "cuda") ++key_size;  // the device ordinal
  static_assert((3 + 4) * 16 + 1 <= jit::kInlineKey,
                "the cached-call path must take calls of 16 CUDA tensors of rank 4");
  state->fast_ok =
      key_size <= jit::kInlineKey && dims <= 64 && state->params.size() <= jit::kMaxFastParams;
  PRIMJIT_LOG_DEBUG << "kernel '" << name << "' for " << target.str();
  {
    std::lock_guard<std::mutex> lock(state_->stats_mutex);
    state_->live_kernels.insert(state.get());
  }
  return Kernel(std::move(state));
}

namespace {

// The cached-call path is here, in one translation unit with Kernel::call, so that it
// inlines into it.
// One extent into a call's shape hash (fast_key, shape_of).
inline uint64_t mix_extent(uint64_t h, int64_t extent) {
  return (h ^ static_cast<uint64_t>(extent)) * 0x100000001b3ull + 1;
}

// The key of a call whose arguments pass the cheap checks of a cached call, as build_key makes
// it; false when anything is unusual (the full checks then run and name the problem). What the
// cheap checks leave out, the key's equality with an earlier, fully checked call's key implies
// (shapes against constants and each other), or the compiled code checks (symbolic shapes).
// Under kBucketed, `shape` is set to a hash (not 0) of the call's extents when some dimension
// is bucketed (else 0), and `exact`, when given, receives the key of the call's exact variant
// (promote: every extent in place of its bucket).
bool fast_key(const Kernel::State& k, std::span<const Arg> args, jit::KeyBuffer* key,
              uint64_t* shape, jit::KeyBuffer* exact) {
  if (!k.fast_ok || args.size() != k.fast.size()) return false;
  const bool dynamic =
      k.options.policy == Policy::kDynamic || k.fell_back.load(std::memory_order_relaxed);
  const uint64_t mask = k.symbolic_mask.load(std::memory_order_relaxed);
  const int64_t bucket = jit::bucket_limit_of(k.options);  // -1 unless kBucketed
  size_t bit = 0;
  uint64_t extents_hash = 0;
  bool bucketed = false;
  // Pushes an entry to the key and, when it is made, the exact key.
  auto push = [&](int64_t entry) {
    key->push_inline(entry);
    if (exact != nullptr) exact->push_inline(entry);
  };
  int64_t values[jit::kMaxCheckedVars];  // shape variables bound so far
  uint32_t bound = 0;
  const bool disjoint = !k.memory.disjoint.empty();
  uintptr_t begin[jit::kMaxFastParams],
      end[jit::kMaxFastParams];  // of the tensors, when some must not overlap
  int32_t device = -1;           // of the CUDA tensors: all on one, the key's last entry
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
    if (p.device == kDLCUDA) {
      if (device >= 0 && t->device.device_id != device) return false;  // the full checks say
      device = t->device.device_id;
    }
    uint32_t dtype;
    std::memcpy(&dtype, &t->dtype, sizeof(dtype));
    if (dtype != p.dtype) return false;
    push((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) | t->dtype.lanes);
    push(t->ndim);
    int64_t elements = 1;
    for (int d = 0; d < p.ndim; ++d, ++bit) {
      int64_t extent = t->shape[d];
      const jit::DimRule& rule = k.params[i].dims[static_cast<size_t>(d)];
      if (extent < 0 || extent > rule.max) return false;
      if (__builtin_mul_overflow(elements, extent, &elements)) return false;  // the slow path
      if (!dynamic && !(mask >> bit & 1)) {
        const int64_t entry = bucket < 0 ? extent : jit::bucket_entry(extent, bucket);
        key->push_inline(entry);
        if (bucket >= 0) {
          if (exact != nullptr) exact->push_inline(extent);
          extents_hash = mix_extent(extents_hash, extent);
        }
        if (!jit::is_bucket(entry)) continue;
        bucketed = true;
      } else {
        push(jit::kSymbolic);
      }
      // A symbolic or bucketed dimension is not in the key: check it against its rule here.
      if (rule.kind == jit::DimRule::kConstant && extent != rule.value) return false;
      if (rule.kind == jit::DimRule::kVariable) {
        uint32_t b = uint32_t{1} << rule.variable;
        if (!(bound & b)) {
          bound |= b;
          values[rule.variable] = extent;
        } else if (values[rule.variable] != extent) {
          return false;
        }
      }
    }
    // Compact at byte_offset 0 (layout entry 0); strided and offset views take the full
    // checks, which their layout needs (negative or overlapping strides, index range).
    if (t->byte_offset != 0 || !is_compact(*t)) return false;
    push(bucket >= 0 && (jit::data_address(*t) & 15) != 0 ? jit::kLayoutUnaligned16 : 0);
    if (disjoint) {
      begin[i] = jit::data_address(*t);
      end[i] = begin[i] + static_cast<uintptr_t>(elements) * p.element_bytes;
      if (elements == 0) {
        jit::ByteRange r = jit::byte_range(*t, elements);
        begin[i] = r.begin;
        end[i] = r.end;
      }
    }
  }
  for (const auto& [i, j] : k.memory.disjoint) {
    if (begin[i] < end[j] && begin[j] < end[i]) return false;
  }
  if (device >= 0) push(device);
  *shape = bucketed ? extents_hash | 1 : 0;
  return true;
}

// A failed compile counts as a miss but is not cached: the next call with the key compiles
// again. Its reason stays, marked with `suffix`; its key no longer counts toward the recompile
// limit. `keep_entry` (a background compile of a tiered kernel) leaves the failed entry in the
// cache instead while there is room (it is evicted before any variant, so that failures of
// ever new keys neither fill the map nor push out working variants): tiered calls with its key
// then run the generic variant and do not compile it again; a lookup that waits for its
// variant drops it and compiles (see wait_for_variant). The entry's future is set already;
// the counters move last, once the cache and the history say what they count.
void forget_failed_compile(Jit::State& jit, Kernel::State& k, uint64_t hash,
                           const std::shared_ptr<Entry>& entry, const std::vector<int64_t>& key,
                           uint64_t reason_index, bool keep_entry,
                           const char* suffix = " (failed)") {
  if (keep_entry) {
    {
      // Only while the map still holds it: a waiting lookup may have dropped it and cached a
      // new entry under the hash since the future was set (lock order as in evict_if_needed).
      std::lock_guard<std::mutex> lock(jit.cache.lru_mutex);
      jit::VariantCache::Map::const_accessor acc;
      if (jit.cache.map.find(acc, hash) && acc->second == entry) jit.cache.lru[hash] = entry;
    }
    jit.cache.evict_if_needed(jit.options.cache_capacity);
  } else {
    jit.cache.forget(hash, entry);
  }
  {
    std::lock_guard<std::mutex> lock(k.mutex);
    k.history.forget_failed(key, hash, reason_index, suffix);
  }
  ++k.misses;
  ++k.failed;
}

// Compiling or loading code while the call's stream captures a CUDA graph would break the
// capture (the driver forbids module loads then): say what to do instead.
void check_not_capturing(const Kernel::State& k) {
  auto* stream = static_cast<CUstream_st*>(jit::t_call_context.stream);
  jit::CudaDriver* driver = jit::CudaDriver::try_get();
  if (driver == nullptr || driver->device_count() == 0) return;  // the compile says why
  PRIMJIT_USER_CHECK(!driver->is_capturing(stream))
      << "kernel '" << k.name << "': this call would compile or load a variant while its stream "
      << "is capturing a CUDA graph, which the driver forbids. Call the kernel once with these "
      << "argument shapes before cuStreamBeginCapture, or compile the variant first with "
      << "Kernel::prewarm";
}

void count_source(Kernel::State& k, Source source) {
  ++(source == Source::kDisk ? k.disk_hits : source == Source::kRemote ? k.remote_hits : k.misses);
}

// How find_variant treats what it finds and makes.
struct Lookup {
  bool count_hit = false;      // a call: a found variant counts as a hit and becomes a recent one
  bool tiered = false;         // JitOptions::tiered: a variant not ready yet is not waited for
  bool check_capture = false;  // a CUDA call: refuse to compile while its stream captures
  bool generic = false;        // the generic variant of a tiered call (its reason says so)
  bool retried = false;        // compiles in the call after a background failure was dropped
};

std::shared_ptr<Variant> find_variant(const std::shared_ptr<Kernel::State>& state,
                                      std::span<const Arg> args, const KeyBuffer& key, bool dynamic,
                                      Lookup lookup);

// The variant of an entry whose compile has finished and succeeded; null while it runs and
// after it failed.
std::shared_ptr<Variant> finished_variant(const Entry& entry) {
  if (entry.future.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return nullptr;
  return entry.future.get().variant;
}

// The variant of `entry` (key hash `hash`), waiting for its compile; throws the compile's error.
// A lookup that waits is not answered by a background compile's failure, which may be old and
// transient, nor by its cancellation: the entry is dropped and null returned, and the caller
// compiles the variant itself (once: lookup.retried), so that it gets the variant or the error
// of a compile of its own.
std::shared_ptr<Variant> wait_for_variant(Jit::State& jit, uint64_t hash,
                                          const std::shared_ptr<Entry>& entry,
                                          const Lookup& lookup) {
  if (entry->background && !lookup.retried && entry->future.get().variant == nullptr) {
    jit.cache.forget(hash, entry);
    return nullptr;
  }
  return jit::variant_of(*entry);
}

// The lookup that compiles in the calling thread after wait_for_variant dropped an entry.
Lookup retry_in_call(Lookup lookup) {
  lookup.tiered = false;
  lookup.retried = true;
  return lookup;
}

// JitOptions::tiered: the generic variant (the kDynamic one for the call's dtypes, ranks and
// layout, key `generic_key`), compiled now if it is not in memory. The call counts as tiered.
std::shared_ptr<Variant> generic_variant(const std::shared_ptr<Kernel::State>& state,
                                         std::span<const Arg> args, const KeyBuffer& generic_key,
                                         bool count) {
  std::shared_ptr<Variant> v = find_variant(state, args, generic_key, /*dynamic=*/true,
                                            {.check_capture = state->cuda, .generic = true});
  if (count) ++state->tiered_hits;
  return v;
}

// The generic variant for a tiered call, or null when it does not compile (a function whose
// host code needs constant shapes): the kernel then stops tiering, and its calls wait for their
// own variants as without JitOptions::tiered.
std::shared_ptr<Variant> try_generic_variant(const std::shared_ptr<Kernel::State>& state,
                                             std::span<const Arg> args,
                                             const KeyBuffer& generic_key, bool count = true) {
  try {
    return generic_variant(state, args, generic_key, count);
  } catch (const Error& e) {
    if (state->cuda) check_not_capturing(*state);  // that error is the one to give
    if (!state->no_generic.exchange(true)) {
      PRIMJIT_LOG_INFO << "kernel '" << state->name << "': its generic variant does not compile, "
                       << "so calls wait for their own variants (no tiered compilation): "
                       << e.what();
    }
    return nullptr;
  }
}

// Makes the variant of `entry`, which this thread inserted (single flight): compiles or loads
// it and gives it to the entry's waiters and the LRU. A failure is given to the waiters, then
// thrown; see forget_failed_compile for `keep_failed`.
std::shared_ptr<Variant> make_entry_variant(const std::shared_ptr<Kernel::State>& state,
                                            std::span<const Arg> args, const jit::Specialization& s,
                                            const std::shared_ptr<Entry>& entry,
                                            std::promise<Outcome>& promise,
                                            const std::string& reason, uint64_t reason_index,
                                            bool keep_failed) {
  Kernel::State& k = *state;
  Jit::State& jit = *k.jit;
  std::shared_ptr<Variant> v;
  try {
    Source source = Source::kCompiled;
    v = jit::compile_variant(k, args, s.key, s.dynamic, s.symbolic, reason, &source);
    v->kernel = state;
    count_source(k, source);
    if (source != Source::kCompiled) {
      std::lock_guard<std::mutex> lock(k.mutex);
      k.history.mark(reason_index, source == Source::kDisk ? " (disk cache)" : " (remote cache)");
    }
    promise.set_value(Outcome{v, ""});
  } catch (const std::exception& e) {
    promise.set_value(Outcome{nullptr, e.what()});
    forget_failed_compile(jit, k, s.hash, entry, s.key, reason_index, keep_failed);
    throw;
  } catch (...) {
    promise.set_value(Outcome{nullptr, "compiling kernel '" + k.name + "' failed"});
    forget_failed_compile(jit, k, s.hash, entry, s.key, reason_index, keep_failed);
    throw;
  }
  {
    std::lock_guard<std::mutex> lock(jit.cache.lru_mutex);
    jit.cache.lru[s.hash] = entry;
  }
  jit.cache.evict_if_needed(jit.options.cache_capacity, s.hash);
  return v;
}

// JitOptions::tiered: makes the variant of `entry` on a background task, in `place`; calls
// with its key run the generic variant until it is ready. A failure is logged and stays in the
// entry. A compile cancelled (its Jit destroyed before it started) takes its entry away: a later
// call with its key compiles it.
void make_in_background(jit::BackgroundPlace& place, const std::shared_ptr<Kernel::State>& state,
                        std::span<const Arg> args, const jit::Specialization& s,
                        const std::shared_ptr<Entry>& entry, std::promise<Outcome> promise,
                        const std::string& reason, uint64_t reason_index) {
  auto owned = std::make_shared<const jit::OwnedArgs>(args);
  auto shared_promise = std::make_shared<std::promise<Outcome>>(std::move(promise));
  place.run([state, owned, s, entry, shared_promise, reason, reason_index](bool cancelled) {
    if (cancelled) {
      shared_promise->set_value(Outcome{
          nullptr, "kernel '" + state->name + "': the compile of the variant for " + reason +
                       " was cancelled because its Jit was destroyed; call again to compile it"});
      forget_failed_compile(*state->jit, *state, s.hash, entry, s.key, reason_index,
                            /*keep_entry=*/false, " (cancelled)");
      return;
    }
    try {
      make_entry_variant(state, owned->args(), s, entry, *shared_promise, reason, reason_index,
                         /*keep_failed=*/true);
      ++state->switch_overs;
      PRIMJIT_LOG_DEBUG << "kernel '" << state->name << "': the variant for " << reason
                        << " is ready; calls with its key switch to it";
    } catch (const std::exception& e) {
      PRIMJIT_LOG_WARNING << "kernel '" << state->name << "': compiling the variant for " << reason
                          << " in the background failed; calls with its key keep "
                          << "running the generic variant. " << e.what();
    }
  });
}

// Steps 2-4 of a call after the recent-variant check: the Jit's cache, else a new variant
// (compiled once however many threads ask; under JitOptions::tiered, in the background while
// the call runs the generic variant).
std::shared_ptr<Variant> find_variant(const std::shared_ptr<Kernel::State>& state,
                                      std::span<const Arg> args, const KeyBuffer& key, bool dynamic,
                                      Lookup lookup) {
  Kernel::State& k = *state;
  // The generic variant's key, when the call is tiered and its key is not that one already.
  KeyBuffer generic_key;
  if (lookup.tiered) {
    jit::build_key(k.params, args, /*dynamic=*/true, {}, &generic_key);
    lookup.tiered = !dynamic && !k.no_generic.load(std::memory_order_relaxed) &&
                    !(generic_key.size == key.size &&
                      std::equal(key.data(), key.data() + key.size, generic_key.data()));
  }
  // 2. The Jit's cache.
  uint64_t hash = key.hash(k.fingerprint);
  Jit::State& jit = *k.jit;
  {
    jit::VariantCache::Map::const_accessor acc;
    if (jit.cache.map.find(acc, hash) && acc->second->fingerprint == k.fingerprint &&
        key.equals(acc->second->key)) {
      std::shared_ptr<Entry> entry = acc->second;
      acc.release();
      entry->last_use = 2 * ++jit.cache.clock;
      std::shared_ptr<Variant> v =
          lookup.tiered ? finished_variant(*entry) : nullptr;  // tiered: only a ready one
      if (lookup.tiered && v == nullptr) {
        if (std::shared_ptr<Variant> g =
                try_generic_variant(state, args, generic_key, lookup.count_hit))
          return g;
      }
      if (v == nullptr) v = wait_for_variant(jit, hash, entry, lookup);
      if (v == nullptr) return find_variant(state, args, key, dynamic, retry_in_call(lookup));
      if (lookup.count_hit) {
        ++k.hits;
        k.recent.store(v, state);
      }
      return v;
    }
  }

  // 3. A miss. Tiered: a place for the background compile first. With none free (a backlog of
  // kMaxPending compiles), the call runs the generic variant and makes nothing: a later call
  // with its key compiles it. Once the Jit is destroyed, its kernels compile in the call.
  jit::BackgroundPlace place;
  jit::BackgroundCompiles::Admission admission;
  if (lookup.tiered && !place.take(*jit.background, &admission)) {
    if (admission == jit::BackgroundCompiles::Admission::kFull) {
      if (std::shared_ptr<Variant> g =
              try_generic_variant(state, args, generic_key, lookup.count_hit))
        return g;
    }
    lookup.tiered = false;
  }
  // Decide what to compile (kAuto may make dimensions symbolic, the limit may apply).
  if ((lookup.count_hit || lookup.check_capture) && k.cuda) check_not_capturing(k);
  jit::Specialization s = jit::specialize_call(k, args, key, dynamic);
  hash = s.hash;
  lookup.tiered = lookup.tiered && !s.dynamic && !generic_key.equals(s.key);
  if (!lookup.tiered) place.reset();

  // 4. Single flight: the thread that inserts the entry compiles, the others wait for it.
  std::shared_ptr<Entry> entry;
  std::promise<Outcome> promise;
  bool owner = false;
  {
    jit::VariantCache::Map::accessor acc;
    if (jit.cache.map.insert(acc, hash)) {
      acc->second = std::make_shared<Entry>();
      acc->second->fingerprint = k.fingerprint;
      acc->second->key = s.key;
      acc->second->future = promise.get_future().share();
      acc->second->background = lookup.tiered;
      owner = true;
    } else if (acc->second->fingerprint != k.fingerprint || !(acc->second->key == s.key)) {
      // A 64-bit hash collision with another kernel or key: compile without caching.
      acc.release();
      place.reset();
      Source source = Source::kCompiled;
      std::shared_ptr<Variant> v = jit::compile_variant(k, args, s.key, s.dynamic, s.symbolic,
                                                        "key hash collision, not cached", &source);
      count_source(k, source);
      return v;
    }
    entry = acc->second;
  }
  entry->last_use = 2 * ++jit.cache.clock;
  if (owner) {
    uint64_t reason_index = 0;
    std::string reason;
    {
      std::lock_guard<std::mutex> lock(k.mutex);
      if (lookup.generic) {
        reason = "generic variant (tiered)";
        reason_index = k.history.record_generic(reason);
      } else {
        reason = k.history.reason(k.params, s.key, hash);
        reason_index = k.history.record(k.params, s.key, hash, reason);
      }
    }
    PRIMJIT_LOG_DEBUG << "kernel '" << k.name << "': making a variant (" << reason << ")"
                      << (lookup.tiered ? " in the background" : "");
    if (lookup.tiered) {
      make_in_background(place, state, args, s, entry, std::move(promise), reason, reason_index);
      if (std::shared_ptr<Variant> g =
              try_generic_variant(state, args, generic_key, lookup.count_hit))
        return g;
    } else {
      make_entry_variant(state, args, s, entry, promise, reason, reason_index,
                         /*keep_failed=*/false);
    }
  } else {
    place.reset();
    if (lookup.tiered && finished_variant(*entry) == nullptr) {
      if (std::shared_ptr<Variant> g =
              try_generic_variant(state, args, generic_key, lookup.count_hit))
        return g;
    }
  }
  // (Tiered calls come here when the kernel has no generic variant: they wait, as untiered.)
  std::shared_ptr<Variant> v = wait_for_variant(jit, hash, entry, lookup);
  if (v == nullptr) return find_variant(state, args, key, dynamic, retry_in_call(lookup));
  if (lookup.count_hit) {
    if (!owner) ++k.hits;
    k.recent.store(v, state);  // prewarm leaves the hot variants in place
  }
  return v;
}

// kBucketed: the shape hash fast_key makes for a call (checked arguments) of a kernel whose
// keys are not dynamic; 0 when no dimension is bucketed.
uint64_t shape_of(const Kernel::State& k, std::span<const Arg> args) {
  const int64_t bucket = jit::bucket_limit_of(k.options);
  uint64_t h = 0;
  bool bucketed = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    for (int d = 0; d < t->ndim; ++d) {
      h = mix_extent(h, t->shape[d]);
      bucketed = bucketed || jit::is_bucket(jit::bucket_entry(t->shape[d], bucket));
    }
  }
  return bucketed ? h | 1 : 0;
}

// Whether every tensor of the call (checked arguments) is compact, at byte_offset 0 and 16-byte
// aligned: the calls promotions serve (a promoted shape's exact variant is made for that
// layout; strided, offset or unaligned calls of the shape keep taking their bucket's variant,
// whose layout is symbolic, rather than make a variant per layout).
bool plain_layout(const Kernel::State& k, std::span<const Arg> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    if (t->byte_offset != 0 || !is_compact(*t) || (jit::data_address(*t) & 15) != 0) return false;
  }
  return true;
}

// Makes `shape` a promoted shape of the kernel (under its mutex); its index, or -1 where the
// kernel has its 8 already, fell back to its dynamic variant or would reach its recompile
// limit. `first_key`: only while the kernel has made no variant and promoted nothing.
int register_promotion(Kernel::State& k, uint64_t shape, bool first_key) {
  std::lock_guard<std::mutex> lock(k.mutex);
  if (int index = k.promotion_of(shape); index >= 0) return index;
  const int n = k.promoted_count.load(std::memory_order_relaxed);
  if (first_key && (n != 0 || k.history.distinct_keys() != 0)) return -1;
  if (n == Kernel::State::kMaxPromotions || k.fell_back.load() ||
      static_cast<int>(k.history.distinct_keys()) + 1 >= k.options.recompile_limit) {
    return -1;
  }
  k.promoted[n].store(shape, std::memory_order_relaxed);
  k.promoted_count.store(n + 1, std::memory_order_release);
  return n;
}

// The key of the call's exact variant under kBucketed: every extent in place of its bucket.
KeyBuffer exact_key(const Kernel::State& k, std::span<const Arg> args) {
  KeyBuffer exact;
  jit::build_key(k.params, args, /*dynamic=*/false, {}, &exact, INT64_MAX);
  return exact;
}

// kBucketed (KernelOptions::promote_after): the call's exact shape (`shape`, as fast_key hashes
// it) ran promote_after times in a row on its bucket's variant: it gets a variant of its own,
// with every dimension compiled in, which its later calls run (fast_key's exact key). Compiled
// here (in the background under JitOptions::tiered; later runs of the count pick it up once it
// is ready), after the call itself ran. A failure is logged and not tried again; nothing is
// promoted that would reach the recompile limit.
[[gnu::noinline, gnu::cold]] void promote(const std::shared_ptr<Kernel::State>& state,
                                          std::span<const Arg> args, uint64_t shape) {
  Kernel::State& k = *state;
  // Not for CUDA kernels: their calls may be recorded into a CUDA graph, where nothing may be
  // compiled or loaded, after an untouched first call or a prewarm.
  if (k.cuda) return;
  int index = -1;
  try {
    jit::check_arguments(k, args);
    jit::check_argument_memory(k.memory, k.name, k.params, args, k.target);
    if (!plain_layout(k, args)) return;
    const bool known = k.promotion_of(shape) >= 0;
    index = register_promotion(k, shape, /*first_key=*/false);
    if (index < 0) return;
    if (!known) {
      PRIMJIT_LOG_INFO << "kernel '" << k.name << "': a shape ran " << k.options.promote_after
                       << " times in a row on its bucket's variant; making its exact variant";
    }
    if (k.promotion_failed.load(std::memory_order_relaxed) >> index & 1) return;
    KeyBuffer exact = exact_key(k, args);
    std::shared_ptr<Variant> v = find_variant(state, args, exact, /*dynamic=*/false,
                                              Lookup{.tiered = k.jit->options.tiered});
    if (v != nullptr && exact.equals(v->key)) k.recent.store(v, state);
  } catch (const std::exception& e) {
    if (index >= 0) k.promotion_failed.fetch_or(uint32_t{1} << index);
    PRIMJIT_LOG_WARNING << "kernel '" << k.name << "': making the exact variant of a hot shape "
                        << "failed; its calls keep running the bucket's variant. " << e.what();
  }
}

}  // namespace

void jit::promote_shape(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args) {
  Kernel::State& k = *state;
  if (k.options.policy != Policy::kBucketed || k.options.promote_after == 0 ||
      k.jit->options.tiered || k.fell_back.load()) {
    return;
  }
  jit::check_arguments(k, args);
  if (const uint64_t shape = shape_of(k, args); shape != 0) promote(state, args, shape);
}

namespace {

// kBucketed, a call that missed the cached path (not tiered): a promoted shape's call takes its
// exact variant (waiting for it while another thread compiles it), and the kernel's first call
// compiles its shape's exact variant, as a promoted shape, rather than its bucket's: a program
// with one shape compiles once, what kExact would, and the bucket's variant is made when a
// second shape of it comes. Null when neither applies (the call takes its bucket's variant).
[[gnu::noinline]] std::shared_ptr<Variant> promoted_variant(
    const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args) {
  Kernel::State& k = *state;
  const uint64_t shape = shape_of(k, args);
  if (shape == 0 || !plain_layout(k, args)) return nullptr;
  int index = k.promotion_of(shape);
  if (index < 0) index = register_promotion(k, shape, /*first_key=*/true);
  if (index < 0 || (k.promotion_failed.load(std::memory_order_relaxed) >> index & 1)) {
    return nullptr;
  }
  try {
    return find_variant(state, args, exact_key(k, args), /*dynamic=*/false,
                        Lookup{.count_hit = true, .check_capture = k.cuda});
  } catch (...) {
    k.promotion_failed.fetch_or(uint32_t{1} << index);
    throw;
  }
}

// A call's path once its context (stream, recording) is set; inlined into each kind of call.
[[gnu::always_inline]] inline PJValue call_path(const std::shared_ptr<Kernel::State>& state,
                                                std::span<const Arg> args) {
  Kernel::State& k = *state;
  // 1. A cached call: cheap checks, then the kernel's recent variants, without a lock. Under
  // kBucketed a promoted shape runs its exact variant, and runs of one shape are counted.
  bool tried_recent = false;
  {
    KeyBuffer key, exact;
    uint64_t shape = 0;
    PJValue result;
    const bool promotions = k.promoted_count.load(std::memory_order_relaxed) != 0;
    tried_recent = fast_key(k, args, &key, &shape, promotions ? &exact : nullptr) &&
                   jit::ThreadSlots::mine() >= 0;
    if (tried_recent) {
      if (shape != 0 && promotions && k.promotion_of(shape) >= 0 &&
          k.recent.try_run(exact, args, k.jit->cache.clock, &result)) {
        k.recent.count_promoted_call(shape);
        return result;
      }
      if (k.recent.try_run(key, args, k.jit->cache.clock, &result)) {
        if (shape != 0 && k.options.promote_after > 0 &&
            k.recent.count_run(shape, static_cast<uint32_t>(k.options.promote_after))) {
          promote(state, args, shape);
        }
        return result;
      }
    }
  }
  ++k.slow_calls;
  jit::check_arguments(k, args);
  jit::check_argument_memory(k.memory, k.name, k.params, args, k.target);
  KeyBuffer key;
  bool dynamic = jit::build_call_key(k, args, &key);
  // (Threads without a slot, and calls the cheap checks declined, look at the recent ones here.)
  if (std::shared_ptr<Variant> last = tried_recent ? nullptr : k.recent.find(key)) {
    ++k.hits;
    return jit::run_variant(*last, args);
  }
  if (k.options.policy == Policy::kBucketed && k.options.promote_after > 0 && !dynamic &&
      !k.jit->options.tiered) {
    if (std::shared_ptr<Variant> v = promoted_variant(state, args)) {
      return jit::run_variant(*v, args);
    }
  }
  const Lookup lookup{.count_hit = true, .tiered = k.jit->options.tiered, .check_capture = k.cuda};
  return jit::run_variant(*find_variant(state, args, key, dynamic, lookup), args);
}

}  // namespace

PJValue Kernel::call(std::span<const Arg> args) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "call of an empty Kernel (use Jit::kernel)";
  if (!state_->cuda) return call_path(state_, args);
  jit::CallScope scope({state_->options.cuda_stream, nullptr});
  return call_path(state_, args);
}

PJValue Kernel::call(std::span<const Arg> args, const CallOptions& options) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "call of an empty Kernel (use Jit::kernel)";
  if (!state_->cuda) return call_path(state_, args);
  jit::CallScope scope({options.cuda_stream.value_or(state_->options.cuda_stream), nullptr});
  return call_path(state_, args);
}

PreparedCall Kernel::prepare(std::span<const Arg> args, const CallOptions& options) const {
  PRIMJIT_USER_CHECK(state_ != nullptr) << "prepare of an empty Kernel (use Jit::kernel)";
  State& k = *state_;
  PRIMJIT_USER_CHECK(k.cuda) << "Kernel::prepare: kernel '" << k.name << "' is compiled for "
                             << k.target.str()
                             << "; a prepared call replays CUDA kernel launches, so only kernels "
                                "for target cuda can be prepared. Call this one instead";
  if (std::string work = jit::host_work_besides_launches(k.module, k.name); !work.empty()) {
    PRIMJIT_USER_ERROR() << "Kernel::prepare: the host code of kernel '" << k.name << "' " << work
                         << ", which a prepared call would not repeat (it replays the kernel "
                            "launches only). Call the kernel instead";
  }
  auto prepared = std::make_shared<PreparedCall::State>();
  prepared->stream = static_cast<CUstream_st*>(options.cuda_stream.value_or(k.options.cuda_stream));
  PJValue result;
  {
    jit::CallScope scope({prepared->stream, &prepared->recording});
    result = call_path(state_, args);
  }
  PRIMJIT_USER_CHECK(result.type_index == kPJNone)
      << "Kernel::prepare: kernel '" << k.name
      << "' returns a value, which a prepared call would not compute again. Call the kernel "
         "instead";
  return PreparedCall(std::move(prepared));
}

std::shared_ptr<Variant> jit::variant_for_call(const std::shared_ptr<Kernel::State>& state,
                                               std::span<const Arg> args, const KeyBuffer& key,
                                               bool dynamic) {
  return find_variant(state, args, key, dynamic, Lookup{});
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
  s.tiered_calls = k.tiered_hits;
  s.switch_overs = k.switch_overs;
  s.promotions = static_cast<uint64_t>(k.promoted_count.load());
  s.promoted_calls = k.recent.promoted_calls();
  std::lock_guard<std::mutex> lock(k.mutex);
  s.compile = k.times;
  s.reasons = k.history.reasons();
  s.variants = s.misses + s.disk_hits + s.remote_hits - k.failed - s.evictions;
  return s;
}

const PrimFunc& Kernel::function() const { return state_->original; }
const Target& Kernel::target() const { return state_->target; }
const KernelOptions& Kernel::options() const { return state_->options; }

}  // namespace primjit
