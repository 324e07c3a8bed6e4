// Specialize: binds size variables and scalar parameters to values.
//
// Requires: nothing.
// Ensures:  every occurrence of a specialized variable — in buffer shapes, strides and offsets
//           of the signature and the body — is replaced by its value. A specialized scalar
//           parameter stays in the signature (the calling convention does not change) and the
//           body starts with an assert that the argument has the specialized value.
// Example (Specialize{n=128}):
//   def f(a: T.handle):                        def f(A: T.Buffer((128,), "float32")):
//       n = T.int32()                     =>       for i in range(128):
//       A = T.match_buffer(a, (n,))                    A[i] = T.float32(0)
//       for i in range(n): A[i] = T.float32(0)
#include <algorithm>
#include <set>

#include "passes/pass_list.h"
#include "passes/pass_options.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

struct SpecializeOptions {
  std::map<std::string, int64_t> values;  // by variable name
};

// The variables a function lets a caller specialize, by name: scalar parameters and the
// variables of its parameter buffers' shapes, strides and offsets, in signature order.
std::vector<Var> specializable_vars(const PrimFunc& func) {
  std::vector<Var> vars;
  auto add = [&](const Expr& e) {
    if (const auto* v = e.as<VarNode>()) {
      if (std::none_of(vars.begin(), vars.end(), [&](const Var& x) { return x.get() == v; })) {
        vars.emplace_back(v);
      }
    }
  };
  for (const Var& param : func->params) {
    if (!param.dtype().is_handle()) add(param);
  }
  for (const auto& [param, buffer] : func->buffer_map) {
    for (const Expr& e : buffer->shape) add(e);
    for (const Expr& e : buffer->strides) add(e);
    add(buffer->elem_offset);
  }
  return vars;
}

Expr as_value_of(const VarNode* var, const Expr& value) {
  if (value.dtype() == var->dtype) return value;
  // An integer constant adopts the variable's dtype when it fits.
  if (std::optional<int64_t> c = as_const_int(value); c && var->dtype.is_integer()) {
    return IntImm::make(var->dtype, *c);
  }
  PRIMJIT_USER_ERROR() << "Specialize: '" << var->name << "' is " << var->dtype
                       << " but the value has dtype " << value.dtype();
}

}  // namespace

PrimFunc specialize(const PrimFunc& func, const std::unordered_map<const VarNode*, Expr>& values) {
  std::vector<Var> allowed = specializable_vars(func);
  VarMap map;
  for (const auto& [var, value] : values) {
    PRIMJIT_USER_CHECK(
        std::any_of(allowed.begin(), allowed.end(), [&](const Var& v) { return v.get() == var; }))
        << "Specialize: '" << var->name
        << "' is neither a scalar parameter nor a variable of a parameter buffer's shape";
    map.emplace(var, as_value_of(var, value));
  }
  PrimFunc out = substitute(func, map);
  // Scalar parameters keep their place in the signature; the body checks the argument.
  std::vector<Stmt> checks;
  for (const Var& param : func->params) {
    auto it = map.find(param.get());
    if (it == map.end()) continue;
    checks.push_back(AssertStmt::make(EQ::make(param, it->second),
                                      StringImm::make("Specialize: argument '" + param->name +
                                                      "' must equal the value the "
                                                      "function was specialized for")));
  }
  if (checks.empty()) return out;
  checks.push_back(out->body);
  return out.with_body(SeqStmt::make(std::move(checks)));
}

Pass make_specialize_pass() {
  PassOptions<SpecializeOptions> options;
  options.add_named_ints("<name>", &SpecializeOptions::values,
                         "the value of the scalar parameter or shape variable <name>");
  return typed_pass<SpecializeOptions>(
      "Specialize", "bind size variables / scalar parameters to constants: Specialize{n=128,m=4}",
      std::move(options), [](const IRModule& module, const SpecializeOptions& options) {
        PRIMJIT_USER_CHECK(!options.values.empty())
            << "Specialize needs the values to bind, e.g. --passes=Specialize{n=128}";
        std::set<std::string> used;
        IRModule out = module;
        for (const auto& [gvar, func] : module->functions) {
          std::unordered_map<const VarNode*, Expr> values;
          for (const Var& var : specializable_vars(func)) {
            auto it = options.values.find(var->name);
            if (it == options.values.end()) continue;
            for (const auto& [v, e] : values) {
              PRIMJIT_USER_CHECK(v->name != var->name)
                  << "Specialize: function '" << gvar->name << "' has two variables named '"
                  << var->name << "'; specialize it through the C++ API instead";
            }
            PRIMJIT_USER_CHECK(var.dtype().is_integer())
                << "Specialize: '" << var->name << "' is " << var.dtype()
                << "; only integer variables can be specialized from the command line";
            values.emplace(var.get(), IntImm::make(var.dtype(), it->second));
            used.insert(it->first);
          }
          if (!values.empty()) out = out.with_function(gvar->name, specialize(func, values));
        }
        for (const auto& [name, value] : options.values) {
          PRIMJIT_USER_CHECK(used.count(name) > 0)
              << "Specialize: no function has a scalar parameter or shape variable named '" << name
              << "'";
        }
        return out;
      });
}

}  // namespace primjit::passes
