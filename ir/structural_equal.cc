// Structural equality and diff: both sides are walked together in the order that
// structural_internal.h documents; variables and buffers are matched as binders.
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/structural_internal.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/structural.h"

namespace primjit {
namespace {

using structural_internal::describe;
using structural_internal::describe_buffer;
using structural_internal::describe_var;
using structural_internal::describe_with_dtype;
using structural_internal::elements;
using structural_internal::loop_text;
using structural_internal::quoted;

// =============================================================================================
// Leaf rules
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
