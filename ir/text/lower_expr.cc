// Lowering of expressions and the arguments of calls (see lowerer.h).
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>

#include "ir/text/forms.h"
#include "ir/text/lowerer.h"
#include "ir/text/text_rules.h"
#include "ir/text/tvm_spellings.h"

namespace primjit::text_internal {

std::optional<std::string> ns_attr(const Ast& a, const char* ns) {
  if (a.kind != AK::kAttr || a.items[0]->kind != AK::kName || a.items[0]->text != ns) {
    return std::nullopt;
  }
  return a.text;
}

std::optional<std::string> t_call(const Ast& a) {
  if (a.kind != AK::kCall) return std::nullopt;
  return ns_attr(*a.items[0], "T");
}

std::string plural(size_t n, const char* word) {
  std::string w = word;
  if (n != 1) w = w == "index" ? "indices" : w + "s";
  return std::to_string(n) + " " + w;
}

std::optional<int64_t> int_literal(const Ast& a) {
  if (a.kind == AK::kInt && a.int_value <= static_cast<uint64_t>(INT64_MAX)) {
    return static_cast<int64_t>(a.int_value);
  }
  if (a.kind == AK::kUnary && a.text == "-" && a.items[0]->kind == AK::kInt &&
      a.items[0]->int_value <= (uint64_t{1} << 63)) {
    return static_cast<int64_t>(0 - a.items[0]->int_value);
  }
  return std::nullopt;
}

Slots Lowerer::bind(const Ast& call, const std::string& fname,
                    std::initializer_list<const char*> params, size_t required, size_t positional) {
  std::vector<const char*> names(params);
  positional = std::min(positional, names.size());
  Slots slots;
  slots.args.assign(names.size(), nullptr);
  size_t n = num_args(call);
  if (n > positional) {
    fail(call.loc,
         fname + " takes " + (positional == required ? "" : "at most ") +
             plural(positional, positional < names.size() ? "positional argument" : "argument") +
             ", got " + std::to_string(n));
  }
  for (size_t i = 0; i < n; ++i) slots.args[i] = &arg(call, i);
  for (const Keyword& kw : call.keywords) {
    auto it = std::find_if(names.begin(), names.end(), [&](const char* p) { return kw.name == p; });
    if (it == names.end()) {
      fail(kw.loc, fname + " got an unexpected keyword argument '" + kw.name + "'");
    }
    size_t index = static_cast<size_t>(it - names.begin());
    if (slots.args[index] != nullptr) {
      fail(kw.loc, fname + " got multiple values for argument '" + kw.name + "'");
    }
    slots.args[index] = kw.value.get();
  }
  for (size_t i = 0; i < required; ++i) {
    if (slots.args[i] == nullptr) {
      fail(call.loc, fname + " is missing argument '" + names[i] + "'");
    }
  }
  return slots;
}

void Lowerer::no_keywords(const Ast& call, const std::string& fname) {
  if (!call.keywords.empty()) {
    fail(call.keywords.front().loc, fname + " takes no keyword arguments");
  }
}

const std::string& Lowerer::string_arg(const Ast* a, const char* what) {
  if (a->kind != AK::kString) fail(a->loc, std::string("expected a string for ") + what);
  return a->text;
}

DataType Lowerer::dtype_arg(const Ast* a) {
  const std::string& text = string_arg(a, "the dtype");
  return guard(a->loc, [&] { return DataType::parse(text); });
}

bool Lowerer::bool_arg(const Ast* a, const char* what) {
  if (a->kind != AK::kBool) fail(a->loc, std::string("expected True or False for ") + what);
  return a->bool_value;
}

int Lowerer::int_arg(const Ast* a, const char* what) {
  std::optional<int64_t> v = int_literal(*a);
  if (!v || *v < INT32_MIN || *v > INT32_MAX) {
    fail(a->loc, std::string("expected an integer literal for ") + what);
  }
  return static_cast<int>(*v);
}

// --- literals and expressions ---------------------------------------------------------------
Value Lowerer::value(const Ast& a) {
  Value v;
  v.loc = a.loc;
  switch (a.kind) {
    case AK::kInt:
      v.kind = Value::kInt;
      v.magnitude = a.int_value;
      return v;
    case AK::kFloat:
      v.kind = Value::kFloat;
      v.number = a.float_value;
      return v;
    case AK::kBool:
      v.kind = Value::kBool;
      v.flag = a.bool_value;
      return v;
    case AK::kUnary:
      if (a.text == "-" || a.text == "+") {
        Value inner = value(*a.items[0]);
        if (inner.kind == Value::kInt || inner.kind == Value::kFloat) {
          if (a.text == "-") {
            inner.negative = !inner.negative;
            inner.number = -inner.number;
          }
          inner.loc = a.loc;
          return inner;
        }
        if (inner.kind == Value::kBool) fail(a.loc, "unary '" + a.text + "' on a bool");
        if (a.text == "+") return inner;
        Expr x = inner.expr;
        v.expr = guard(a.op_loc, [&] {
          PRIMJIT_USER_CHECK(x.dtype().is_scalar())
              << "unary '-' needs a scalar operand, got " << x.dtype();
          return Sub::make(make_const(x.dtype(), 0), x);
        });
        return v;
      }
      break;
    default:
      break;
  }
  v.expr = lower_expr(a);
  return v;
}

Expr Lowerer::materialize(const Value& v, std::optional<DataType> hint) {
  if (v.kind == Value::kExpr) return v.expr;
  if (hint && hint->is_vector()) hint = hint->element_of();
  if (v.kind == Value::kBool) return IntImm::make(DataType::Bool(), v.flag ? 1 : 0);
  if (v.kind == Value::kFloat) {
    DataType t = hint ? *hint : DataType::Float(32);
    if (!t.is_floating()) {
      if (!hint)
        t = DataType::Float(32);
      else
        fail(v.loc, "floating literal where " + t.str() + " is expected");
    }
    return guard(v.loc, [&] { return FloatImm::make(t, v.number); });
  }
  DataType t = hint && (hint->is_int_or_bool() || hint->is_floating()) ? *hint : DataType::Int(32);
  if (t.is_floating()) {
    double d = static_cast<double>(v.magnitude);
    return guard(v.loc, [&] { return FloatImm::make(t, v.negative ? -d : d); });
  }
  int64_t x = 0;
  if (v.negative) {
    if (v.magnitude > (uint64_t{1} << 63)) fail(v.loc, "integer literal is too large");
    x = static_cast<int64_t>(0 - v.magnitude);
  } else if (v.magnitude > static_cast<uint64_t>(INT64_MAX) && !(t.is_uint() && t.bits() == 64)) {
    fail(v.loc, "integer literal does not fit in " + t.str());
  } else {
    x = static_cast<int64_t>(v.magnitude);
  }
  return guard(v.loc, [&] { return IntImm::make(t, x); });
}

std::pair<Expr, Expr> Lowerer::unify(const Ast& a, const Ast& b) {
  Value x = value(a);
  Value y = value(b);
  if (x.kind == Value::kExpr && y.kind != Value::kExpr) {
    return {x.expr, materialize(y, x.expr.dtype())};
  }
  if (y.kind == Value::kExpr && x.kind != Value::kExpr) {
    return {materialize(x, y.expr.dtype()), y.expr};
  }
  if (x.kind == Value::kExpr) return {x.expr, y.expr};
  std::optional<DataType> t;
  if (x.kind == Value::kFloat || y.kind == Value::kFloat) t = DataType::Float(32);
  return {materialize(x, t), materialize(y, t)};
}

Expr Lowerer::lower_expr(const Ast& a) {
  switch (a.kind) {
    case AK::kInt:
    case AK::kFloat:
    case AK::kBool:
      return materialize(value(a), std::nullopt);
    case AK::kString:
      return StringImm::make(a.text);
    case AK::kNone:
      fail(a.loc, "None is not a value here");
    case AK::kName:
      return name_expr(a);
    case AK::kAttr:
      return attr_expr(a);
    case AK::kSubscript:
      return load_expr(a);
    case AK::kBinary:
      return binary_expr(a);
    case AK::kUnary:
      if (a.text == "not") {
        Expr x = expr(*a.items[0], DataType::Bool());
        return guard(a.op_loc, [&] { return Not::make(x); });
      }
      if (a.text == "~") fail(a.op_loc, "operator '~' is not supported; use T.bitwise_not(x)");
      return materialize(value(a), std::nullopt);
    case AK::kBoolOp: {
      Expr x = expr(*a.items[0], DataType::Bool());
      Expr y = expr(*a.items[1], DataType::Bool());
      return guard(a.op_loc, [&] { return a.text == "and" ? And::make(x, y) : Or::make(x, y); });
    }
    case AK::kCompare: {
      if (a.ops.size() > 1) {
        fail(a.op_locs[1], "chained comparisons are not supported; add parentheses");
      }
      auto [x, y] = unify(*a.items[0], *a.items[1]);
      const std::string& op = a.ops[0];
      return guard(a.op_loc, [&, x = x, y = y] {
        if (op == "==") return EQ::make(x, y);
        if (op == "!=") return NE::make(x, y);
        if (op == "<") return LT::make(x, y);
        if (op == "<=") return LE::make(x, y);
        if (op == ">") return GT::make(x, y);
        return GE::make(x, y);
      });
    }
    case AK::kCall:
      return call_expr(a);
    case AK::kTuple:
      fail(a.loc, "a tuple is not a value here");
    case AK::kList:
      fail(a.loc, "a list is not a value here");
    case AK::kDict:
      fail(a.loc, "a dict is not a value here");
    case AK::kSlice:
      fail(a.loc, "a slice start:stop is only allowed as a buffer index");
  }
  fail(a.loc, "unsupported expression");
}

Expr Lowerer::name_expr(const Ast& a) {
  if (a.text == "T" || a.text == "I") fail(a.loc, "'" + a.text + "' is a namespace, not a value");
  const Entity* e = lookup(a.text);
  if (e == nullptr) {
    if (!class_name_.empty() && a.text == class_name_) {
      fail(a.loc, "'" + a.text + "' must be followed by a function call: " + a.text + ".f(...)");
    }
    fail(a.loc, "undefined name '" + a.text + "'");
  }
  if (e->kind == Entity::kBuffer) {
    // A one-element buffer's bare name is its element (TVMScript's scalar sugar).
    if (is_scalar_buffer(e->buffer)) {
      note_use(a, e->buffer);
      return guard(a.loc,
                   [&] { return BufferLoad::make(e->buffer, {make_const(DataType::Int(32), 0)}); });
    }
    fail(a.loc, "buffer '" + a.text + "' is not a value; index it (" + a.text + "[i]) or use " +
                    a.text + ".data");
  }
  note_use(a, e->var);
  return e->var;
}

Expr Lowerer::attr_expr(const Ast& a) {
  const Ast& object = *a.items[0];
  if (object.kind == AK::kName && object.text == "T") {
    fail(a.loc, "T." + a.text + " must be called: T." + a.text + "(...)");
  }
  if (object.kind == AK::kName) {
    const Entity* e = lookup(object.text);
    if (e != nullptr && e->kind == Entity::kBuffer) {
      if (a.text == "data") {
        note_use(object, e->buffer->data);
        return e->buffer->data;
      }
      fail(a.op_loc, "unknown buffer attribute '" + a.text + "'; only .data is supported");
    }
    if (e == nullptr && !class_name_.empty() && object.text == class_name_) {
      fail(a.loc, "a module function must be called: " + object.text + "." + a.text + "(...)");
    }
    if (e == nullptr && object.text != "I")
      fail(object.loc, "undefined name '" + object.text + "'");
  }
  fail(a.op_loc, "unsupported attribute '" + a.text + "'");
}

Expr Lowerer::load_expr(const Ast& a) {
  Buffer buffer = buffer_name(*a.items[0]);
  std::vector<Expr> idx = indices(a);
  return guard(a.loc, [&] { return BufferLoad::make(buffer, idx); });
}

Buffer Lowerer::buffer_name(const Ast& a) {
  if (a.kind != AK::kName) fail(a.loc, "only buffers can be indexed");
  const Entity* e = lookup(a.text);
  if (e == nullptr) fail(a.loc, "undefined name '" + a.text + "'");
  if (e->kind != Entity::kBuffer) fail(a.loc, "'" + a.text + "' is not a buffer");
  note_use(a, e->buffer);
  return e->buffer;
}

std::vector<Expr> Lowerer::indices(const Ast& subscript) {
  std::vector<Expr> out;
  if (subscript.items.size() == 2 && subscript.items[1]->kind == AK::kTuple) {
    const Ast& tuple = *subscript.items[1];
    for (const AstPtr& item : tuple.items) out.push_back(index(*item));
    return out;
  }
  for (size_t i = 1; i < subscript.items.size(); ++i) out.push_back(index(*subscript.items[i]));
  return out;
}

Expr Lowerer::index(const Ast& a) {
  if (a.kind != AK::kSlice) return expr(a, DataType::Int(32));
  // start:stop[:step] is T.Ramp(start, step, (stop - start) / step), as TVM prints vector
  // accesses; the lane count must be a constant.
  auto [start, stop] = unify(*a.items[0], *a.items[1]);
  int64_t step = 1;
  if (a.items.size() == 3) {
    std::optional<int64_t> s = int_literal(*a.items[2]);
    if (!s || *s == 0) fail(a.items[2]->loc, "a slice step must be a nonzero integer literal");
    step = *s;
  }
  std::optional<int64_t> span;
  const auto* lo = start.as<IntImm>();
  const auto* hi = stop.as<IntImm>();
  if (lo != nullptr && hi != nullptr) {
    span = hi->value - lo->value;
  } else if (const auto* add = stop.as<Add>(); add != nullptr && same_expr(add->a, start)) {
    if (const auto* k = add->b.as<IntImm>()) span = k->value;
  } else if (const auto* sub = stop.as<Sub>(); sub != nullptr && same_expr(sub->a, start)) {
    if (const auto* k = sub->b.as<IntImm>()) span = -k->value;
  }
  if (!span || *span % step != 0 || *span / step <= 0 || *span / step > INT32_MAX) {
    fail(a.loc,
         "the lane count of a slice start:stop[:step] must be a positive constant: write stop "
         "as start + k * step, or use T.Ramp(base, stride, lanes)");
  }
  int lanes = static_cast<int>(*span / step);
  Expr base = start;
  return guard(a.loc, [&] { return Ramp::make(base, make_const(base.dtype(), step), lanes); });
}

Expr Lowerer::binary_expr(const Ast& a) {
  const std::string& op = a.text;
  static const std::map<std::string, const char*> kBitwise = {
      {"&", "T.bitwise_and(a, b)"}, {"|", "T.bitwise_or(a, b)"},   {"^", "T.bitwise_xor(a, b)"},
      {"<<", "T.shift_left(a, b)"}, {">>", "T.shift_right(a, b)"}, {"**", "T.pow(a, b)"}};
  if (auto it = kBitwise.find(op); it != kBitwise.end()) {
    fail(a.op_loc, "operator '" + op + "' is not supported; use " + it->second);
  }
  if (op == "@") fail(a.op_loc, "operator '@' is not supported");
  auto [x, y] = unify(*a.items[0], *a.items[1]);
  if (op == "/" && !x.dtype().is_floating()) {
    fail(a.op_loc, "'/' is true division and needs floating operands, got " + x.dtype().str() +
                       "; use '//' (floor division) or T.truncdiv(a, b) for integers");
  }
  return guard(a.op_loc, [&, x = x, y = y] {
    if (op == "+") return Add::make(x, y);
    if (op == "-") return Sub::make(x, y);
    if (op == "*") return Mul::make(x, y);
    if (op == "/") return Div::make(x, y);
    if (op == "//") return FloorDiv::make(x, y);
    return FloorMod::make(x, y);
  });
}

// --- calls ----------------------------------------------------------------------------------
Expr Lowerer::call_expr(const Ast& a) {
  const Ast& func = *a.items[0];
  if (std::optional<std::string> name = ns_attr(func, "T")) return t_call_expr(a, *name);
  if (std::optional<std::string> dotted = t_dotted_name(func)) return tvm_spelled_call(a, *dotted);
  if (func.kind == AK::kAttr && func.items[0]->kind == AK::kName && !class_name_.empty() &&
      func.items[0]->text == class_name_ && lookup(class_name_) == nullptr) {
    return module_call(a, func.text);
  }
  if (func.kind == AK::kName) {
    if (func.text == "range") fail(a.loc, "range(...) is only allowed as a for-loop iterable");
    if (lookup(func.text) == nullptr && func.text != "T") {
      fail(a.loc, "unknown function '" + func.text + "'");
    }
    fail(a.loc, "'" + func.text + "' is not callable");
  }
  if (func.kind == AK::kAttr && func.items[0]->kind == AK::kName && func.items[0]->text == "I") {
    fail(a.loc, "unknown I. call 'I." + func.text + "'");
  }
  fail(a.loc, "unsupported call");
}

Expr Lowerer::module_call(const Ast& a, const std::string& fname) {
  auto it = functions_.find(fname);
  if (it == functions_.end()) {
    fail(a.loc, "the module has no function '" + fname + "'");
  }
  no_keywords(a, class_name_ + "." + fname);
  std::vector<Expr> args;
  for (size_t i = 0; i < num_args(a); ++i) args.push_back(expr(arg(a, i)));
  auto [gvar, ret] = it->second;
  return guard(a.loc, [&, gvar = gvar, ret = ret] { return Call::make(ret, gvar, args); });
}

std::vector<Expr> Lowerer::rest_args(const Ast& a, size_t from) {
  std::vector<Expr> out;
  for (size_t i = from; i < num_args(a); ++i) out.push_back(expr(arg(a, i)));
  return out;
}

Expr Lowerer::t_call_expr(const Ast& a, const std::string& name) {
  if (const Form* form = find_form(name)) {
    if (form->expr == nullptr)
      fail(a.loc, "T." + name + "(...) cannot be used inside an expression");
    return form->expr(*this, a);
  }
  DataType dtype;
  if (DataType::try_parse(name, &dtype) && !dtype.is_void()) return typed_literal(a, dtype);
  Op op = Op::find(name);
  if (!op.defined()) fail(a.loc, "unknown T. call 'T." + name + "'");
  return op_call(a, "T." + name, op);
}

std::optional<std::string> t_dotted_name(const Ast& func) {
  std::string dotted;
  const Ast* node = &func;
  int levels = 0;
  while (node->kind == AK::kAttr) {
    dotted = node->text + (dotted.empty() ? "" : "." + dotted);
    node = node->items[0].get();
    ++levels;
  }
  if (node->kind != AK::kName || node->text != "T" || levels < 2) return std::nullopt;
  return dotted;
}

// A builtin in TVM's spelling (tvm_spellings.h): `T.s_tir.cp_async_raw("int32", dst, ...)` is
// primjit's `T.ptx_cp_async(dst, ...)`; the leading dtype is read and checked, not kept.
Expr Lowerer::tvm_spelled_call(const Ast& a, const std::string& dotted) {
  const std::string fname = "T." + dotted;
  const TvmSpelling* spelling = nullptr;
  Op op = op_of_tvm_spelling(dotted, &spelling);
  if (!op.defined()) fail(a.loc, "unknown T. call '" + fname + "'");
  no_keywords(a, fname);
  size_t first = spelling->leading_dtype ? 1 : 0;
  if (spelling->leading_dtype) {
    DataType ignored;
    if (num_args(a) == 0 || arg(a, 0).kind != AK::kString ||
        !DataType::try_parse(arg(a, 0).text, &ignored)) {
      fail(a.loc,
           fname + " takes a dtype string first, as TVM prints it: " + fname + "(\"int32\", ...)");
    }
  }
  size_t n = num_args(a) - first;
  if (op->num_args >= 0 && n != static_cast<size_t>(op->num_args)) {
    fail(a.loc, fname + " takes " + plural(static_cast<size_t>(op->num_args) + first, "argument") +
                    ", got " + std::to_string(num_args(a)));
  }
  std::vector<Expr> args = rest_args(a, first);
  std::optional<DataType> t = builtin_result_dtype(op->name, args);
  if (!t) fail(a.loc, fname + ": cannot determine the result dtype");
  return guard(a.loc, [&] { return Call::make(*t, op, args); });
}

Expr Lowerer::op_call(const Ast& a, const std::string& fname, const Op& op) {
  no_keywords(a, fname);
  size_t n = num_args(a);
  if (op->num_args >= 0 && n != static_cast<size_t>(op->num_args)) {
    fail(a.loc, fname + " takes " + plural(static_cast<size_t>(op->num_args), "argument") +
                    ", got " + std::to_string(n));
  }
  OpTypeRule rule = op_rule(op->name);
  if (rule == OpTypeRule::kExplicit) {
    fail(a.loc, fname + " needs an explicit result dtype; write T.call_intrin(\"dtype\", \"" +
                    op->name + "\", ...)");
  }
  std::vector<Expr> args;
  if (text_internal::op_unifies_two_args(op->name)) {
    auto [x, y] = unify(arg(a, 0), arg(a, 1));
    args = {x, y};
  } else if (rule == OpTypeRule::kBranches) {
    args.push_back(expr(arg(a, 0), DataType::Bool()));
    auto [x, y] = unify(arg(a, 1), arg(a, 2));
    if (x.dtype() != y.dtype()) {
      fail(a.loc, fname + ": the branches have different dtypes " + x.dtype().str() + " and " +
                      y.dtype().str());
    }
    args.push_back(x);
    args.push_back(y);
  } else {
    args = rest_args(a, 0);
  }
  std::optional<DataType> t = builtin_result_dtype(op->name, args);
  if (!t) fail(a.loc, fname + ": cannot determine the result dtype");
  return guard(a.loc, [&] { return Call::make(*t, op, args); });
}

Expr Lowerer::typed_literal(const Ast& a, DataType t) {
  const std::string fname = "T." + t.str();
  if (num_args(a) == 0 && a.keywords.empty()) {
    fail(a.loc, fname + "() declares a variable and needs its own line: name = " + fname + "()");
  }
  Slots s = bind(a, fname, {"value"}, 1);
  const Ast& v = *s[0];
  if (v.kind == AK::kString) {
    if (!t.is_floating() || !t.is_scalar()) {
      fail(v.loc, "a string value is only allowed for floating types (\"inf\", \"-inf\", \"nan\")");
    }
    double d = 0;
    if (v.text == "inf") {
      d = std::numeric_limits<double>::infinity();
    } else if (v.text == "-inf") {
      d = -std::numeric_limits<double>::infinity();
    } else if (v.text == "nan") {
      d = std::numeric_limits<double>::quiet_NaN();
    } else if (v.text == "-nan") {
      d = -std::numeric_limits<double>::quiet_NaN();
    } else {
      fail(v.loc, "expected \"inf\", \"-inf\" or \"nan\"");
    }
    return guard(a.loc, [&] { return FloatImm::make(t, d); });
  }
  Value x = value(v);
  if (x.kind == Value::kExpr) {  // T.int32(expr) converts, as in TVMScript
    return guard(a.loc, [&] { return Cast::make(t, x.expr); });
  }
  if (!t.is_scalar()) fail(a.loc, fname + " is a vector type; use T.Broadcast for a constant");
  if (x.kind == Value::kBool) {
    if (!t.is_bool()) fail(v.loc, "True/False needs T.bool");
    return IntImm::make(t, x.flag ? 1 : 0);
  }
  if (t.is_bool()) {
    if (x.kind != Value::kInt || x.negative || x.magnitude > 1) {
      fail(v.loc, "T.bool takes True, False, 0 or 1");
    }
  }
  if (x.kind == Value::kFloat && !t.is_floating()) {
    fail(v.loc, "floating literal given to " + fname);
  }
  return materialize(x, t);
}

Var Lowerer::inferred_var(const std::string& name, const Expr& value, Loc loc) {
  return guard(loc, [&] {
    if (const auto* v = value.as<VarNode>(); v != nullptr && v->is_pointer()) {
      return Var::make_pointer(name, v->pointee, v->storage_scope);
    }
    return Var::make(name, value.dtype());
  });
}

Var Lowerer::typed_var(const std::string& name, const Ast& ann, Loc loc) {
  const Ast& head = ann.kind == AK::kCall ? *ann.items[0] : ann;
  std::optional<std::string> type = ns_attr(head, "T");
  if (!type) {
    fail(ann.loc, "expected a type such as T.int32, T.handle or T.handle(\"float32\", \"global\")");
  }
  if (*type == "handle") {
    if (ann.kind != AK::kCall) return Var::make_handle(name);
    Slots s = bind(ann, "T.handle", {"dtype", "scope"}, 0);
    if (s[0] == nullptr) {
      if (s[1] != nullptr) fail(ann.loc, "T.handle with a scope needs an element dtype");
      return Var::make_handle(name);
    }
    DataType element = dtype_arg(s[0]);
    std::string scope = s[1] != nullptr ? string_arg(s[1], "the storage scope") : "global";
    return guard(loc, [&] { return Var::make_pointer(name, element, scope); });
  }
  DataType t;
  if (!DataType::try_parse(*type, &t) || t.is_void() || t.is_handle()) {
    fail(head.loc, "unknown type 'T." + *type + "'");
  }
  bool size_var = false;
  if (ann.kind == AK::kCall) {
    Slots s = bind(ann, "T." + *type, {"is_size_var"}, 0, 0);
    if (s[0] != nullptr) size_var = bool_arg(s[0], "is_size_var");
  }
  return guard(loc, [&] { return Var::make(name, t, size_var); });
}

std::vector<Expr> Lowerer::expr_tuple(const Ast& a) {
  std::vector<Expr> out;
  if (a.kind == AK::kTuple || a.kind == AK::kList) {
    for (const AstPtr& item : a.items) out.push_back(expr(*item, DataType::Int(32)));
  } else {
    out.push_back(expr(a, DataType::Int(32)));
  }
  return out;
}

}  // namespace primjit::text_internal
