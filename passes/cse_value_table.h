// CommonSubexprElim's tables: value numbers interned from keys (a node's kind, dtype, payload
// and its operands' value numbers), and a flat map from IR nodes to small values. Both hash
// with the library's mixing (ir/hash_mix.h); which slot an entry lands in never shows in the
// pass's output: value numbers count in order of first appearance, and NodeMap is never
// iterated.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ir/hash_mix.h"
#include "primjit/error.h"

namespace primjit::passes::cse {

struct ValueInfo {
  int height = 0;          // 1 + the greatest height of the operands; leaves 0
  bool shareable = false;  // may be given a Bind
  bool may_fault = false;  // reads memory, divides by a variable, or calls out
};

// Interns keys (a sequence of words) to dense value numbers, in order of first appearance.
class ValueTable {
 public:
  int intern(const std::vector<int64_t>& key, const ValueInfo& info) {
    uint64_t h = hash(key);
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.value < 0) {
        slot = {static_cast<uint32_t>(h), add(info)};
        PRIMJIT_ICHECK(arena_.size() + key.size() < UINT32_MAX) << "CommonSubexprElim: too large";
        spans_.back() = {static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size())};
        arena_.insert(arena_.end(), key.begin(), key.end());
        ++count_;
        return slot.value;
      }
      const auto& [offset, size] = spans_[slot.value];
      if (slot.hash == static_cast<uint32_t>(h) && size == key.size() &&
          std::equal(key.begin(), key.end(), arena_.begin() + offset)) {
        return slot.value;
      }
    }
  }
  // A value equal to no other (a call with effects, a variable without a Bind).
  int fresh(const ValueInfo& info) { return add(info); }
  const ValueInfo& info(int vn) const { return infos_[vn]; }
  size_t size() const { return infos_.size(); }

 private:
  struct Slot {
    uint32_t hash = 0;  // low bits of the key's hash (the table never exceeds 2^32 slots)
    int value = -1;     // -1: empty
  };
  struct Span {
    uint32_t offset = 0;
    uint32_t size = 0;
  };

  static uint64_t hash(const std::vector<int64_t>& key) {
    uint64_t h = key.size();
    for (int64_t w : key) h = hashing::mix64(hashing::combine(h, static_cast<uint64_t>(w)));
    return h;
  }
  int add(const ValueInfo& info) {
    infos_.push_back(info);
    spans_.push_back({});
    return static_cast<int>(infos_.size()) - 1;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.value < 0) continue;
      size_t i = slot.hash & mask;
      while (slots_[i].value >= 0) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }

  std::vector<ValueInfo> infos_;
  std::vector<Span> spans_;  // key of each interned value in arena_
  std::vector<int64_t> arena_;
  std::vector<Slot> slots_;  // open addressing
  size_t count_ = 0;
};

// A map from nodes to small values in one flat array (the walk looks up every variable it meets;
// node-based maps cost an allocation per entry). Lookups only: it is never iterated.
template <typename V>
class NodeMap {
 public:
  V& operator[](const void* key) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].first == key) return slots_[i].second;
      if (slots_[i].first == nullptr) {
        ++count_;
        slots_[i].first = key;
        return slots_[i].second;
      }
    }
  }

 private:
  static size_t hash(const void* key) { return hashing::mix64(reinterpret_cast<uintptr_t>(key)); }
  void grow() {
    std::vector<std::pair<const void*, V>> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), {nullptr, V{}});
    size_t mask = slots_.size() - 1;
    for (auto& slot : old) {
      if (slot.first == nullptr) continue;
      size_t i = hash(slot.first) & mask;
      while (slots_[i].first != nullptr) i = (i + 1) & mask;
      slots_[i] = std::move(slot);
    }
  }

  std::vector<std::pair<const void*, V>> slots_;
  size_t count_ = 0;
};

}  // namespace primjit::passes::cse
