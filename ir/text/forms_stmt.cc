// Statement forms (see forms.h): expression statements, definitions, attribute scopes, loops,
// attribute values, and the names that are decorators or types rather than calls.

#include "ir/text/forms.h"
#include "ir/text/lowerer.h"

namespace primjit::text_internal {
namespace {

// --- expression statements and definitions ----------------------------------------------------

/// T.evaluate(value): the value evaluated for its effect.
void evaluate(Lowerer& lower, const StmtAst& s, bool /*top*/, std::vector<Stmt>* out) {
  Slots slots = lower.bind(*s.value, "T.evaluate", {"value"}, 1);
  Expr e = lower.expr(*slots[0]);
  out->push_back(lower.guard(s.loc, [&] { return Evaluate::make(e); }));
}

/// T.func_attr({"key": value, ...}): the function's attributes, once, at the top level.
void func_attr(Lowerer& lower, const StmtAst& s, bool top, std::vector<Stmt>* /*out*/) {
  const Ast& v = *s.value;
  FunctionState& state = lower.function_state();
  if (!top) lower.fail(v.loc, "T.func_attr is only allowed at the top level of the function body");
  if (state.has_func_attr) lower.fail(v.loc, "T.func_attr given twice");
  state.has_func_attr = true;
  Slots slots = lower.bind(v, "T.func_attr", {"attrs"}, 1);
  for (auto& [key, value] : lower.attr_dict(*slots[0])) state.attrs[key] = value;
}

/// x = T.Bind(value): a variable typed like the value.
void bind(Lowerer& lower, const StmtAst& s, bool /*top*/, std::vector<Stmt>* out) {
  const Ast& target = *s.target;
  const std::string& name = target.text;
  Slots slots = lower.bind(*s.value, "T.Bind", {"value"}, 1);
  Expr value = lower.expr(*slots[0]);
  Var var = lower.rebound_or(name, lower.inferred_var(name, value, target.loc));
  out->push_back(lower.guard(s.loc, [&] { return Bind::make(var, value); }));
  lower.define_var(name, target.loc, var);
}

/// x = T.env_thread("threadIdx.x"[, dtype]): a thread variable for T.launch_thread(x, n).
void env_thread(Lowerer& lower, const StmtAst& s, bool /*top*/, std::vector<Stmt>* /*out*/) {
  const Ast& target = *s.target;
  const std::string& name = target.text;
  Slots slots = lower.bind(*s.value, "T.env_thread", {"thread", "dtype"}, 1);
  std::string tag = lower.string_arg(slots[0], "the thread tag");
  DataType t = slots[1] != nullptr ? lower.dtype_arg(slots[1]) : DataType::Int(32);
  Var var = lower.guard(target.loc, [&] { return Var::make(name, t); });
  lower.guard(slots[0]->loc, [&] { return IterVar::make(var, tag); });
  Entity e;
  e.kind = Entity::kEnvThread;
  e.var = var;
  e.tag = tag;
  lower.define(name, target.loc, std::move(e));
}

// --- attribute scopes -------------------------------------------------------------------------

/// T.launch_thread("tag", extent) with a new variable named by `name_ast`, or
/// T.launch_thread(env_thread_var, extent). Defines the new variable in the current scope.
AttrHead launch_thread(Lowerer& lower, const Ast& call, const Ast* name_ast) {
  Slots s = lower.bind(call, "T.launch_thread", {"thread", "extent"}, 2);
  Expr extent = lower.expr(*s[1], DataType::Int(32));
  const Ast& thread = *s[0];
  if (thread.kind == AK::kString) {
    if (name_ast == nullptr) {
      lower.fail(call.loc, "name the thread variable: x = T.launch_thread(\"" + thread.text +
                               "\", ...) or 'with T.launch_thread(...) as x:'");
    }
    Var var = lower.guard(name_ast->loc, [&] { return Var::make(name_ast->text, extent.dtype()); });
    IterVar iv = lower.guard(thread.loc, [&] { return IterVar::make(var, thread.text); });
    lower.define_var(name_ast->text, name_ast->loc, var);
    return {Ref<Object>(iv.get()), attr::kThreadExtent, extent};
  }
  if (thread.kind != AK::kName) {
    lower.fail(thread.loc, "T.launch_thread needs a thread tag string or a T.env_thread variable");
  }
  const Entity* e = lower.lookup(thread.text);
  if (e == nullptr) lower.fail(thread.loc, "undefined name '" + thread.text + "'");
  if (e->kind != Entity::kEnvThread) {
    lower.fail(thread.loc, "'" + thread.text + "' is not a T.env_thread variable");
  }
  if (name_ast != nullptr) {
    lower.fail(name_ast->loc, "T.launch_thread(" + thread.text + ", ...) reuses '" + thread.text +
                                  "'; write it without assigning a name");
  }
  IterVar iv = lower.guard(thread.loc, [&] { return IterVar::make(e->var, e->tag); });
  return {Ref<Object>(iv.get()), attr::kThreadExtent, extent};
}

/// The launch of a plain variable in TVM's print, T.attr(threadIdx_x, "thread_extent", n):
/// TVM's IR has no tag there, so it comes from the name (`threadIdx_x`, `blockIdx_y_1`,
/// `vthread`: `.` spelled `_`, then TVM's optional `_<k>` uniquifier).
IterVar thread_of_var(const Var& var, const std::string& name) {
  std::string base = name;
  size_t cut = base.find_last_of('_');
  if (cut != std::string::npos && cut + 1 < base.size() &&
      base.find_first_not_of("0123456789", cut + 1) == std::string::npos) {
    base.resize(cut);
  }
  std::string tag;
  for (const char* prefix : {"threadIdx_", "blockIdx_"}) {
    std::string p = prefix;
    if (base.size() == p.size() + 1 && base.starts_with(p) &&
        std::string("xyz").find(base.back()) != std::string::npos) {
      tag = p.substr(0, p.size() - 1) + "." + base.back();
    }
  }
  if (base == "vthread") tag = base;
  PRIMJIT_USER_CHECK(!tag.empty())
      << "thread_extent on the plain variable '" << name
      << "': TVM's print drops the thread tag, so it is read from the name (threadIdx_x, "
         "blockIdx_y, vthread); rename it or write "
      << name << " = T.env_thread(\"threadIdx.x\") / T.launch_thread(\"threadIdx.x\", n)";
  return IterVar::make(var, tag);
}

/// T.attr(node, "key", value): node is None, a buffer, an env thread, a target or an expression.
AttrHead attr(Lowerer& lower, const Ast& call, const Ast* /*name*/) {
  Slots s = lower.bind(call, "T.attr", {"node", "attr_key", "value"}, 3);
  const Ast& node_ast = *s[0];
  Ref<Object> node;
  const Entity* e = node_ast.kind == AK::kName ? lower.lookup(node_ast.text) : nullptr;
  if (node_ast.kind == AK::kNone) {
    node = Ref<Object>();
  } else if (e != nullptr && e->kind != Entity::kVar) {
    if (e->kind == Entity::kBuffer) {
      node = Ref<Object>(e->buffer.get());
    } else {
      IterVar iv = lower.guard(node_ast.loc, [&] { return IterVar::make(e->var, e->tag); });
      node = Ref<Object>(iv.get());
    }
  } else if (t_call(node_ast) == "target") {
    node = Ref<Object>(lower.target(node_ast).get());
  } else if (e != nullptr && lower.string_arg(s[1], "the attribute key") == attr::kThreadExtent) {
    IterVar iv = lower.guard(node_ast.loc, [&] { return thread_of_var(e->var, node_ast.text); });
    node = Ref<Object>(iv.get());
  } else {
    node = Ref<Object>(lower.expr(node_ast).get());
  }
  std::string key = lower.string_arg(s[1], "the attribute key");
  Expr value = lower.expr(*s[2]);
  return {node, key, value};
}

// --- loops ------------------------------------------------------------------------------------

/// for i, j in T.grid(n, m): nested serial loops.
Stmt grid(Lowerer& lower, const StmtAst& s) {
  const Ast& iter = *s.value;
  const Ast& targets = *s.target;
  lower.no_keywords(iter, "T.grid");
  size_t n = num_args(iter);
  if (n == 0) lower.fail(iter.loc, "T.grid needs at least one extent");
  if (n != targets.items.size()) {
    lower.fail(targets.loc, "T.grid has " + plural(n, "extent") + " but " +
                                plural(targets.items.size(), "loop variable"));
  }
  std::vector<std::pair<Expr, Expr>> bounds;
  for (size_t i = 0; i < n; ++i) bounds.push_back(lower.loop_bounds(&arg(iter, i), nullptr));
  return lower.scoped([&] {
    std::vector<Var> vars;
    for (size_t i = 0; i < n; ++i) {
      const Ast& t = *targets.items[i];
      Expr ext = bounds[i].second;
      vars.push_back(lower.guard(t.loc, [&] { return Var::make(t.text, ext.dtype()); }));
      lower.define_var(t.text, t.loc, vars.back());
    }
    Stmt body = lower.block(s.body, 0, false);
    for (size_t i = n; i-- > 0;) {
      body = lower.guard(s.loc, [&] {
        return For::make(vars[i], bounds[i].first, bounds[i].second, ForKind::kSerial, body);
      });
    }
    return body;
  });
}

/// for i in T.serial(start, stop, annotations=...) and the other one-variable kinds;
/// T.thread_binding also takes thread="threadIdx.x".
template <ForKind kKind>
Stmt kind_loop(Lowerer& lower, const StmtAst& s) {
  const Ast& iter = *s.value;
  const std::string fname = "T." + iter.items[0]->text;
  bool binding = kKind == ForKind::kThreadBinding;
  Slots slots = binding ? lower.bind(iter, fname, {"start", "stop", "thread", "annotations"}, 1, 2)
                        : lower.bind(iter, fname, {"start", "stop", "annotations"}, 1, 2);
  Annotations annotations;
  std::string thread_tag;
  const Ast* ann = slots[binding ? 3 : 2];
  if (ann != nullptr) annotations = lower.attr_dict(*ann);
  if (binding) {
    if (slots[2] == nullptr) lower.fail(iter.loc, "T.thread_binding needs thread=\"threadIdx.x\"");
    thread_tag = lower.string_arg(slots[2], "thread");
  }
  return lower.single_loop(s, slots[0], slots[1], kKind, thread_tag, annotations);
}

// --- attribute values -------------------------------------------------------------------------

AttrValue target(Lowerer& lower, const Ast& call) { return AttrValue(lower.target(call)); }

constexpr Form kForms[] = {
    {.name = "evaluate", .stmt = evaluate},
    {.name = "func_attr", .stmt = func_attr},
    {.name = "Bind", .assign = bind},
    {.name = "env_thread", .assign = env_thread},
    {.name = "launch_thread", .scope = launch_thread, .scope_defines_name = true},
    {.name = "attr", .scope = attr},
    {.name = "grid", .loop = grid},
    {.name = "serial", .loop = kind_loop<ForKind::kSerial>},
    {.name = "parallel", .loop = kind_loop<ForKind::kParallel>},
    {.name = "vectorized", .loop = kind_loop<ForKind::kVectorized>},
    {.name = "unroll", .loop = kind_loop<ForKind::kUnrolled>},
    {.name = "thread_binding", .loop = kind_loop<ForKind::kThreadBinding>},
    {.name = "target", .attr_value = target},
    // Read by the function driver as the decorator @T.prim_func; no call position.
    {.name = "prim_func"},
    // A type: read by declarations (x = T.handle(...)) and annotations; no call position.
    {.name = "handle"},
};

}  // namespace

std::span<const Form> statement_forms() { return kForms; }

}  // namespace primjit::text_internal
