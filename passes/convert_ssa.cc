// ConvertSSA: every variable is defined once across the module.
//
// Requires: nothing (typically runs after a pass that duplicated code).
// Ensures:  a variable defined a second time — by a parameter, a buffer_map entry, Bind, For,
//           Let, a thread launch or AllocBuffer, in the same or another function — is replaced
//           at that definition (and its uses within the definition's scope) by a fresh
//           variable with the same name hint; buffers whose fields change are rebuilt. A thread
//           variable launched again within the same function is kept, as VerifyWellFormed
//           allows; in another function it is renamed.
// Example:
//   for i in range(4): x: T.int32 = i      =>      for i in range(4): x: T.int32 = i
//   for j in range(4): x: T.int32 = j              for j in range(4): x_1: T.int32 = j
#include <unordered_map>
#include <unordered_set>

#include "ir/scope_stack.h"
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"

namespace primjit::passes {
namespace {

class SSAConverter : public StmtExprMutator {
 public:
  explicit SSAConverter(std::unordered_set<const VarNode*>& defined) : defined_(defined) {}

  PrimFunc run(const PrimFunc& func) {
    bool changed = false;
    std::vector<Var> params;
    for (const Var& p : func->params) {
      Var q = define(p.get());
      changed = changed || !q.same_as(p);
      params.push_back(q);
    }
    std::vector<std::pair<Var, Buffer>> buffer_map;
    for (const auto& [param, buffer] : func->buffer_map) {
      // The first occurrence of a variable in the buffer_map defines it.
      auto define_fields = [&](const Expr& e) {
        if (const auto* v = e.as<VarNode>(); v != nullptr && !is_visible(v)) define(v);
      };
      define_fields(buffer->data);
      for (const Expr& e : buffer->shape) define_fields(e);
      for (const Expr& e : buffer->strides) define_fields(e);
      define_fields(buffer->elem_offset);
      Buffer b = mutate_buffer_def(buffer);
      changed = changed || !b.same_as(buffer);
      buffer_map.emplace_back(Var(mutate_expr(param).as<VarNode>()), b);
    }
    Stmt body = mutate_stmt(func->body);
    if (!changed && body.same_as(func->body)) return func;
    return PrimFunc::make(params, buffer_map, body, func->ret_type, func->attrs);
  }

  Expr mutate(const VarNode* op) override {
    auto it = replacement_.find(op);
    return it == replacement_.end() || it->second.empty() ? Expr(op) : Expr(it->second.back());
  }

  Stmt mutate(const Bind* op) override {
    Expr value = mutate_expr(op->value);
    Var var = define(op->var.get());
    if (value.same_as(op->value) && var.same_as(op->var)) return Stmt(op);
    return Bind::make(var, value);
  }

  Stmt mutate(const For* op) override {
    Expr min = mutate_expr(op->min);
    Expr extent = mutate_expr(op->extent);
    return scoped([&] {
      Var var = define(op->loop_var.get());
      Stmt body = mutate_stmt(op->body);
      if (min.same_as(op->min) && extent.same_as(op->extent) && var.same_as(op->loop_var) &&
          body.same_as(op->body)) {
        return Stmt(op);
      }
      return For::make(var, min, extent, op->for_kind, body, op->thread_tag, op->annotations);
    });
  }

  Expr mutate(const Let* op) override {
    Expr value = mutate_expr(op->value);
    return scoped_expr([&] {
      Var var = define(op->var.get());
      Expr body = mutate_expr(op->body);
      if (value.same_as(op->value) && var.same_as(op->var) && body.same_as(op->body)) {
        return Expr(op);
      }
      return Let::make(var, value, body);
    });
  }

  Stmt mutate(const AttrStmt* op) override {
    const IterVarNode* iv = op->iter_var();
    Expr value = mutate_expr(op->value);
    return scoped([&] {
      Ref<Object> node = op->node;
      if (iv != nullptr) {
        Var var =
            launched_.count(iv->var.get()) > 0 ? current(iv->var.get()) : define(iv->var.get());
        launched_.insert(iv->var.get());
        if (!var.same_as(iv->var)) node = IterVar::make(var, iv->thread_tag);
      }
      Stmt body = mutate_stmt(op->body);
      if (node.same_as(op->node) && value.same_as(op->value) && body.same_as(op->body)) {
        return Stmt(op);
      }
      return AttrStmt::make(node, op->key, value, body);
    });
  }

  Stmt mutate(const While* op) override {
    Expr cond = mutate_expr(op->condition);
    Stmt body = scoped([&] { return mutate_stmt(op->body); });
    if (cond.same_as(op->condition) && body.same_as(op->body)) return Stmt(op);
    return While::make(cond, body);
  }

  Stmt mutate(const IfThenElse* op) override {
    Expr cond = mutate_expr(op->condition);
    Stmt then_case = scoped([&] { return mutate_stmt(op->then_case); });
    Stmt else_case;
    if (op->else_case.defined()) else_case = scoped([&] { return mutate_stmt(op->else_case); });
    if (cond.same_as(op->condition) && then_case.same_as(op->then_case) &&
        else_case.same_as(op->else_case)) {
      return Stmt(op);
    }
    return IfThenElse::make(cond, then_case, else_case);
  }

  Stmt mutate(const AllocBuffer* op) override {
    define(op->buffer->data.get());
    Buffer b = mutate_buffer_def(op->buffer);
    return b.same_as(op->buffer) ? Stmt(op) : AllocBuffer::make(b, op->annotations);
  }

 private:
  bool is_visible(const VarNode* v) const { return visible_.count(v) > 0; }

  Var current(const VarNode* v) const {
    auto it = replacement_.find(v);
    return it == replacement_.end() || it->second.empty() ? Var(v) : it->second.back();
  }

  // Defines `v` in the current scope; a second definition gets a fresh variable.
  Var define(const VarNode* v) {
    Var result(v);
    if (!defined_.insert(v).second) {
      result = fresh_copy(v);
      defined_.insert(result.get());
    }
    replacement_[v].push_back(result);
    scopes_.current().push_back(v);
    visible_.insert(v);
    return result;
  }

  template <typename F>
  Stmt scoped(F&& body) {
    return scopes_.with_new_scope([&] {
      Stmt s = body();
      end_scope();
      return s;
    });
  }
  template <typename F>
  Expr scoped_expr(F&& body) {
    return scopes_.with_new_scope([&] {
      Expr e = body();
      end_scope();
      return e;
    });
  }
  void end_scope() {
    for (const VarNode* v : scopes_.current()) {
      replacement_[v].pop_back();
      visible_.erase(v);
    }
  }

  std::unordered_set<const VarNode*>& defined_;  // module-wide
  std::unordered_map<const VarNode*, std::vector<Var>> replacement_;
  std::unordered_set<const VarNode*> visible_;
  std::unordered_set<const VarNode*> launched_;  // thread variables launched in this function
  ScopeStack<std::vector<const VarNode*>> scopes_;
};

}  // namespace

Pass make_convert_ssa_pass() {
  return Pass{"ConvertSSA", "give every variable a single definition across the module",
              [](const IRModule& module, const PassArgs& args) {
                check_no_args("ConvertSSA", args);
                std::unordered_set<const VarNode*> defined;
                IRModule out = module;
                for (const auto& [gvar, func] : module->functions) {
                  PrimFunc converted = SSAConverter(defined).run(func);
                  if (!converted.same_as(func)) out = out.with_function(gvar->name, converted);
                }
                return out;
              }};
}

}  // namespace primjit::passes
