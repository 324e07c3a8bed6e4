#include "primjit/ir/functor.h"

namespace primjit {

// =============================================================================================
// StmtExprVisitor
// =============================================================================================

void StmtExprVisitor::visit_expr(const Expr& expr) {
  switch (expr.kind()) {
#define PRIMJIT_EXPR_NODE(Kind, Struct)            \
  case NodeKind::k##Kind:                          \
    visit(static_cast<const Struct*>(expr.get())); \
    return;
#include "primjit/ir/node_kinds.def"
    default:
      PRIMJIT_INTERNAL_ERROR() << "not an expression: " << node_kind_name(expr.kind());
  }
}

void StmtExprVisitor::visit_stmt(const Stmt& stmt) {
  switch (stmt.kind()) {
#define PRIMJIT_STMT_NODE(Kind, Struct)            \
  case NodeKind::k##Kind:                          \
    visit(static_cast<const Struct*>(stmt.get())); \
    return;
#include "primjit/ir/node_kinds.def"
    default:
      PRIMJIT_INTERNAL_ERROR() << "not a statement: " << node_kind_name(stmt.kind());
  }
}

void StmtExprVisitor::visit_function(const PrimFunc& func) {
  for (const Var& param : func->params) visit_expr(param);
  for (const auto& [param, buffer] : func->buffer_map) visit_buffer_def(buffer);
  visit_stmt(func->body);
}

void StmtExprVisitor::visit_buffer_def(const Buffer& buffer) {
  visit_expr(buffer->data);
  for (const Expr& e : buffer->shape) visit_expr(e);
  for (const Expr& e : buffer->strides) visit_expr(e);
  visit_expr(buffer->elem_offset);
}

void StmtExprVisitor::visit(const IntImm*) {}
void StmtExprVisitor::visit(const FloatImm*) {}
void StmtExprVisitor::visit(const StringImm*) {}
void StmtExprVisitor::visit(const VarNode*) {}

#define PRIMJIT_VISIT_BINARY(Name)              \
  void StmtExprVisitor::visit(const Name* op) { \
    visit_expr(op->a);                          \
    visit_expr(op->b);                          \
  }
PRIMJIT_VISIT_BINARY(Add)
PRIMJIT_VISIT_BINARY(Sub)
PRIMJIT_VISIT_BINARY(Mul)
PRIMJIT_VISIT_BINARY(Div)
PRIMJIT_VISIT_BINARY(Mod)
PRIMJIT_VISIT_BINARY(FloorDiv)
PRIMJIT_VISIT_BINARY(FloorMod)
PRIMJIT_VISIT_BINARY(Min)
PRIMJIT_VISIT_BINARY(Max)
PRIMJIT_VISIT_BINARY(EQ)
PRIMJIT_VISIT_BINARY(NE)
PRIMJIT_VISIT_BINARY(LT)
PRIMJIT_VISIT_BINARY(LE)
PRIMJIT_VISIT_BINARY(GT)
PRIMJIT_VISIT_BINARY(GE)
PRIMJIT_VISIT_BINARY(And)
PRIMJIT_VISIT_BINARY(Or)
#undef PRIMJIT_VISIT_BINARY

void StmtExprVisitor::visit(const Not* op) { visit_expr(op->a); }
void StmtExprVisitor::visit(const Select* op) {
  visit_expr(op->condition);
  visit_expr(op->true_value);
  visit_expr(op->false_value);
}
void StmtExprVisitor::visit(const Cast* op) { visit_expr(op->value); }
void StmtExprVisitor::visit(const Let* op) {
  visit_expr(op->value);
  visit_expr(op->var);
  visit_expr(op->body);
}
void StmtExprVisitor::visit(const BufferLoad* op) {
  visit_buffer_use(op->buffer);
  for (const Expr& index : op->indices) visit_expr(index);
}
void StmtExprVisitor::visit(const Ramp* op) {
  visit_expr(op->base);
  visit_expr(op->stride);
}
void StmtExprVisitor::visit(const Broadcast* op) { visit_expr(op->value); }
void StmtExprVisitor::visit(const Call* op) {
  for (const Expr& arg : op->args) visit_expr(arg);
}

void StmtExprVisitor::visit(const Bind* op) {
  visit_expr(op->value);
  visit_expr(op->var);
}
void StmtExprVisitor::visit(const AttrStmt* op) {
  if (const IterVarNode* iv = op->iter_var()) visit_expr(iv->var);
  visit_expr(op->value);
  visit_stmt(op->body);
}
void StmtExprVisitor::visit(const AssertStmt* op) {
  visit_expr(op->condition);
  visit_expr(op->message);
}
void StmtExprVisitor::visit(const BufferStore* op) {
  visit_buffer_use(op->buffer);
  visit_expr(op->value);
  for (const Expr& index : op->indices) visit_expr(index);
}
void StmtExprVisitor::visit(const AllocBuffer* op) { visit_buffer_def(op->buffer); }
void StmtExprVisitor::visit(const DeclBuffer* op) { visit_buffer_def(op->buffer); }
void StmtExprVisitor::visit(const SeqStmt* op) {
  for (const Stmt& s : op->seq) visit_stmt(s);
}
void StmtExprVisitor::visit(const For* op) {
  visit_expr(op->min);
  visit_expr(op->extent);
  visit_expr(op->loop_var);
  visit_stmt(op->body);
}
void StmtExprVisitor::visit(const While* op) {
  visit_expr(op->condition);
  visit_stmt(op->body);
}
void StmtExprVisitor::visit(const IfThenElse* op) {
  visit_expr(op->condition);
  visit_stmt(op->then_case);
  if (op->else_case.defined()) visit_stmt(op->else_case);
}
void StmtExprVisitor::visit(const Evaluate* op) { visit_expr(op->value); }

// =============================================================================================
// StmtExprMutator
// =============================================================================================

Expr StmtExprMutator::mutate_expr(const Expr& expr) {
  switch (expr.kind()) {
#define PRIMJIT_EXPR_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return mutate(static_cast<const Struct*>(expr.get()));
#include "primjit/ir/node_kinds.def"
    default:
      PRIMJIT_INTERNAL_ERROR() << "not an expression: " << node_kind_name(expr.kind());
  }
}

Stmt StmtExprMutator::mutate_stmt(const Stmt& stmt) {
  switch (stmt.kind()) {
#define PRIMJIT_STMT_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return mutate(static_cast<const Struct*>(stmt.get()));
#include "primjit/ir/node_kinds.def"
    default:
      PRIMJIT_INTERNAL_ERROR() << "not a statement: " << node_kind_name(stmt.kind());
  }
}

bool StmtExprMutator::mutate_exprs(const std::vector<Expr>& in, std::vector<Expr>* out) {
  bool changed = false;
  std::vector<Expr> result;
  result.reserve(in.size());
  for (const Expr& e : in) {
    Expr m = mutate_expr(e);
    changed = changed || !m.same_as(e);
    result.push_back(std::move(m));
  }
  if (changed) *out = std::move(result);
  return changed;
}

void StmtExprMutator::remap_buffer(const Buffer& from, const Buffer& to) {
  if (from.same_as(to)) {
    buffer_remap_.erase(from.get());
  } else {
    buffer_remap_[from.get()] = to;
  }
}

Buffer StmtExprMutator::mutate_buffer_def(const Buffer& buffer) {
  Expr data = mutate_expr(buffer->data);
  std::vector<Expr> shape = buffer->shape;
  std::vector<Expr> strides = buffer->strides;
  bool changed = mutate_exprs(buffer->shape, &shape);
  changed = mutate_exprs(buffer->strides, &strides) || changed;
  Expr offset = mutate_expr(buffer->elem_offset);
  changed = changed || !data.same_as(buffer->data) || !offset.same_as(buffer->elem_offset);
  if (!changed) return buffer;
  const VarNode* data_var = data.as<VarNode>();
  PRIMJIT_ICHECK(data_var != nullptr)
      << "buffer '" << buffer->name << "': data must stay a variable, got "
      << node_kind_name(data.kind());
  Buffer result =
      Buffer::make(Var(data_var), buffer->dtype, std::move(shape), std::move(strides),
                   std::move(offset), buffer->name, buffer->data_alignment, buffer->offset_factor);
  remap_buffer(buffer, result);
  return result;
}

Buffer StmtExprMutator::mutate_buffer_use(const Buffer& buffer) {
  auto it = buffer_remap_.find(buffer.get());
  return it == buffer_remap_.end() ? buffer : it->second;
}

PrimFunc StmtExprMutator::mutate_function(const PrimFunc& func) {
  std::vector<std::pair<Var, Buffer>> buffer_map = func->buffer_map;
  bool changed = false;
  for (auto& [param, buffer] : buffer_map) {
    Buffer b = mutate_buffer_def(buffer);
    changed = changed || !b.same_as(buffer);
    buffer = std::move(b);
  }
  Stmt body = mutate_stmt(func->body);
  if (!changed && body.same_as(func->body)) return func;
  return PrimFunc::make(func->params, std::move(buffer_map), std::move(body), func->ret_type,
                        func->attrs);
}

Expr StmtExprMutator::mutate(const IntImm* op) { return Expr(op); }
Expr StmtExprMutator::mutate(const FloatImm* op) { return Expr(op); }
Expr StmtExprMutator::mutate(const StringImm* op) { return Expr(op); }
Expr StmtExprMutator::mutate(const VarNode* op) { return Expr(op); }

#define PRIMJIT_MUTATE_BINARY(Name)                            \
  Expr StmtExprMutator::mutate(const Name* op) {               \
    Expr a = mutate_expr(op->a);                               \
    Expr b = mutate_expr(op->b);                               \
    if (a.same_as(op->a) && b.same_as(op->b)) return Expr(op); \
    return Name::make(std::move(a), std::move(b));             \
  }
PRIMJIT_MUTATE_BINARY(Add)
PRIMJIT_MUTATE_BINARY(Sub)
PRIMJIT_MUTATE_BINARY(Mul)
PRIMJIT_MUTATE_BINARY(Div)
PRIMJIT_MUTATE_BINARY(Mod)
PRIMJIT_MUTATE_BINARY(FloorDiv)
PRIMJIT_MUTATE_BINARY(FloorMod)
PRIMJIT_MUTATE_BINARY(Min)
PRIMJIT_MUTATE_BINARY(Max)
PRIMJIT_MUTATE_BINARY(EQ)
PRIMJIT_MUTATE_BINARY(NE)
PRIMJIT_MUTATE_BINARY(LT)
PRIMJIT_MUTATE_BINARY(LE)
PRIMJIT_MUTATE_BINARY(GT)
PRIMJIT_MUTATE_BINARY(GE)
PRIMJIT_MUTATE_BINARY(And)
PRIMJIT_MUTATE_BINARY(Or)
#undef PRIMJIT_MUTATE_BINARY

Expr StmtExprMutator::mutate(const Not* op) {
  Expr a = mutate_expr(op->a);
  return a.same_as(op->a) ? Expr(op) : Not::make(std::move(a));
}

Expr StmtExprMutator::mutate(const Select* op) {
  Expr c = mutate_expr(op->condition);
  Expr t = mutate_expr(op->true_value);
  Expr f = mutate_expr(op->false_value);
  if (c.same_as(op->condition) && t.same_as(op->true_value) && f.same_as(op->false_value)) {
    return Expr(op);
  }
  return Select::make(std::move(c), std::move(t), std::move(f));
}

Expr StmtExprMutator::mutate(const Cast* op) {
  Expr v = mutate_expr(op->value);
  return v.same_as(op->value) ? Expr(op) : Cast::make(op->dtype, std::move(v));
}

Expr StmtExprMutator::mutate(const Let* op) {
  Expr value = mutate_expr(op->value);
  Expr var = mutate_expr(op->var);
  Expr body = mutate_expr(op->body);
  if (value.same_as(op->value) && var.same_as(op->var) && body.same_as(op->body)) return Expr(op);
  const VarNode* v = var.as<VarNode>();
  PRIMJIT_ICHECK(v != nullptr) << "Let variable must stay a variable";
  return Let::make(Var(v), std::move(value), std::move(body));
}

Expr StmtExprMutator::mutate(const BufferLoad* op) {
  Buffer buffer = mutate_buffer_use(op->buffer);
  std::vector<Expr> indices = op->indices;
  bool changed = mutate_exprs(op->indices, &indices);
  if (!changed && buffer.same_as(op->buffer)) return Expr(op);
  return BufferLoad::make(std::move(buffer), std::move(indices));
}

Expr StmtExprMutator::mutate(const Ramp* op) {
  Expr base = mutate_expr(op->base);
  Expr stride = mutate_expr(op->stride);
  if (base.same_as(op->base) && stride.same_as(op->stride)) return Expr(op);
  return Ramp::make(std::move(base), std::move(stride), op->lanes);
}

Expr StmtExprMutator::mutate(const Broadcast* op) {
  Expr v = mutate_expr(op->value);
  return v.same_as(op->value) ? Expr(op) : Broadcast::make(std::move(v), op->lanes);
}

Expr StmtExprMutator::mutate(const Call* op) {
  std::vector<Expr> args = op->args;
  if (!mutate_exprs(op->args, &args)) return Expr(op);
  return op->op.defined() ? Call::make(op->dtype, op->op, std::move(args))
                          : Call::make(op->dtype, op->callee, std::move(args));
}

Stmt StmtExprMutator::mutate(const Bind* op) {
  Expr value = mutate_expr(op->value);
  Expr var = mutate_expr(op->var);
  if (value.same_as(op->value) && var.same_as(op->var)) return Stmt(op);
  const VarNode* v = var.as<VarNode>();
  PRIMJIT_ICHECK(v != nullptr) << "Bind variable must stay a variable";
  return Bind::make(Var(v), std::move(value));
}

Stmt StmtExprMutator::mutate(const AttrStmt* op) {
  Ref<Object> node = op->node;
  if (const IterVarNode* iv = op->iter_var()) {
    Expr var = mutate_expr(iv->var);
    if (!var.same_as(iv->var)) {
      const VarNode* v = var.as<VarNode>();
      PRIMJIT_ICHECK(v != nullptr) << "thread variable must stay a variable";
      node = IterVar::make(Var(v), iv->thread_tag);
    }
  }
  Expr value = mutate_expr(op->value);
  Stmt body = mutate_stmt(op->body);
  if (node.same_as(op->node) && value.same_as(op->value) && body.same_as(op->body)) {
    return Stmt(op);
  }
  return AttrStmt::make(std::move(node), op->key, std::move(value), std::move(body));
}

Stmt StmtExprMutator::mutate(const AssertStmt* op) {
  Expr c = mutate_expr(op->condition);
  Expr m = mutate_expr(op->message);
  if (c.same_as(op->condition) && m.same_as(op->message)) return Stmt(op);
  return AssertStmt::make(std::move(c), std::move(m));
}

Stmt StmtExprMutator::mutate(const BufferStore* op) {
  Buffer buffer = mutate_buffer_use(op->buffer);
  Expr value = mutate_expr(op->value);
  std::vector<Expr> indices = op->indices;
  bool changed = mutate_exprs(op->indices, &indices);
  if (!changed && buffer.same_as(op->buffer) && value.same_as(op->value)) return Stmt(op);
  return BufferStore::make(std::move(buffer), std::move(value), std::move(indices));
}

Stmt StmtExprMutator::mutate(const AllocBuffer* op) {
  Buffer buffer = mutate_buffer_def(op->buffer);
  return buffer.same_as(op->buffer) ? Stmt(op) : AllocBuffer::make(buffer, op->annotations);
}

Stmt StmtExprMutator::mutate(const DeclBuffer* op) {
  Buffer buffer = mutate_buffer_def(op->buffer);
  return buffer.same_as(op->buffer) ? Stmt(op) : DeclBuffer::make(buffer);
}

Stmt StmtExprMutator::mutate(const SeqStmt* op) { return mutate_seq(op, nullptr); }

Stmt StmtExprMutator::mutate_seq(const SeqStmt* op,
                                 const std::function<bool(const Stmt&, const Stmt&)>& drop) {
  bool changed = false;
  std::vector<Stmt> seq;
  seq.reserve(op->seq.size());
  for (const Stmt& s : op->seq) {
    Stmt m = mutate_stmt(s);
    if (drop && drop(s, m)) {
      changed = true;
      continue;
    }
    changed = changed || !m.same_as(s);
    seq.push_back(std::move(m));
  }
  return changed ? SeqStmt::make(std::move(seq)) : Stmt(op);
}

Stmt StmtExprMutator::mutate(const For* op) {
  Expr min = mutate_expr(op->min);
  Expr extent = mutate_expr(op->extent);
  Expr var = mutate_expr(op->loop_var);
  Stmt body = mutate_stmt(op->body);
  if (min.same_as(op->min) && extent.same_as(op->extent) && var.same_as(op->loop_var) &&
      body.same_as(op->body)) {
    return Stmt(op);
  }
  const VarNode* v = var.as<VarNode>();
  PRIMJIT_ICHECK(v != nullptr) << "loop variable must stay a variable";
  return For::make(Var(v), std::move(min), std::move(extent), op->for_kind, std::move(body),
                   op->thread_tag, op->annotations);
}

Stmt StmtExprMutator::mutate(const While* op) {
  Expr c = mutate_expr(op->condition);
  Stmt body = mutate_stmt(op->body);
  if (c.same_as(op->condition) && body.same_as(op->body)) return Stmt(op);
  return While::make(std::move(c), std::move(body));
}

Stmt StmtExprMutator::mutate(const IfThenElse* op) {
  Expr c = mutate_expr(op->condition);
  Stmt then_case = mutate_stmt(op->then_case);
  Stmt else_case = op->else_case.defined() ? mutate_stmt(op->else_case) : Stmt();
  if (c.same_as(op->condition) && then_case.same_as(op->then_case) &&
      else_case.same_as(op->else_case)) {
    return Stmt(op);
  }
  return IfThenElse::make(std::move(c), std::move(then_case), std::move(else_case));
}

Stmt StmtExprMutator::mutate(const Evaluate* op) {
  Expr v = mutate_expr(op->value);
  return v.same_as(op->value) ? Stmt(op) : Evaluate::make(std::move(v));
}

// =============================================================================================
// post_order_visit, substitute
// =============================================================================================

namespace {

class PostOrderVisitor : public StmtExprVisitor {
 public:
  explicit PostOrderVisitor(const std::function<void(const Ref<Object>&)>& f) : f_(f) {}
  void visit_expr(const Expr& expr) override {
    StmtExprVisitor::visit_expr(expr);
    f_(expr);
  }
  void visit_stmt(const Stmt& stmt) override {
    StmtExprVisitor::visit_stmt(stmt);
    f_(stmt);
  }

