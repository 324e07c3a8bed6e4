// kBucketed's promoted shapes (KernelOptions::promote_after): a kernel's first shape, and a
// shape one thread calls promote_after times in a row on its bucket's variant, get variants of
// their own with every dimension compiled in, which their calls then run: the cached path
// (jit.cc's fast_key) builds their exact key, the others here.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "jit/runtime/kernel_state.h"

namespace primjit::jit {

/// One extent into a call's shape hash (fast_key and the promotions hash alike).
inline uint64_t mix_extent(uint64_t h, int64_t extent) {
  return (h ^ static_cast<uint64_t>(extent)) * 0x100000001b3ull + 1;
}

/// The call's exact shape (`shape`, as fast_key hashes it) ran promote_after times in a row on
/// its bucket's variant: it gets a variant of its own, which its later calls run (fast_key's
/// exact key). Compiled here (in the background under JitOptions::tiered; later runs of the
/// count pick it up once it is ready), after the call itself ran. A failure is logged and not
/// tried again; nothing is promoted that would reach the recompile limit, nor on target cuda.
[[gnu::cold]] void promote(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args,
                           uint64_t shape);

/// kBucketed (not tiered): promotes the shape of a call with `args` now, as promote_after calls
/// in a row would (Kernel::benchmark, before its timed calls); nothing under other policies.
void promote_shape(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args);

/// kBucketed, a call (checked arguments) that missed the cached path, not tiered: a promoted
/// shape's call takes its exact variant (waiting for it while another thread compiles it), and
/// the kernel's first call compiles its shape's exact variant, as a promoted shape, rather than
/// its bucket's: a program with one shape compiles once, what kExact would, and the bucket's
/// variant is made when a second shape of it comes. Null when neither applies (the call takes
/// its bucket's variant).
std::shared_ptr<Variant> promoted_variant(const std::shared_ptr<Kernel::State>& state,
                                          std::span<const Arg> args);

}  // namespace primjit::jit
