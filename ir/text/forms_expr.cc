// Expression forms: T.* calls that are values inside an expression (see forms.h). Literal casts
// T.<dtype>(...) and builtin ops T.<op>(...) are the open families lower_expr.cc resolves after
// this table.

#include "ir/text/forms.h"
#include "ir/text/lowerer.h"

namespace primjit::text_internal {
namespace {

/// "T.name" for a call `T.name(...)`.
std::string form_name(const Ast& call) { return "T." + call.items[0]->text; }

Expr cast(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"dtype", "value"}, 2);
  DataType t = lower.dtype_arg(s[0]);
  Expr x = lower.expr(*s[1]);
  return lower.guard(a.loc, [&] { return Cast::make(t, x); });
}

Expr select(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"condition", "true_value", "false_value"}, 3);
  Expr c = lower.expr(*s[0], DataType::Bool());
  auto [x, y] = lower.unify(*s[1], *s[2]);
  return lower.guard(a.loc, [&, x = x, y = y] { return Select::make(c, x, y); });
}

/// T.min, T.max, T.truncdiv, ...: a binary node whose bare literals adopt the other's dtype.
template <typename Node>
Expr binary(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"a", "b"}, 2);
  auto [x, y] = lower.unify(*s[0], *s[1]);
  return lower.guard(a.loc, [&, x = x, y = y] { return Node::make(x, y); });
}

Expr ramp(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"base", "stride", "lanes"}, 3);
  auto [base, stride] = lower.unify(*s[0], *s[1]);
  int lanes = lower.int_arg(s[2], "the lane count");
  return lower.guard(a.loc,
                     [&, base = base, stride = stride] { return Ramp::make(base, stride, lanes); });
}

Expr broadcast(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"value", "lanes"}, 2);
  Expr x = lower.expr(*s[0]);
  int lanes = lower.int_arg(s[1], "the lane count");
  return lower.guard(a.loc, [&] { return Broadcast::make(x, lanes); });
}

/// T.Let(body, where={name: value}): `name` is visible in `body` only.
Expr let(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, "T.Let", {"body", "where"}, 2);
  const Ast& where = *s[1];
  if (where.kind != AK::kDict || where.items.size() != 2 || where.items[0]->kind != AK::kName) {
    lower.fail(where.loc, "T.Let needs where={name: value} with exactly one binding");
  }
  const Ast& name = *where.items[0];
  Expr bound = lower.expr(*where.items[1]);
  Var var = lower.inferred_var(name.text, bound, name.loc);
  Expr body = lower.scoped([&] {
    lower.define_var(name.text, name.loc, var);
    return lower.expr(*s[0]);
  });
  return lower.guard(a.loc, [&] { return Let::make(var, bound, body); });
}

Expr string_imm(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"value"}, 1);
  return StringImm::make(lower.string_arg(s[0], "T.StringImm"));
}

Expr reinterpret(Lowerer& lower, const Ast& a) {
  Slots s = lower.bind(a, form_name(a), {"dtype", "value"}, 2);
  DataType t = lower.dtype_arg(s[0]);
  Expr x = lower.expr(*s[1]);
  return lower.guard(a.loc, [&] { return Call::make(t, Op::get("reinterpret"), {x}); });
}

/// T.call_extern("dtype", "name", args...) and T.call_pure_extern(...).
Expr call_extern(Lowerer& lower, const Ast& a) {
  const std::string fname = form_name(a);
  lower.no_keywords(a, fname);
  if (num_args(a) < 1) lower.fail(a.loc, fname + " needs the result dtype as its first argument");
  DataType t = lower.dtype_arg(&arg(a, 0));
  std::vector<Expr> args = lower.rest_args(a, 1);
  return lower.guard(a.loc, [&] { return Call::make(t, Op::get(a.items[0]->text), args); });
}

/// T.tvm_struct_get(pointer, index, field, "dtype"): the dtype comes last, as in TVMScript.
Expr tvm_struct_get(Lowerer& lower, const Ast& a) {
  const std::string fname = form_name(a);
  lower.no_keywords(a, fname);
  if (num_args(a) != 4) {
    lower.fail(a.loc, fname + " takes a pointer, an index, a field and a dtype");
  }
  DataType t = lower.dtype_arg(&arg(a, 3));
  std::vector<Expr> args = lower.rest_args(a, 0);
  args.pop_back();
  return lower.guard(a.loc, [&] { return Call::make(t, Op::get("tvm_struct_get"), args); });
}

