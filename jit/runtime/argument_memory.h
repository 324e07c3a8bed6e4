// What a call's tensor arguments must satisfy in memory, checked at call time (docs/semantics.md,
// "Arguments"): each tensor's data (data + byte_offset) is aligned as the compiled code assumes
// (the element size for llvm and emu; the buffer's data_alignment, 64 bytes by default, for
// cuda, whose vector loads rely on it), and two tensor arguments that share an element (for
// strided views, not just their byte ranges) are refused when the function may write one of them
// (generated code marks its pointers noalias, so the call would be undefined). The cheap form
// (aligned(), byte_range(), overlap()) runs on every cached call; check_argument_memory() makes the
// error that names the arguments.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "jit/runtime/cache_key.h"
#include "primjit/ir/function.h"
#include "primjit/ir/target.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// The bytes a tensor's elements occupy, [begin, end); [0, 0) for a tensor without elements,
/// which overlaps nothing.
struct ByteRange {
  uintptr_t begin = 0;
  uintptr_t end = 0;
};

inline uintptr_t data_address(const DLTensor& t) {
  return reinterpret_cast<uintptr_t>(t.data) + static_cast<uintptr_t>(t.byte_offset);
}

/// `t`'s byte range; `elements` is its element count when the caller has it (else -1).
inline ByteRange byte_range(const DLTensor& t, int64_t elements = -1) {
  const uintptr_t base = data_address(t);
  const int64_t bytes = (int64_t{t.dtype.bits} * t.dtype.lanes + 7) / 8;
  int64_t lo = 0, hi = 0;  // element offsets of the lowest and highest element
  if (t.strides == nullptr) {
    if (elements < 0) {
      elements = 1;
      for (int d = 0; d < t.ndim; ++d) elements *= t.shape[d];
    }
    if (elements <= 0) return {};
    hi = elements - 1;
  } else {
    for (int d = 0; d < t.ndim; ++d) {
      if (t.shape[d] <= 0) return {};
      int64_t span = (t.shape[d] - 1) * t.strides[d];
      (span > 0 ? hi : lo) += span;
    }
  }
  return {base + static_cast<uintptr_t>(lo * bytes),
          base + static_cast<uintptr_t>((hi + 1) * bytes)};
}

inline bool overlap(const ByteRange& a, const ByteRange& b) {
  return a.begin < b.end && b.begin < a.end;
}

/// Whether two tensors whose byte ranges overlap (byte_range) may have an element in common.
/// Strided views interleave (two column slices of one matrix, the even and the odd elements):
/// when their elements have one size and lie on one grid, this looks for a common element
/// exactly (a bounded search; true when the search gives up), else it answers true.
bool may_share_elements(const DLTensor& a, const DLTensor& b);

struct MemoryRule {
  /// Per parameter: the alignment in bytes of its tensor's data (0: a scalar parameter).
  std::vector<uint32_t> align;
  /// Per parameter: whether the function may write its tensor.
  std::vector<bool> written;
  /// The tensor parameter pairs (i < j) that must not overlap: one of them may be written.
  std::vector<std::pair<uint16_t, uint16_t>> disjoint;
};

/// The rule for calls of `func` (as given to Jit::kernel, with its buffer_map) on `target`.
MemoryRule memory_rule(const PrimFunc& func, const Target& target);

/// Throws primjit::Error naming the first misaligned tensor argument, or the first two that
/// overlap, of function `name` with parameters `params`. `args` passed check_arguments:
/// one per parameter, a DLTensor* where the rule's align is nonzero. Allocates nothing.
void check_argument_memory(const MemoryRule& rule, const std::string& name,
                           std::span<const ParamInfo> params, std::span<const Arg> args,
                           const Target& target);

}  // namespace primjit::jit
