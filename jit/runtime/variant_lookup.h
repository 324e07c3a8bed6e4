// Steps 2-4 of a call that missed its kernel's recent variants (jit.cc's cached path): the
// Jit's cache, else a new variant, compiled once however many threads ask (single flight); under
// JitOptions::tiered in the background while calls run the kernel's generic variant. Also the
// lookups of compiles ahead of calls and of kBucketed's promotions.
#pragma once

#include <memory>
#include <span>

#include "jit/runtime/cache_key.h"
#include "jit/runtime/kernel_state.h"

namespace primjit::jit {

/// How find_variant treats what it finds and makes.
struct Lookup {
  bool count_hit = false;      // a call: a found variant counts as a hit and becomes a recent one
  bool tiered = false;         // JitOptions::tiered: a variant not ready yet is not waited for
  bool check_capture = false;  // a CUDA call: refuse to compile while its stream captures
  bool generic = false;        // the generic variant of a tiered call (its reason says so)
  bool retried = false;        // compiles in the call after a background failure was dropped
};

/// The variant with `key` for a call with `args` (checked): from the Jit's cache, else compiled
/// (`dynamic`: the fully dynamic variant), as `lookup` says; the compile's error is thrown. A
/// tiered call may get the generic variant instead.
std::shared_ptr<Variant> find_variant(const std::shared_ptr<Kernel::State>& state,
                                      std::span<const Arg> args, const KeyBuffer& key, bool dynamic,
                                      Lookup lookup);

}  // namespace primjit::jit
