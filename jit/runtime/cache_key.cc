#include "jit/runtime/cache_key.h"

#include <algorithm>
#include <cstdint>

#include "jit/runtime/argument_memory.h"
#include "primjit/abi.h"
#include "primjit/dlpack.h"
#include "primjit/ir/functor.h"

namespace primjit::jit {
namespace {

// Why buffer `b`'s data cannot be given strides or an element offset by changing only its
// declaration: the body reaches the data other than through b's own loads and stores (a view
// declared over it, its pointer passed on or its address taken), which would still assume the
// compact layout. Empty when it can.
class DataUseFinder : public StmtExprVisitor {
 public:
  explicit DataUseFinder(const Buffer& b) : b_(b) {}
  std::string reason;

  void visit_buffer_def(const Buffer& buffer) override {
    if (buffer.same_as(b_)) {
      for (const Expr& e : buffer->shape) visit_expr(e);
      return;
    }
    if (buffer->data.same_as(b_->data) && reason.empty()) {
      reason = "it declares buffer '" + buffer->name + "' over " + b_->name + ".data";
    }
    StmtExprVisitor::visit_buffer_def(buffer);
  }
  void visit_buffer_use(const Buffer& buffer) override {
    if (!buffer.same_as(b_) && buffer->data.same_as(b_->data) && reason.empty()) {
      reason = "it accesses " + b_->name + ".data through buffer '" + buffer->name + "'";
    }
  }
  void visit(const VarNode* op) override {
    if (op == b_->data.get() && reason.empty()) {
      reason = "it uses the pointer " + b_->name + ".data itself";
    }
  }
  void visit(const Call* op) override {
    if (op->is_op("address_of") && reason.empty()) {
      if (const auto* load = op->args[0].as<BufferLoad>(); load && load->buffer.same_as(b_)) {
        reason = "it takes the address of an element of " + b_->name;
      }
    }
    StmtExprVisitor::visit(op);
  }

 private:
  const Buffer& b_;
};

}  // namespace

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
    if (b.defined()) {
      info.declared_layout =
          !b->strides.empty() || (b->elem_offset.defined() && as_const_int(b->elem_offset) != 0);
      DataUseFinder uses(b);
      uses.visit_stmt(func->body);
      info.no_relayout = std::move(uses.reason);
    }
    params.push_back(std::move(info));
  }
  return params;
}

bool is_strided(const DLTensor& t) { return t.strides != nullptr && !is_compact(t); }

void push_layout(const DLTensor& t, bool symbolic, KeyBuffer* key) {
  const bool strided = is_strided(t);
  key->push((t.byte_offset != 0 ? kLayoutOffset : 0) | (strided ? kLayoutStrided : 0));
  if (!strided) return;
  for (int d = 0; d < t.ndim; ++d) {
    if (symbolic) {
      key->push(d == t.ndim - 1 && t.strides[d] == 1 ? 1 : kSymbolic);
    } else {
      key->push(t.shape[d] == 1 ? 0 : t.strides[d]);
    }
  }
}

void build_key(std::span<const ParamInfo> params, std::span<const Arg> args, bool dynamic,
               const DimSet& symbolic, KeyBuffer* key, int64_t bucket_limit) {
  int64_t device = -1;  // of the CUDA tensors (the call's checks made them agree)
  for (size_t i = 0; i < args.size(); ++i) {
    if (!params[i].buffer.defined()) continue;
    const auto* t = static_cast<const DLTensor*>(args[i].value.v_ptr);
    key->push((int64_t{t->dtype.code} << 24) | (int64_t{t->dtype.bits} << 16) | t->dtype.lanes);
    key->push(t->ndim);
    bool any_symbolic = dynamic;
    for (int d = 0; d < t->ndim; ++d) {
      bool sym = dynamic || symbolic.count({i, static_cast<size_t>(d)}) > 0;
      int64_t entry = sym                 ? kSymbolic
                      : bucket_limit >= 0 ? bucket_entry(t->shape[d], bucket_limit)
                                          : t->shape[d];
      any_symbolic = any_symbolic || sym || is_bucket(entry);
      key->push(entry);
    }
    size_t flags = key->size;
    push_layout(*t, any_symbolic, key);
    if (bucket_limit >= 0 && (data_address(*t) & 15) != 0) {
      int64_t* at = key->size <= kInlineKey ? &key->inline_values[flags] : &key->overflow[flags];
      *at |= kLayoutUnaligned16;
    }
    if (t->device.device_type == kDLCUDA || t->device.device_type == kDLCUDAManaged) {
      device = t->device.device_id;
    }
  }
  if (device >= 0) key->push(device);
}

