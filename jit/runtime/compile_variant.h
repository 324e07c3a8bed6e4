// Compile orchestration: making one variant of a kernel from the persistent tiers or by
// specializing, lowering and compiling it (device code and host code at the same time).
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "jit/cuda/device_code.h"
#include "jit/runtime/cache_key.h"
#include "jit/runtime/variant_cache.h"
#include "primjit/jit.h"
#include "primjit/passes.h"

namespace primjit::jit {

using Clock = std::chrono::steady_clock;

/// Milliseconds since `start`, for StageTimes.
inline double ms_since(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// Where a variant came from.
enum class Source { kCompiled, kDisk, kRemote };

/// Makes one variant: from the disk cache, else the remote one, else by lowering and compiling
/// it (and storing it on disk and, when this machine may write, remotely). `*source` says which.
/// Specializes on the call's shapes unless `dynamic`, leaving the `symbolic` dimensions. Adds
/// its times to the kernel's and the Jit's statistics and logs it (info) with `reason` (why it
/// is made) and the time of each stage. With PRIMJIT_DUMP set, it is compiled (the tiers are
/// neither read nor written) and the dumps asked for go to <dump dir>/<kernel>.vN/.
std::shared_ptr<Variant> compile_variant(Kernel::State& k, std::span<const Arg> args,
                                         std::vector<int64_t> key, bool dynamic,
                                         const DimSet& symbolic, std::string_view reason,
                                         Source* source);

/// The functions a call of `entry` can reach: `entry`, the functions it calls (directly, or by
/// name, as T.call_packed("name", ...) does) and theirs. A kernel holds only these (Jit::kernel
/// prunes its module once): another function of the module (a kernel for another
/// architecture, a device function not lowered for this entry) is no part of it, must not make
/// its compile fail, and must not change its fingerprint or disk cache key.
IRModule reachable_functions(const IRModule& module, const std::string& entry);

/// The module a variant compiles: the kernel's function specialized to the call's shapes
/// (unless `dynamic`; the `symbolic` dimensions stay symbolic, and so, under kBucketed, do the
/// bucketed ones when the variant's `key` has a bucket), through the default pipeline with the
/// kernel's options.
IRModule lower_variant(const Kernel::State& k, std::span<const Arg> args, bool dynamic,
                       const DimSet& symbolic, std::span<const int64_t> key,
                       const passes::RunOptions& run);

/// Gives the host code of a variant the handles of the kernels it launches.
void bind_kernels(Variant& v);

/// The device options of the kernel's variant `v` (its CUDA device among them).
DeviceOptions device_options(const Kernel::State& k, const Variant& v);

}  // namespace primjit::jit
