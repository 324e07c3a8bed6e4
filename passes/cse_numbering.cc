// CommonSubexprElim's first walk: occurrences, value numbers, memory versions and scopes
// (cse_numbering.h).
#include "passes/cse_numbering.h"

#include <algorithm>
#include <cstring>

#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes::cse {
namespace {

// The first word of a key: node kind and dtype.
int64_t kind_word(const Expr& e) {
  DataType t = e.dtype();
  return (static_cast<int64_t>(e.kind()) << 40) | (static_cast<int64_t>(t.code()) << 32) |
         (static_cast<int64_t>(t.bits()) << 16) | t.lanes();
}

}  // namespace

bool is_leaf(const Expr& e) {
  NodeKind k = e.kind();
  return k == NodeKind::kIntImm || k == NodeKind::kFloatImm || k == NodeKind::kStringImm ||
         k == NodeKind::kVar;
}

bool has_opaque_children(const Expr& e) {
  if (e.kind() == NodeKind::kLet) return true;
  const auto* call = e.as<Call>();
  return call != nullptr && call->is_op("address_of");
}

void Numbering::run(const PrimFunc& func) {
  open_scope(ScopeKind::kFunction);
  for (const Var& p : func->params) define_var(p.get());
  for (const auto& [param, buffer] : func->buffer_map) define_buffer(buffer, true);
  walk_scope_body(func->body);
  scopes[0].occ_end = static_cast<int>(occs.size());
}

int Numbering::open_scope(ScopeKind kind) {
  Scope s;
  if (!scopes.empty()) {
    const Scope& parent = scopes[current_];
    s.depth = parent.depth + 1;
    s.branch_depth = parent.branch_depth;
    s.isolated_root = parent.isolated_root;
  }
  int id = static_cast<int>(scopes.size());
  if (kind == ScopeKind::kBranch) s.branch_depth = s.depth;
  if (kind == ScopeKind::kIsolated) s.isolated_root = id;
  s.occ_begin = static_cast<int>(occs.size());
  scopes.push_back(std::move(s));
  return id;
}

template <typename F>
void Numbering::in_new_scope(ScopeKind kind, F&& body) {
  int parent = current_;
  current_ = open_scope(kind);
  body();
  scopes[current_].occ_end = static_cast<int>(occs.size());
  current_ = parent;
}

Numbering::VarInfo& Numbering::var_info(const VarNode* v) {
  VarInfo& info = vars_[v];
  if (info.value < 0) info.value = values.fresh(ValueInfo{});
  return info;
}

void Numbering::define_buffer(const Buffer& buffer, bool with_fields) {
  buffer_depth_[buffer.get()] = depth();
  auto define = [&](const Expr& e) {
    const auto* v = e.as<VarNode>();
    if (v != nullptr && var_info(v).depth == kUnknownDepth) define_var(v);
  };
  define(buffer->data);
  if (!with_fields) return;
  for (const Expr& e : buffer->shape) define(e);
  for (const Expr& e : buffer->strides) define(e);
  if (buffer->elem_offset.defined()) define(buffer->elem_offset);
}

// Versions are kept per memory region; a pointer that may point anywhere writes (and its
// loads see) every region.
void Numbering::write(const VarNode* data) {
  const VarNode* region = alias_.region(data);
  if (region == nullptr) return write_everything();
  last_write_[region] = ++clock_;
  any_write_ = clock_;
}
uint64_t Numbering::version_of(const VarNode* data) const {
  const VarNode* region = alias_.region(data);
  if (region == nullptr) return any_write_;
  auto it = last_write_.find(region);
  return std::max(it == last_write_.end() ? 0 : it->second, global_write_);
}
// Before a loop body or condition: what any iteration writes may already have been written.
void Numbering::write_loop_carried(const Stmt& body, const Expr* condition) {
  bool effect = condition != nullptr && has_side_effects(*condition);
  std::vector<const VarNode*> written;
  post_order_visit(body, [&](const Ref<Object>& node) {
    if (const auto* store = node.as<BufferStore>()) written.push_back(store->buffer->data.get());
    if (const auto* call = node.as<Call>()) effect |= call->has_side_effects();
  });
  for (const VarNode* data : written) write(data);
  if (effect) write_everything();
}

