#include "passes/fresh_definitions.h"

#include "primjit/error.h"

namespace primjit::passes {
namespace {

class FreshCopier : public StmtExprMutator {
 public:
  explicit FreshCopier(const VarMap& pre) : map_(pre) {}

  Expr mutate(const VarNode* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? Expr(op) : it->second;
  }

  Stmt mutate(const Bind* op) override {
    Expr value = mutate_expr(op->value);
    return Bind::make(renew(op->var.get()), value);
  }

  Stmt mutate(const For* op) override {
    Expr min = mutate_expr(op->min);
    Expr extent = mutate_expr(op->extent);
    Var var = renew(op->loop_var.get());
    return For::make(var, min, extent, op->for_kind, mutate_stmt(op->body), op->thread_tag,
                     op->annotations);
  }

  Expr mutate(const Let* op) override {
    Expr value = mutate_expr(op->value);
    Var var = renew(op->var.get());
    return Let::make(var, value, mutate_expr(op->body));
  }

  Stmt mutate(const AttrStmt* op) override {
    const IterVarNode* iv = op->iter_var();
    if (iv == nullptr) return StmtExprMutator::mutate(op);
    Expr value = mutate_expr(op->value);
    // A thread variable launched twice inside the copy keeps one replacement.
    auto it = map_.find(iv->var.get());
    Var var = it != map_.end() ? Var(it->second.as<VarNode>()) : renew(iv->var.get());
    return AttrStmt::make(IterVar::make(var, iv->thread_tag), op->key, value,
                          mutate_stmt(op->body));
  }

  Stmt mutate(const AllocBuffer* op) override {
    renew(op->buffer->data.get());
    return AllocBuffer::make(copy_buffer(op->buffer), op->annotations);
  }

  Stmt mutate(const DeclBuffer* op) override { return DeclBuffer::make(copy_buffer(op->buffer)); }

 private:
  Var renew(const VarNode* var) {
    Var copy = fresh_copy(var);
    map_[var] = copy;
    return copy;
  }

  // A new buffer object (fresh identity) with the rewritten fields; later uses follow it.
  Buffer copy_buffer(const Buffer& buffer) {
    Buffer rewritten = mutate_buffer_def(buffer);
    Buffer copy = Buffer::make(rewritten->data, rewritten->dtype, rewritten->shape,
                               rewritten->strides, rewritten->elem_offset, rewritten->name,
                               rewritten->data_alignment, rewritten->offset_factor);
    remap_buffer(buffer, copy);
    return copy;
  }

  VarMap map_;
};

}  // namespace

Var fresh_copy(const VarNode* var) { return Var::make_like(*var); }

Stmt copy_with_fresh_definitions(const Stmt& stmt, const VarMap& pre) {
  return FreshCopier(pre).mutate_stmt(stmt);
}

}  // namespace primjit::passes
