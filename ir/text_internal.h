// Rules shared by the text printer (printer.cc) and parser (parser.cc). Private to ir/.
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

/// How the result dtype of a builtin call follows from its arguments.
enum class OpRule {
  kFirstArg,   // math functions, bitwise ops, shifts, ret: the (first) argument's dtype
  kBoolOfArg,  // isnan, isinf, isfinite, likely, isnullptr: bool with the argument's lanes
  kBranches,   // if_then_else: the dtype of the branches (arguments 1 and 2)
  kInt32,      // tvm_storage_sync, call_packed, call_cpacked, tvm_struct_set, ptx_*: int32
  kHandle,     // tvm_access_ptr, address_of, format: handle
  kExplicit,   // call_extern, call_pure_extern, reinterpret, unknown ops: written in the text
};

inline OpRule op_rule(std::string_view op) {
  static constexpr std::string_view kFirstArg[] = {
      "exp",         "exp2",       "exp10",       "log",         "log2",       "log10",
      "log1p",       "sqrt",       "rsqrt",       "sin",         "cos",        "tan",
      "tanh",        "sigmoid",    "erf",         "fabs",        "floor",      "ceil",
      "round",       "trunc",      "pow",         "fmod",        "shift_left", "shift_right",
      "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "ret"};
  for (std::string_view name : kFirstArg) {
    if (op == name) return OpRule::kFirstArg;
  }
  if (op == "isnan" || op == "isinf" || op == "isfinite" || op == "likely") {
    return OpRule::kBoolOfArg;
  }
  if (op == "if_then_else") return OpRule::kBranches;
  if (op == "isnullptr") return OpRule::kBoolOfArg;
  if (op == "tvm_storage_sync" || op == "call_packed" || op == "call_cpacked" ||
      op == "tvm_struct_set" || op == "ptx_cp_async" || op == "ptx_commit_group" ||
      op == "ptx_wait_group") {
    return OpRule::kInt32;
  }
  if (op == "tvm_access_ptr" || op == "address_of" || op == "format") return OpRule::kHandle;
  return OpRule::kExplicit;
}

/// Two-operand ops whose operands share one dtype (bare literals adopt the other's dtype).
inline bool op_unifies_two_args(std::string_view op) {
  return op == "pow" || op == "fmod" || op == "shift_left" || op == "shift_right" ||
         op == "bitwise_and" || op == "bitwise_or" || op == "bitwise_xor";
}

/// The dtype the rule gives for a call of `op` with `args`; nullopt when the dtype must be
/// written explicitly (kExplicit) or the arguments do not fit the rule.
inline std::optional<DataType> builtin_result_dtype(std::string_view op,
                                                    const std::vector<Expr>& args) {
  switch (op_rule(op)) {
    case OpRule::kFirstArg:
      if (args.empty()) return std::nullopt;
      return args[0].dtype();
    case OpRule::kBoolOfArg:
      if (args.empty()) return std::nullopt;
      return DataType::Bool(args[0].dtype().lanes());
    case OpRule::kBranches:
      if (args.size() != 3) return std::nullopt;
      return args[1].dtype();
    case OpRule::kInt32:
      return DataType::Int(32);
    case OpRule::kHandle:
      return DataType::Handle();
    case OpRule::kExplicit:
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