void Numbering::walk_scope_body(const Stmt& s) {
  if (const auto* seq = s.as<SeqStmt>()) {
    for (const Stmt& child : seq->seq) walk_scope_body(child);
    return;
  }
  StmtSpan span;
  span.start_stamp = clock_;
  then_begin_ = else_begin_ = -1;
  walk_stmt(s);
  span.occ_end = static_cast<int>(occs.size());
  if (s.as<IfThenElse>() != nullptr) {  // a loop whose body ends in an If leaves them set too
    span.then_begin = then_begin_;
    span.else_begin = else_begin_;
  }
  scopes[current_].stmts.push_back(span);
}

// Expressions of one statement, in the order the rewrite visits them. A call with side
// effects among them makes every load of the statement a new version (the order of the
// call and the loads is not pinned down), and what follows sees its writes: when the walk
// meets one, it starts the statement's expressions again after a write to everything.
template <typename Range>
void Numbering::walk_direct_range(const Range& exprs) {
  size_t begin = occs.size();
  saw_side_effect_ = false;
  for (const Expr* e : exprs) {
    if (e->defined()) walk_expr(*e, false);
  }
  if (!saw_side_effect_) return;
  occs.resize(begin);
  write_everything();
  for (const Expr* e : exprs) {
    if (e->defined()) walk_expr(*e, false);
  }
  write_everything();
}

void Numbering::walk_stmt(const Stmt& s) {
  switch (s.kind()) {
    case NodeKind::kBind: {
      const auto* op = s.as<Bind>();
      int root = static_cast<int>(occs.size());
      walk_direct({&op->value});
      bool recorded = !is_leaf(op->value);
      int value = recorded ? occs[root].value : leaf_value(op->value);
      vars_[op->var.get()] = VarInfo{value, depth()};  // after leaf_value: it may grow vars_
      bindings.push_back(Binding{op->var});
      if (recorded) occs[root].existing = static_cast<int>(bindings.size()) - 1;
      return;
    }
    case NodeKind::kAttrStmt: {
      const auto* op = s.as<AttrStmt>();
      walk_direct({&op->value});
      write_loop_carried(op->body);  // a launch runs its body once per thread
      in_new_scope(ScopeKind::kIsolated, [&] {
        if (const IterVarNode* iv = op->iter_var()) define_var(iv->var.get());
        walk_scope_body(op->body);
      });
      return;
    }
    case NodeKind::kAssertStmt: {
      const auto* op = s.as<AssertStmt>();
      walk_direct({&op->condition, &op->message});
      return;
    }
    case NodeKind::kBufferStore: {
      const auto* op = s.as<BufferStore>();
      std::vector<const Expr*> exprs = {&op->value};
      for (const Expr& index : op->indices) exprs.push_back(&index);
      walk_direct(exprs);
      write(op->buffer->data.get());
      return;
    }
    case NodeKind::kAllocBuffer:
      define_buffer(s.as<AllocBuffer>()->buffer, false);
      return;
    case NodeKind::kDeclBuffer:
      buffer_depth_[s.as<DeclBuffer>()->buffer.get()] = depth();
      return;
    case NodeKind::kFor: {
      const auto* op = s.as<For>();
      walk_direct({&op->min, &op->extent});
      bool isolated = op->for_kind == ForKind::kThreadBinding;
      write_loop_carried(op->body);
      in_new_scope(isolated ? ScopeKind::kIsolated : ScopeKind::kLoop, [&] {
        define_var(op->loop_var.get());
        walk_scope_body(op->body);
      });
      return;
    }
    case NodeKind::kWhile: {
      const auto* op = s.as<While>();
      // The condition runs before every iteration: it lives in a scope of its own, beside
      // the body, where no Bind can be placed.
      write_loop_carried(op->body, &op->condition);
      in_new_scope(ScopeKind::kLoop, [&] { walk_direct({&op->condition}); });
      in_new_scope(ScopeKind::kLoop, [&] { walk_scope_body(op->body); });
      return;
    }
    case NodeKind::kIfThenElse: {
      const auto* op = s.as<IfThenElse>();
      walk_direct({&op->condition});
      int then_begin = static_cast<int>(occs.size());
      int else_begin = -1;
      in_new_scope(ScopeKind::kBranch, [&] { walk_scope_body(op->then_case); });
      if (op->else_case.defined()) {
        else_begin = static_cast<int>(occs.size());
        in_new_scope(ScopeKind::kBranch, [&] { walk_scope_body(op->else_case); });
      }
      then_begin_ = then_begin;  // after the branches, whose statements set them too
      else_begin_ = else_begin;
      return;
    }
    case NodeKind::kEvaluate:
      walk_direct({&s.as<Evaluate>()->value});
      return;
    default:
      PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(s.kind());
  }
}

