// Stage 3 of the text parser: lowering the syntax tree to IR. The Lowerer holds the state of one
// parse (the scope stack of names, the module's functions, the function being built) and the
// operations every T.* form handler builds on: name resolution, argument binding, literals and
// expressions, attribute values, blocks. What each T.* call means is in the form table
// (forms.h); the Lowerer dispatches to it. Private to the text parser (ir/text/).
//
// Every name must resolve to a definition earlier in the function; a name still resolves after
// its block ends (as in Python), so text can describe IR that the verifier rejects, and a Bind to
// a name that denotes a variable of the same type binds that variable again. Errors from make()
// are converted to ParseErrors at the expression or statement that caused them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/scope_stack.h"
#include "ir/text/ast.h"
#include "primjit/ir/function.h"
#include "primjit/ir/source_map.h"
#include "primjit/ir/stmt.h"

namespace primjit::text_internal {

/// What a name stands for.
struct Entity {
  enum Kind { kVar, kBuffer, kEnvThread } kind = kVar;
  Var var;
  Buffer buffer;
  std::string tag;  // env threads
};

/// A lowered expression, or a bare literal whose dtype is not decided yet.
struct Value {
  enum Kind { kExpr, kInt, kFloat, kBool } kind = kExpr;
  Expr expr;
  bool negative = false;
  uint64_t magnitude = 0;
  double number = 0;
  bool flag = false;
  Loc loc;
};

/// Positional/keyword argument binding of a T.xxx call against a parameter list.
struct Slots {
  std::vector<const Ast*> args;  // one per parameter name; null when absent
  const Ast* operator[](size_t i) const { return args[i]; }
};

/// What the function being lowered has collected besides its body.
struct FunctionState {
  std::vector<Var> params;
  std::vector<std::pair<Var, Buffer>> buffer_map;
  Attrs attrs;
  bool has_func_attr = false;
};

// --- small syntax-tree queries ----------------------------------------------------------------

/// A buffer of shape (1,): its bare name reads and writes its one element (TVMScript's sugar).
bool is_scalar_buffer(const Buffer& buffer);

/// `T.name` (or `I.name`): the attribute name, else nullopt.
std::optional<std::string> ns_attr(const Ast& a, const char* ns);
/// For a call `T.name(...)`: "name", else nullopt.
std::optional<std::string> t_call(const Ast& a);
/// `T.a.b.c` (two or more levels below T): "a.b.c"; else nullopt.
std::optional<std::string> t_dotted_name(const Ast& func);
inline size_t num_args(const Ast& call) { return call.items.size() - 1; }
inline const Ast& arg(const Ast& call, size_t i) { return *call.items[i + 1]; }
/// "1 index", "2 indices", "3 arguments".
std::string plural(size_t n, const char* word);
/// An integer literal, possibly negative.
std::optional<int64_t> int_literal(const Ast& a);

class Lowerer {
 public:
  /// With a `source_map`, records where statements begin and late uses of names (source_map.h).
  explicit Lowerer(const Source& src, SourceMap* source_map = nullptr)
      : src_(src), source_map_(source_map) {}

  IRModule lower(const FileAst& file);

  // --- errors ---------------------------------------------------------------------------------
  [[noreturn]] void fail(Loc loc, const std::string& message) const { src_.fail(loc, message); }

  /// Runs an IR constructor, turning its primjit::Error into a ParseError at `loc`.
  template <typename F>
  auto guard(Loc loc, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      fail(loc, e.what());
    }
  }

  // --- names ----------------------------------------------------------------------------------
  // Names follow the blocks of the text, like the IR's scopes, with one difference: a name whose
  // block has ended still resolves (to its latest definition), as in Python. Using it there
  // builds IR with a variable out of scope, which the verifier reports; the parser's job is only
  // that every name refers to something defined earlier in the function.

  /// The innermost open definition of `name`, else its latest definition in a closed block.
  const Entity* lookup(const std::string& name) const;
  /// With a source map: when `name` (a use of `entity`) resolves only to a closed block, records
  /// where, so that the verifier's "used out of scope" names its line and column.
  void note_use(const Ast& name, const Ref<Object>& entity);

  /// Runs `body` in a new block scope; its definitions stay resolvable after it ends.
  template <typename F>
  auto scoped(F&& body) -> decltype(body()) {
    return scopes_.with_new_scope([&]() -> decltype(body()) {
      struct Close {
        Lowerer* self;
        ~Close() {
          for (const auto& [name, entity] : self->scopes_.current()) self->closed_[name] = entity;
        }
      } close{this};
      return body();
    });
  }

  /// A Bind to a name that already denotes a variable of the very same type binds that
  /// variable again (the verifier rejects the second definition); otherwise `fresh`. Printed
  /// text never does this for well-formed IR: its names are unique per function.
  Var rebound_or(const std::string& name, const Var& fresh) const;
  void define(const std::string& name, Loc loc, Entity entity);
  void define_var(const std::string& name, Loc loc, const Var& var);
  void define_buffer(const std::string& name, Loc loc, const Buffer& buffer);

  /// The function being lowered.
  FunctionState& function_state() { return *state_; }
  /// The module's functions by name, with their return types (empty outside a module).
  const std::map<std::string, std::pair<GlobalVar, DataType>>& module_functions() const {
    return functions_;
  }

  // --- arguments of calls ---------------------------------------------------------------------
  /// Binds the arguments of `call` to `params` (positional in order, or by keyword). The first
  /// `positional` parameters may be given positionally, the rest only by keyword; the first
  /// `required` ones must be present.
  Slots bind(const Ast& call, const std::string& fname, std::initializer_list<const char*> params,
             size_t required, size_t positional = SIZE_MAX);
  void no_keywords(const Ast& call, const std::string& fname);
  const std::string& string_arg(const Ast* a, const char* what);
  DataType dtype_arg(const Ast* a);
  bool bool_arg(const Ast* a, const char* what);
  int int_arg(const Ast* a, const char* what);

