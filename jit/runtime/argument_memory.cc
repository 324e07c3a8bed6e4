#include "jit/runtime/argument_memory.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "passes/alias_analysis.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::jit {
namespace {

// The regions (passes/alias_analysis.h) the function may write: stores, and the pointer
// arguments of calls that may write memory. `*anything` when a write may reach any region.
std::set<const VarNode*> written_regions(const PrimFunc& func, bool* anything) {
  passes::AliasAnalysis alias(func->body);
  std::set<const VarNode*> written;
  auto write = [&](const VarNode* pointer) {
    const VarNode* region = pointer != nullptr ? alias.region(pointer) : nullptr;
    if (region == nullptr) {
      *anything = true;
    } else {
      written.insert(region);
    }
  };
  post_order_visit(func->body, [&](const Ref<Object>& node) {
    if (const auto* store = node.as<BufferStore>()) {
      write(store->buffer->data.get());
      return;
    }
    const auto* call = node.as<Call>();
    if (call == nullptr || (call->op.defined() && !call->op->has_side_effects())) return;
    // A call that may write memory writes what its pointer arguments reach (a barrier, with no
    // pointer argument, writes no tensor).
    for (const Expr& arg : call->args) {
      if (!arg.dtype().is_handle() || arg.as<StringImm>() != nullptr) continue;
      write(arg.as<VarNode>());
    }
  });
  return written;
}

// Whether sum(stride[t] * x[t]) == target for some x[t] in [lo[t], hi[t]], strides positive and
// decreasing: each x is bracketed by what the smaller strides can still add. `budget` bounds
// the search; running out answers true.
struct Term {
  int64_t stride, lo, hi;
};
bool solvable(const std::vector<Term>& terms, const std::vector<int64_t>& rest_lo,
              const std::vector<int64_t>& rest_hi, size_t t, int64_t target, int* budget) {
  if (t == terms.size()) return target == 0;
  if (--*budget < 0) return true;
  const Term& term = terms[t];
  auto floor_div = [](int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); };
  // target - stride * x must lie in [rest_lo, rest_hi] of the later terms.
  int64_t from = std::max(term.lo, -floor_div(-(target - rest_hi[t]), term.stride));
  int64_t to = std::min(term.hi, floor_div(target - rest_lo[t], term.stride));
  for (int64_t x = from; x <= to; ++x) {
    if (solvable(terms, rest_lo, rest_hi, t + 1, target - term.stride * x, budget)) return true;
    if (*budget < 0) return true;
  }
  return false;
}

}  // namespace

bool may_share_elements(const DLTensor& a, const DLTensor& b) {
  const int64_t bytes = (int64_t{a.dtype.bits} * a.dtype.lanes + 7) / 8;
  if (bytes != (int64_t{b.dtype.bits} * b.dtype.lanes + 7) / 8 || bytes == 0) return true;
  if (a.strides == nullptr && b.strides == nullptr) return true;  // byte ranges are exact
  const auto delta = static_cast<int64_t>(data_address(b) - data_address(a));
  if (delta % bytes != 0) return true;
  // Element a + sum(i[k] * sa[k]) == b + sum(j[k] * sb[k]): per distinct stride s, the
  // coefficient x = sum(i) - sum(j) of the dimensions with that stride.
  std::map<int64_t, std::pair<int64_t, int64_t>, std::greater<>> range;  // stride -> [lo, hi]
  auto add = [&](const DLTensor& t, int sign) {
    int64_t compact = 1;
    for (int d = t.ndim - 1; d >= 0; --d) {
      int64_t stride = t.strides != nullptr ? t.strides[d] : compact;
      compact *= t.shape[d];
      int64_t extent = t.shape[d] - 1;
      if (extent == 0 || stride == 0) continue;
      int64_t s = sign * stride;  // x ranges over [0, extent] times s
      auto& [lo, hi] = range[s < 0 ? -s : s];
      (s < 0 ? lo : hi) += s < 0 ? -extent : extent;
    }
  };
  add(a, 1);
  add(b, -1);
  std::vector<Term> terms;
  for (const auto& [stride, bounds] : range) terms.push_back({stride, bounds.first, bounds.second});
  std::vector<int64_t> rest_lo(terms.size(), 0), rest_hi(terms.size(), 0);
  for (size_t t = terms.size(); t-- > 1;) {
    rest_lo[t - 1] = rest_lo[t] + terms[t].stride * terms[t].lo;
    rest_hi[t - 1] = rest_hi[t] + terms[t].stride * terms[t].hi;
  }
  int budget = 4096;
  return solvable(terms, rest_lo, rest_hi, 0, delta / bytes, &budget);
}

