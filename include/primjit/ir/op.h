// Builtin ops and their attributes: the one op table (ops.def), and OpMap, with which a pass or
// backend attaches its own per-op data (a lowering, a name) to the table's entries.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "primjit/error.h"
#include "primjit/ir/object.h"

namespace primjit {

/// What a builtin may do besides computing its result, weakest first. Passes that reuse a value
/// or a fact across a call ask this (and so does the aliasing analysis).
enum class CallEffect : uint8_t {
  kPure,         // reads and writes nothing: the result depends on the arguments only
  kReadMemory,   // reads memory or runtime state, writes nothing
  kWriteMemory,  // may write the memory its pointer arguments reach (and read it)
  kOpaque,       // anything: calls out, synchronizes threads, transfers control
};

/// True when the effect may change memory or control: the call must stay where it is and no
/// load may be reused across it unless its pointer arguments prove otherwise.
inline bool has_side_effects(CallEffect e) { return e >= CallEffect::kWriteMemory; }

/// How the result dtype of a builtin call follows from its arguments.
enum class OpTypeRule : uint8_t {
  kFirstArg,   // the (first) argument's dtype
  kBoolOfArg,  // bool with the argument's lanes
  kBranches,   // the dtype of the branches (arguments 1 and 2)
  kInt32,      // int32
  kHandle,     // handle
  kExplicit,   // written by the caller (the text format spells it out)
};

/// The family of a builtin.
enum class OpKind : uint8_t {
  kMath,     // floating-point math functions (exp, sqrt, isnan, ...)
  kSelect,   // if_then_else, likely
  kBits,     // reinterpret, shifts, bitwise logic
  kPointer,  // address computations
  kSync,     // barriers and asynchronous copies
  kCall,     // calls to external or packed functions
  kRuntime,  // the packed calling convention and control (tvm_struct_get/set, ret)
  kMessage,  // format: builds a message from values
};

class OpNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kOp;
  const std::string name;
  /// Number of arguments, or -1 when variadic.
  const int num_args;
  const CallEffect effect;
  const OpTypeRule type_rule;
  const OpKind op_kind;
  /// Math functions: the largest error of any backend against the exactly rounded result, in
  /// ulp (0: exact everywhere); -1 for other ops.
  const int max_ulp;
  /// The C math library function computing the op in double ("" when there is none).
  const std::string libm;
  /// The entry's position in the table (dense, from 0): OpMap's index.
  const int index;

  bool is_math() const { return op_kind == OpKind::kMath; }
  bool is_pure() const { return effect == CallEffect::kPure; }
  bool has_side_effects() const { return primjit::has_side_effects(effect); }

  OpNode(NodeKey, std::string name, int num_args, CallEffect effect, OpTypeRule type_rule,
         OpKind kind, int max_ulp, std::string libm, int index)
      : Object(kKind),
        name(std::move(name)),
        num_args(num_args),
        effect(effect),
        type_rule(type_rule),
        op_kind(kind),
        max_ulp(max_ulp),
        libm(std::move(libm)),
        index(index) {}
};

/// A builtin operation called by Call (math functions, intrinsics, runtime calls).
class Op : public Ref<OpNode> {
 public:
  Op() = default;
  explicit Op(const OpNode* node) : Ref<OpNode>(node) {}
  /// The registered builtin named `name` ("exp", "tvm_storage_sync", "call_extern", ...).
  /// Throws primjit::Error for an unknown name.
  static Op get(std::string_view name);
  /// Like get(), but returns an undefined Op for an unknown name.
  static Op find(std::string_view name);
  /// Every builtin, in table order (index 0, 1, ...).
  static const std::vector<Op>& all();
};

/// Names of every registered builtin op, sorted.
std::vector<std::string> registered_op_names();

/// Per-op data that a pass or backend registers against the op table, at one place (TVM's op
/// attribute maps): registering an op that is not in the table, or twice, is an internal
/// error, and `missing` lists the ops a backend must cover but does not.
template <typename T>
class OpMap {
 public:
  explicit OpMap(std::string what) : what_(std::move(what)) {}

  OpMap& set(std::string_view name, T value) {
    Op op = Op::find(name);
    PRIMJIT_ICHECK(op.defined()) << what_ << ": '" << name << "' is not in the op table";
    size_t i = static_cast<size_t>(op->index);
    if (values_.size() <= i) {
      values_.resize(Op::all().size());
      present_.resize(Op::all().size(), false);
    }
    PRIMJIT_ICHECK(!present_[i]) << what_ << ": '" << name << "' is registered twice";
    values_[i] = std::move(value);
    present_[i] = true;
    return *this;
  }
  /// The value registered for `op`, or nullptr.
  const T* find(const OpNode* op) const {
    size_t i = static_cast<size_t>(op->index);
    return i < present_.size() && present_[i] ? &values_[i] : nullptr;
  }
  const T* find(const Op& op) const { return op.defined() ? find(op.operator->()) : nullptr; }
  /// The ops for which `needs(op)` holds but nothing is registered.
  template <typename Pred>
  std::vector<std::string> missing(Pred needs) const {
    std::vector<std::string> out;
    for (const Op& op : Op::all()) {
      if (needs(*op) && find(op) == nullptr) out.push_back(op->name);
    }
    return out;
  }
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::vector<T> values_;
  std::vector<bool> present_;
};

}  // namespace primjit