  // --- literals and expressions ---------------------------------------------------------------
  Value value(const Ast& a);
  Expr materialize(const Value& v, std::optional<DataType> hint);
  Expr expr(const Ast& a, std::optional<DataType> hint = std::nullopt) {
    return materialize(value(a), hint);
  }
  /// Lowers two operands; a bare literal takes the other operand's dtype.
  std::pair<Expr, Expr> unify(const Ast& a, const Ast& b);
  /// The call's arguments from position `from` on.
  std::vector<Expr> rest_args(const Ast& a, size_t from);
  /// A tuple or list of int32-hinted expressions, or one expression.
  std::vector<Expr> expr_tuple(const Ast& a);
  /// A variable typed like `value` (a pointer variable keeps its element type and scope).
  Var inferred_var(const std::string& name, const Expr& value, Loc loc);
  /// T.int32, T.handle, T.handle("float32", "shared"), T.int32(is_size_var=True), T.int32().
  Var typed_var(const std::string& name, const Ast& ann, Loc loc);

  // --- attribute values -----------------------------------------------------------------------
  Attrs attr_dict(const Ast& a);
  AttrValue attr_value(const Ast& a);
  Target target(const Ast& a);

  // --- TVM's printed forms (lower_sugar.cc) ---------------------------------------------------
  /// Whether the file's header names the tirx dialect (see FileAst::tirx).
  bool tirx() const { return tirx_; }
  /// A shape or stride: an expression, or a quoted variable name ("n") that defines it.
  Expr dim_expr(const Ast& a);
  std::vector<Expr> dim_tuple(const Ast& a);

  // --- statements -----------------------------------------------------------------------------
  /// Lowers stmts[begin:] of one block. `top` is true in the function's top-level block (and in
  /// the rest of it after a concise launch), where header statements are allowed.
  Stmt block(const std::vector<StmtPtr>& stmts, size_t begin, bool top);
  /// min and extent of `range(stop)` / `range(start, stop)` and the T.serial(...) family.
  std::pair<Expr, Expr> loop_bounds(const Ast* start, const Ast* stop);
  /// A loop `s` with one variable over [start, stop) (stop absent: [0, start)).
  Stmt single_loop(const StmtAst& s, const Ast* start, const Ast* stop, ForKind kind,
                   const std::string& thread_tag, const Annotations& annotations);

 private:
  // expressions (lower_expr.cc)
  Expr lower_expr(const Ast& a);
  Expr name_expr(const Ast& a);
  Expr attr_expr(const Ast& a);
  Expr load_expr(const Ast& a);
  Buffer buffer_name(const Ast& a);
  std::vector<Expr> indices(const Ast& subscript);
  Expr index(const Ast& a);
  Expr binary_expr(const Ast& a);
  Expr call_expr(const Ast& a);
  Expr module_call(const Ast& a, const std::string& fname);
  Expr t_call_expr(const Ast& a, const std::string& name);
  Expr tvm_spelled_call(const Ast& a, const std::string& dotted);
  Expr op_call(const Ast& a, const std::string& fname, const Op& op);
  Expr typed_literal(const Ast& a, DataType t);

  // statements and functions (lowerer.cc)
  Stmt scoped_block(const std::vector<StmtPtr>& stmts);
  std::optional<Stmt> concise_attr(const std::vector<StmtPtr>& stmts, size_t i, bool top);
  void statement(const StmtAst& s, bool top, std::vector<Stmt>* out);
  void expr_statement(const StmtAst& s, bool top, std::vector<Stmt>* out);
  void assignment(const StmtAst& s, bool top, std::vector<Stmt>* out);
  void annotated(const StmtAst& s, std::vector<Stmt>* out);
  /// `x = v` as a store to a one-element buffer, a buffer view, or (tirx) a new one-element
  /// buffer; false when it is none of these.
  bool sugar_assignment(const StmtAst& s, std::vector<Stmt>* out);
  void scalar_buffer(const std::string& name, Loc name_loc, DataType dtype, const Expr& value,
                     Loc loc, std::vector<Stmt>* out);
  void buffer_view(const StmtAst& s, const Buffer& parent, std::vector<Stmt>* out);
  Target host_target(const Ast& h);
  Expr quoted_dim(const Ast& a);
  Target target_dict(const Ast& d, const Ast* host_kw);
  Stmt with_stmt(const StmtAst& s);
  Stmt for_loop(const StmtAst& s);
  DataType return_type(const Ast& ann);
  void module_decorator(const FileAst& file);
  bool function_decorator(const FuncAst& f);
  PrimFunc function(const FuncAst& f);

  const Source& src_;
  SourceMap* source_map_ = nullptr;
  SourceLocation stmt_loc_;  // where the statement being lowered begins (for note_use)
  std::string class_name_;
  std::map<std::string, std::pair<GlobalVar, DataType>> functions_;
  ScopeStack<std::unordered_map<std::string, Entity>> scopes_;
  std::unordered_map<std::string, Entity> closed_;  // definitions of blocks that have ended
  FunctionState* state_ = nullptr;
  int docstring_line_ = -1;
  bool tirx_ = false;
  std::set<std::string> implicit_vars_;
  const std::vector<NameAst>* type_vars_ =
      nullptr;  // the file's TypeVar declarations  // defined by a quoted name in a shape ("n")
};

}  // namespace primjit::text_internal
