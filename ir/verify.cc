// VerifyWellFormed. One scope-aware walk per function records definitions and checks every use
// against what is visible at that point; module-wide tables catch a variable defined twice,
// also across functions. Given the SourceMap of a parsed module, each problem is located at the
// offending use (or the innermost statement with a known position) in the text.
#include "primjit/ir/verify.h"

#include <unordered_map>
#include <unordered_set>

#include "ir/scope_stack.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/source_map.h"
#include "primjit/ir/text.h"

namespace primjit {
namespace {

constexpr size_t kMaxReported = 8;

// The first line of a statement's text: enough to recognise it without dumping its body.
std::string brief(const Stmt& stmt) {
  std::string text = print(stmt);
  while (!text.empty() && text.front() == '\n') text.erase(text.begin());
  while (!text.empty() && text.back() == '\n') text.pop_back();
  size_t newline = text.find('\n');
  if (newline != std::string::npos) text = text.substr(0, newline) + " ...";
  if (text.size() > 160) text = text.substr(0, 157) + "...";
  return "`" + text + "`";
}

// Where something was defined: a statement, or a description for the signature. Printed only
// when an error names it, so a well-formed module is never printed.
struct Site {
  Stmt stmt;
  std::string context;
  std::string text() const { return stmt.defined() ? brief(stmt) : context; }
};

struct Definition {
  std::string function;
  Site where;
  bool thread = false;  // defined by a thread_extent launch
  std::string thread_tag;
};

// Module-wide state shared by the per-function walks.
struct ModuleState {
  explicit ModuleState(const SourceMap* source_map) : source_map(source_map) {}

  const SourceMap* source_map;  // null unless the module was parsed with one
  std::vector<std::string> errors;
  std::vector<SourceLocation> locations;  // of each error; unknown without a source map
  std::unordered_map<const VarNode*, Definition> var_defs;
  std::unordered_map<const BufferNode*, Site> buffer_defs;
};

struct Frame {
  std::vector<const VarNode*> vars;
  std::vector<const BufferNode*> buffers;
};

class FunctionChecker : public StmtExprVisitor {
 public:
  FunctionChecker(ModuleState& state, std::string function)
      : state_(state), function_(std::move(function)) {}

  void check(const PrimFunc& func) {
    if (state_.source_map != nullptr) position_ = state_.source_map->find(func.get());
    context_ = "the parameters of '" + function_ + "'";
    for (const Var& param : func->params) define(param, Site{Stmt(), "parameter"}, false, "");
    context_ = "the buffer_map of '" + function_ + "'";
    // Bare variables first, so a shape like (n + 1,) may use an n a later buffer defines.
    for (const auto& [param, buffer] : func->buffer_map) define_param_buffer_vars(buffer);
    for (const auto& [param, buffer] : func->buffer_map) declare_param_buffer(buffer);
    visit_stmt(func->body);
  }

  // --- statements that define --------------------------------------------------------------

  void visit_stmt(const Stmt& stmt) override {
    Stmt saved = current_;
    SourceLocation saved_position = position_;
    current_ = stmt;
    if (state_.source_map != nullptr) {
      SourceLocation here = state_.source_map->find(stmt.get());
      if (here.known()) position_ = here;
    }
    StmtExprVisitor::visit_stmt(stmt);
    current_ = saved;
    position_ = saved_position;
  }

  void visit(const Bind* op) override {
    visit_expr(op->value);
    define(op->var, site(), false, "");
  }

  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    Site where = site();
    scoped([&] {
      define(op->loop_var, where, false, "");
      visit_stmt(op->body);
    });
  }

  void visit(const AttrStmt* op) override {
    visit_expr(op->value);
    if (const auto* buffer = op->node.as<BufferNode>()) use_buffer(buffer);
    if (const auto* var = op->node.as<VarNode>()) visit(var);
    Site where = site();
    scoped([&] {
      if (const IterVarNode* iv = op->iter_var()) define(iv->var, where, true, iv->thread_tag);
      visit_stmt(op->body);
    });
  }

  void visit(const While* op) override {
    visit_expr(op->condition);
    scoped([&] { visit_stmt(op->body); });
  }

  void visit(const IfThenElse* op) override {
    visit_expr(op->condition);
    scoped([&] { visit_stmt(op->then_case); });
    if (op->else_case.defined()) scoped([&] { visit_stmt(op->else_case); });
  }

  void visit(const AllocBuffer* op) override {
    check_buffer_fields(op->buffer);
    define(op->buffer->data, site(), false, "");
    declare_buffer(op->buffer.get());
  }

  void visit(const DeclBuffer* op) override {
    visit_expr(op->buffer->data);  // a view over storage that must already exist
    check_buffer_fields(op->buffer);
    declare_buffer(op->buffer.get());
  }

