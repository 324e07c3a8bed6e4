// Rules shared by the text printer and parser. Private to ir/text/.
//
// Each builtin op call prints as `T.<op>(args)` and the parser rebuilds the Call's dtype from
// one rule per op (builtin_result_dtype). A Call whose dtype differs from what the rule gives is
// printed in the explicit form `T.call_intrin("dtype", "op", args...)`, so a round trip never
// changes a dtype.
#pragma once

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "primjit/ir/expr.h"

namespace primjit::text_internal {

/// How the result dtype of a call of `op` follows from its arguments (the op table's rule;
/// kExplicit for names that are not builtins).
inline OpTypeRule op_rule(std::string_view op) {
  Op found = Op::find(op);
  return found.defined() ? found->type_rule : OpTypeRule::kExplicit;
}

/// Two-operand ops whose operands share one dtype (bare literals adopt the other's dtype).
inline bool op_unifies_two_args(std::string_view op) {
  Op found = Op::find(op);
  return found.defined() && found->num_args == 2 && found->type_rule == OpTypeRule::kFirstArg;
}

/// The dtype the rule gives for a call of `op` with `args`; nullopt when the dtype must be
/// written explicitly (kExplicit) or the arguments do not fit the rule.
inline std::optional<DataType> builtin_result_dtype(std::string_view op,
                                                    const std::vector<Expr>& args) {
  switch (op_rule(op)) {
    case OpTypeRule::kFirstArg:
      if (args.empty()) return std::nullopt;
      return args[0].dtype();
    case OpTypeRule::kBoolOfArg:
      if (args.empty()) return std::nullopt;
      return DataType::Bool(args[0].dtype().lanes());
    case OpTypeRule::kBranches:
      if (args.size() != 3) return std::nullopt;
      return args[1].dtype();
    case OpTypeRule::kInt32:
      return DataType::Int(32);
    case OpTypeRule::kHandle:
      return DataType::Handle();
    case OpTypeRule::kExplicit:
      return std::nullopt;
  }
  return std::nullopt;
}

/// Words that cannot be variable names in the text: Python keywords and the names the format
/// itself gives meaning to.
inline bool is_reserved_name(std::string_view name) {
  static constexpr std::string_view kReserved[] = {
      "False",   "None",     "True",     "and",    "as",   "assert", "async",  "await",
      "break",   "class",    "continue", "def",    "del",  "elif",   "else",   "except",
      "finally", "for",      "from",     "global", "if",   "import", "in",     "is",
      "lambda",  "nonlocal", "not",      "or",     "pass", "raise",  "return", "try",
      "while",   "with",     "yield",    "T",      "I",    "Module", "range",  "float"};
  for (std::string_view word : kReserved) {
    if (name == word) return true;
  }
  return false;
}

inline bool is_identifier(std::string_view name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

inline bool same_expr(const Expr& a, const Expr& b);

inline bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!same_expr(a[i], b[i])) return false;
  }
  return true;
}

/// Structural comparison with variables (and buffers) compared by identity, used for the
/// `range(a, b)` forms: the parser reads `range(a, a + e)` as extent e, and the printer writes
/// `range(a, b)` for an extent `b - a`.
inline bool same_expr(const Expr& a, const Expr& b) {
  if (a.same_as(b)) return true;
  if (!a.defined() || !b.defined() || a.kind() != b.kind() || a.dtype() != b.dtype()) {
    return false;
  }
  switch (a.kind()) {
    case NodeKind::kIntImm:
      return a.as<IntImm>()->value == b.as<IntImm>()->value;
    case NodeKind::kFloatImm: {
      double x = a.as<FloatImm>()->value;
      double y = b.as<FloatImm>()->value;
      return std::memcmp(&x, &y, sizeof(double)) == 0;
    }
    case NodeKind::kStringImm:
      return a.as<StringImm>()->value == b.as<StringImm>()->value;
#define PRIMJIT_SAME_BINARY(Name)                         \
  case NodeKind::k##Name:                                 \
    return same_expr(a.as<Name>()->a, b.as<Name>()->a) && \
           same_expr(a.as<Name>()->b, b.as<Name>()->b);
      PRIMJIT_SAME_BINARY(Add)
      PRIMJIT_SAME_BINARY(Sub)
      PRIMJIT_SAME_BINARY(Mul)
      PRIMJIT_SAME_BINARY(Div)
      PRIMJIT_SAME_BINARY(Mod)
      PRIMJIT_SAME_BINARY(FloorDiv)
      PRIMJIT_SAME_BINARY(FloorMod)
      PRIMJIT_SAME_BINARY(Min)
      PRIMJIT_SAME_BINARY(Max)
      PRIMJIT_SAME_BINARY(EQ)
      PRIMJIT_SAME_BINARY(NE)
      PRIMJIT_SAME_BINARY(LT)
      PRIMJIT_SAME_BINARY(LE)
      PRIMJIT_SAME_BINARY(GT)
      PRIMJIT_SAME_BINARY(GE)
      PRIMJIT_SAME_BINARY(And)
      PRIMJIT_SAME_BINARY(Or)
#undef PRIMJIT_SAME_BINARY
    case NodeKind::kNot:
      return same_expr(a.as<Not>()->a, b.as<Not>()->a);
    case NodeKind::kSelect: {
      const auto* x = a.as<Select>();
      const auto* y = b.as<Select>();
      return same_expr(x->condition, y->condition) && same_expr(x->true_value, y->true_value) &&
             same_expr(x->false_value, y->false_value);
    }
    case NodeKind::kCast:
      return same_expr(a.as<Cast>()->value, b.as<Cast>()->value);
    case NodeKind::kBufferLoad:
      return a.as<BufferLoad>()->buffer.same_as(b.as<BufferLoad>()->buffer) &&
             same_exprs(a.as<BufferLoad>()->indices, b.as<BufferLoad>()->indices);
    case NodeKind::kRamp: {
      const auto* x = a.as<Ramp>();
      const auto* y = b.as<Ramp>();
      return same_expr(x->base, y->base) && same_expr(x->stride, y->stride);
    }
    case NodeKind::kBroadcast:
      return same_expr(a.as<Broadcast>()->value, b.as<Broadcast>()->value);
    case NodeKind::kCall: {
      const auto* x = a.as<Call>();
      const auto* y = b.as<Call>();
      bool same_target = x->op.defined()
                             ? (y->op.defined() && x->op->name == y->op->name)
                             : (y->callee.defined() && x->callee->name == y->callee->name);
      return same_target && same_exprs(x->args, y->args);
    }
    default:
      return false;  // variables (identity checked above), Let
  }
}

}  // namespace primjit::text_internal
