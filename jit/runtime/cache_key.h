// The key of a kernel's variants: what a call's arguments contribute (per tensor its dtype,
// rank and, unless symbolic, its dimensions), the parameter rules the key is checked against,
// and the bounded history that says why each new key compiled.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <set>
#include <span>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "primjit/ir.h"
#include "primjit/jit.h"

namespace primjit::jit {

/// Key values are int64; a dimension left symbolic is this marker.
inline constexpr int64_t kSymbolic = INT64_MIN;

/// Policy::kBucketed: the key entry of a dimension above the kernel's bucket_limit says only
/// whether it is a multiple of 16 (the variant keeps the dimension symbolic, with that fact).
inline constexpr int64_t kBucketMultiple16 = INT64_MIN + 1;
inline constexpr int64_t kBucketOther = INT64_MIN + 2;

/// The key entry of extent `v` under kBucketed with `limit`: v itself when v <= limit.
inline int64_t bucket_entry(int64_t v, int64_t limit) {
  if (v <= limit) return v;
  return v % 16 == 0 ? kBucketMultiple16 : kBucketOther;
}
inline bool is_bucket(int64_t entry) { return entry == kBucketMultiple16 || entry == kBucketOther; }

/// The bucket limit a kernel's keys use: its bucket_limit under kBucketed, else -1 (exact).
inline int64_t bucket_limit_of(const KernelOptions& o) {
  return o.policy == Policy::kBucketed ? o.bucket_limit : -1;
}

/// Keys up to this many values are built on the stack (no allocation on a hit).
/// A kernel whose key can be longer takes the full checks on every call (Kernel::call's fast
/// path needs the room). A tensor takes 3 + rank values (dtype, rank, dimensions, layout), the
/// device ordinal one more: 128 holds 16 tensors of rank 4 ((3 + 4) * 16 + 1 = 113). (48 left
/// bench_launch's 16 rank-1 CUDA tensors, 65 values with the layout and device entries, on the
/// slow path.)
inline constexpr size_t kInlineKey = 128;

/// Shape variables per kernel checked on the stack (more are left to the packed API).
inline constexpr int kMaxCheckedVars = 32;

/// A key under construction: inline up to kInlineKey values, then on the heap.
struct KeyBuffer {
  int64_t inline_values[kInlineKey];
  std::vector<int64_t> overflow;
  size_t size = 0;

  // Only with room (the fast path checks the key's size once per kernel).
  void push_inline(int64_t v) { inline_values[size++] = v; }
  void push(int64_t v) {
    if (size < kInlineKey) [[likely]] {
      inline_values[size++] = v;
      return;
    }
    if (overflow.empty()) overflow.assign(inline_values, inline_values + kInlineKey);
    overflow.push_back(v);
    ++size;
  }
  const int64_t* data() const { return size <= kInlineKey ? inline_values : overflow.data(); }
  std::vector<int64_t> to_vector() const { return std::vector<int64_t>(data(), data() + size); }
  uint64_t hash(uint64_t seed) const {
    uint64_t h = seed ^ 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; i < size; ++i) {
      h ^= static_cast<uint64_t>(data()[i]) + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    }
    return h;
  }
  bool equals(const std::vector<int64_t>& key) const {
    return key.size() == size && std::equal(key.begin(), key.end(), data());
  }
};

/// How a tensor argument lies in memory, as the key records it after its dimensions: one entry
/// of these flags, then, when kLayoutStrided, one entry per dimension: the stride in elements
/// (0 for a dimension of extent 1, whose stride does not matter), or kSymbolic, or 1 for a
/// unit inner stride kept as a fact when the strides are symbolic (the inner loop still
/// vectorizes). Compact row-major tensors at byte_offset 0 (the usual case) add one 0.
inline constexpr int64_t kLayoutOffset = 1;   // byte_offset != 0: an element offset variable
inline constexpr int64_t kLayoutStrided = 2;  // strides that are not compact row-major
// kBucketed only: the data address is not a multiple of 16 bytes.
inline constexpr int64_t kLayoutUnaligned16 = 4;

/// True when `t` (its shape checked) is not compact row-major.
bool is_strided(const DLTensor& t);

/// Appends the layout entries of `t` (see kLayoutOffset); strides are kSymbolic (but for a
/// unit inner stride) when `symbolic`, else their values.
void push_layout(const DLTensor& t, bool symbolic, KeyBuffer* key);

/// What a dimension of a parameter buffer must be: a constant, the value of a shape variable
/// (index into the call's variable values), or an expression the packed API checks.
struct DimRule {
  enum Kind : uint8_t { kConstant, kVariable, kExpression } kind = kExpression;
  int64_t value = 0;  // kConstant
  int variable = -1;  // kVariable
  // The largest extent the dimension's dtype holds: an int32 shape variable cannot take 2^31
  // (the compiled code would see it truncated).
  int64_t max = INT64_MAX;
};

/// Where in the signature each parameter's argument goes and what it must be.
struct ParamInfo {
  std::string name;  // buffer name for buffers, else the parameter's name
  Buffer buffer;     // undefined for scalars
  DataType dtype;    // buffer element dtype or the scalar's dtype
  std::vector<DimRule> dims;
  // Strided or offset arguments: the variant declares the strides and element offset they
  // need, unless the buffer declares its own (the compiled code then checks them) or
  // `no_relayout` says why it cannot (such calls are refused before any compile).
  bool declared_layout = false;
  std::string no_relayout;
};