/// T.call_intrin("dtype", "op", args...): a builtin op with an explicit result dtype.
Expr call_intrin(Lowerer& lower, const Ast& a) {
  const std::string fname = form_name(a);
  lower.no_keywords(a, fname);
  if (num_args(a) < 2) lower.fail(a.loc, fname + " needs a dtype and an op name");
  DataType t = lower.dtype_arg(&arg(a, 0));
  const std::string& op_name = lower.string_arg(&arg(a, 1), "the op name");
  Op op = Op::find(op_name);
  if (!op.defined()) lower.fail(arg(a, 1).loc, "unknown builtin op '" + op_name + "'");
  std::vector<Expr> args = lower.rest_args(a, 2);
  return lower.guard(a.loc, [&] { return Call::make(t, op, args); });
}

/// T.call_global("dtype", "name", args...): a call of a function of this module or another.
Expr call_global(Lowerer& lower, const Ast& a) {
  const std::string fname = form_name(a);
  lower.no_keywords(a, fname);
  if (num_args(a) < 2) lower.fail(a.loc, fname + " needs a dtype and a function name");
  DataType t = lower.dtype_arg(&arg(a, 0));
  const std::string& callee = lower.string_arg(&arg(a, 1), "the function name");
  const auto& functions = lower.module_functions();
  auto it = functions.find(callee);
  GlobalVar gvar = it != functions.end()
                       ? it->second.first
                       : lower.guard(arg(a, 1).loc, [&] { return GlobalVar::make(callee); });
  std::vector<Expr> args = lower.rest_args(a, 2);
  return lower.guard(a.loc, [&] { return Call::make(t, gvar, args); });
}

/// T.tvm_storage_sync("scope"), or TVM's full form ("scope", is_load=False, num_blocks=-1): a
/// barrier over the block's threads. Other is_load/num_blocks values are a grid-wide sync,
/// which primjit does not have.
Expr storage_sync(Lowerer& lower, const Ast& a) {
  const std::string fname = form_name(a);
  Slots s = lower.bind(a, fname, {"storage_scope", "is_load", "num_blocks"}, 1);
  const std::string& scope = lower.string_arg(s[0], "the storage scope");
  if (const Ast* is_load = s[1]) {
    Expr x = lower.expr(*is_load, DataType::Bool());
    const auto* k = x.as<IntImm>();
    if (k == nullptr || k->value != 0) {
      lower.fail(is_load->loc, fname + ": only is_load=False (a block barrier) is supported");
    }
  }
  if (s[2] != nullptr && int_literal(*s[2]) != -1) {
    lower.fail(s[2]->loc, fname + ": only num_blocks=-1 (a block barrier) is supported");
  }
  return lower.guard(a.loc, [&] {
    return Call::make(DataType::Int(32), Op::get("tvm_storage_sync"), {StringImm::make(scope)});
  });
}

constexpr Form kForms[] = {
    {.name = "Cast", .expr = cast},
    {.name = "Select", .expr = select},
    {.name = "min", .expr = binary<Min>},
    {.name = "max", .expr = binary<Max>},
    {.name = "truncdiv", .expr = binary<Div>},
    {.name = "truncmod", .expr = binary<Mod>},
    {.name = "floordiv", .expr = binary<FloorDiv>},
    {.name = "floormod", .expr = binary<FloorMod>},
    // The node constructors, which TVM also accepts for floating operands.
    {.name = "FloorDiv", .expr = binary<FloorDiv>},
    {.name = "FloorMod", .expr = binary<FloorMod>},
    {.name = "tvm_storage_sync", .expr = storage_sync},
    {.name = "Ramp", .expr = ramp},
    {.name = "Broadcast", .expr = broadcast},
    {.name = "Let", .expr = let},
    {.name = "StringImm", .expr = string_imm},
    {.name = "reinterpret", .expr = reinterpret},
    {.name = "call_extern", .expr = call_extern},
    {.name = "call_pure_extern", .expr = call_extern},
    {.name = "tvm_struct_get", .expr = tvm_struct_get},
    {.name = "call_intrin", .expr = call_intrin},
    {.name = "call_global", .expr = call_global},
};

}  // namespace

std::span<const Form> expression_forms() { return kForms; }

}  // namespace primjit::text_internal
