// The specialization policy: which dimensions of a call's arguments a variant is specialized
// on. kExact specializes on all, kDynamic on none, kAuto makes a dimension symbolic once it
// took more than auto_threshold values; the recompile limit switches a kernel to its dynamic
// variant (or raises) when too many distinct keys compiled.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "jit/runtime/cache_key.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// The key of a call (`args` passed check_arguments) under the kernel's policy as it stands;
/// returns whether the variant is fully dynamic.
bool build_call_key(Kernel::State& k, std::span<const Arg> args, KeyBuffer* key);

/// What a call that missed the caches compiles.
struct Specialization {
  std::vector<int64_t> key;
  uint64_t hash = 0;
  bool dynamic = false;
  DimSet symbolic;  // under kAuto
};

/// Applies the policy to a call that missed the caches with `key` (from build_call_key, which
/// returned `dynamic`): kAuto learns the call's dimensions and may make some symbolic, the
/// recompile limit may switch to the dynamic variant or raise primjit::Error. The result's key
/// and hash change when the policy changed what is symbolic.
Specialization specialize_call(Kernel::State& k, std::span<const Arg> args, const KeyBuffer& key,
                               bool dynamic);

}  // namespace primjit::jit
