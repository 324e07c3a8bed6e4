// Structural hashing: walks one tree in the very order structural equality compares two
// (structural_internal.h), so `equal => same hash` holds by construction. The value is the
// same in every build and on every machine: it keys the caches.
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/hash_mix.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/structural.h"

namespace primjit {
namespace {

// Tags that keep differently shaped sequences apart.
enum class Tag : uint64_t {
  kAbsent = 0x5a17,
  kNewVar,
  kVarRef,
  kNewBuffer,
  kBufferRef,
  kNaN,
};

/// Walks one tree in structural equality's order and folds every compared field into a 64-bit
/// value. Variables and buffers contribute the index of their first occurrence, never an address.
class Hasher : public ExprFunctor<Hasher, void>, public StmtFunctor<Hasher, void> {
 public:
  uint64_t value() const { return h_; }

  void add(uint64_t v) { h_ = hashing::mix64(hashing::combine(h_, v)); }
  void add(Tag tag) { add(static_cast<uint64_t>(tag)); }
  void add(NodeKind kind) { add(static_cast<uint64_t>(kind) + 0x100); }
  void add(const std::string& text) {
    add(text.size());
    add(hashing::fnv1a(text));
  }
  void add(DataType t) {
    add((static_cast<uint64_t>(t.code()) << 32) | (static_cast<uint64_t>(t.bits()) << 16) |
        static_cast<uint64_t>(t.lanes()));
  }
  void add_float(double v) {
    if (std::isnan(v)) {
      add(Tag::kNaN);
    } else {
      add(std::bit_cast<uint64_t>(v));
    }
  }

  // --- expressions ------------------------------------------------------------------------

  void expr(const Expr& e) {
    if (!e.defined()) return add(Tag::kAbsent);
    add(e.kind());
    add(e.dtype());
    visit_expr(e);
  }
  void exprs(const std::vector<Expr>& es) {
    add(es.size());
    for (const Expr& e : es) expr(e);
  }

  void visit(const IntImm* op) { add(static_cast<uint64_t>(op->value)); }
  void visit(const FloatImm* op) { add_float(op->value); }
  void visit(const StringImm* op) { add(op->value); }
  void visit(const VarNode* op) { var(op); }
  template <typename N, NodeKind K>
  void visit(const BinaryNode<N, K>* op) {
    expr(op->a);
    expr(op->b);
  }
  void visit(const Not* op) { expr(op->a); }
  void visit(const Select* op) {
    expr(op->condition);
    expr(op->true_value);
    expr(op->false_value);
  }
  void visit(const Cast* op) { expr(op->value); }
  void visit(const Let* op) {
    var(op->var);
    expr(op->value);
    expr(op->body);
  }
  void visit(const BufferLoad* op) {
    buffer(op->buffer);
    exprs(op->indices);
  }
  void visit(const Ramp* op) {
    expr(op->base);
    expr(op->stride);
    add(static_cast<uint64_t>(op->lanes));
  }
  void visit(const Broadcast* op) {
    expr(op->value);
    add(static_cast<uint64_t>(op->lanes));
  }
  void visit(const Call* op) {
    add(static_cast<uint64_t>(op->op.defined()));
    add(op->op.defined() ? op->op->name : op->callee->name);
    exprs(op->args);
  }

  // --- binders ----------------------------------------------------------------------------

  void var(const Var& v) {
    if (!v.defined()) return add(Tag::kAbsent);
    var(v.get());
  }
  void var(const VarNode* v) {
    auto [it, inserted] = vars_.emplace(v, vars_.size());
    if (!inserted) {
      add(Tag::kVarRef);
      add(it->second);
      return;
    }
    add(Tag::kNewVar);
    add(v->dtype);
    add(v->pointee);
    add(v->storage_scope);
    add(static_cast<uint64_t>(v->is_size_var));
  }

  void buffer(const Buffer& b) {
    if (!b.defined()) return add(Tag::kAbsent);
    auto [it, inserted] = buffers_.emplace(b.get(), buffers_.size());
    if (!inserted) {
      add(Tag::kBufferRef);
      add(it->second);
      return;
    }
    add(Tag::kNewBuffer);
    var(b->data);
    add(b->dtype);
    exprs(b->shape);
    exprs(b->strides);
    expr(b->elem_offset);
    add(static_cast<uint64_t>(b->data_alignment));
    add(static_cast<uint64_t>(b->offset_factor));
  }

  // --- statements -------------------------------------------------------------------------

  void stmt(const Stmt& s) {
    if (!s.defined()) return add(Tag::kAbsent);
    add(s.kind());
    visit_stmt(s);
  }