/// The parameters of `func`, numbering its shape variables (the first kMaxCheckedVars).
std::vector<ParamInfo> param_infos(const PrimFunc& func);

/// (parameter, dimension) pairs.
using DimSet = std::set<std::pair<size_t, size_t>>;

/// Appends the key of a call (`args` passed check_arguments): per tensor its dtype and ndim,
/// then its dimensions, each as kSymbolic when `dynamic` or in `symbolic`, else as
/// bucket_entry when `bucket_limit` >= 0 (kBucketed), else its value; then its layout
/// (push_layout; strides symbolic when `dynamic` or when a dimension of the tensor is symbolic
/// or bucketed; under kBucketed the flags add kLayoutUnaligned16); last, when the tensors are
/// CUDA tensors, their device ordinal (each device loads its own module).
void build_key(std::span<const ParamInfo> params, std::span<const Arg> args, bool dynamic,
               const DimSet& symbolic, KeyBuffer* key, int64_t bucket_limit = -1);

/// The key entry walk's marks for what is not a dimension.
inline constexpr int kDtypeEntry = -1;
inline constexpr int kLayoutEntry = -2;

/// Walks the layout build_key writes: for each tensor parameter i, f(i, kDtypeEntry, pos) at
/// its dtype entry, then f(i, d, pos) for each dimension d, then f(i, kLayoutEntry, pos) at its
/// layout flags (the strides, if any, follow them).
template <typename F>
void for_each_key_entry(std::span<const ParamInfo> params, const std::vector<int64_t>& key, F&& f) {
  size_t pos = 0;
  for (size_t i = 0; i < params.size() && pos + 1 < key.size(); ++i) {
    if (!params[i].buffer.defined()) continue;
    f(i, kDtypeEntry, pos);
    size_t ndim = static_cast<size_t>(key[pos + 1]);
    pos += 2;
    for (size_t d = 0; d < ndim && pos < key.size(); ++d, ++pos) f(i, static_cast<int>(d), pos);
    if (pos >= key.size()) break;
    f(i, kLayoutEntry, pos);
    pos += 1 + ((key[pos] & kLayoutStrided) ? ndim : 0);
  }
}

/// "A.shape[1]".
std::string dim_name(std::span<const ParamInfo> params, size_t param, size_t dim);

/// The key for people (primjit-cache ls): " A:float32[128,?] B:...".
std::string key_args_text(std::span<const ParamInfo> params, const std::vector<int64_t>& key);

/// A kernel's compile history for diagnostics and the recompile limit, bounded whatever the
/// number of variants: the reasons of the last kMaxReasons compiles, the hashes of the
/// distinct keys compiled (the limit counts keys, not compiles), the last few keys (a new
/// key's reason names what differs from the closest of them) and, per dimension, how many
/// compiles changed it (the limit's message names the worst one). Not synchronized: the
/// kernel's mutex guards it.
class KeyHistory {
 public:
  static constexpr size_t kMaxReasons = 256;
  static constexpr size_t kRecentKeys = 8;

  /// Why `key` (hash `hash`) compiles: what differs from the closest of the last few keys (a
  /// bounded search: the cost does not grow with the number of variants made).
  std::string reason(std::span<const ParamInfo> params, const std::vector<int64_t>& key,
                     uint64_t hash) const;
  /// Records a compile about to start; returns its index (for mark() and forget()).
  uint64_t record(std::span<const ParamInfo> params, const std::vector<int64_t>& key, uint64_t hash,
                  std::string reason);
  /// Records the compile of a generic variant (JitOptions::tiered) about to start: its reason
  /// only; its key is neither a recent key nor one the recompile limit counts.
  uint64_t record_generic(std::string reason);
  /// Appends `suffix` to the reason of compile `index`, unless it has been dropped already.
  void mark(uint64_t index, const char* suffix);
  /// A failed (or cancelled) compile: its key no longer counts toward the limit; its reason
  /// stays, marked with `suffix`.
  void forget_failed(const std::vector<int64_t>& key, uint64_t hash, uint64_t index,
                     const char* suffix = " (failed)");

  bool knows(uint64_t hash) const { return distinct_keys_.count(hash) > 0; }
  size_t distinct_keys() const { return distinct_keys_.size(); }
  /// The dimension that changed in the most compiles, for the recompile limit's message.
  std::string culprit(std::span<const ParamInfo> params) const;
  std::vector<std::string> reasons() const { return {reasons_.begin(), reasons_.end()}; }

 private:
  std::deque<std::string> reasons_;  // reason i is reasons_[i - reasons_dropped_]
  uint64_t reasons_dropped_ = 0;
  std::unordered_set<uint64_t> distinct_keys_;
  std::deque<std::vector<int64_t>> recent_keys_;
  std::map<std::pair<size_t, size_t>, uint64_t> dim_changes_;
  uint64_t compiles_started_ = 0;
};

}  // namespace primjit::jit
