#include "jit/runtime/specialization_policy.h"

#include <mutex>
#include <set>
#include <string>

#include "jit/runtime/kernel_state.h"
#include "primjit/error.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

// kAuto's symbolic dimensions as bits, in the order their values appear in the key.
uint64_t symbolic_mask(const Kernel::State& k) {
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

}  // namespace

bool build_call_key(Kernel::State& k, std::span<const Arg> args, KeyBuffer* key) {
  bool dynamic = k.options.policy == Policy::kDynamic;
  if (k.options.policy == Policy::kAuto || k.fell_back.load()) {
    std::lock_guard<std::mutex> lock(k.mutex);
    dynamic = dynamic || k.fell_back;
    build_key(k.params, args, dynamic, k.symbolic, key, bucket_limit_of(k.options));
  } else {
    build_key(k.params, args, dynamic, {}, key, bucket_limit_of(k.options));
  }

  return dynamic;
}

Specialization specialize_call(Kernel::State& k, std::span<const Arg> args, const KeyBuffer& key,
                               bool dynamic) {
  Specialization s;
  s.key = key.to_vector();
  s.hash = key.hash(k.fingerprint);
  // The key after the policy changed what is symbolic.
  auto rekey = [&](bool all_dynamic) {
    KeyBuffer again;
    build_key(k.params, args, all_dynamic, s.symbolic, &again, bucket_limit_of(k.options));
    s.key = again.to_vector();
    s.hash = again.hash(k.fingerprint);
  };
  std::lock_guard<std::mutex> lock(k.mutex);
  dynamic = dynamic || k.fell_back;
  s.symbolic = k.symbolic;
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
          PRIMJIT_LOG_INFO << "kernel '" << k.name << "': " << dim_name(k.params, i, d) << " took "
                           << values.size() << " values; it is symbolic from now on";
          k.seen.erase(at);  // no longer needed: memory stays bounded
        }
      }
    }
    if (changed) {
      s.symbolic = k.symbolic;
      k.symbolic_mask.store(symbolic_mask(k), std::memory_order_relaxed);
      rekey(false);
    }
  }
  // The limit counts distinct keys: a variant compiled again after its eviction is free.
  if (!dynamic && static_cast<int>(k.history.distinct_keys()) >= k.options.recompile_limit &&
      !k.history.knows(s.hash)) {
    // Name the dimension that changed in the most compiles.
    std::string culprit = k.history.culprit(k.params);
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
    s.symbolic.clear();
    rekey(true);
    PRIMJIT_LOG_INFO << "kernel '" << k.name << "': recompile limit reached (" << culprit
                     << "); falling back to the dynamic variant";
  }
  s.dynamic = dynamic;
  return s;
}

}  // namespace primjit::jit
