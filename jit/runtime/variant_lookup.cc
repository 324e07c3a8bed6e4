// The Jit's cache and compiles behind a call that missed its kernel's recent variants (see
// variant_lookup.h).
#include "jit/runtime/variant_lookup.h"

#include <chrono>
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <string>

#include "jit/cuda/driver.h"
#include "jit/runtime/background_compile.h"
#include "jit/runtime/call_arguments.h"
#include "jit/runtime/compile_variant.h"
#include "jit/runtime/specialization_policy.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

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

}  // namespace

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

}  // namespace primjit::jit