 private:
  const std::function<void(const Ref<Object>&)>& f_;
};

class Substituter : public StmtExprMutator {
 public:
  explicit Substituter(const VarMap& map) : map_(map) {}
  Expr mutate(const VarNode* op) override {
    auto it = map_.find(op);
    return it == map_.end() ? Expr(op) : it->second;
  }

 private:
  const VarMap& map_;
};

}  // namespace

void post_order_visit(const Stmt& stmt, const std::function<void(const Ref<Object>&)>& f) {
  PostOrderVisitor(f).visit_stmt(stmt);
}

void post_order_visit(const Expr& expr, const std::function<void(const Ref<Object>&)>& f) {
  PostOrderVisitor(f).visit_expr(expr);
}

namespace {
// The strongest call effect of a tree; stops looking once it reaches kOpaque.
class EffectFinder : public StmtExprVisitor {
 public:
  CallEffect effect = CallEffect::kPure;
  void visit_expr(const Expr& e) override {
    if (effect != CallEffect::kOpaque) StmtExprVisitor::visit_expr(e);
  }
  void visit(const Call* op) override {
    effect = std::max(effect, op->effect());
    StmtExprVisitor::visit(op);
  }
};
}  // namespace

CallEffect call_effect_of(const Expr& expr) {
  EffectFinder finder;
  finder.visit_expr(expr);
  return finder.effect;
}

CallEffect call_effect_of(const Stmt& stmt) {
  EffectFinder finder;
  finder.visit_stmt(stmt);
  return finder.effect;
}

Expr substitute(const Expr& expr, const VarMap& map) {
  if (map.empty()) return expr;
  return Substituter(map).mutate_expr(expr);
}

Stmt substitute(const Stmt& stmt, const VarMap& map) {
  if (map.empty()) return stmt;
  return Substituter(map).mutate_stmt(stmt);
}

PrimFunc substitute(const PrimFunc& func, const VarMap& map) {
  if (map.empty()) return func;
  return Substituter(map).mutate_function(func);
}

}  // namespace primjit