int Numbering::leaf_value(const Expr& e) {
  key_.clear();
  key_.push_back(kind_word(e));
  switch (e.kind()) {
    case NodeKind::kIntImm:
      key_.push_back(e.as<IntImm>()->value);
      break;
    case NodeKind::kFloatImm: {
      double v = e.as<FloatImm>()->value;
      int64_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      key_.push_back(bits);
      break;
    }
    case NodeKind::kStringImm: {
      auto [it, added] = strings_.try_emplace(e.as<StringImm>()->value, strings_.size());
      key_.push_back(static_cast<int64_t>(it->second));
      break;
    }
    default:  // a variable
      return var_info(e.as<VarNode>()).value;
  }
  return values.intern(key_, ValueInfo{});
}

Numbering::Summary Numbering::walk_expr(const Expr& e, bool guarded) {
  if (const auto* v = e.as<VarNode>()) {
    const VarInfo& info = var_info(v);
    return Summary{info.value, info.depth, 0};
  }
  if (is_leaf(e)) return Summary{leaf_value(e), 0, 0};
  int id = static_cast<int>(occs.size());
  occs.emplace_back();
  Summary sum;
  ValueInfo info;
  size_t operands = operands_.size();  // this node's operands are pushed above here
  bool fresh = false;
  auto operand = [&](const Expr& child, bool child_guarded) {
    Summary c = walk_expr(child, guarded || child_guarded);
    operands_.push_back(c.value);
    sum.def_depth = std::max(sum.def_depth, c.def_depth);
    sum.stamp = std::max(sum.stamp, c.stamp);
    const ValueInfo& ci = values.info(c.value);
    info.height = std::max(info.height, ci.height + 1);
    info.may_fault = info.may_fault || ci.may_fault;
  };
  int64_t payload[2];
  int payload_size = 0;
  info.height = 1;
  info.shareable = !e.dtype().is_handle() && !e.dtype().is_void();
  if (has_opaque_children(e)) {
    fresh = true;
    sum.def_depth = kUnknownDepth;
    saw_side_effect_ = saw_side_effect_ || has_side_effects(e);
  } else if (const auto* load = e.as<BufferLoad>()) {
    auto it = buffer_depth_.find(load->buffer.get());
    sum.def_depth = it == buffer_depth_.end() ? kUnknownDepth : it->second;
    uint64_t version = version_of(load->buffer->data.get());
    sum.stamp = version;
    payload[payload_size++] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(load->buffer.get()));
    payload[payload_size++] = static_cast<int64_t>(version);
    info.may_fault = true;
    for (const Expr& index : load->indices) operand(index, false);
  } else if (const auto* call = e.as<Call>()) {
    // Op shadows Ref::get(); operator-> gives the node.
    const Object* callee = call->op.defined()
                               ? static_cast<const Object*>(call->op.operator->())
                               : static_cast<const Object*>(call->callee.operator->());
    payload[payload_size++] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(callee));
    fresh = call->effect() != CallEffect::kPure;
    saw_side_effect_ = saw_side_effect_ || call->has_side_effects();
    info.may_fault = true;
    if (call->is_op("likely")) info.shareable = false;
    bool arms_guarded = call->is_op("if_then_else");
    for (size_t i = 0; i < call->args.size(); ++i) operand(call->args[i], arms_guarded && i > 0);
  } else if (const auto* ramp = e.as<Ramp>()) {
    payload[payload_size++] = ramp->lanes;
    info.shareable = false;
    operand(ramp->base, false);
    operand(ramp->stride, false);
  } else if (const auto* bc = e.as<Broadcast>()) {
    payload[payload_size++] = bc->lanes;
    info.shareable = false;
    operand(bc->value, false);
  } else if (const auto* sel = e.as<Select>()) {
    operand(sel->condition, false);
    operand(sel->true_value, false);
    operand(sel->false_value, false);
  } else if (const auto* cast = e.as<Cast>()) {
    operand(cast->value, false);
    occs[id].cheap = is_leaf(cast->value);
  } else if (const auto* no = e.as<Not>()) {
    operand(no->a, false);
  } else {
    walk_binary(e, operand, &info);
  }
  if (fresh) info.shareable = false;
  key_.clear();
  key_.push_back(kind_word(e));
  key_.insert(key_.end(), payload, payload + payload_size);
  key_.insert(key_.end(), operands_.begin() + operands, operands_.end());
  operands_.resize(operands);
  sum.value = fresh ? values.fresh(info) : values.intern(key_, info);

  Occurrence& occ = occs[id];
  occ.expr = e.get();
  occ.value = sum.value;
  occ.end = static_cast<int>(occs.size());
  occ.scope = current_;
  occ.def_depth = sum.def_depth;
  occ.stamp = sum.stamp;
  occ.guarded = guarded;
  return sum;
}

