#include "jit/runtime/argument_memory.h"

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

}  // namespace

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
    if (!overlap(a, b)) continue;
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