  // --- expressions ---------------------------------------------------------------------------

  void visit(const Let* op) override {
    visit_expr(op->value);
    scoped([&] {
      define(op->var, site(), false, "");
      visit_expr(op->body);
    });
  }

  void visit(const VarNode* op) override {
    if (visible_vars_.count(op) > 0) return;
    if (!reported_vars_.insert(op).second) return;  // one report per variable
    auto it = state_.var_defs.find(op);
    if (it == state_.var_defs.end()) {
      error("undefined variable '" + op->name + "' used in " + location(), op);
    } else if (it->second.function != function_) {
      error("variable '" + op->name + "' of function '" + it->second.function +
                "' is used in function '" + function_ + "' in " + location() +
                "; each function must define its own variables",
            op);
    } else {
      error("variable '" + op->name + "' is used out of scope in " + location() +
                "; it was defined by " + it->second.where.text() +
                ", whose scope has ended (a definition is visible only until the end of the "
                "enclosing loop, branch, attribute or function body)",
            op);
    }
  }

  void visit_buffer_use(const Buffer& buffer) override { use_buffer(buffer.get()); }

 private:
  Site site() const { return Site{current_, context_}; }
  std::string location() const { return site().text(); }

  // Records a problem, located (with a source map) at the use of `used` in the current
  // statement when the parser saw one there, else at the statement.
  void error(std::string message, const Object* used = nullptr) {
    SourceLocation where = position_;
    if (used != nullptr && state_.source_map != nullptr) {
      SourceLocation use = state_.source_map->find_late_use(used, position_);
      if (use.known()) where = use;
    }
    state_.errors.push_back(std::move(message));
    state_.locations.push_back(where);
  }

  // Runs `body` in a new scope; what it defines stops being visible when it returns.
  template <typename F>
  void scoped(F&& body) {
    scopes_.with_new_scope([&] {
      body();
      end_frame();
    });
  }

  void end_frame() {
    for (const VarNode* var : scopes_.current().vars) {
      if (--visible_vars_[var] == 0) visible_vars_.erase(var);
    }
    for (const BufferNode* buffer : scopes_.current().buffers) {
      if (--visible_buffers_[buffer] == 0) visible_buffers_.erase(buffer);
    }
  }

  void define(const Var& var, const Site& site, bool thread, const std::string& tag) {
    const VarNode* node = var.get();
    auto previous = state_.var_defs.find(node);
    if (previous != state_.var_defs.end()) {
      const Definition& first = previous->second;
      bool relaunch =
          thread && first.thread && first.function == function_ && visible_vars_.count(node) == 0;
      if (relaunch) {
        if (first.thread_tag != tag) {
          error("thread variable '" + var->name + "' is launched as " + first.thread_tag + " by " +
                first.where.text() + " and as " + tag + " by " + site.text() +
                "; a thread variable keeps one tag");
        }
      } else if (thread && first.thread && first.function != function_) {
        error("thread variable '" + var->name + "' is launched in function '" + first.function +
              "' and again in function '" + function_ + "' (" + site.text() +
              "); each function needs its own thread variables");
      } else if (visible_vars_.count(node) > 0) {
        error("variable '" + var->name + "' is defined again by " + site.text() +
              " while its first definition (" + first.where.text() + ") is still in scope");
      } else {
        error("variable '" + var->name + "' is defined twice: first by " + first.where.text() +
              " in function '" + first.function + "', again by " + site.text() +
              (first.function == function_ ? "" : " in function '" + function_ + "'") +
              "; a variable may be defined only once in a module");
      }
    } else {
      state_.var_defs.emplace(node, Definition{function_, site, thread, tag});
    }
    ++visible_vars_[node];
    scopes_.current().vars.push_back(node);
  }

  // The vars in a buffer's shape, strides and offset are uses, checked where it is declared.
  void check_buffer_fields(const Buffer& buffer) {
    for (const Expr& e : buffer->shape) visit_expr(e);
    for (const Expr& e : buffer->strides) visit_expr(e);
    visit_expr(buffer->elem_offset);
  }

  // In the buffer_map, the first occurrence of a variable as a buffer's data, a dimension, a
  // stride or the offset defines it (two parameters may share data or a shape variable).
  void define_param_buffer_vars(const Buffer& buffer) {
    auto define_bare = [&](const Expr& e) {
      const auto* var = e.as<VarNode>();
      if (var != nullptr && visible_vars_.count(var) == 0 && state_.var_defs.count(var) == 0) {
        define(Var(var), Site{Stmt(), "the buffer_map entry of '" + buffer->name + "'"}, false, "");
      }
    };
    define_bare(buffer->data);
    for (const Expr& e : buffer->shape) define_bare(e);
    for (const Expr& e : buffer->strides) define_bare(e);
    define_bare(buffer->elem_offset);
  }

