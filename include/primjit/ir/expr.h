// IR expressions, variables and buffers.
//
// Semantics
// - Every expression has a DataType. Operands of a binary operator have exactly the same dtype;
//   there is no implicit promotion in the IR (the builder makes literals adopt the other
//   operand's dtype). Comparisons produce bool with the operands' lane count.
// - Every operation has one result for every input, the same on llvm, emu and CUDA: the table
//   is docs/semantics.md. In short:
// - Integer arithmetic wraps around modulo 2^bits (two's complement); a Cast to a narrower
//   integer keeps the low bits. Div and Mod truncate toward zero, as in C (`T.truncdiv`,
//   `T.truncmod`); FloorDiv and FloorMod round toward negative infinity (`//` and `%` in the
//   text format), so `-7 // 2 == -4` and `-7 % 2 == 1`. Division by zero and overflow have
//   results (RISC-V's): x / 0 == -1 (all ones), x % 0 == x, MIN / -1 == MIN, MIN % -1 == 0;
//   KernelOptions::checked_arithmetic makes them errors instead. Shifts read the amount as
//   unsigned; the width or more shifts every bit out (a signed right shift leaves the sign).
// - Floating arithmetic is IEEE, each operation rounded once to nearest even (float16,
//   bfloat16 and float8 compute through float32, rounded after each operation); a * b + c is
//   two roundings unless written `T.fma` (KernelOptions::fp_contract). Floating Min/Max ignore
//   a NaN operand and order -0 below +0; floating FloorMod is a - floor(a / b) * b. A Cast from
//   a floating type to an integer truncates and saturates, NaN giving 0.
// - And and Or evaluate both operands (no short-circuit is implied); Select evaluates all three
//   operands, while the builtin `if_then_else` call evaluates only the chosen branch.
// - Operands are evaluated left to right; only Call and BufferLoad can observe memory.
// - Variables are objects: two Vars with the same name are different variables. A variable is
//   defined once in a module (see stmt.h for where definitions are visible).
// - A Let expression binds its variable in its body only.
// - Depth: a leaf (literal, variable) is 1 deep, any other node 1 + its deepest operand. No
//   expression is deeper than kMaxExprDepth: make() throws primjit::Error beyond it, so every
//   recursive walk (printer, parser, passes, code generators, the interpreter) stays within
//   its stack. Deeper computations bind parts to variables (Bind, Let).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "primjit/ir/dtype.h"
#include "primjit/ir/object.h"
#include "primjit/ir/op.h"

namespace primjit {

// ---------------------------------------------------------------------------------------------
// Handles
// ---------------------------------------------------------------------------------------------

/// The deepest expression the IR accepts (see "Depth" above). Chosen so that the deepest
/// recursion over an expression, in any component, uses a small part of the smallest stack it
/// runs on (the interpreter's 256 KiB fiber stacks use about 45 bytes per level, the passes and
/// code generators on an 8 MiB thread stack under 2 KiB); the parser applies it to the text.
inline constexpr int kMaxExprDepth = 1000;

namespace detail {
/// Throws the primjit::Error of a `kind` node `depth` deep (more than kMaxExprDepth).
[[noreturn]] void expr_too_deep(NodeKind kind, int depth);
}  // namespace detail

class ExprNode : public Object {
 public:
  const DataType dtype;
  /// 1 for a leaf, else 1 + the depth of the deepest operand; at most kMaxExprDepth.
  const int32_t depth;

 protected:
  ExprNode(NodeKind kind, DataType dtype, int depth = 1)
      : Object(kind), dtype(dtype), depth(checked_depth(kind, depth)) {}

