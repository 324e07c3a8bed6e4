#include "jit/runtime/cache_key.h"

#include <algorithm>
#include <cstdint>

#include "primjit/abi.h"

namespace primjit::jit {

std::vector<ParamInfo> param_infos(const PrimFunc& func) {
  std::vector<ParamInfo> params;
  std::map<const VarNode*, int> variables;
  for (const Var& p : func->params) {
    Buffer b = func->buffer_of(p);
    ParamInfo info{b.defined() ? b->name : p->name, b, b.defined() ? b->dtype : p.dtype(), {}};
    for (size_t d = 0; b.defined() && d < b->shape.size(); ++d) {
      DimRule rule;
      rule.max = b->shape[d].dtype().max_int_value();
      if (auto c = as_const_int(b->shape[d])) {
        rule.kind = DimRule::kConstant;
        rule.value = *c;
      } else if (const auto* v = b->shape[d].as<VarNode>()) {
        auto it = variables.find(v);
        if (it == variables.end() && static_cast<int>(variables.size()) < kMaxCheckedVars) {
          it = variables.emplace(v, static_cast<int>(variables.size())).first;
        }
        if (it != variables.end()) {
          rule.kind = DimRule::kVariable;
          rule.variable = it->second;
        }
      }
      info.dims.push_back(rule);
    }
    params.push_back(std::move(info));
  }
  return params;
}

void build_key(std::span<const ParamInfo> params, std::span<const Arg> args, bool dynamic,
               const DimSet& symbolic, KeyBuffer* key) {
  int64_t device = -1;  // of the CUDA tensors (the call's checks made them agree)
  for (size_t i = 0; i < args.size(); ++i) {
    if (!params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    key->push((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) | t->dtype.lanes);
    key->push(t->ndim);
    for (int d = 0; d < t->ndim; ++d) {
      bool sym = dynamic || symbolic.count({i, static_cast<size_t>(d)}) > 0;
      key->push(sym ? kSymbolic : t->shape[d]);
    }
    if (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged) {
      device = t->device.device_id;
    }
  }
  if (device >= 0) key->push(device);
}

std::string dim_name(std::span<const ParamInfo> params, size_t param, size_t dim) {
  return params[param].name + ".shape[" + std::to_string(dim) + "]";
}

std::string key_args_text(std::span<const ParamInfo> params, const std::vector<int64_t>& key) {
  std::string text;
  std::string tensor;  // the tensor being written, closed by the next one or the end
  for_each_key_entry(params, key, [&](size_t i, int d, size_t pos) {
    if (d >= 0) {
      tensor += (d > 0 ? "," : "") + (key[pos] == kSymbolic ? "?" : std::to_string(key[pos]));
      return;
    }
    if (!tensor.empty()) text += tensor + "]";
    DataType dtype;
    int64_t code = key[pos];
    bool known =
        DataType::from_dlpack(static_cast<int>(code >> 24), static_cast<int>((code >> 16) & 0xff),
                              static_cast<int>(code & 0xffff), &dtype);
    tensor = " " + params[i].name + ":" + (known ? dtype.str() : "?") + "[";
  });
  if (!tensor.empty()) text += tensor + "]";
  return text;
}

std::string KeyHistory::reason(std::span<const ParamInfo> params, const std::vector<int64_t>& key,
                               uint64_t hash) const {
  if (recent_keys_.empty()) return "first call";
  if (distinct_keys_.count(hash)) return "compiled again after its eviction";
  const std::vector<int64_t>* best = nullptr;
  size_t best_diff = SIZE_MAX;
  for (auto it = recent_keys_.rbegin(); it != recent_keys_.rend(); ++it) {  // newest first
    const std::vector<int64_t>& old = *it;
    if (old.size() != key.size()) continue;
    size_t diff = 0;
    for (size_t i = 0; i < key.size(); ++i) diff += old[i] != key[i];
    if (diff < best_diff) {
      best_diff = diff;
      best = &old;
    }
  }
  if (best == nullptr) return "new dtype or rank";
  std::string out;
  auto text = [](int64_t v) {
    return v == kSymbolic ? std::string("symbolic") : std::to_string(v);
  };
  for_each_key_entry(params, key, [&](size_t i, int d, size_t pos) {
    if ((*best)[pos] == key[pos]) return;
    out += out.empty() ? "" : ", ";
    out += d < 0 ? params[i].name + ".dtype"
                 : dim_name(params, i, static_cast<size_t>(d)) + ": " + text((*best)[pos]) +
                       " -> " + text(key[pos]);
  });
  return out.empty() ? "new signature" : out;
}

uint64_t KeyHistory::record(std::span<const ParamInfo> params, const std::vector<int64_t>& key,
                            uint64_t hash, std::string reason) {
  if (!recent_keys_.empty() && recent_keys_.back().size() == key.size()) {
    const std::vector<int64_t>& last = recent_keys_.back();
    for_each_key_entry(params, key, [&](size_t i, int d, size_t pos) {
      if (d >= 0 && last[pos] != key[pos]) ++dim_changes_[{i, static_cast<size_t>(d)}];
    });
  }
  ++compiles_started_;
  reasons_.push_back(std::move(reason));
  if (reasons_.size() > kMaxReasons) {
    reasons_.pop_front();
    ++reasons_dropped_;
  }
  distinct_keys_.insert(hash);
  recent_keys_.push_back(key);
  if (recent_keys_.size() > kRecentKeys) recent_keys_.pop_front();
  return compiles_started_ - 1;
}

void KeyHistory::mark(uint64_t index, const char* suffix) {
  if (index >= reasons_dropped_) reasons_[index - reasons_dropped_] += suffix;
}

void KeyHistory::forget_failed(const std::vector<int64_t>& key, uint64_t hash, uint64_t index) {
  // Other keys may have been added since (compiles run in parallel): remove this one.
  auto it = std::find(recent_keys_.rbegin(), recent_keys_.rend(), key);
  if (it != recent_keys_.rend()) recent_keys_.erase(std::next(it).base());
  distinct_keys_.erase(hash);
  mark(index, " (failed)");
}

std::string KeyHistory::culprit(std::span<const ParamInfo> params) const {
  std::string culprit = "the argument shapes";
  uint64_t most = 0;
  for (const auto& [at, changes] : dim_changes_) {
    if (changes > most) {
      most = changes;
      culprit = dim_name(params, at.first, at.second) + " (changed in " + std::to_string(changes) +
                " of " + std::to_string(compiles_started_) + " compiles)";
    }
  }
  return culprit;
}

}  // namespace primjit::jit
