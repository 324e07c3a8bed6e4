// Structural equality, hashing and diff.
//
// Both sides are walked together in one fixed order; the hasher walks one side in the very same
// order, so `equal => same hash` holds by construction. Variables and buffers are binders: the
// first time a pair of them is met they are matched (if their non-name fields agree), and from
// then on they must keep matching each other, in both directions. Names never matter.
//
// Traversal order (each field in declaration order unless noted):
//   IRModule    function names (sorted, as stored), then each function with fresh matchings
//   PrimFunc    params[i], buffer_map[i] (var, then buffer), ret_type, attrs (by key), body
//   Buffer      at its first meeting only: data, dtype, shape, strides, elem_offset,
//               data_alignment, offset_factor (name ignored); later meetings check the matching
//   Var         at its first meeting: dtype, pointee, storage_scope, is_size_var (name ignored)
//   Expr        kind, dtype, then the node's fields (Let: var, value, body; Call: op or callee
//               by name, args; BufferLoad: buffer, indices; Ramp: base, stride, lanes; ...)
//   Stmt        kind, then fields (For: loop_var, min, extent, kind, body, thread_tag,
//               annotations; AttrStmt: node, key, value, body; IfThenElse: condition,
//               then_case, else_case; ...)
//   AttrStmt node: IterVar (var, thread_tag), Expr, Buffer, GlobalVar/Op (by name), Target.
//   Attrs       size, then key/value pairs in key order; AttrValue: alternative, then value.
// Floating values compare by bit pattern, except that any NaN equals any NaN.
#include "primjit/ir/structural.h"

#include <bit>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/hash.h"

