// The checks of a call's arguments: the full ones, which name the problem, and the cheap ones
// of a cached call, which make its key on the way.
#pragma once

#include <cstdint>
#include <cstring>
#include <span>

#include "jit/runtime/argument_memory.h"
#include "jit/runtime/cache_key.h"
#include "jit/runtime/kernel_state.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// Parameters of a kernel whose cached calls take the fast path (their byte ranges are kept on
/// the stack for the overlap check).
inline constexpr size_t kMaxFastParams = 64;

/// Tensor and scalar checks that must hold before anything is compiled; raises primjit::Error
/// naming the argument and what it should be.
void check_arguments(const Kernel::State& k, std::span<const Arg> args);

/// The key of a call whose arguments pass the cheap checks of a cached call, as build_key makes
/// it; false when anything is unusual (the full checks then run and name the problem). What the
/// cheap checks leave out, the key's equality with an earlier, fully checked call's key implies
/// (shapes against constants and each other), or the compiled code checks (symbolic shapes).
inline bool fast_key(const Kernel::State& k, std::span<const Arg> args, KeyBuffer* key) {
  if (!k.fast_ok || args.size() != k.fast.size()) return false;
  const bool dynamic =
      k.options.policy == Policy::kDynamic || k.fell_back.load(std::memory_order_relaxed);
  const uint64_t mask = k.symbolic_mask.load(std::memory_order_relaxed);
  size_t bit = 0;
  int64_t values[kMaxCheckedVars];  // shape variables bound so far
  uint32_t bound = 0;
  const bool disjoint = !k.memory.disjoint.empty();
  uintptr_t begin[kMaxFastParams],
      end[kMaxFastParams];  // of the tensors, when some must not overlap
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
        (p.ndim > 0 && t->shape == nullptr) || (data_address(*t) & p.align_mask) != 0) {
      return false;
    }
    if (t->device.device_type != p.device &&
        !(p.device == kDLCUDA && t->device.device_type == kDLCUDAManaged)) {
      return false;
    }
    if (p.device == kDLCUDA && t->device.device_id != 0) return false;
    uint32_t dtype;
    std::memcpy(&dtype, &t->dtype, sizeof(dtype));
    if (dtype != p.dtype) return false;
    key->push_inline((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) |
                     t->dtype.lanes);
    key->push_inline(t->ndim);
    int64_t elements = 1;
    for (int d = 0; d < p.ndim; ++d, ++bit) {
      int64_t extent = t->shape[d];
      const DimRule& rule = k.params[i].dims[static_cast<size_t>(d)];
      if (extent < 0 || extent > rule.max) return false;
      if (__builtin_mul_overflow(elements, extent, &elements)) return false;  // the slow path
      if (!dynamic && !(mask >> bit & 1)) {
        key->push_inline(extent);
        continue;
      }
      // A symbolic dimension is not in the key: check it against its rule here.
      key->push_inline(kSymbolic);
      if (rule.kind == DimRule::kConstant && extent != rule.value) return false;
      if (rule.kind == DimRule::kVariable) {
        uint32_t b = uint32_t{1} << rule.variable;
        if (!(bound & b)) {
          bound |= b;
          values[rule.variable] = extent;
        } else if (values[rule.variable] != extent) {
          return false;
        }
      }
    }
    if (disjoint) {
      begin[i] = data_address(*t);
      end[i] = begin[i] + static_cast<uintptr_t>(elements) * p.element_bytes;
      if (t->strides != nullptr || elements == 0) {
        ByteRange r = byte_range(*t, elements);
        begin[i] = r.begin;
        end[i] = r.end;
      }
    }
  }
  for (const auto& [i, j] : k.memory.disjoint) {
    if (begin[i] < end[j] && begin[j] < end[i]) return false;
  }
  return true;
}

}  // namespace primjit::jit