MemoryRule memory_rule(const PrimFunc& func, const Target& target) {
  MemoryRule rule;
  bool anything = false;
  std::set<const VarNode*> written = written_regions(func, &anything);
  const bool cuda = target.defined() && target->kind == "cuda";
  for (const Var& p : func->params) {
    Buffer b = func->buffer_of(p);
    if (!b.defined()) {
      rule.align.push_back(0);
      rule.written.push_back(false);
      continue;
    }
    // What the generated code assumes: element-aligned loads and stores on the CPU; the
    // buffer's data_alignment in CUDA code, which loads whole vectors (float4, ...) where the
    // index is a multiple of the vector.
    uint32_t element = static_cast<uint32_t>(std::max(1, b->dtype.element_of().bytes()));
    uint32_t align =
        cuda ? std::max<uint32_t>(element, static_cast<uint32_t>(b->data_alignment)) : element;
    rule.align.push_back(align);
    rule.written.push_back(anything || written.count(b->data.get()) != 0);
  }
  for (size_t i = 0; i < rule.align.size(); ++i) {
    for (size_t j = i + 1; j < rule.align.size(); ++j) {
      if (rule.align[i] != 0 && rule.align[j] != 0 && (rule.written[i] || rule.written[j])) {
        rule.disjoint.emplace_back(static_cast<uint16_t>(i), static_cast<uint16_t>(j));
      }
    }
  }
  return rule;
}

void check_argument_memory(const MemoryRule& rule, const std::string& name,
                           std::span<const ParamInfo> params, std::span<const Arg> args,
                           const Target& target) {
  auto where = [&](size_t i) {
    return "argument #" + std::to_string(i) + " ('" + params[i].name + "')";
  };
  auto tensor = [&](size_t i) { return static_cast<const DLTensor*>(args[i].value.v_ptr); };
  for (size_t i = 0; i < args.size(); ++i) {
    if (rule.align[i] == 0) continue;
    uintptr_t address = data_address(*tensor(i));
    PRIMJIT_USER_CHECK(address % rule.align[i] == 0)
        << where(i) << " of '" << name << "': its data (data + byte_offset = 0x" << std::hex
        << address << std::dec << ") is not aligned to " << rule.align[i] << " bytes, which code "
        << "for target " << target->kind << " assumes ("
        << (target->kind == "cuda" ? "the buffer's data_alignment, for vector loads"
                                   : "the element size")
        << "); pass a tensor whose data is aligned (primjit::Tensor allocates 64-byte aligned "
           "memory)";
  }
  for (const auto& [i, j] : rule.disjoint) {
    ByteRange a = byte_range(*tensor(i));
    ByteRange b = byte_range(*tensor(j));
    if (!overlap(a, b) || !may_share_elements(*tensor(i), *tensor(j))) continue;
    std::ostringstream ranges;
    ranges << std::hex << "bytes [0x" << a.begin << ", 0x" << a.end << ") and [0x" << b.begin
           << ", 0x" << b.end << ")";
    PRIMJIT_USER_ERROR() << where(i) << " and " << where(j) << " of '" << name
                         << "' overlap in memory (" << ranges.str() << ") and '" << name
                         << "' may write " << (rule.written[i] ? where(i) : where(j))
                         << "; its code assumes tensor arguments do not alias. Pass tensors "
                            "that do not share memory (copy one of them)";
  }
}

}  // namespace primjit::jit