namespace primjit {
namespace {

// =============================================================================================
// Brief descriptions for diff messages (kept local: a diff must not depend on the printer)
// =============================================================================================

const char* infix_symbol(NodeKind kind) {
  switch (kind) {
    case NodeKind::kAdd:
      return "+";
    case NodeKind::kSub:
      return "-";
    case NodeKind::kMul:
      return "*";
    case NodeKind::kFloorDiv:
      return "//";
    case NodeKind::kFloorMod:
      return "%";
    case NodeKind::kEQ:
      return "==";
    case NodeKind::kNE:
      return "!=";
    case NodeKind::kLT:
      return "<";
    case NodeKind::kLE:
      return "<=";
    case NodeKind::kGT:
      return ">";
    case NodeKind::kGE:
      return ">=";
    case NodeKind::kAnd:
      return "and";
    case NodeKind::kOr:
      return "or";
    default:
      return nullptr;
  }
}

std::string float_text(double value) {
  char buffer[64];
  auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
  std::string text(buffer, result.ptr);
  if (std::isfinite(value) && text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

std::string elements(size_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

/// A one-line rendering of an expression in a TVMScript-like syntax, cut off after ~80 chars.
class BriefPrinter : public ExprFunctor<BriefPrinter, void> {
 public:
  static std::string of(const Expr& expr) {
    BriefPrinter printer;
    printer.expr(expr);
    return printer.out_;
  }

  void expr(const Expr& e) {
    if (out_.size() >= kLimit) {
      if (!truncated_) out_ += "...";
      truncated_ = true;
      return;
    }
    if (!e.defined()) {
      out_ += "(absent)";
      return;
    }
    visit_expr(e);
  }

  void visit(const IntImm* op) {
    if (op->dtype == DataType::Int(32)) {
      out_ += std::to_string(op->value);
    } else if (op->dtype.is_bool()) {
      out_ += op->value != 0 ? "True" : "False";
    } else {
      out_ += "T." + op->dtype.str() + "(" + std::to_string(op->value) + ")";
    }
  }
  void visit(const FloatImm* op) {
    out_ += "T." + op->dtype.str() + "(" + float_text(op->value) + ")";
  }
  void visit(const StringImm* op) { out_ += quoted(op->value); }
  void visit(const VarNode* op) { out_ += op->name; }

  template <typename N, NodeKind K>
  void visit(const BinaryNode<N, K>* op) {
    if (const char* symbol = infix_symbol(K)) {
      operand(op->a);
      out_ += std::string(" ") + symbol + " ";
      operand(op->b);
      return;
    }
    const char* name = K == NodeKind::kMin       ? "T.min"
                       : K == NodeKind::kMax     ? "T.max"
                       : K == NodeKind::kMod     ? "T.truncmod"
                       : op->dtype.is_floating() ? nullptr
                                                 : "T.truncdiv";
    if (name == nullptr) {  // floating Div
      operand(op->a);
      out_ += " / ";
      operand(op->b);
      return;
    }
    call(name, {op->a, op->b});
  }
  void visit(const Not* op) {
    out_ += "not ";
    operand(op->a);
  }
  void visit(const Select* op) {
    call("T.Select", {op->condition, op->true_value, op->false_value});
  }
  void visit(const Cast* op) {
    out_ += "T.Cast(\"" + op->dtype.str() + "\", ";
    expr(op->value);
    out_ += ")";
  }
  void visit(const Let* op) {
    out_ += "T.Let(" + op->var->name + ", ";
    expr(op->value);
    out_ += ", ";
    expr(op->body);
    out_ += ")";
  }
  void visit(const BufferLoad* op) {
    out_ += op->buffer->name;
    list("[", op->indices, "]");
  }
  void visit(const Ramp* op) {
    out_ += "T.Ramp(";
    expr(op->base);
    out_ += ", ";
    expr(op->stride);
    out_ += ", " + std::to_string(op->lanes) + ")";
  }
  void visit(const Broadcast* op) {
    out_ += "T.Broadcast(";
    expr(op->value);
    out_ += ", " + std::to_string(op->lanes) + ")";
  }
  void visit(const Call* op) {
    out_ += op->op.defined() ? "T." + op->op->name : "@" + op->callee->name;
    list("(", op->args, ")");
  }

 private:
  static constexpr size_t kLimit = 80;

  void operand(const Expr& e) {
    bool parens = e.defined() && (infix_symbol(e.kind()) != nullptr || e.kind() == NodeKind::kNot ||
                                  ((e.kind() == NodeKind::kDiv) && e.dtype().is_floating()));
    if (parens) out_ += "(";
    expr(e);
    if (parens) out_ += ")";
  }
  void call(const char* name, std::initializer_list<Expr> args) {
    out_ += name;
    list("(", std::vector<Expr>(args), ")");
  }
  void list(const char* open, const std::vector<Expr>& items, const char* close) {
    out_ += open;
    for (size_t i = 0; i < items.size(); ++i) {
      if (i > 0) out_ += ", ";
      expr(items[i]);
    }
    out_ += close;
  }

  std::string out_;
  bool truncated_ = false;
};

std::string describe(const Expr& e) {
  if (!e.defined()) return "(absent)";
  return std::string(node_kind_name(e.kind())) + " " + BriefPrinter::of(e);
}

std::string describe_with_dtype(const Expr& e) {
  if (!e.defined()) return "(absent)";
  return describe(e) + " (" + e.dtype().str() + ")";
}

std::string describe_var(const VarNode* v) {
  std::string out = "Var " + v->name + " (" + v->dtype.str();
  if (v->is_pointer()) {
    out += " to " + v->pointee.str() + " in " + quoted(v->storage_scope);
  }
  if (v->is_size_var) out += ", size var";
  return out + ")";
}

std::string describe_buffer(const BufferNode* b) {
  std::string out = "Buffer " + b->name + " (" + b->dtype.str() + "[";
  for (size_t i = 0; i < b->shape.size(); ++i) {
    out += (i > 0 ? ", " : "") + BriefPrinter::of(b->shape[i]);
  }
  return out + "], " + quoted(b->data->storage_scope) + ")";
}

std::string loop_text(const For* op) {
  std::string out = "For " + op->loop_var->name + " in T.";
  out += op->for_kind == ForKind::kThreadBinding ? "thread_binding" : for_kind_name(op->for_kind);
  out += "(" + BriefPrinter::of(op->min) + ", " + BriefPrinter::of(op->extent);
  if (!op->thread_tag.empty()) out += ", thread=" + quoted(op->thread_tag);
  return out + ")";
}

std::string describe(const Stmt& s) {
  if (!s.defined()) return "(absent)";
  switch (s.kind()) {
    case NodeKind::kBind: {
      const auto* op = s.as<Bind>();
      return "Bind " + op->var->name + " = " + BriefPrinter::of(op->value);
    }
    case NodeKind::kAttrStmt: {
      const auto* op = s.as<AttrStmt>();
      std::string node;
      if (const IterVarNode* iv = op->iter_var()) node = iv->var->name + " ";
      return "AttrStmt " + node + quoted(op->key) + " = " + BriefPrinter::of(op->value);
    }
    case NodeKind::kAssertStmt: {
      const auto* op = s.as<AssertStmt>();
      return "AssertStmt " + BriefPrinter::of(op->condition) + ", " + BriefPrinter::of(op->message);
    }
    case NodeKind::kBufferStore: {
      const auto* op = s.as<BufferStore>();
      std::string out = "BufferStore " + op->buffer->name + "[";
      for (size_t i = 0; i < op->indices.size(); ++i) {
        out += (i > 0 ? ", " : "") + BriefPrinter::of(op->indices[i]);
      }
      return out + "] = " + BriefPrinter::of(op->value);
    }
    case NodeKind::kAllocBuffer:
      return "AllocBuffer " + describe_buffer(s.as<AllocBuffer>()->buffer.get());
    case NodeKind::kDeclBuffer:
      return "DeclBuffer " + describe_buffer(s.as<DeclBuffer>()->buffer.get());
    case NodeKind::kSeqStmt:
      return "SeqStmt of " + std::to_string(s.as<SeqStmt>()->seq.size()) + " statements";
    case NodeKind::kFor:
      return loop_text(s.as<For>());
    case NodeKind::kWhile:
      return "While " + BriefPrinter::of(s.as<While>()->condition);
    case NodeKind::kIfThenElse: {
      const auto* op = s.as<IfThenElse>();
      return "IfThenElse " + BriefPrinter::of(op->condition) +
             (op->else_case.defined() ? " with else" : " without else");
    }
    case NodeKind::kEvaluate:
      return "Evaluate " + BriefPrinter::of(s.as<Evaluate>()->value);
    default:
      return node_kind_name(s.kind());
  }
}

std::string describe(const Target& t) { return t.defined() ? t.str() : "(no target)"; }

std::string describe(const AttrValue& v) {
  if (v.is_bool()) return v.as_bool() ? "True" : "False";
  if (v.is_int()) return std::to_string(v.as_int());
  if (v.is_float()) return float_text(v.as_float());
  if (v.is_string()) return quoted(v.as_string());
  if (v.is_target()) return describe(v.as_target());
  if (v.is_expr()) return describe(v.as_expr());
  std::string out = "[";
  for (size_t i = 0; i < v.as_array().size(); ++i) {
    if (out.size() > 80) return out + ", ...]";
    out += (i > 0 ? ", " : "") + describe(v.as_array()[i]);
  }
  return out + "]";
}

std::string describe(const Ref<Object>& node) {
  if (!node.defined()) return "(absent)";
  NodeKind kind = node.kind();
  if (is_expr_kind(kind)) return describe(Expr(static_cast<const ExprNode*>(node.get())));
  if (is_stmt_kind(kind)) return describe(Stmt(static_cast<const StmtNode*>(node.get())));
  switch (kind) {
    case NodeKind::kIterVar: {
      const auto* iv = node.as<IterVarNode>();
      return "IterVar " + iv->var->name + " " + quoted(iv->thread_tag);
    }
    case NodeKind::kBuffer:
      return describe_buffer(node.as<BufferNode>());
    case NodeKind::kOp:
      return "Op T." + node.as<OpNode>()->name;
    case NodeKind::kGlobalVar:
      return "GlobalVar @" + node.as<GlobalVarNode>()->name;
    case NodeKind::kTarget:
      return describe(Target(Ref<TargetNode>(node.as<TargetNode>())));
    default:
      return node_kind_name(kind);
  }
}

// =============================================================================================
// Shared leaf rules
// =============================================================================================

bool same_float(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::bit_cast<uint64_t>(a) == std::bit_cast<uint64_t>(b);
}

bool same_var_fields(const VarNode* a, const VarNode* b) {
  return a->dtype == b->dtype && a->pointee == b->pointee && a->storage_scope == b->storage_scope &&
         a->is_size_var == b->is_size_var;
}

// =============================================================================================
// Equality (and diff)
// =============================================================================================

/// Walks two trees together. In diff mode it also records where they first differ: the leaf
/// message, then path components collected innermost-first while unwinding.
class Comparer : public ExprFunctor<Comparer, bool, const ExprNode*>,
                 public StmtFunctor<Comparer, bool, const StmtNode*> {
 public:
  explicit Comparer(bool diff) : diff_(diff) {}

  /// Forgets the variable and buffer matchings (each module function starts fresh).
  void reset() {
    lhs_vars_.clear();
    rhs_vars_.clear();
    lhs_buffers_.clear();
    rhs_buffers_.clear();
  }

  /// "path: message" of the first difference found (diff mode only).
  std::string diff_text() const {
    std::string path;
    for (auto it = path_.rbegin(); it != path_.rend(); ++it) {
      if (!path.empty() && (*it)[0] != '[') path += ".";
      path += *it;
    }
    return path.empty() ? message_ : path + ": " + message_;
  }

  // --- expressions ------------------------------------------------------------------------

  bool expr(const Expr& a, const Expr& b) {
    if (!a.defined() || !b.defined()) {
      return a.defined() == b.defined() || fail([&] { return describe(a) + " vs " + describe(b); });
    }
    if (a.kind() != b.kind()) {
      return fail([&] { return describe(a) + " vs " + describe(b); });
    }
    if (a.dtype() != b.dtype()) {
      return fail([&] { return describe_with_dtype(a) + " vs " + describe_with_dtype(b); });
    }
    return visit_expr(a, b.get());
  }

  bool exprs(const char* name, const std::vector<Expr>& a, const std::vector<Expr>& b) {
    if (a.size() != b.size()) return count_mismatch(name, a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) {
      if (!at(name, i, expr(a[i], b[i]))) return false;
    }
    return true;
  }

  bool visit(const IntImm* a, const ExprNode* b) {
    return a->value == static_cast<const IntImm*>(b)->value || fail_exprs(a, b);
  }
  bool visit(const FloatImm* a, const ExprNode* b) {
    return same_float(a->value, static_cast<const FloatImm*>(b)->value) || fail_exprs(a, b);
  }
  bool visit(const StringImm* a, const ExprNode* b) {
    return a->value == static_cast<const StringImm*>(b)->value || fail_exprs(a, b);
  }
  bool visit(const VarNode* a, const ExprNode* b) { return var(a, static_cast<const VarNode*>(b)); }
  template <typename N, NodeKind K>
  bool visit(const BinaryNode<N, K>* a, const ExprNode* b) {
    const auto* o = static_cast<const BinaryNode<N, K>*>(b);
    return field("a", expr(a->a, o->a)) && field("b", expr(a->b, o->b));
  }
  bool visit(const Not* a, const ExprNode* b) {
    return field("a", expr(a->a, static_cast<const Not*>(b)->a));
  }
  bool visit(const Select* a, const ExprNode* b) {
    const auto* o = static_cast<const Select*>(b);
    return field("condition", expr(a->condition, o->condition)) &&
           field("true_value", expr(a->true_value, o->true_value)) &&
           field("false_value", expr(a->false_value, o->false_value));
  }
  bool visit(const Cast* a, const ExprNode* b) {
    return field("value", expr(a->value, static_cast<const Cast*>(b)->value));
  }
  bool visit(const Let* a, const ExprNode* b) {
    const auto* o = static_cast<const Let*>(b);
    return field("var", var(a->var, o->var)) && field("value", expr(a->value, o->value)) &&
           field("body", expr(a->body, o->body));
  }
  bool visit(const BufferLoad* a, const ExprNode* b) {
    const auto* o = static_cast<const BufferLoad*>(b);
    return field("buffer", buffer(a->buffer, o->buffer)) &&
           exprs("indices", a->indices, o->indices);
  }
  bool visit(const Ramp* a, const ExprNode* b) {
    const auto* o = static_cast<const Ramp*>(b);
    return field("base", expr(a->base, o->base)) && field("stride", expr(a->stride, o->stride)) &&
           (a->lanes == o->lanes || fail_exprs(a, b));
  }
  bool visit(const Broadcast* a, const ExprNode* b) {
    const auto* o = static_cast<const Broadcast*>(b);
    return field("value", expr(a->value, o->value)) && (a->lanes == o->lanes || fail_exprs(a, b));
  }
  bool visit(const Call* a, const ExprNode* b) {
    const auto* o = static_cast<const Call*>(b);
    if (a->op.defined() != o->op.defined()) return fail_exprs(a, b);
    if (a->op.defined() ? a->op->name != o->op->name : a->callee->name != o->callee->name) {
      return fail_exprs(a, b);
    }
    return exprs("args", a->args, o->args);
  }

  // --- binders ----------------------------------------------------------------------------

  bool var(const Var& a, const Var& b) {
    if (!a.defined() || !b.defined()) {
      return a.defined() == b.defined() || fail([&] { return describe(a) + " vs " + describe(b); });
    }
    return var(a.get(), b.get());
  }

  bool var(const VarNode* a, const VarNode* b) {
    auto left = lhs_vars_.find(a);
    auto right = rhs_vars_.find(b);
    if (left != lhs_vars_.end() || right != rhs_vars_.end()) {
      if (left != lhs_vars_.end() && left->second == b) return true;
      return fail([&] {
        if (left != lhs_vars_.end()) {
          return "variable " + a->name + " was matched with " + left->second->name +
                 " earlier, here it meets " + b->name;
        }
        return "variable " + b->name + " (right side) was matched with " + right->second->name +
               " earlier, here it meets " + a->name;
      });
    }
    if (!same_var_fields(a, b)) {
      return fail([&] { return describe_var(a) + " vs " + describe_var(b); });
    }
    lhs_vars_.emplace(a, b);
    rhs_vars_.emplace(b, a);
    return true;
  }

  bool buffer(const Buffer& a, const Buffer& b) {
    if (!a.defined() || !b.defined()) {
      return a.defined() == b.defined() || fail([&] {
               return (a.defined() ? describe_buffer(a.get()) : "(absent)") + " vs " +
                      (b.defined() ? describe_buffer(b.get()) : "(absent)");
             });
    }
    auto left = lhs_buffers_.find(a.get());
    auto right = rhs_buffers_.find(b.get());
    if (left != lhs_buffers_.end() || right != rhs_buffers_.end()) {
      if (left != lhs_buffers_.end() && left->second == b.get()) return true;
      return fail([&] {
        if (left != lhs_buffers_.end()) {
          return "buffer " + a->name + " was matched with " + left->second->name +
                 " earlier, here it meets " + b->name;
        }
        return "buffer " + b->name + " (right side) was matched with " + right->second->name +
               " earlier, here it meets " + a->name;
      });
    }
    auto scalar = [&](const char* name, bool same, const std::string& lhs, const std::string& rhs) {
      return same || field(name, fail([&] {
                             return lhs + " vs " + rhs + " (" + describe_buffer(a.get()) + " vs " +
                                    describe_buffer(b.get()) + ")";
                           }));
    };
    bool ok = field("data", var(a->data, b->data)) &&
              scalar("dtype", a->dtype == b->dtype, a->dtype.str(), b->dtype.str()) &&
              exprs("shape", a->shape, b->shape) && exprs("strides", a->strides, b->strides) &&
              field("elem_offset", expr(a->elem_offset, b->elem_offset)) &&
              scalar("data_alignment", a->data_alignment == b->data_alignment,
                     std::to_string(a->data_alignment), std::to_string(b->data_alignment)) &&
              scalar("offset_factor", a->offset_factor == b->offset_factor,
                     std::to_string(a->offset_factor), std::to_string(b->offset_factor));
    if (!ok) return false;
    lhs_buffers_.emplace(a.get(), b.get());
    rhs_buffers_.emplace(b.get(), a.get());
    return true;
  }

  // --- statements -------------------------------------------------------------------------

  bool stmt(const Stmt& a, const Stmt& b) {
    if (!a.defined() || !b.defined() || a.kind() != b.kind()) {
      return (!a.defined() && !b.defined()) ||
             fail([&] { return describe(a) + " vs " + describe(b); });
    }
    return visit_stmt(a, b.get());
  }

  bool visit(const Bind* a, const StmtNode* b) {
    const auto* o = static_cast<const Bind*>(b);
    return field("var", var(a->var, o->var)) && field("value", expr(a->value, o->value));
  }
  bool visit(const AttrStmt* a, const StmtNode* b) {
    const auto* o = static_cast<const AttrStmt*>(b);
    return field("node", object(a->node, o->node)) &&
           (a->key == o->key ||
            field("key", fail([&] { return quoted(a->key) + " vs " + quoted(o->key); }))) &&
           field("value", expr(a->value, o->value)) && field("body", stmt(a->body, o->body));
  }
  bool visit(const AssertStmt* a, const StmtNode* b) {
    const auto* o = static_cast<const AssertStmt*>(b);
    return field("condition", expr(a->condition, o->condition)) &&
           field("message", expr(a->message, o->message));
  }
  bool visit(const BufferStore* a, const StmtNode* b) {
    const auto* o = static_cast<const BufferStore*>(b);
    return field("buffer", buffer(a->buffer, o->buffer)) &&
           field("value", expr(a->value, o->value)) && exprs("indices", a->indices, o->indices);
  }
  bool visit(const AllocBuffer* a, const StmtNode* b) {
    const auto* o = static_cast<const AllocBuffer*>(b);
    return field("buffer", buffer(a->buffer, o->buffer)) &&
           field("annotations", attrs(a->annotations, o->annotations));
  }
  bool visit(const DeclBuffer* a, const StmtNode* b) {
    return field("buffer", buffer(a->buffer, static_cast<const DeclBuffer*>(b)->buffer));
  }
  bool visit(const SeqStmt* a, const StmtNode* b) {
    const auto* o = static_cast<const SeqStmt*>(b);
    if (a->seq.size() != o->seq.size()) return count_mismatch("seq", a->seq.size(), o->seq.size());
    for (size_t i = 0; i < a->seq.size(); ++i) {
      if (!at("seq", i, stmt(a->seq[i], o->seq[i]))) return false;
    }
    return true;
  }
  bool visit(const For* a, const StmtNode* b) {
    const auto* o = static_cast<const For*>(b);
    return field("loop_var", var(a->loop_var, o->loop_var)) && field("min", expr(a->min, o->min)) &&
           field("extent", expr(a->extent, o->extent)) &&
           (a->for_kind == o->for_kind ||
            field("for_kind", fail([&] { return loop_text(a) + " vs " + loop_text(o); }))) &&
           field("body", stmt(a->body, o->body)) &&
           (a->thread_tag == o->thread_tag ||
            field("thread_tag",
                  fail([&] { return quoted(a->thread_tag) + " vs " + quoted(o->thread_tag); }))) &&
           field("annotations", attrs(a->annotations, o->annotations));
  }
  bool visit(const While* a, const StmtNode* b) {
    const auto* o = static_cast<const While*>(b);
    return field("condition", expr(a->condition, o->condition)) &&
           field("body", stmt(a->body, o->body));
  }
  bool visit(const IfThenElse* a, const StmtNode* b) {
    const auto* o = static_cast<const IfThenElse*>(b);
    return field("condition", expr(a->condition, o->condition)) &&
           field("then_case", stmt(a->then_case, o->then_case)) &&
           field("else_case", stmt(a->else_case, o->else_case));
  }
  bool visit(const Evaluate* a, const StmtNode* b) {
    return field("value", expr(a->value, static_cast<const Evaluate*>(b)->value));
  }

  // --- other objects ----------------------------------------------------------------------

  /// Any IR object (an AttrStmt node, an attribute expression).
  bool object(const Ref<Object>& a, const Ref<Object>& b) {
    if (!a.defined() || !b.defined() || a.kind() != b.kind()) {
      return (!a.defined() && !b.defined()) ||
             fail([&] { return describe(a) + " vs " + describe(b); });
    }
    NodeKind kind = a.kind();
    if (is_expr_kind(kind)) {
      return expr(Expr(static_cast<const ExprNode*>(a.get())),
                  Expr(static_cast<const ExprNode*>(b.get())));
    }
    if (is_stmt_kind(kind)) {
      return stmt(Stmt(static_cast<const StmtNode*>(a.get())),
                  Stmt(static_cast<const StmtNode*>(b.get())));
    }
    switch (kind) {
      case NodeKind::kIterVar: {
        const auto* x = a.as<IterVarNode>();
        const auto* y = b.as<IterVarNode>();
        return field("var", var(x->var, y->var)) &&
               (x->thread_tag == y->thread_tag || field("thread_tag", fail([&] {
                                                          return quoted(x->thread_tag) + " vs " +
                                                                 quoted(y->thread_tag);
                                                        })));
      }
      case NodeKind::kBuffer:
        return buffer(Buffer(a.as<BufferNode>()), Buffer(b.as<BufferNode>()));
      case NodeKind::kOp:
        return a.as<OpNode>()->name == b.as<OpNode>()->name ||
               fail([&] { return describe(a) + " vs " + describe(b); });
      case NodeKind::kGlobalVar:
        return a.as<GlobalVarNode>()->name == b.as<GlobalVarNode>()->name ||
               fail([&] { return describe(a) + " vs " + describe(b); });
      case NodeKind::kTarget:
        return target(Target(Ref<TargetNode>(a.as<TargetNode>())),
                      Target(Ref<TargetNode>(b.as<TargetNode>())));
      case NodeKind::kPrimFunc:
        return function(PrimFunc(a.as<PrimFuncNode>()), PrimFunc(b.as<PrimFuncNode>()));
      case NodeKind::kIRModule: {
        const auto* x = a.as<IRModuleNode>();
        const auto* y = b.as<IRModuleNode>();
        if (x->functions.size() != y->functions.size()) {
          return count_mismatch("functions", x->functions.size(), y->functions.size());
        }
        for (size_t i = 0; i < x->functions.size(); ++i) {
          const auto& [gx, fx] = x->functions[i];
          const auto& [gy, fy] = y->functions[i];
          if (!at("functions", i, object(gx, gy) && function(fx, fy))) return false;
        }
        return true;
      }
      default:
        PRIMJIT_INTERNAL_ERROR() << "structural equality: unhandled node kind "
                                 << node_kind_name(kind);
    }
  }

  bool target(const Target& a, const Target& b) {
    bool same = a.defined() == b.defined();
    if (same && a.defined()) {
      same = a->kind == b->kind && a->arch == b->arch && a->host.defined() == b->host.defined();
    }
    if (!same) {
      return fail([&] {
        std::string why;
        if (a.defined() && b.defined()) {
          why = a->kind != b->kind   ? " (kind differs)"
                : a->arch != b->arch ? " (arch differs)"
                                     : " (host differs)";
        }
        return describe(a) + " vs " + describe(b) + why;
      });
    }
    return !a.defined() || !a->host.defined() || field("host", target(a->host, b->host));
  }

  bool attr_value(const AttrValue& a, const AttrValue& b) {
    bool same = a.index() == b.index();
    if (same) {
      if (a.is_bool()) {
        same = a.as_bool() == b.as_bool();
      } else if (a.is_int()) {
        same = a.as_int() == b.as_int();
      } else if (a.is_float()) {
        same = same_float(a.as_float(), b.as_float());
      } else if (a.is_string()) {
        same = a.as_string() == b.as_string();
      } else if (a.is_target()) {
        return target(a.as_target(), b.as_target());
      } else if (a.is_expr()) {
        return expr(a.as_expr(), b.as_expr());
      } else {
        const AttrValue::Array& x = a.as_array();
        const AttrValue::Array& y = b.as_array();
        if (x.size() != y.size()) return count_mismatch("", x.size(), y.size());
        for (size_t i = 0; i < x.size(); ++i) {
          if (!at("", i, attr_value(x[i], y[i]))) return false;
        }
        return true;
      }
    }
    return same || fail([&] { return describe(a) + " vs " + describe(b); });
  }

  /// Attribute maps, compared in key order. The caller adds the field name ("attrs").
  bool attrs(const Attrs& a, const Attrs& b) {
    auto x = a.begin();
    auto y = b.begin();
    for (; x != a.end() && y != b.end(); ++x, ++y) {
      if (x->first != y->first) {
        bool left_only = x->first < y->first;
        const std::string& key = left_only ? x->first : y->first;
        const AttrValue& value = left_only ? x->second : y->second;
        return key_field(key, fail([&] {
                           return left_only ? describe(value) + " vs (absent)"
                                            : "(absent) vs " + describe(value);
                         }));
      }
      if (!key_field(x->first, attr_value(x->second, y->second))) return false;
    }
    if (x != a.end()) {
      return key_field(x->first, fail([&] { return describe(x->second) + " vs (absent)"; }));
    }
    if (y != b.end()) {
      return key_field(y->first, fail([&] { return "(absent) vs " + describe(y->second); }));
    }
    return true;
  }

  // --- functions --------------------------------------------------------------------------

  bool function(const PrimFunc& a, const PrimFunc& b) {
    const PrimFuncNode* x = a.get();
    const PrimFuncNode* y = b.get();
    if (x->params.size() != y->params.size()) {
      return count_mismatch("params", x->params.size(), y->params.size());
    }
    for (size_t i = 0; i < x->params.size(); ++i) {
      if (!at("params", i, var(x->params[i], y->params[i]))) return false;
    }
    if (x->buffer_map.size() != y->buffer_map.size()) {
      return count_mismatch("buffer_map", x->buffer_map.size(), y->buffer_map.size());
    }
    for (size_t i = 0; i < x->buffer_map.size(); ++i) {
      const auto& [px, bx] = x->buffer_map[i];
      const auto& [py, by] = y->buffer_map[i];
      if (!at("buffer_map", i, field("var", var(px, py)) && field("buffer", buffer(bx, by)))) {
        return false;
      }
    }
    if (x->ret_type != y->ret_type) {
      return field("ret_type",
                   fail([&] { return x->ret_type.str() + " vs " + y->ret_type.str(); }));
    }
    return field("attrs", attrs(x->attrs, y->attrs)) && field("body", stmt(x->body, y->body));
  }

 private:
  template <typename Message>
  bool fail(Message&& message) {
    if (diff_) message_ = message();
    return false;
  }
  bool fail_exprs(const ExprNode* a, const ExprNode* b) {
    return fail([&] { return describe(Expr(a)) + " vs " + describe(Expr(b)); });
  }
  bool count_mismatch(const char* name, size_t a, size_t b) {
    return field(name, fail([&] { return elements(a) + " vs " + elements(b); }));
  }
  /// Records `name` as a path component when `ok` is false; returns `ok`.
  bool field(const char* name, bool ok) {
    if (!ok && diff_ && name[0] != '\0') path_.emplace_back(name);
    return ok;
  }
  bool at(const char* name, size_t index, bool ok) {
    if (!ok && diff_) path_.push_back(std::string(name) + "[" + std::to_string(index) + "]");
    return ok;
  }
  bool key_field(const std::string& key, bool ok) {
    if (!ok && diff_) path_.push_back("[" + quoted(key) + "]");
    return ok;
  }

  bool diff_;
  std::string message_;
  std::vector<std::string> path_;  // innermost first
  std::unordered_map<const VarNode*, const VarNode*> lhs_vars_;
  std::unordered_map<const VarNode*, const VarNode*> rhs_vars_;
  std::unordered_map<const BufferNode*, const BufferNode*> lhs_buffers_;
  std::unordered_map<const BufferNode*, const BufferNode*> rhs_buffers_;
};

// =============================================================================================
// Hashing
// =============================================================================================

// Tags that keep differently shaped sequences apart.
enum class Tag : uint64_t {
  kAbsent = 0x5a17,
  kNewVar,
  kVarRef,
  kNewBuffer,
  kBufferRef,
  kNaN,
};

uint64_t string_hash(const std::string& text) {  // FNV-1a: the same value in every build
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

/// Walks one tree in the Comparer's order and folds every compared field into a 64-bit value.
/// Variables and buffers contribute the index of their first occurrence, never an address.
class Hasher : public ExprFunctor<Hasher, void>, public StmtFunctor<Hasher, void> {
 public:
  uint64_t value() const { return h_; }

  void add(uint64_t v) { h_ = hash_combine(h_, v); }
  void add(Tag tag) { add(static_cast<uint64_t>(tag)); }
  void add(NodeKind kind) { add(static_cast<uint64_t>(kind) + 0x100); }
  void add(const std::string& text) {
    add(text.size());
    add(string_hash(text));
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

/// The function names in `a` and `b` (both sorted): where they first disagree, or "".
std::string function_name_diff(const IRModuleNode* a, const IRModuleNode* b) {
  size_t i = 0;
  size_t j = 0;
  while (i < a->functions.size() || j < b->functions.size()) {
    const std::string* x = i < a->functions.size() ? &a->functions[i].first->name : nullptr;
    const std::string* y = j < b->functions.size() ? &b->functions[j].first->name : nullptr;
    if (x != nullptr && y != nullptr && *x == *y) {
      ++i;
      ++j;
    } else if (y == nullptr || (x != nullptr && *x < *y)) {
      return "function '" + *x + "' is only in the first module";
    } else {
      return "function '" + *y + "' is only in the second module";
    }
  }
  return "";
}

bool same_function_names(const IRModuleNode* a, const IRModuleNode* b) {
  if (a->functions.size() != b->functions.size()) return false;
  for (size_t i = 0; i < a->functions.size(); ++i) {
    if (a->functions[i].first->name != b->functions[i].first->name) return false;
  }
  return true;
}

}  // namespace

// =============================================================================================
// Public API
// =============================================================================================

bool structural_equal(const IRModule& a, const IRModule& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  if (!same_function_names(a.get(), b.get())) return false;
  Comparer comparer(/*diff=*/false);
  for (size_t i = 0; i < a->functions.size(); ++i) {
    comparer.reset();
    if (!comparer.function(a->functions[i].second, b->functions[i].second)) return false;
  }
  return true;
}

bool structural_equal(const PrimFunc& a, const PrimFunc& b) {
  if (!a.defined() || !b.defined()) return a.defined() == b.defined();
  return Comparer(/*diff=*/false).function(a, b);
}

bool structural_equal(const Stmt& a, const Stmt& b) { return Comparer(/*diff=*/false).stmt(a, b); }

bool structural_equal(const Expr& a, const Expr& b) { return Comparer(/*diff=*/false).expr(a, b); }

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

std::optional<std::string> structural_diff(const IRModule& a, const IRModule& b) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return std::nullopt;
    return std::string(a.defined() ? "the second module is undefined"
                                   : "the first module is undefined");
  }
  std::string names = function_name_diff(a.get(), b.get());
  if (!names.empty()) return names;
  for (size_t i = 0; i < a->functions.size(); ++i) {
    Comparer comparer(/*diff=*/true);
    if (!comparer.function(a->functions[i].second, b->functions[i].second)) {
      return "function '" + a->functions[i].first->name + "': " + comparer.diff_text();
    }
  }
  return std::nullopt;
}

std::optional<std::string> structural_diff(const PrimFunc& a, const PrimFunc& b) {
  if (!a.defined() || !b.defined()) {
    if (a.defined() == b.defined()) return std::nullopt;
    return std::string(a.defined() ? "the second function is undefined"
                                   : "the first function is undefined");
  }
  Comparer comparer(/*diff=*/true);
  if (comparer.function(a, b)) return std::nullopt;
  return comparer.diff_text();
}

}  // namespace primjit
