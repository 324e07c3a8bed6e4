#include "primjit/ir/function.h"

#include <algorithm>
#include <set>

#include "ir/node_key.h"
#include "primjit/error.h"

namespace primjit {

PrimFunc PrimFunc::make(std::vector<Var> params, std::vector<std::pair<Var, Buffer>> buffer_map,
                        Stmt body, DataType ret_type, Attrs attrs) {
  PRIMJIT_USER_CHECK(body.defined()) << "a function needs a body";
  std::set<const VarNode*> seen;
  for (const Var& param : params) {
    PRIMJIT_USER_CHECK(param.defined()) << "a function parameter is undefined";
    PRIMJIT_USER_CHECK(seen.insert(param.get()).second)
        << "parameter '" << param->name << "' appears twice";
  }
  size_t last = 0;
  for (const auto& [param, buffer] : buffer_map) {
    auto it =
        std::find_if(params.begin(), params.end(), [&](const Var& p) { return p.same_as(param); });
    PRIMJIT_USER_CHECK(it != params.end())
        << "buffer '" << (buffer.defined() ? buffer->name : "?") << "' is bound to '"
        << (param.defined() ? param->name : "?") << "', which is not a parameter";
    PRIMJIT_USER_CHECK(buffer.defined()) << "parameter '" << param->name << "' maps to no buffer";
    PRIMJIT_USER_CHECK(param.dtype().is_handle())
        << "buffer '" << buffer->name << "' is bound to '" << param->name
        << "', which must be a handle, not " << param.dtype();
    size_t position = static_cast<size_t>(it - params.begin());
    PRIMJIT_USER_CHECK(position >= last)
        << "buffer_map must follow parameter order (at '" << param->name << "')";
    last = position + 1;
  }
  return PrimFunc(new PrimFuncNode(node_key(), std::move(params), std::move(buffer_map),
                                   std::move(body), ret_type, std::move(attrs)));
}

PrimFunc PrimFunc::with_body(Stmt body) const {
  if (body.same_as(get()->body)) return *this;
  return make(get()->params, get()->buffer_map, std::move(body), get()->ret_type, get()->attrs);
}

PrimFunc PrimFunc::with_attr(const std::string& key, AttrValue value) const {
  Attrs attrs = get()->attrs;
  attrs[key] = std::move(value);
  return make(get()->params, get()->buffer_map, get()->body, get()->ret_type, std::move(attrs));
}

PrimFunc PrimFunc::without_attr(const std::string& key) const {
  Attrs attrs = get()->attrs;
  if (attrs.erase(key) == 0) return *this;
  return make(get()->params, get()->buffer_map, get()->body, get()->ret_type, std::move(attrs));
}

Buffer PrimFuncNode::buffer_of(const Var& param) const {
  for (const auto& [p, buffer] : buffer_map) {
    if (p.same_as(param)) return buffer;
  }
  return Buffer();
}

const AttrValue* PrimFuncNode::attr(const std::string& key) const {
  auto it = attrs.find(key);
  return it == attrs.end() ? nullptr : &it->second;
}

Target PrimFuncNode::target() const {
  const AttrValue* value = attr(attr::kTarget);
  return value != nullptr && value->is_target() ? value->as_target() : Target();
}

std::string PrimFuncNode::global_symbol() const {
  const AttrValue* value = attr(attr::kGlobalSymbol);
  return value != nullptr && value->is_string() ? value->as_string() : "";
}

CallingConv PrimFuncNode::calling_conv() const {
  const AttrValue* value = attr(attr::kCallingConv);
  return value != nullptr && value->is_int() ? static_cast<CallingConv>(value->as_int())
                                             : CallingConv::kDefault;
}

IRModule IRModule::make(std::vector<std::pair<GlobalVar, PrimFunc>> functions) {
  for (const auto& [gvar, func] : functions) {
    PRIMJIT_USER_CHECK(gvar.defined() && func.defined()) << "a module entry is undefined";
  }
  std::stable_sort(functions.begin(), functions.end(),
                   [](const auto& a, const auto& b) { return a.first->name < b.first->name; });
  for (size_t i = 1; i < functions.size(); ++i) {
    PRIMJIT_USER_CHECK(functions[i - 1].first->name != functions[i].first->name)
        << "the module defines function '" << functions[i].first->name << "' twice";
  }
  return IRModule(new IRModuleNode(node_key(), std::move(functions)));
}

IRModule IRModule::from_function(const std::string& name, PrimFunc func) {
  return make({{GlobalVar::make(name), std::move(func)}});
}

IRModule IRModule::with_function(const std::string& name, PrimFunc func) const {
  std::vector<std::pair<GlobalVar, PrimFunc>> functions = get()->functions;
  for (auto& entry : functions) {
    if (entry.first->name == name) {
      entry.second = std::move(func);
      return make(std::move(functions));
    }
  }
  functions.emplace_back(GlobalVar::make(name), std::move(func));
  return make(std::move(functions));
}

IRModule IRModule::without_function(const std::string& name) const {
  std::vector<std::pair<GlobalVar, PrimFunc>> functions = get()->functions;
  std::erase_if(functions, [&](const auto& entry) { return entry.first->name == name; });
  return make(std::move(functions));
}

PrimFunc IRModuleNode::find(const std::string& name) const {
  for (const auto& [gvar, func] : functions) {
    if (gvar->name == name) return func;
  }
  return PrimFunc();
}

PrimFunc IRModuleNode::lookup(const std::string& name) const {
  PrimFunc func = find(name);
  if (!func.defined()) {
    std::string names;
    for (const auto& [gvar, f] : functions) names += (names.empty() ? "" : ", ") + gvar->name;
    PRIMJIT_USER_ERROR() << "the module has no function '" << name
                         << "' (it has: " << (names.empty() ? "none" : names) << ")";
  }
  return func;
}

GlobalVar IRModuleNode::global_var(const std::string& name) const {
  for (const auto& [gvar, func] : functions) {
    if (gvar->name == name) return gvar;
  }
  return GlobalVar();
}

}  // namespace primjit