 private:
  static int checked_depth(NodeKind kind, int depth) {
    if (depth > kMaxExprDepth) detail::expr_too_deep(kind, depth);
    return depth;
  }
};

class Expr : public Ref<ExprNode> {
 public:
  Expr() = default;
  explicit Expr(Ref<ExprNode> ref) : Ref<ExprNode>(std::move(ref)) {}
  explicit Expr(const ExprNode* node) : Ref<ExprNode>(node) {}
  DataType dtype() const { return get()->dtype; }
};

namespace detail {
inline int depth_of(const Expr& e) { return e.defined() ? e->depth : 0; }
/// The depth of a node whose operands are `operands`: 1 + the deepest of them.
template <typename... E>
int depth_above(const E&... operands) {
  int deepest = 0;
  ((deepest = std::max(deepest, depth_of(operands))), ...);
  return deepest + 1;
}
inline int depth_above(const std::vector<Expr>& operands) {
  int deepest = 0;
  for (const Expr& e : operands) deepest = std::max(deepest, depth_of(e));
  return deepest + 1;
}
}  // namespace detail

class VarNode;
class Var : public Expr {
 public:
  Var() = default;
  explicit Var(const VarNode* node);

  /// A scalar variable (or a size variable, known to be non-negative).
  static Var make(std::string name, DataType dtype, bool is_size_var = false);
  /// A pointer variable: handle dtype, pointing to `element` in `storage_scope`.
  static Var make_pointer(std::string name, DataType element, std::string storage_scope = "global");
  /// An opaque handle (`T.handle` parameter).
  static Var make_handle(std::string name);
  /// A new variable (a fresh identity) with the name, dtype, pointee, storage scope and
  /// size-ness of `var`.
  static Var make_like(const VarNode& var);

  const VarNode* get() const;
  const VarNode* operator->() const { return get(); }
};

class BufferNode;
class Buffer : public Ref<BufferNode> {
 public:
  Buffer() = default;
  explicit Buffer(const BufferNode* node) : Ref<BufferNode>(node) {}

  /// Full form. `data` must be a pointer variable; strides empty (row-major) or one per
  /// dimension; elem_offset undefined means 0; data_alignment <= 0 means the default 64.
  static Buffer make(Var data, DataType dtype, std::vector<Expr> shape, std::vector<Expr> strides,
                     Expr elem_offset, std::string name, int data_alignment = 64,
                     int offset_factor = 1);
  /// Convenience: a new buffer with its own data pointer in `storage_scope`.
  static Buffer make(std::string name, DataType dtype, std::vector<Expr> shape,
                     std::string storage_scope = "global");
};

class GlobalVarNode;
/// The name of a function in an IRModule; calls to other functions go through it.
class GlobalVar : public Ref<GlobalVarNode> {
 public:
  GlobalVar() = default;
  explicit GlobalVar(const GlobalVarNode* node) : Ref<GlobalVarNode>(node) {}
  static GlobalVar make(std::string name);
};

// ---------------------------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------------------------

class IntImm : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kIntImm;
  /// dtype: scalar int, uint or bool; the value must be representable in it.
  static Expr make(DataType dtype, int64_t value);
  const int64_t value;

  IntImm(NodeKey, DataType dtype, int64_t value) : ExprNode(kKind, dtype), value(value) {}
};

class FloatImm : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kFloatImm;
  /// dtype: any scalar floating type.
  static Expr make(DataType dtype, double value);
  const double value;

  FloatImm(NodeKey, DataType dtype, double value) : ExprNode(kKind, dtype), value(value) {}
};

class StringImm : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kStringImm;
  static Expr make(std::string value);
  const std::string value;

  StringImm(NodeKey, std::string value)
      : ExprNode(kKind, DataType::Handle()), value(std::move(value)) {}
};

class VarNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kVar;
  /// Name hint; names need not be unique (the printer makes them unique).
  const std::string name;
  /// For pointer variables: the element type (Void for an opaque handle or a non-pointer).
  const DataType pointee;
  /// For pointer variables: "global", "shared", "shared.dyn", "local"; empty otherwise.
  const std::string storage_scope;
  /// A size variable is known to be >= 0.
  const bool is_size_var;

  bool is_pointer() const { return !storage_scope.empty(); }

  VarNode(NodeKey, std::string name, DataType dtype, DataType pointee, std::string storage_scope,
          bool is_size_var)
      : ExprNode(kKind, dtype),
        name(std::move(name)),
        pointee(pointee),
        storage_scope(std::move(storage_scope)),
        is_size_var(is_size_var) {}
};

inline Var::Var(const VarNode* node) : Expr(node) {}
inline const VarNode* Var::get() const { return static_cast<const VarNode*>(Expr::get()); }

/// Common shape of the two-operand nodes.
template <typename Derived, NodeKind K>
class BinaryNode : public ExprNode {
 public:
  static constexpr NodeKind kKind = K;
  const Expr a;
  const Expr b;

  BinaryNode(NodeKey, DataType dtype, Expr a, Expr b)
      : ExprNode(K, dtype, detail::depth_above(a, b)), a(std::move(a)), b(std::move(b)) {}
};

#define PRIMJIT_DECLARE_BINARY(Name)                        \
  class Name : public BinaryNode<Name, NodeKind::k##Name> { \
   public:                                                  \
    using BinaryNode::BinaryNode;                           \
    static Expr make(Expr a, Expr b);                       \
  };
PRIMJIT_DECLARE_BINARY(Add)
PRIMJIT_DECLARE_BINARY(Sub)
PRIMJIT_DECLARE_BINARY(Mul)
PRIMJIT_DECLARE_BINARY(Div)
PRIMJIT_DECLARE_BINARY(Mod)
PRIMJIT_DECLARE_BINARY(FloorDiv)
PRIMJIT_DECLARE_BINARY(FloorMod)
PRIMJIT_DECLARE_BINARY(Min)
PRIMJIT_DECLARE_BINARY(Max)
PRIMJIT_DECLARE_BINARY(EQ)
PRIMJIT_DECLARE_BINARY(NE)
PRIMJIT_DECLARE_BINARY(LT)
PRIMJIT_DECLARE_BINARY(LE)
PRIMJIT_DECLARE_BINARY(GT)
PRIMJIT_DECLARE_BINARY(GE)
PRIMJIT_DECLARE_BINARY(And)
PRIMJIT_DECLARE_BINARY(Or)
#undef PRIMJIT_DECLARE_BINARY

class Not : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kNot;
  static Expr make(Expr a);
  const Expr a;

  Not(NodeKey, DataType dtype, Expr a)
      : ExprNode(kKind, dtype, detail::depth_above(a)), a(std::move(a)) {}
};

class Select : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kSelect;
  static Expr make(Expr condition, Expr true_value, Expr false_value);
  const Expr condition;
  const Expr true_value;
  const Expr false_value;

  Select(NodeKey, DataType dtype, Expr condition, Expr true_value, Expr false_value)
      : ExprNode(kKind, dtype, detail::depth_above(condition, true_value, false_value)),
        condition(std::move(condition)),
        true_value(std::move(true_value)),
        false_value(std::move(false_value)) {}
};

class Cast : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kCast;
  static Expr make(DataType dtype, Expr value);
  const Expr value;

  Cast(NodeKey, DataType dtype, Expr value)
      : ExprNode(kKind, dtype, detail::depth_above(value)), value(std::move(value)) {}
};

class Let : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kLet;
  static Expr make(Var var, Expr value, Expr body);
  const Var var;
  const Expr value;
  const Expr body;

  Let(NodeKey, DataType dtype, Var var, Expr value, Expr body)
      : ExprNode(kKind, dtype, detail::depth_above(var, value, body)),
        var(std::move(var)),
        value(std::move(value)),
        body(std::move(body)) {}
};

class BufferNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kBuffer;
  const Var data;
  const DataType dtype;
  const std::vector<Expr> shape;
  /// Empty for a compact row-major buffer, else one stride (in elements) per dimension.
  const std::vector<Expr> strides;
  const Expr elem_offset;
  const std::string name;
  const int data_alignment;
  const int offset_factor;

  /// Storage scope of the data pointer ("global", "shared", "shared.dyn", "local").
  const std::string& scope() const { return data->storage_scope; }
  size_t ndim() const { return shape.size(); }

  BufferNode(NodeKey, Var data, DataType dtype, std::vector<Expr> shape, std::vector<Expr> strides,
             Expr elem_offset, std::string name, int data_alignment, int offset_factor)
      : Object(kKind),
        data(std::move(data)),
        dtype(dtype),
        shape(std::move(shape)),
        strides(std::move(strides)),
        elem_offset(std::move(elem_offset)),
        name(std::move(name)),
        data_alignment(data_alignment),
        offset_factor(offset_factor) {}
};

class BufferLoad : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kBufferLoad;
  /// One index per dimension; a vector (Ramp) index loads that many lanes.
  static Expr make(Buffer buffer, std::vector<Expr> indices);
  const Buffer buffer;
  const std::vector<Expr> indices;

  BufferLoad(NodeKey, DataType dtype, Buffer buffer, std::vector<Expr> indices)
      : ExprNode(kKind, dtype, detail::depth_above(indices)),
        buffer(std::move(buffer)),
        indices(std::move(indices)) {}
};

class Ramp : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kRamp;
  /// base, base + stride, ..., base + (lanes - 1) * stride.
  static Expr make(Expr base, Expr stride, int lanes);
  const Expr base;
  const Expr stride;
  const int lanes;

  Ramp(NodeKey, DataType dtype, Expr base, Expr stride, int lanes)
      : ExprNode(kKind, dtype, detail::depth_above(base, stride)),
        base(std::move(base)),
        stride(std::move(stride)),
        lanes(lanes) {}
};

class Broadcast : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kBroadcast;
  static Expr make(Expr value, int lanes);
  const Expr value;
  const int lanes;

  Broadcast(NodeKey, DataType dtype, Expr value, int lanes)
      : ExprNode(kKind, dtype, detail::depth_above(value)), value(std::move(value)), lanes(lanes) {}
};

class GlobalVarNode : public Object {
 public:
  static constexpr NodeKind kKind = NodeKind::kGlobalVar;
  const std::string name;

  GlobalVarNode(NodeKey, std::string name) : Object(kKind), name(std::move(name)) {}
};

class Call : public ExprNode {
 public:
  static constexpr NodeKind kKind = NodeKind::kCall;
  /// A builtin call; the argument count is checked against the op.
  static Expr make(DataType dtype, Op op, std::vector<Expr> args);
  /// A call to another function of the module.
  static Expr make(DataType dtype, GlobalVar callee, std::vector<Expr> args);
  /// Exactly one of op and callee is defined.
  const Op op;
  const GlobalVar callee;
  const std::vector<Expr> args;

  /// True for a builtin call to `name`.
  bool is_op(const char* name) const;
  /// The op's effect; a call to another function may do anything (kOpaque).
  CallEffect effect() const;
  bool has_side_effects() const { return primjit::has_side_effects(effect()); }

  Call(NodeKey, DataType dtype, Op op, GlobalVar callee, std::vector<Expr> args)
      : ExprNode(kKind, dtype, detail::depth_above(args)),
        op(std::move(op)),
        callee(std::move(callee)),
        args(std::move(args)) {}
};

// ---------------------------------------------------------------------------------------------
// Small helpers used everywhere
// ---------------------------------------------------------------------------------------------

/// The int32 constant `value`.
Expr make_const(int64_t value);
/// A constant of `dtype` (int, uint, bool or floating) with `value`.
Expr make_const(DataType dtype, double value);
/// The constant value of an IntImm, if `e` is one.
std::optional<int64_t> as_const_int(const Expr& e);

}  // namespace primjit
