// The variables and buffers a statement uses without defining or declaring them: the
// parameters of an outlined kernel (SplitHostDevice) and the "not passed in" check of
// MakePackedAPI.
#pragma once

#include <unordered_set>
#include <vector>

#include "primjit/ir/functor.h"

namespace primjit::passes {

// Variables and buffers a region uses without defining them. Well-formed IR defines each
// variable once in the module, so "used and never defined inside" is exactly "free".
class FreeVarCollector : public StmtExprVisitor {
  // Visit statements with visit_stmt(), then read the results (in first-use order).
 public:
  void visit(const VarNode* op) override {
    if (seen_.insert(op).second) uses_.push_back(op);
  }
  void visit(const Bind* op) override {
    defined_.insert(op->var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const Let* op) override {
    defined_.insert(op->var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const For* op) override {
    defined_.insert(op->loop_var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const AttrStmt* op) override {
    if (const IterVarNode* iv = op->iter_var()) defined_.insert(iv->var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const AllocBuffer* op) override {
    defined_.insert(op->buffer->data.get());
    declared_.insert(op->buffer.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const DeclBuffer* op) override {
    declared_.insert(op->buffer.get());
    StmtExprVisitor::visit(op);
  }
  void visit_buffer_use(const Buffer& buffer) override {
    if (buffer_seen_.insert(buffer.get()).second) buffer_uses_.push_back(buffer);
  }

  std::vector<const VarNode*> free_vars() const {
    std::vector<const VarNode*> out;
    for (const VarNode* v : uses_) {
      if (!defined_.count(v)) out.push_back(v);
    }
    return out;
  }
  std::vector<Buffer> undeclared_buffers() const {
    std::vector<Buffer> out;
    for (const Buffer& b : buffer_uses_) {
      if (!declared_.count(b.get())) out.push_back(b);
    }
    return out;
  }

 private:
  std::vector<const VarNode*> uses_;
  std::unordered_set<const VarNode*> seen_, defined_;
  std::vector<Buffer> buffer_uses_;
  std::unordered_set<const BufferNode*> buffer_seen_, declared_;
};

}  // namespace primjit::passes
