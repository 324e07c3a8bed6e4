// Brief, single-line descriptions of IR for structural diff messages.
#include <charconv>
#include <cmath>
#include <string>
#include <vector>

#include "ir/structural_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::structural_internal {
namespace {

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

}  // namespace

std::string elements(size_t count) {
  return std::to_string(count) + (count == 1 ? " element" : " elements");
}

std::string quoted(const std::string& text) { return "\"" + text + "\""; }

std::string loop_text(const For* op) {
  std::string out = "For " + op->loop_var->name + " in T.";
  out += op->for_kind == ForKind::kThreadBinding ? "thread_binding" : for_kind_name(op->for_kind);
  out += "(" + BriefPrinter::of(op->min) + ", " + BriefPrinter::of(op->extent);
  if (!op->thread_tag.empty()) out += ", thread=" + quoted(op->thread_tag);
  return out + ")";
}

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

}  // namespace primjit::structural_internal
