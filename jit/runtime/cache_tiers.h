// The persistent tiers behind the Jit's memory cache: the disk cache of this machine and the
// remote (team) cache. Opening them from JitOptions and the environment, the text key of a
// variant, and loading and storing variants.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "jit/runtime/disk_cache.h"
#include "jit/runtime/remote_cache.h"
#include "jit/runtime/variant_cache.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// The disk cache the options and PRIMJIT_CACHE* ask for; null when disabled or (from the
/// environment, with a warning once per problem) unusable.
std::unique_ptr<DiskCache> open_disk_cache(const JitOptions& options);

/// The remote tier, when an address is configured: it needs the team key (never trusted
/// without it). Set explicitly in JitOptions, a problem is an error; from the environment, a
/// warning once and no remote tier.
std::unique_ptr<RemoteCache> open_remote_cache(const JitOptions& options);

/// The persistent key of a variant (disk and remote tiers): everything its code depends on, as
/// text. Empty when the kernel's variants are not kept beyond memory (both tiers off, emu, or
/// cuda without a driver: such a compile fails anyway, with the driver's error).
std::string persistent_key(Kernel::State& k, const std::vector<int64_t>& key, int cuda_device);

/// What the disk cache had for a variant.
enum class DiskLoad {
  kOff,  // no disk cache for this kernel
  kLoaded,
  kMissing,  // no entry, or a damaged one (reported): compile and store
  kInUse,    // a good entry whose code this Jit has linked already (another kernel with other
             // device options, e.g. another stream): compile, and leave the entry alone
};

/// A variant from the disk cache into `v`; a rejected or unloadable entry is reported, and the
/// caller compiles and replaces it.
DiskLoad load_from_disk(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times);

/// A variant from the remote tier into `v` (written to disk too, for this machine's next
/// process); false when it has none that checks out (a bad value is reported: compile).
bool load_from_remote(Kernel::State& k, const std::string& key, Variant& v, StageTimes* times);

/// Stores a compiled variant on disk and, when this machine may write, remotely; a failure is
/// reported, not raised (the variant works).
void store_in_tiers(Kernel::State& k, const std::string& key, const CachedVariant& image);

}  // namespace primjit::jit