  void visit(const Bind* op) {
    var(op->var);
    expr(op->value);
  }
  void visit(const AttrStmt* op) {
    object(op->node);
    add(op->key);
    expr(op->value);
    stmt(op->body);
  }
  void visit(const AssertStmt* op) {
    expr(op->condition);
    expr(op->message);
  }
  void visit(const BufferStore* op) {
    buffer(op->buffer);
    expr(op->value);
    exprs(op->indices);
  }
  void visit(const AllocBuffer* op) {
    buffer(op->buffer);
    attrs(op->annotations);
  }
  void visit(const DeclBuffer* op) { buffer(op->buffer); }
  void visit(const SeqStmt* op) {
    add(op->seq.size());
    for (const Stmt& s : op->seq) stmt(s);
  }
  void visit(const For* op) {
    var(op->loop_var);
    expr(op->min);
    expr(op->extent);
    add(static_cast<uint64_t>(op->for_kind));
    stmt(op->body);
    add(op->thread_tag);
    attrs(op->annotations);
  }
  void visit(const While* op) {
    expr(op->condition);
    stmt(op->body);
  }
  void visit(const IfThenElse* op) {
    expr(op->condition);
    stmt(op->then_case);
    stmt(op->else_case);
  }
  void visit(const Evaluate* op) { expr(op->value); }

  // --- other objects ----------------------------------------------------------------------

  void object(const Ref<Object>& node) {
    if (!node.defined()) return add(Tag::kAbsent);
    NodeKind kind = node.kind();
    if (is_expr_kind(kind)) return expr(Expr(static_cast<const ExprNode*>(node.get())));
    if (is_stmt_kind(kind)) return stmt(Stmt(static_cast<const StmtNode*>(node.get())));
    add(kind);
    switch (kind) {
      case NodeKind::kIterVar:
        var(node.as<IterVarNode>()->var);
        add(node.as<IterVarNode>()->thread_tag);
        return;
      case NodeKind::kBuffer:
        return buffer(Buffer(node.as<BufferNode>()));
      case NodeKind::kOp:
        return add(node.as<OpNode>()->name);
      case NodeKind::kGlobalVar:
        return add(node.as<GlobalVarNode>()->name);
      case NodeKind::kTarget:
        return target(Target(Ref<TargetNode>(node.as<TargetNode>())));
      case NodeKind::kPrimFunc:
        return function(PrimFunc(node.as<PrimFuncNode>()));
      case NodeKind::kIRModule:
        add(node.as<IRModuleNode>()->functions.size());
        for (const auto& [gvar, func] : node.as<IRModuleNode>()->functions) {
          object(gvar);
          function(func);
        }
        return;
      default:
        PRIMJIT_INTERNAL_ERROR() << "structural hash: unhandled node kind " << node_kind_name(kind);
    }
  }

  void target(const Target& t) {
    if (!t.defined()) return add(Tag::kAbsent);
    add(t->kind);
    add(t->arch);
    target(t->host);
  }

  void attr_value(const AttrValue& v) {
    add(v.index());
    if (v.is_bool()) {
      add(static_cast<uint64_t>(v.as_bool()));
    } else if (v.is_int()) {
      add(static_cast<uint64_t>(v.as_int()));
    } else if (v.is_float()) {
      add_float(v.as_float());
    } else if (v.is_string()) {
      add(v.as_string());
    } else if (v.is_target()) {
      target(v.as_target());
    } else if (v.is_expr()) {
      expr(v.as_expr());
    } else {
      add(v.as_array().size());
      for (const AttrValue& item : v.as_array()) attr_value(item);
    }
  }

  void attrs(const Attrs& map) {
    add(map.size());
    for (const auto& [key, value] : map) {
      add(key);
      attr_value(value);
    }
  }

  // --- functions --------------------------------------------------------------------------

  void function(const PrimFunc& f) {
    add(f->params.size());
    for (const Var& param : f->params) var(param);
    add(f->buffer_map.size());
    for (const auto& [param, buf] : f->buffer_map) {
      var(param);
      buffer(buf);
    }
    add(f->ret_type);
    attrs(f->attrs);
    stmt(f->body);
  }

 private:
  uint64_t h_ = 0x243f6a8885a308d3ULL;
  std::unordered_map<const VarNode*, uint64_t> vars_;
  std::unordered_map<const BufferNode*, uint64_t> buffers_;
};

}  // namespace

size_t structural_hash(const IRModule& m) {
  Hasher outer;
  if (!m.defined()) {
    outer.add(Tag::kAbsent);
    return outer.value();
  }
  outer.add(m->functions.size());
  for (const auto& [gvar, func] : m->functions) {
    outer.add(gvar->name);
    Hasher inner;  // each function numbers its variables and buffers from zero
    inner.function(func);
    outer.add(inner.value());
  }
  return outer.value();
}

size_t structural_hash(const PrimFunc& f) {
  Hasher hasher;
  if (!f.defined()) {
    hasher.add(Tag::kAbsent);
  } else {
    hasher.function(f);
  }
  return hasher.value();
}

size_t structural_hash(const Stmt& s) {
  Hasher hasher;
  hasher.stmt(s);
  return hasher.value();
}

size_t structural_hash(const Expr& e) {
  Hasher hasher;
  hasher.expr(e);
  return hasher.value();
}

}  // namespace primjit
