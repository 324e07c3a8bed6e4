// kBucketed's promoted shapes (see promotion.h).
#include "jit/runtime/promotion.h"

#include <cstdint>
#include <exception>
#include <mutex>

#include "jit/runtime/call_arguments.h"
#include "jit/runtime/variant_lookup.h"
#include "primjit/log.h"

namespace primjit::jit {
namespace {

// kBucketed: the shape hash fast_key makes for a call (checked arguments) of a kernel whose
// keys are not dynamic; 0 when no dimension is bucketed.
uint64_t shape_of(const Kernel::State& k, std::span<const Arg> args) {
  const int64_t bucket = bucket_limit_of(k.options);
  uint64_t h = 0;
  bool bucketed = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (!k.params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    for (int d = 0; d < t->ndim; ++d) {
      h = mix_extent(h, t->shape[d]);
      bucketed = bucketed || is_bucket(bucket_entry(t->shape[d], bucket));
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
    if (t->byte_offset != 0 || !is_compact(*t) || (data_address(*t) & 15) != 0) return false;
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
  if (first_key) {
    const bool taken = n != 0 || k.history.distinct_keys() != 0;
    k.first_shape_settled.store(true, std::memory_order_relaxed);
    if (taken) return -1;
  }
  if (n == Kernel::State::kMaxPromotions || k.fell_back.load() ||
      static_cast<int>(k.history.distinct_keys()) + 1 >= k.options.recompile_limit) {
    // No shape will be promoted any more: the cached path stops counting runs.
    k.promotions_closed.store(true, std::memory_order_relaxed);
    return -1;
  }
  k.promoted[n].store(shape, std::memory_order_relaxed);
  k.promoted_count.store(n + 1, std::memory_order_release);
  return n;
}

// The key of the call's exact variant under kBucketed: every extent in place of its bucket.
KeyBuffer exact_key(const Kernel::State& k, std::span<const Arg> args) {
  KeyBuffer exact;
  build_key(k.params, args, /*dynamic=*/false, {}, &exact, INT64_MAX);
  return exact;
}

// promote() for checked arguments.
void promote_checked(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args,
                     uint64_t shape) {
  Kernel::State& k = *state;
  int index = -1;
  try {
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

void promote(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args,
             uint64_t shape) {
  Kernel::State& k = *state;
  // Not for CUDA kernels: their calls may be recorded into a CUDA graph, where nothing may be
  // compiled or loaded, after an untouched first call or a prewarm. Nothing again for a shape
  // whose compile failed (before the argument checks: the runs keep reaching here).
  if (k.cuda || k.promotions_closed.load(std::memory_order_relaxed)) return;
  const int known = k.promotion_of(shape);
  if (known >= 0 && (k.promotion_failed.load(std::memory_order_relaxed) >> known & 1)) return;
  try {
    check_arguments(k, args);
    check_argument_memory(k.memory, k.name, k.params, args, k.target);
  } catch (const std::exception&) {
    return;  // not for a call that ran; the call's own checks report such arguments
  }
  promote_checked(state, args, shape);
}

void promote_shape(const std::shared_ptr<Kernel::State>& state, std::span<const Arg> args) {
  Kernel::State& k = *state;
  if (k.options.policy != Policy::kBucketed || k.options.promote_after == 0 ||
      k.jit->options.tiered || k.fell_back.load() || k.cuda) {
    return;
  }
  check_arguments(k, args);
  if (const uint64_t shape = shape_of(k, args); shape != 0) promote_checked(state, args, shape);
}

// kBucketed, a call that missed the cached path (not tiered): a promoted shape's call takes its
// exact variant (waiting for it while another thread compiles it), and the kernel's first call
// compiles its shape's exact variant, as a promoted shape, rather than its bucket's: a program
// with one shape compiles once, what kExact would, and the bucket's variant is made when a
// second shape of it comes. Null when neither applies (the call takes its bucket's variant).
std::shared_ptr<Variant> promoted_variant(const std::shared_ptr<Kernel::State>& state,
                                          std::span<const Arg> args) {
  Kernel::State& k = *state;
  const uint64_t shape = shape_of(k, args);
  if (shape == 0 || !plain_layout(k, args)) return nullptr;
  int index = k.promotion_of(shape);
  if (index < 0 && !k.first_shape_settled.load(std::memory_order_relaxed)) {
    index = register_promotion(k, shape, /*first_key=*/true);
  }
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

}  // namespace primjit::jit
