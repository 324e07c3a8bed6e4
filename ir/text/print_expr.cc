// Printing of expressions, literals and attribute values (see printer.h).
#include <charconv>
#include <cmath>

#include "ir/text/printer.h"
#include "ir/text/text_rules.h"
#include "ir/text/tvm_spellings.h"

namespace primjit::text_internal {

std::string quote(std::string_view text) {
  std::string out = "\"";
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '\\':
        out += "\\\\";
        break;
      case '"':
        out += "\\\"";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20 || c == 0x7f) {
          static const char kHex[] = "0123456789abcdef";
          out += "\\x";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

std::string float_repr(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string dtype_ctor(DataType t) { return "T." + t.str(); }

namespace {

/// A target as TVM's config: the kind alone as a string, else a dict with sorted keys.
std::string target_config(const Target& target) {
  const TargetNode* t = target.get();
  if (t->arch.empty() && !t->host.defined()) return quote(t->kind);
  std::string out = "{";
  if (!t->arch.empty()) out += "\"arch\": " + quote(t->arch) + ", ";
  if (t->host.defined()) out += "\"host\": " + target_config(t->host) + ", ";
  return out + "\"kind\": " + quote(t->kind) + "}";
}

}  // namespace

std::string target_text(const Target& target) { return "T.target(" + target_config(target) + ")"; }

std::string Printer::attr_value(const AttrValue& value) {
  if (value.is_bool()) return value.as_bool() ? "True" : "False";
  if (value.is_int()) return std::to_string(value.as_int());
  if (value.is_float()) {
    double v = value.as_float();
    if (std::isnan(v)) return "float(\"nan\")";
    if (std::isinf(v)) return v > 0 ? "float(\"inf\")" : "float(\"-inf\")";
    return float_repr(v);
  }
  if (value.is_string()) return quote(value.as_string());
  if (value.is_target()) {
    return value.as_target().defined() ? target_text(value.as_target()) : "None";
  }
  if (value.is_array()) {
    std::string out = "[";
    const AttrValue::Array& items = value.as_array();
    for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + attr_value(items[i]);
    return out + "]";
  }
  // An expression: literals carry their type so they do not read back as plain numbers.
  Expr e = value.as_expr();
  if (!e.defined()) return "None";
  if (const auto* imm = e.as<IntImm>()) return typed_int(imm);
  if (const auto* str = e.as<StringImm>()) return "T.StringImm(" + quote(str->value) + ")";
  return expr(e);
}

std::string Printer::attr_dict(const Attrs& attrs) {
  std::string out = "{";
  bool first = true;
  for (const auto& [key, value] : attrs) {
    out += (first ? "" : ", ") + quote(key) + ": " + attr_value(value);
    first = false;
  }
  return out + "}";
}

std::string Printer::indices(const std::vector<Expr>& idx) {
  if (idx.empty()) return "[()]";
  std::string out = "[";
  for (size_t i = 0; i < idx.size(); ++i) out += (i ? ", " : "") + index(idx[i]);
  return out + "]";
}

/// An index; a Ramp with a constant stride prints as TVM's slice start:stop[:step], with stop
/// written `start + lanes * step` (folded), which the parser reads back as the same Ramp.
std::string Printer::index(const Expr& e) {
  const auto* ramp = e.as<Ramp>();
  const auto* stride = ramp != nullptr ? ramp->stride.as<IntImm>() : nullptr;
  if (stride == nullptr || stride->value == 0 || stride->dtype != ramp->base.dtype() ||
      !stride->dtype.is_int()) {
    return expr(e);
  }
  DataType t = stride->dtype;
  int64_t span = 0;
  if (__builtin_mul_overflow(stride->value, int64_t{ramp->lanes}, &span)) return expr(e);
  auto fits = [&](int64_t v) {
    return t.bits() >= 64 ||
           (v >= -(int64_t{1} << (t.bits() - 1)) && v < (int64_t{1} << (t.bits() - 1)));
  };
  if (!fits(span) || span == INT64_MIN) return expr(e);
  std::string stop;
  std::string start;
  if (const auto* base = ramp->base.as<IntImm>()) {
    int64_t end = 0;
    if (__builtin_add_overflow(base->value, span, &end) || !fits(end)) return expr(e);
    start = int_literal(t, base->value);
    stop = int_literal(t, end);
  } else {
    int prec = kPrecAtom;
    start = expr_inner(ramp->base, &prec);  // once: printing names things on first sight
    std::string k = int_literal(t, span < 0 ? -span : span);
    stop = (prec < kPrecAdd ? "(" + start + ")" : start) + (span < 0 ? " - " : " + ") + k;
  }
  std::string out = start + ":" + stop;
  if (stride->value != 1) out += ":" + int_literal(t, stride->value);
  return out;
}

std::string Printer::args(const std::vector<Expr>& list, size_t from) {
  std::string out;
  for (size_t i = from; i < list.size(); ++i) out += (i > from ? ", " : "") + expr(list[i]);
  return out;
}

std::string Printer::int_literal(DataType t, int64_t value) {
  if (t == DataType::Int(32)) return std::to_string(value);
  if (t.is_bool()) return value != 0 ? "T.bool(True)" : "T.bool(False)";
  std::string digits =
      t.is_uint() ? std::to_string(static_cast<uint64_t>(value)) : std::to_string(value);
  return dtype_ctor(t) + "(" + digits + ")";
}

std::string Printer::typed_int(const IntImm* imm) {
  if (imm->dtype.is_bool()) return int_literal(imm->dtype, imm->value);
  std::string digits = imm->dtype.is_uint() ? std::to_string(static_cast<uint64_t>(imm->value))
                                            : std::to_string(imm->value);
  return dtype_ctor(imm->dtype) + "(" + digits + ")";
}

std::string Printer::expr(const Expr& e, int min_prec) {
  int prec = kPrecAtom;
  std::string text = expr_inner(e, &prec);
  return prec < min_prec ? "(" + text + ")" : text;
}

std::string Printer::binary(const Expr& a, const char* op, const Expr& b, int prec, int* out_prec,
                            bool comparison) {
  *out_prec = prec;
  int left = comparison ? prec + 1 : prec;
  std::string lhs = expr(a, left);  // sequenced: names are given in order of appearance
  return lhs + " " + op + " " + expr(b, prec + 1);
}

std::string Printer::call(const char* name, std::initializer_list<Expr> operands) {
  std::string out = std::string(name) + "(";
  bool first = true;
  for (const Expr& e : operands) {
    out += (first ? "" : ", ") + expr(e);
    first = false;
  }
  return out + ")";
}

std::string Printer::expr_inner(const Expr& e, int* prec) {
  if (!e.defined()) return "None";
  switch (e.kind()) {
    case NodeKind::kIntImm: {
      const auto* op = e.as<IntImm>();
      if (op->dtype == DataType::Int(32) && op->value < 0) *prec = kPrecUnary;
      return int_literal(op->dtype, op->value);
    }
    case NodeKind::kFloatImm: {
      const auto* op = e.as<FloatImm>();
      std::string value;
      if (std::isnan(op->value)) {
        value = "\"nan\"";
      } else if (std::isinf(op->value)) {
        value = op->value > 0 ? "\"inf\"" : "\"-inf\"";
      } else {
        value = float_repr(op->value);
      }
      return dtype_ctor(op->dtype) + "(" + value + ")";
    }
    case NodeKind::kStringImm:
      return quote(e.as<StringImm>()->value);
    case NodeKind::kVar:
      return var_ref(e.as<VarNode>());
    case NodeKind::kAdd:
      return binary(e.as<Add>()->a, "+", e.as<Add>()->b, kPrecAdd, prec);
    case NodeKind::kSub:
      return binary(e.as<Sub>()->a, "-", e.as<Sub>()->b, kPrecAdd, prec);
    case NodeKind::kMul:
      return binary(e.as<Mul>()->a, "*", e.as<Mul>()->b, kPrecMul, prec);
    case NodeKind::kDiv: {
      const auto* op = e.as<Div>();
      if (op->dtype.is_floating()) return binary(op->a, "/", op->b, kPrecMul, prec);
      return call("T.truncdiv", {op->a, op->b});
    }
    case NodeKind::kMod:
      return call("T.truncmod", {e.as<Mod>()->a, e.as<Mod>()->b});
    // TVM's `//` and `%` need integers; its node constructors take floats too.
    case NodeKind::kFloorDiv:
      if (e.dtype().is_floating())
        return call("T.FloorDiv", {e.as<FloorDiv>()->a, e.as<FloorDiv>()->b});
      return binary(e.as<FloorDiv>()->a, "//", e.as<FloorDiv>()->b, kPrecMul, prec);
    case NodeKind::kFloorMod:
      if (e.dtype().is_floating())
        return call("T.FloorMod", {e.as<FloorMod>()->a, e.as<FloorMod>()->b});
      return binary(e.as<FloorMod>()->a, "%", e.as<FloorMod>()->b, kPrecMul, prec);
    case NodeKind::kMin:
      return call("T.min", {e.as<Min>()->a, e.as<Min>()->b});
    case NodeKind::kMax:
      return call("T.max", {e.as<Max>()->a, e.as<Max>()->b});
    case NodeKind::kEQ:
      return binary(e.as<EQ>()->a, "==", e.as<EQ>()->b, kPrecCmp, prec, true);
    case NodeKind::kNE:
      return binary(e.as<NE>()->a, "!=", e.as<NE>()->b, kPrecCmp, prec, true);
    case NodeKind::kLT:
      return binary(e.as<LT>()->a, "<", e.as<LT>()->b, kPrecCmp, prec, true);
    case NodeKind::kLE:
      return binary(e.as<LE>()->a, "<=", e.as<LE>()->b, kPrecCmp, prec, true);
    case NodeKind::kGT:
      return binary(e.as<GT>()->a, ">", e.as<GT>()->b, kPrecCmp, prec, true);
    case NodeKind::kGE:
      return binary(e.as<GE>()->a, ">=", e.as<GE>()->b, kPrecCmp, prec, true);
    case NodeKind::kAnd:
      return binary(e.as<And>()->a, "and", e.as<And>()->b, kPrecAnd, prec);
    case NodeKind::kOr:
      return binary(e.as<Or>()->a, "or", e.as<Or>()->b, kPrecOr, prec);
    case NodeKind::kNot:
      *prec = kPrecNot;
      return "not " + expr(e.as<Not>()->a, kPrecNot);
    case NodeKind::kSelect: {
      const auto* op = e.as<Select>();
      return call("T.Select", {op->condition, op->true_value, op->false_value});
    }
    case NodeKind::kCast: {
      const auto* op = e.as<Cast>();
      return "T.Cast(" + quote(op->dtype.str()) + ", " + expr(op->value) + ")";
    }
    case NodeKind::kLet: {
      const auto* op = e.as<Let>();
      std::string value = expr(op->value);
      std::string name = define_var(op->var);
      // As TVM prints it: the bound variable is declared first (TVM's `where` keys must be
      // existing variables); the parser binds a new one scoped to the body either way.
      declare(name + " = " + free_var_ctor(op->var.get()));
      return "T.Let(" + expr(op->body) + ", where={" + name + ": " + value + "})";
    }
    case NodeKind::kBufferLoad: {
      const auto* op = e.as<BufferLoad>();
      std::string name = buffer_ref(op->buffer);
      return name + indices(op->indices);
    }
    case NodeKind::kRamp: {
      const auto* op = e.as<Ramp>();
      std::string base = expr(op->base);
      return "T.Ramp(" + base + ", " + expr(op->stride) + ", " + std::to_string(op->lanes) + ")";
    }
    case NodeKind::kBroadcast: {
      const auto* op = e.as<Broadcast>();
      return "T.Broadcast(" + expr(op->value) + ", " + std::to_string(op->lanes) + ")";
    }
    case NodeKind::kCall:
      return call_expr(e.as<Call>());
    default:
      return std::string("<") + node_kind_name(e.kind()) + ">";
  }
}

std::string Printer::call_expr(const Call* op) {
  if (op->op.defined()) {
    const std::string& name = op->op->name;
    if (name == "call_extern" || name == "call_pure_extern" || name == "reinterpret") {
      std::string rest = args(op->args);
      return "T." + name + "(" + quote(op->dtype.str()) + (rest.empty() ? "" : ", ") + rest + ")";
    }
    if (name == "tvm_struct_get") {
      return "T." + name + "(" + args(op->args) + ", " + quote(op->dtype.str()) + ")";
    }
    std::optional<DataType> rule = builtin_result_dtype(name, op->args);
    if (const TvmSpelling* tvm = tvm_spelling(op->op.operator->()); tvm && rule == op->dtype) {
      std::string rest = args(op->args);
      std::string lead = tvm->leading_dtype ? quote(op->dtype.str()) : "";
      return "T." + tvm->name + "(" + lead + (!lead.empty() && !rest.empty() ? ", " : "") + rest +
             ")";
    }
    if (rule && *rule == op->dtype) return "T." + name + "(" + args(op->args) + ")";
    std::string rest = args(op->args);
    return "T.call_intrin(" + quote(op->dtype.str()) + ", " + quote(name) +
           (rest.empty() ? "" : ", ") + rest + ")";
  }
  const std::string& callee = op->callee->name;
  if (module_ != nullptr && text_internal::is_identifier(callee)) {
    PrimFunc target = module_->find(callee);
    if (target.defined() && target->ret_type == op->dtype) {
      return "Module." + callee + "(" + args(op->args) + ")";
    }
  }
  std::string rest = args(op->args);
  return "T.call_global(" + quote(op->dtype.str()) + ", " + quote(callee) +
         (rest.empty() ? "" : ", ") + rest + ")";
}

}  // namespace primjit::text_internal