  // Then every other use in the buffer_map must refer to a defined variable.
  void declare_param_buffer(const Buffer& buffer) {
    auto use = [&](const Expr& e) {
      if (e.defined() && e.as<VarNode>() == nullptr) visit_expr(e);
    };
    for (const Expr& e : buffer->shape) use(e);
    for (const Expr& e : buffer->strides) use(e);
    use(buffer->elem_offset);
    declare_buffer(buffer.get());
  }

  void declare_buffer(const BufferNode* buffer) {
    state_.buffer_defs.emplace(buffer, site());
    ++visible_buffers_[buffer];
    scopes_.current().buffers.push_back(buffer);
  }

  void use_buffer(const BufferNode* buffer) {
    if (visible_buffers_.count(buffer) > 0) return;
    if (!reported_buffers_.insert(buffer).second) return;
    auto it = state_.buffer_defs.find(buffer);
    if (it == state_.buffer_defs.end()) {
      error("buffer '" + buffer->name + "' is used in " + location() +
                " without a declaration (declare it with T.alloc_buffer, T.decl_buffer or "
                "as a parameter)",
            buffer);
    } else {
      error("buffer '" + buffer->name + "' is used in " + location() + " but its declaration " +
                it->second.text() + " is no longer in scope",
            buffer);
    }
  }

  ModuleState& state_;
  std::string function_;
  std::string context_;
  Stmt current_;
  SourceLocation position_;  // of the innermost statement (or function) the source map knows
  ScopeStack<Frame> scopes_;
  std::unordered_map<const VarNode*, int> visible_vars_;
  std::unordered_map<const BufferNode*, int> visible_buffers_;
  std::unordered_set<const VarNode*> reported_vars_;
  std::unordered_set<const BufferNode*> reported_buffers_;
};

[[noreturn]] void throw_errors(const std::vector<std::string>& errors) {
  std::string message = "the IR is not well formed:";
  for (size_t i = 0; i < errors.size() && i < kMaxReported; ++i) message += "\n  - " + errors[i];
  if (errors.size() > kMaxReported) {
    message += "\n  (and " + std::to_string(errors.size() - kMaxReported) + " more)";
  }
  throw Error(message);
}

ModuleState check_module(const IRModule& module, const SourceMap* source_map) {
  ModuleState state(source_map);
  for (const auto& [gvar, func] : module->functions) {
    FunctionChecker(state, gvar->name).check(func);
  }
  return state;
}

std::string located(const SourceMap& source_map, SourceLocation where, const std::string& text) {
  if (!where.known()) return text;
  return source_map.file() + ":" + std::to_string(where.line) + ":" + std::to_string(where.column) +
         ": " + text;
}

}  // namespace

std::vector<std::string> well_formed_errors(const IRModule& module) {
  return check_module(module, nullptr).errors;
}

void verify_well_formed(const IRModule& module) {
  std::vector<std::string> errors = well_formed_errors(module);
  if (!errors.empty()) throw_errors(errors);
}

std::vector<std::string> well_formed_errors(const IRModule& module, const SourceMap& source_map) {
  ModuleState state = check_module(module, &source_map);
  std::vector<std::string> out;
  for (size_t i = 0; i < state.errors.size(); ++i) {
    out.push_back(located(source_map, state.locations[i], state.errors[i]));
  }
  return out;
}

void verify_well_formed(const IRModule& module, const SourceMap& source_map) {
  ModuleState state = check_module(module, &source_map);
  if (state.errors.empty()) return;
  if (!state.locations[0].known()) throw_errors(state.errors);
  // Like a compiler's diagnostics: each problem with its source line and a caret under the column.
  std::string first = "the IR is not well formed: " + state.errors[0];
  std::string what = source_map.diagnostic(state.locations[0], first);
  for (size_t i = 1; i < state.errors.size() && i < kMaxReported; ++i) {
    what += "\n";
    what += state.locations[i].known() ? source_map.diagnostic(state.locations[i], state.errors[i])
                                       : "error: " + state.errors[i];
  }
  if (state.errors.size() > kMaxReported) {
    what += "\n(and " + std::to_string(state.errors.size() - kMaxReported) + " more)";
  }
  throw ParseError(what, source_map.file(), state.locations[0].line, state.locations[0].column,
                   first);
}

void verify_well_formed(const PrimFunc& func, const std::string& name) {
  verify_well_formed(IRModule::from_function(name, func));
}

}  // namespace primjit
