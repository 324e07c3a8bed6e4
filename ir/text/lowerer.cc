// Lowering of modules, functions and statements, and the scope stack of names (see lowerer.h).
#include "ir/text/lowerer.h"

#include <algorithm>
#include <limits>

#include "ir/text/forms.h"
#include "ir/text/text_rules.h"

namespace primjit::text_internal {
namespace {

/// TVM's assert message ("RuntimeError", ["part", ...]): the parts joined. primjit's asserts
/// have no error kind, so the kind (any string) is dropped.
std::optional<std::string> assert_parts(const Ast& tuple) {
  const Ast* list = tuple.items.size() == 2 ? tuple.items[1].get() : nullptr;
  if (tuple.items[0]->kind != AK::kString || list == nullptr || list->kind != AK::kList) {
    return std::nullopt;
  }
  std::string out;
  for (const AstPtr& part : list->items) {
    if (part->kind != AK::kString) return std::nullopt;
    out += part->text;
  }
  return out;
}

std::string bind_hint(const std::string& name) {
  return "unsupported assignment; bind a value with '" + name + ": T.int32 = value' or '" + name +
         " = T.Bind(value)'";
}

}  // namespace

IRModule Lowerer::lower(const FileAst& file) {
  std::vector<std::pair<GlobalVar, PrimFunc>> functions;
  tirx_ = file.tirx;
  if (file.is_module) {
    module_decorator(file);
    class_name_ = file.class_name;
    for (const FuncAst& f : file.funcs) {
      if (functions_.count(f.name) != 0) {
        src_.fail(f.name_loc, "the module defines function '" + f.name + "' twice");
      }
      DataType ret = f.ret ? return_type(*f.ret) : DataType::Void();
      functions_.emplace(f.name, std::make_pair(GlobalVar::make(f.name), ret));
    }
  }
  type_vars_ = &file.type_vars;
  for (const FuncAst& f : file.funcs) {
    PrimFunc func = function(f);
    if (source_map_ != nullptr) source_map_->add(func, SourceLocation{f.loc.line, f.loc.col});
    GlobalVar gvar = file.is_module ? functions_.at(f.name).first : GlobalVar::make(f.name);
    functions.emplace_back(gvar, func);
  }
  return guard(file.class_loc, [&] { return IRModule::make(std::move(functions)); });
}

// --- names ----------------------------------------------------------------------------------
const Entity* Lowerer::lookup(const std::string& name) const {
  const Entity* found = nullptr;
  scopes_.for_each([&](const std::unordered_map<std::string, Entity>& frame) {
    auto it = frame.find(name);
    if (it != frame.end()) found = &it->second;
  });
  if (found != nullptr) return found;
  auto it = closed_.find(name);
  return it != closed_.end() ? &it->second : nullptr;
}

void Lowerer::note_use(const Ast& name, const Ref<Object>& entity) {
  if (source_map_ == nullptr) return;
  bool open = false;
  scopes_.for_each([&](const std::unordered_map<std::string, Entity>& frame) {
    open = open || frame.count(name.text) > 0;
  });
  if (!open)
    source_map_->add_late_use(entity, stmt_loc_, SourceLocation{name.loc.line, name.loc.col});
}

Var Lowerer::rebound_or(const std::string& name, const Var& fresh) const {
  const Entity* e = lookup(name);
  if (e == nullptr || e->kind != Entity::kVar) return fresh;
  const VarNode* old = e->var.get();
  bool same = old->dtype == fresh->dtype && old->pointee == fresh->pointee &&
              old->storage_scope == fresh->storage_scope && old->is_size_var == fresh->is_size_var;
  return same ? e->var : fresh;
}

void Lowerer::define(const std::string& name, Loc loc, Entity entity) {
  if (name == "T" || name == "I") fail(loc, "'" + name + "' cannot be used as a name");
  scopes_.current()[name] = std::move(entity);
}

void Lowerer::define_var(const std::string& name, Loc loc, const Var& var) {
  Entity e;
  e.var = var;
  define(name, loc, std::move(e));
}

void Lowerer::define_buffer(const std::string& name, Loc loc, const Buffer& buffer) {
  Entity e;
  e.kind = Entity::kBuffer;
  e.buffer = buffer;
  define(name, loc, std::move(e));
}

// --- attribute values -----------------------------------------------------------------------
Attrs Lowerer::attr_dict(const Ast& a) {
  if (a.kind != AK::kDict) fail(a.loc, "expected a dict {\"key\": value, ...}");
  Attrs out;
  for (size_t i = 0; i < a.items.size(); i += 2) {
    const Ast& key = *a.items[i];
    if (key.kind != AK::kString) fail(key.loc, "attribute keys must be strings");
    if (out.count(key.text) != 0) fail(key.loc, "attribute \"" + key.text + "\" given twice");
    out.emplace(key.text, attr_value(*a.items[i + 1]));
  }
  return out;
}

AttrValue Lowerer::attr_value(const Ast& a) {
  switch (a.kind) {
    case AK::kBool:
      return AttrValue(a.bool_value);
    case AK::kString:
      return AttrValue(a.text);
    case AK::kNone:
      return AttrValue(Expr());
    case AK::kList: {
      AttrValue::Array items;
      for (const AstPtr& item : a.items) items.push_back(attr_value(*item));
      return AttrValue(std::move(items));
    }
    case AK::kCall:
      if (std::optional<std::string> name = t_call(a)) {
        const Form* form = find_form(*name);
        if (form != nullptr && form->attr_value != nullptr) return form->attr_value(*this, a);
      }
      if (a.items[0]->kind == AK::kName && a.items[0]->text == "float") {
        Slots s = bind(a, "float", {"value"}, 1);
        const std::string& text = string_arg(s[0], "float()");
        if (text == "inf") return AttrValue(std::numeric_limits<double>::infinity());
        if (text == "-inf") return AttrValue(-std::numeric_limits<double>::infinity());
        if (text == "nan") return AttrValue(std::numeric_limits<double>::quiet_NaN());
        fail(s[0]->loc, "expected float(\"inf\"), float(\"-inf\") or float(\"nan\")");
      }
      break;
    default:
      break;
  }
  Value v = value(a);
  if (v.kind == Value::kInt) {
    if (v.negative ? v.magnitude > (uint64_t{1} << 63)
                   : v.magnitude > static_cast<uint64_t>(INT64_MAX)) {
      fail(a.loc, "integer attribute is out of range");
    }
    return AttrValue(v.negative ? static_cast<int64_t>(0 - v.magnitude)
                                : static_cast<int64_t>(v.magnitude));
  }
  if (v.kind == Value::kFloat) return AttrValue(v.number);
  if (v.kind == Value::kBool) return AttrValue(v.flag);
  return AttrValue(v.expr);
}

Target Lowerer::target(const Ast& a) {
  Slots s = bind(a, "T.target", {"kind", "arch", "host"}, 1);
  if (s[0]->kind == AK::kDict) {
    if (s[1] != nullptr) fail(s[1]->loc, "with a target dict, give the arch as its \"arch\" key");
    return target_dict(*s[0], s[2]);
  }
  std::string kind = string_arg(s[0], "the target kind");
  std::string arch = s[1] != nullptr ? string_arg(s[1], "arch") : "";
  Target host;
  if (const Ast* h = s[2]) host = host_target(*h);
  return guard(a.loc, [&] { return Target::make(kind, arch, host); });
}

// --- statements -----------------------------------------------------------------------------
Stmt Lowerer::block(const std::vector<StmtPtr>& stmts, size_t begin, bool top) {
  std::vector<Stmt> out;
  struct Restore {
    SourceLocation* where;
    SourceLocation saved;
    ~Restore() { *where = saved; }
  } restore{&stmt_loc_, stmt_loc_};
  for (size_t i = begin; i < stmts.size(); ++i) {
    const StmtAst& s = *stmts[i];
    size_t first = out.size();
    try {
      stmt_loc_ = SourceLocation{s.loc.line, s.loc.col};
      std::optional<Stmt> concise = concise_attr(stmts, i, top);
      if (concise) {
        out.push_back(*concise);
      } else {
        statement(s, top, &out);
      }
      if (source_map_ != nullptr) {
        for (size_t k = first; k < out.size(); ++k) source_map_->add(out[k], stmt_loc_);
      }
      if (concise) break;
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      fail(s.loc, e.what());
    }
  }
  return guard(begin < stmts.size() ? stmts[begin]->loc : Loc{},
               [&] { return SeqStmt::make(std::move(out)); });
}

Stmt Lowerer::scoped_block(const std::vector<StmtPtr>& stmts) {
  return scoped([&] { return block(stmts, 0, false); });
}

/// A scope form on its own line (`x = T.launch_thread("tag", n)`, `T.launch_thread(t, n)`,
/// `T.attr(node, key, value)`): the rest of the block is the body.
std::optional<Stmt> Lowerer::concise_attr(const std::vector<StmtPtr>& stmts, size_t i, bool top) {
  const StmtAst& s = *stmts[i];
  const Ast* call = nullptr;
  const Ast* target = nullptr;
  if (s.kind == SK::kExpr) {
    call = s.value.get();
  } else if (s.kind == SK::kAssign) {
    call = s.value.get();
    target = s.target.get();
  } else {
    return std::nullopt;
  }
  std::optional<std::string> name = t_call(*call);
  const Form* form = name ? find_form(*name) : nullptr;
  if (form == nullptr || form->scope == nullptr) return std::nullopt;
  if (!form->scope_defines_name && target != nullptr) {
    fail(target->loc, "T." + *name + "(...) does not define a name; write it on its own line");
  }
  if (target != nullptr && target->kind != AK::kName) {
    fail(target->loc, "expected a name for the thread variable");
  }
  return scoped([&] {
    auto [node, key, value] = form->scope(*this, *call, target);
    Stmt body = block(stmts, i + 1, top);
    return guard(s.loc, [&, node = node, key = key, value = value] {
      return AttrStmt::make(node, key, value, body);
    });
  });
}

void Lowerer::statement(const StmtAst& s, bool top, std::vector<Stmt>* out) {
  switch (s.kind) {
    case SK::kPass:
      return;
    case SK::kExpr:
      expr_statement(s, top, out);
      return;
    case SK::kAssign:
      assignment(s, top, out);
      return;
    case SK::kAnnAssign:
      annotated(s, out);
      return;
    case SK::kFor:
      out->push_back(for_loop(s));
      return;
    case SK::kWhile: {
      Expr cond = expr(*s.value, DataType::Bool());
      Stmt body = scoped_block(s.body);
      out->push_back(guard(s.loc, [&] { return While::make(cond, body); }));
      return;
    }
    case SK::kIf: {
      Expr cond = expr(*s.value, DataType::Bool());
      Stmt then_case = scoped_block(s.body);
      Stmt else_case;
      if (s.has_else) else_case = scoped_block(s.orelse);
      out->push_back(guard(s.loc, [&] { return IfThenElse::make(cond, then_case, else_case); }));
      return;
    }
    case SK::kWith:
      out->push_back(with_stmt(s));
      return;
    case SK::kAssert: {
      Expr cond = expr(*s.value, DataType::Bool());
      Expr message = StringImm::make("");
      if (s.message && s.message->kind == AK::kString) {
        message = StringImm::make(s.message->text);
      } else if (s.message && s.message->kind == AK::kTuple) {
        std::optional<std::string> parts = assert_parts(*s.message);
        if (!parts) {
          fail(s.message->loc,
               "a tuple assert message is (\"kind\", [\"part\", ...]) with string parts");
        }
        message = StringImm::make(*parts);
      } else if (s.message) {
        message = expr(*s.message);
        const auto* call = message.as<Call>();
        if (call == nullptr || !call->is_op("format")) {
          fail(s.message->loc, "the assert message must be a string literal or T.format(...)");
        }
      }
      out->push_back(guard(s.loc, [&] { return AssertStmt::make(cond, message); }));
      return;
    }
    case SK::kReturn: {
      Expr v = expr(*s.value);
      out->push_back(
          guard(s.loc, [&] { return Evaluate::make(Call::make(v.dtype(), Op::get("ret"), {v})); }));
      return;
    }
  }
}

void Lowerer::expr_statement(const StmtAst& s, bool top, std::vector<Stmt>* out) {
  const Ast& v = *s.value;
  if (v.kind == AK::kString && s.loc.line == docstring_line_) return;  // docstring
  std::optional<std::string> name = t_call(v);
  if (const Form* form = name ? find_form(*name) : nullptr) {
    if (form->stmt != nullptr) {
      form->stmt(*this, s, top, out);
      return;
    }
    if (form->assign != nullptr) {
      fail(v.loc, "T." + *name + "(...) must be assigned to a name: x = T." + *name + "(...)");
    }
  }
  if (v.kind != AK::kCall) {
    fail(v.loc,
         "an expression statement must be a call; write T.evaluate(...) to evaluate "
         "an expression");
  }
  Expr e = expr(v);
  out->push_back(guard(s.loc, [&] { return Evaluate::make(e); }));
}

void Lowerer::assignment(const StmtAst& s, bool top, std::vector<Stmt>* out) {
  const Ast& target = *s.target;
  const Ast& v = *s.value;
  if (target.kind == AK::kSubscript) {
    Buffer buffer = buffer_name(*target.items[0]);
    std::vector<Expr> idx = indices(target);
    if (idx.size() != buffer->ndim()) {
      fail(s.loc, "store to '" + buffer->name + "' needs " + plural(buffer->ndim(), "index") +
                      " (one per dimension), got " + std::to_string(idx.size()));
    }
    int lanes = 1;
    for (const Expr& i : idx) lanes = std::max(lanes, i.dtype().lanes());
    Expr value = expr(v, buffer->dtype.with_lanes(buffer->dtype.lanes() * lanes));
    out->push_back(guard(s.loc, [&] { return BufferStore::make(buffer, value, idx); }));
    return;
  }
  if (target.kind != AK::kName) {
    fail(target.loc, "can only assign to a name or a buffer element");
  }
  const std::string& name = target.text;
  if (sugar_assignment(s, out)) return;
  std::optional<std::string> fn = t_call(v);
  if (!fn) fail(v.loc, bind_hint(name));
  if (const Form* form = find_form(*fn); form != nullptr && form->assign != nullptr) {
    form->assign(*this, s, top, out);
    return;
  }
  DataType t;
  if (*fn == "handle" || (DataType::try_parse(*fn, &t) && !t.is_void())) {
    // A free variable: T.int32(), T.int64(is_size_var=True), T.handle("float32", "global").
    if (*fn != "handle" && num_args(v) != 0) {
      fail(v.loc, "a variable declaration takes no value; to bind one write " + name + ": T." +
                      *fn + " = value");
    }
    Var var = typed_var(name, v, target.loc);
    if (implicit_vars_.erase(name) != 0) {
      // `n = T.int32()` after a quoted "n" in a shape names the variable the shape defined.
      const Entity* e = lookup(name);
      if (e->var.dtype() != var.dtype()) {
        fail(v.loc, "'" + name + "' was defined as an int32 shape variable by \"" + name + "\"");
      }
      return;
    }
    define_var(name, target.loc, var);
    return;
  }
  fail(v.loc, bind_hint(name));
}

Stmt Lowerer::with_stmt(const StmtAst& s) {
  std::optional<std::string> name = t_call(*s.value);
  const Form* form = name ? find_form(*name) : nullptr;
  if (form == nullptr || form->scope == nullptr) {
    fail(s.value->loc, "'with' supports T.launch_thread(...) and T.attr(...)");
  }
  if (!form->scope_defines_name && s.target) {
    fail(s.target->loc, "'with T." + *name + "(...)' takes no 'as' name");
  }
  return scoped([&] {
    auto [node, key, value] = form->scope(*this, *s.value, s.target.get());
    Stmt body = block(s.body, 0, false);
    return guard(s.loc, [&, node = node, key = key, value = value] {
      return AttrStmt::make(node, key, value, body);
    });
  });
}

std::pair<Expr, Expr> Lowerer::loop_bounds(const Ast* start, const Ast* stop) {
  if (stop == nullptr) {
    Expr extent = expr(*start, DataType::Int(32));
    Expr zero = guard(start->loc, [&] {
      PRIMJIT_USER_CHECK(extent.dtype().is_integer() && extent.dtype().is_scalar())
          << "loop extent must be a scalar integer, got " << extent.dtype();
      return make_const(extent.dtype(), 0);
    });
    return {zero, extent};
  }
  auto [lo, hi] = unify(*start, *stop);
  if (const auto* add = hi.as<Add>(); add != nullptr && same_expr(add->a, lo)) {
    return {lo, add->b};
  }
  const auto* a = lo.as<IntImm>();
  const auto* b = hi.as<IntImm>();
  if (a != nullptr && b != nullptr && a->dtype == b->dtype) {
    int64_t extent = 0;
    if (__builtin_sub_overflow(b->value, a->value, &extent)) {
      fail(stop->loc, "loop extent overflows");
    }
    return {lo, guard(stop->loc, [&] { return IntImm::make(a->dtype, extent); })};
  }
  return {lo, guard(stop->loc, [&, lo = lo, hi = hi] { return Sub::make(hi, lo); })};
}

Stmt Lowerer::for_loop(const StmtAst& s) {
  const Ast& iter = *s.value;
  if (iter.kind != AK::kCall) fail(iter.loc, "expected range(...) or a T. loop kind");
  const Ast& func = *iter.items[0];
  std::optional<std::string> kind_name = ns_attr(func, "T");
  bool is_range = func.kind == AK::kName && func.text == "range" && lookup("range") == nullptr;
  if (!is_range && !kind_name) fail(iter.loc, "expected range(...) or a T. loop kind");

  if (is_range) {
    no_keywords(iter, "range");
    size_t n = num_args(iter);
    if (n == 0 || n > 2) {
      fail(iter.loc, n == 3 ? "range with a step is not supported"
                            : "range takes 1 or 2 arguments, got " + std::to_string(n));
    }
    return single_loop(s, &arg(iter, 0), n == 2 ? &arg(iter, 1) : nullptr, ForKind::kSerial, "",
                       Annotations());
  }
  const Form* form = find_form(*kind_name);
  if (form == nullptr || form->loop == nullptr) {
    fail(iter.loc, "unknown loop kind 'T." + *kind_name +
                       "'; expected range, T.serial, T.parallel, "
                       "T.vectorized, T.unroll, "
                       "T.thread_binding or T.grid");
  }
  return form->loop(*this, s);
}

Stmt Lowerer::single_loop(const StmtAst& s, const Ast* start, const Ast* stop, ForKind kind,
                          const std::string& thread_tag, const Annotations& annotations) {
  const Ast& targets = *s.target;
  if (targets.items.size() != 1) {
    fail(targets.loc, "this loop defines one variable; use T.grid for several");
  }
  auto [min, extent] = loop_bounds(start, stop);
  const Ast& t = *targets.items[0];
  return scoped([&, min = min, extent = extent] {
    Var var = guard(t.loc, [&] { return Var::make(t.text, extent.dtype()); });
    define_var(t.text, t.loc, var);
    Stmt body = block(s.body, 0, false);
    return guard(s.loc,
                 [&] { return For::make(var, min, extent, kind, body, thread_tag, annotations); });
  });
}

// --- functions and modules ------------------------------------------------------------------
DataType Lowerer::return_type(const Ast& ann) {
  std::optional<std::string> type = ns_attr(ann, "T");
  DataType t;
  if (!type || !DataType::try_parse(*type, &t)) {
    fail(ann.loc, "expected a return type such as T.int32");
  }
  return t;
}

void Lowerer::module_decorator(const FileAst& file) {
  if (file.class_decorators.size() != 1) {
    fail(file.class_loc, "the module class needs exactly one decorator, @I.ir_module");
  }
  const Ast& d = *file.class_decorators[0];
  if (ns_attr(d, "I") == "ir_module") return;
  if (d.kind == AK::kCall && ns_attr(*d.items[0], "I") == "ir_module") {
    Slots s = bind(d, "I.ir_module", {"check_well_formed"}, 0, 0);
    if (s[0] != nullptr) bool_arg(s[0], "check_well_formed");
    return;
  }
  fail(d.loc, "unknown decorator; expected @I.ir_module");
}

/// Returns whether the function is private.
bool Lowerer::function_decorator(const FuncAst& f) {
  if (f.decorators.size() != 1) {
    fail(f.loc, "a function needs exactly one decorator, @T.prim_func");
  }
  const Ast& d = *f.decorators[0];
  if (ns_attr(d, "T") == "prim_func") return false;
  if (d.kind == AK::kCall && ns_attr(*d.items[0], "T") == "prim_func") {
    Slots s = bind(d, "T.prim_func", {"private", "check_well_formed"}, 0, 0);
    if (s[1] != nullptr) bool_arg(s[1], "check_well_formed");
    return s[0] != nullptr && bool_arg(s[0], "private");
  }
  fail(d.loc, "unknown decorator; expected @T.prim_func or @T.prim_func(private=True)");
}

PrimFunc Lowerer::function(const FuncAst& f) {
  bool is_private = function_decorator(f);
  FunctionState state;
  state_ = &state;
  scopes_ = ScopeStack<std::unordered_map<std::string, Entity>>();
  closed_.clear();
  implicit_vars_.clear();
  // int64 shape variables TVM prints as type variables (`m = TypeVar("m")`, `def f[m](...)`):
  // free variables of each function that uses them.
  for (const std::vector<NameAst>* names : {type_vars_, &f.type_params}) {
    for (const NameAst& n : *names) {
      define_var(n.name, n.loc, guard(n.loc, [&] { return Var::make(n.name, DataType::Int(64)); }));
    }
  }
  std::unordered_map<std::string, Loc> seen;
  for (const Param& p : f.params) {
    if (!seen.emplace(p.name, p.loc).second) fail(p.loc, "duplicate parameter '" + p.name + "'");
    std::optional<std::string> name = t_call(*p.annotation);
    const Form* form = name ? find_form(*name) : nullptr;
    if (form != nullptr && form->param != nullptr) {
      form->param(*this, p);
    } else {
      Var var = typed_var(p.name, *p.annotation, p.loc);
      state.params.push_back(var);
      define_var(p.name, p.loc, var);
    }
  }
  DataType ret = f.ret ? return_type(*f.ret) : DataType::Void();
  if (!is_private) state.attrs[attr::kGlobalSymbol] = AttrValue(f.name);
  docstring_line_ = -1;
  if (!f.body.empty() && f.body[0]->kind == SK::kExpr && f.body[0]->value->kind == AK::kString) {
    docstring_line_ = f.body[0]->loc.line;
  }
  Stmt body = scoped([&] { return block(f.body, 0, true); });
  // buffer_map follows parameter order.
  auto position = [&](const Var& v) {
    return std::find_if(state.params.begin(), state.params.end(),
                        [&](const Var& p) { return p.same_as(v); }) -
           state.params.begin();
  };
  std::stable_sort(
      state.buffer_map.begin(), state.buffer_map.end(),
      [&](const auto& a, const auto& b) { return position(a.first) < position(b.first); });
  state_ = nullptr;
  return guard(f.loc, [&] {
    return PrimFunc::make(state.params, state.buffer_map, body, ret, state.attrs);
  });
}

}  // namespace primjit::text_internal
