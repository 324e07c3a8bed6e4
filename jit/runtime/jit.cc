// The public JIT API (primjit/jit.h) over the runtime's parts: a call's path through the
// kernel's recent variants (the cached path, here so that it inlines into Kernel::call), then
// the Jit's cache and a compile (variant_lookup.h), kBucketed's promoted shapes
// (promotion.h), and statistics; compiles ahead of calls (prewarm, compile_async, compiled)
// are in kernel_signatures.cc. See kernel_state.h for the parts.
#include "primjit/jit.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <sstream>
#include <utility>

#include "ir/hash_mix.h"
#include "jit/cuda/driver.h"
#include "jit/runtime/build_id.h"
#include "jit/runtime/cache_tiers.h"
#include "jit/runtime/call_arguments.h"
#include "jit/runtime/compile_variant.h"
#include "jit/runtime/kernel_state.h"
#include "jit/runtime/prepared_call.h"
#include "jit/runtime/promotion.h"
#include "jit/runtime/specialization_policy.h"
#include "jit/runtime/variant_lookup.h"
#include "primjit/error.h"
#include "primjit/ir/structural.h"
#include "primjit/log.h"
#include "primjit/version.h"

namespace primjit {

using jit::Entry;
using jit::find_variant;
using jit::KeyBuffer;
using jit::Lookup;
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
          extents_hash = jit::mix_extent(extents_hash, extent);
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
          jit::promote(state, args, shape);
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
    if (std::shared_ptr<Variant> v = jit::promoted_variant(state, args)) {
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