namespace {

// "strides 16,1, offset", "offset" or "compact": the layout entries at `pos`.
std::string layout_text(const std::vector<int64_t>& key, size_t pos, size_t ndim) {
  std::string text;
  if (key[pos] & kLayoutStrided) {
    text = "strides ";
    for (size_t d = 0; d < ndim && pos + 1 + d < key.size(); ++d) {
      int64_t v = key[pos + 1 + d];
      text += (d > 0 ? "," : "") + (v == kSymbolic ? std::string("?") : std::to_string(v));
    }
  }
  if (key[pos] & kLayoutOffset) text += text.empty() ? "offset" : ", offset";
  if (key[pos] & kLayoutUnaligned16) {
    text += text.empty() ? "not 16-byte aligned" : ", not 16-byte aligned";
  }
  return text.empty() ? "compact" : text;
}

// A dimension's key entry: "?" (symbolic), "16k" (a multiple of 16 above the bucket limit),
// "n" (any other above it) or the value.
std::string entry_text(int64_t v) {
  if (v == kSymbolic) return "?";
  if (v == kBucketMultiple16) return "16k";
  if (v == kBucketOther) return "n";
  return std::to_string(v);
}

}  // namespace

std::string dim_name(std::span<const ParamInfo> params, size_t param, size_t dim) {
  return params[param].name + ".shape[" + std::to_string(dim) + "]";
}

std::string key_args_text(std::span<const ParamInfo> params, const std::vector<int64_t>& key) {
  std::string text;
  std::string tensor;  // the tensor being written, closed by its layout entry (or the end)
  for_each_key_entry(params, key, [&](size_t i, int d, size_t pos) {
    if (d >= 0) {
      tensor += (d > 0 ? "," : "") + entry_text(key[pos]);
      return;
    }
    if (d == kLayoutEntry) {
      text += tensor + "]";
      if (key[pos] != 0) text += "{" + layout_text(key, pos, params[i].dims.size()) + "}";
      tensor.clear();
      return;
    }
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
    if (v == kSymbolic) return std::string("symbolic");
    if (v == kBucketMultiple16) return std::string("bucket 16k (a larger multiple of 16)");
    if (v == kBucketOther) return std::string("bucket n (larger, not a multiple of 16)");
    return std::to_string(v);
  };
  // A dimension that is a shape variable is named by the variable, once however many
  // buffers share it ("n: 128 -> 130"); any other by its buffer ("A.shape[1]: 4 -> 8").
  std::set<const VarNode*> named;
  for_each_key_entry(params, key, [&](size_t i, int d, size_t pos) {
    if (d == kLayoutEntry) {  // the flags and the strides after them
      size_t ndim = params[i].dims.size();
      size_t end = std::min(key.size(), pos + 1 + ((key[pos] & kLayoutStrided) ? ndim : 0));
      if (std::equal(key.begin() + static_cast<ptrdiff_t>(pos),
                     key.begin() + static_cast<ptrdiff_t>(end),
                     best->begin() + static_cast<ptrdiff_t>(pos))) {
        return;
      }
      out += (out.empty() ? "" : ", ") + params[i].name +
             " layout: " + layout_text(*best, pos, ndim) + " -> " + layout_text(key, pos, ndim);
      return;
    }
    if ((*best)[pos] == key[pos]) return;
    std::string what;
    if (d < 0) {
      what = params[i].name + ".dtype";
    } else {
      const auto* var = params[i].buffer->shape[static_cast<size_t>(d)].as<VarNode>();
      if (var != nullptr && !named.insert(var).second) return;
      what = (var != nullptr ? var->name : dim_name(params, i, static_cast<size_t>(d))) + ": " +
             text((*best)[pos]) + " -> " + text(key[pos]);
    }
    out += (out.empty() ? "" : ", ") + what;
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

uint64_t KeyHistory::record_generic(std::string reason) {
  ++compiles_started_;
  reasons_.push_back(std::move(reason));
  if (reasons_.size() > kMaxReasons) {
    reasons_.pop_front();
    ++reasons_dropped_;
  }
  return compiles_started_ - 1;
}

void KeyHistory::mark(uint64_t index, const char* suffix) {
  if (index >= reasons_dropped_) reasons_[index - reasons_dropped_] += suffix;
}

void KeyHistory::forget_failed(const std::vector<int64_t>& key, uint64_t hash, uint64_t index,
                               const char* suffix) {
  // Other keys may have been added since (compiles run in parallel): remove this one.
  auto it = std::find(recent_keys_.rbegin(), recent_keys_.rend(), key);
  if (it != recent_keys_.rend()) recent_keys_.erase(std::next(it).base());
  distinct_keys_.erase(hash);
  mark(index, suffix);
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