template <typename F>
void Numbering::walk_binary(const Expr& e, F& operand, ValueInfo* info) {
  const Expr* a = nullptr;
  const Expr* b = nullptr;
  switch (e.kind()) {
#define PRIMJIT_CSE_BINARY(Name) \
  case NodeKind::k##Name:        \
    a = &e.as<Name>()->a;        \
    b = &e.as<Name>()->b;        \
    break;
    PRIMJIT_CSE_BINARY(Add)
    PRIMJIT_CSE_BINARY(Sub)
    PRIMJIT_CSE_BINARY(Mul)
    PRIMJIT_CSE_BINARY(Div)
    PRIMJIT_CSE_BINARY(Mod)
    PRIMJIT_CSE_BINARY(FloorDiv)
    PRIMJIT_CSE_BINARY(FloorMod)
    PRIMJIT_CSE_BINARY(Min)
    PRIMJIT_CSE_BINARY(Max)
    PRIMJIT_CSE_BINARY(EQ)
    PRIMJIT_CSE_BINARY(NE)
    PRIMJIT_CSE_BINARY(LT)
    PRIMJIT_CSE_BINARY(LE)
    PRIMJIT_CSE_BINARY(GT)
    PRIMJIT_CSE_BINARY(GE)
    PRIMJIT_CSE_BINARY(And)
    PRIMJIT_CSE_BINARY(Or)
#undef PRIMJIT_CSE_BINARY
    default:
      PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(e.kind());
  }
  operand(*a, false);
  operand(*b, false);
  // Integer division by anything but a constant other than 0 and -1 may trap.
  NodeKind k = e.kind();
  bool divides = k == NodeKind::kDiv || k == NodeKind::kMod || k == NodeKind::kFloorDiv ||
                 k == NodeKind::kFloorMod;
  if (divides && e.dtype().is_int_or_bool()) {
    std::optional<int64_t> c = as_const_int(*b);
    if (!c || *c == 0 || *c == -1) info->may_fault = true;
  }
}

}  // namespace primjit::passes::cse
