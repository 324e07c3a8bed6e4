#include "jit/runtime/variant_cache.h"

#include <algorithm>
#include <chrono>

#include "jit/runtime/kernel_state.h"
#include "primjit/error.h"

namespace primjit::jit {

std::shared_ptr<Variant> variant_of(const Entry& entry) {
  const Outcome& outcome = entry.future.get();
  if (outcome.variant == nullptr) PRIMJIT_USER_ERROR() << outcome.error;
  return outcome.variant;
}

PJValue run_interpreted(const Variant& v, std::span<const Arg> args) {
  std::vector<emu::Arg> values;
  values.reserve(args.size());
  for (const Arg& a : args) {
    const PJValue& p = a.value;
    switch (p.type_index) {
      case kPJDLTensorPtr:
        values.emplace_back(static_cast<DLTensor*>(p.v_ptr));
        break;
      case kPJFloat:
        values.emplace_back(p.v_float64);
        break;
      case kPJBool:
        values.emplace_back(p.v_int64 != 0);
        break;
      case kPJInt:
        values.emplace_back(p.v_int64);
        break;
      default:
        values.push_back(emu::Arg::pointer(p.v_ptr));
        break;
    }
  }
  std::optional<emu::Arg> r = v.interpreter->run(v.function, values);
  PJValue out{};
  out.type_index = kPJNone;
  if (!r) return out;
  switch (r->kind()) {
    case emu::Arg::Kind::kInt:
      out.type_index = kPJInt;
      out.v_int64 = r->as_int();
      break;
    case emu::Arg::Kind::kBool:
      out.type_index = kPJBool;
      out.v_int64 = r->as_bool();
      break;
    case emu::Arg::Kind::kFloat:
      out.type_index = kPJFloat;
      out.v_float64 = r->as_float();
      break;
    default:
      break;
  }
  return out;
}

void VariantCache::evict_if_needed(size_t capacity, std::optional<uint64_t> keep_hash) {
  std::lock_guard<std::mutex> lock(lru_mutex);
  while (lru.size() > capacity) {
    uint64_t victim = 0;
    uint64_t oldest = UINT64_MAX;
    bool found = false;
    for (auto it = lru.begin(); it != lru.end();) {
      std::shared_ptr<Entry> e = it->second.lock();
      if (e == nullptr) {
        it = lru.erase(it);
        continue;
      }
      bool ready = e->future.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
      uint64_t used = e->last_use.load();
      if (ready && e->future.get().variant != nullptr) {
        used = std::max(used, e->future.get().variant->last_use.load());
      } else if (ready) {
        used = 0;  // a failed compile kept by a tiered kernel goes before any variant
      }
      if (it->first != keep_hash && ready && used < oldest) {
        oldest = used;
        victim = it->first;
        found = true;
      }
      ++it;
    }
    if (!found) return;
    lru.erase(victim);
    Map::accessor acc;
    if (!map.find(acc, victim)) continue;
    std::shared_ptr<Entry> entry = acc->second;
    map.erase(acc);
    acc.release();
    if (std::shared_ptr<Variant> v = entry->future.get().variant) {
      if (auto ks = v->kernel.lock()) ++ks->evictions;
      v->evicted.store(true, std::memory_order_seq_cst);
      std::vector<std::weak_ptr<Kernel::State>> holders;
      {
        std::lock_guard<std::mutex> holders_lock(v->holders_mutex);
        holders = v->holders;
      }
      for (const std::weak_ptr<Kernel::State>& h : holders) {
        if (auto ks = h.lock()) ks->recent.forget(v.get());
      }
    }
    // The variant is unloaded when the last call holding it returns.
  }
}

void VariantCache::forget(uint64_t hash, const std::shared_ptr<Entry>& entry) {
  {
    Map::accessor acc;
    if (map.find(acc, hash) && acc->second == entry) map.erase(acc);
  }
  std::lock_guard<std::mutex> lock(lru_mutex);
  auto it = lru.find(hash);
  if (it != lru.end() && it->second.lock() == entry) lru.erase(it);
}

}  // namespace primjit::jit
