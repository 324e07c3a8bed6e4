// Traversals over the IR.
//
// ExprFunctor<Derived, R, Args...>  CRTP dispatch over expression kinds: Derived provides
//                                   `R visit(const Add*, Args...)` for every kind (a missing
//                                   overload is a compile error, on purpose).
// StmtExprVisitor                   read-only recursive walk; override what you need.
// StmtExprMutator                   rebuilding walk; a node is rebuilt only when a child changed,
//                                   so an unchanged tree comes back as the very same nodes.
#pragma once

#include <functional>
#include <unordered_map>

#include "primjit/error.h"
#include "primjit/ir/function.h"
#include "primjit/ir/stmt.h"

namespace primjit {

template <typename Derived, typename R, typename... Args>
class ExprFunctor {
 public:
  R visit_expr(const Expr& expr, Args... args) {
    PRIMJIT_ICHECK(expr.defined()) << "visiting an undefined expression";
    switch (expr.kind()) {
#define PRIMJIT_EXPR_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return self().visit(static_cast<const Struct*>(expr.get()), args...);
#include "primjit/ir/node_kinds.def"
      default:
        break;
    }
    PRIMJIT_INTERNAL_ERROR() << "not an expression kind: " << node_kind_name(expr.kind());
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

template <typename Derived, typename R, typename... Args>
class StmtFunctor {
 public:
  R visit_stmt(const Stmt& stmt, Args... args) {
    PRIMJIT_ICHECK(stmt.defined()) << "visiting an undefined statement";
    switch (stmt.kind()) {
#define PRIMJIT_STMT_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return self().visit(static_cast<const Struct*>(stmt.get()), args...);
#include "primjit/ir/node_kinds.def"
      default:
        break;
    }
    PRIMJIT_INTERNAL_ERROR() << "not a statement kind: " << node_kind_name(stmt.kind());
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }
};

/// Recursive read-only walk over statements and expressions.
class StmtExprVisitor {
 public:
  virtual ~StmtExprVisitor() = default;

  virtual void visit_expr(const Expr& expr);
  virtual void visit_stmt(const Stmt& stmt);
  /// Visits a function's buffer_map buffers (as definitions) and body.
  virtual void visit_function(const PrimFunc& func);
  /// A buffer's definition site (buffer_map, AllocBuffer, DeclBuffer): visits its data
  /// variable, shape, strides and elem_offset.
  virtual void visit_buffer_def(const Buffer& buffer);
  /// A buffer's use (BufferLoad, BufferStore). Does nothing by default: a buffer's fields belong
  /// to its definition.
  virtual void visit_buffer_use(const Buffer& buffer) {}

#define PRIMJIT_EXPR_NODE(Kind, Struct) virtual void visit(const Struct* op);
#define PRIMJIT_STMT_NODE(Kind, Struct) virtual void visit(const Struct* op);
#include "primjit/ir/node_kinds.def"
};

/// Recursive rebuilding walk. Overrides receive the node; returning `Expr(op)` / `Stmt(op)`
/// keeps it. Buffers whose definition is rewritten (by mutate_buffer_def) are replaced at all
/// their later uses automatically.
class StmtExprMutator {
 public:
  virtual ~StmtExprMutator() = default;

  virtual Expr mutate_expr(const Expr& expr);
  virtual Stmt mutate_stmt(const Stmt& stmt);
  /// Mutates the buffer_map buffers (as definitions) and the body; same function if unchanged.
  virtual PrimFunc mutate_function(const PrimFunc& func);
  /// A buffer definition: mutates data, shape, strides and elem_offset. When the result differs,
  /// later uses of the old buffer are redirected to it.
  virtual Buffer mutate_buffer_def(const Buffer& buffer);
  /// A buffer use: the redirected buffer, if its definition was rewritten.
  virtual Buffer mutate_buffer_use(const Buffer& buffer);

#define PRIMJIT_EXPR_NODE(Kind, Struct) virtual Expr mutate(const Struct* op);
#define PRIMJIT_STMT_NODE(Kind, Struct) virtual Stmt mutate(const Struct* op);
#include "primjit/ir/node_kinds.def"

 protected:
  /// Mutates each element; returns true (and fills `out`) only when one changed.
  bool mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out);
  /// Mutates each statement of a sequence and drops those for which `drop(original, mutated)`
  /// is true (no dropping when `drop` is empty); the same node when nothing changed.
  Stmt mutate_seq(const SeqStmt* op,
                  const std::function<bool(const Stmt& original, const Stmt& mutated)>& drop);
  /// Redirects uses of `from` to `to` from now on.
  void remap_buffer(const Buffer& from, const Buffer& to);

 private:
  std::unordered_map<const BufferNode*, Buffer> buffer_remap_;
};

/// Calls `f` on every expression and statement, children before parents.
void post_order_visit(const Stmt& stmt, const std::function<void(const Ref<Object>&)>& f);
void post_order_visit(const Expr& expr, const std::function<void(const Ref<Object>&)>& f);

/// The strongest effect (CallEffect order) of the calls in `expr` or `stmt`: kPure when there
/// is none. Loads and stores are not calls; a call to another function counts as kOpaque.
CallEffect call_effect_of(const Expr& expr);
CallEffect call_effect_of(const Stmt& stmt);
/// True when a call in `expr` may write memory or do anything else observable.
inline bool has_side_effects(const Expr& expr) { return has_side_effects(call_effect_of(expr)); }

/// Replaces variables by expressions (also inside buffer shapes, strides and offsets).
using VarMap = std::unordered_map<const VarNode*, Expr>;
Expr substitute(const Expr& expr, const VarMap& map);
Stmt substitute(const Stmt& stmt, const VarMap& map);
/// Substitutes in the buffer_map buffers and the body; the parameter list is kept.
PrimFunc substitute(const PrimFunc& func, const VarMap& map);

}  // namespace primjit
