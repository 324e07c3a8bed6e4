// The form table: what each `T.<name>(...)` call means, one entry per name. An entry lists a
// handler for every position the form may take; a position without a handler gives the error
// that the form is not allowed there. Lowering (lowerer.h) looks the name up and calls the
// handler, so adding a form is one entry in a family's table plus its handler.
//
// Families, one file each: forms_expr.cc (values inside expressions), forms_stmt.cc (statements,
// attribute scopes, loops, attribute values, decorators and types), forms_buffer.cc (buffers).
//
// Two open families of names resolve after the table, so they need no entries:
//  - `T.<dtype>`: a literal or conversion inside an expression (T.float32(1), T.int64(n)), a
//    variable declaration on its own (n = T.int32()), a type in an annotation;
//  - `T.<builtin op>`: a call of an op of the op table (primjit/ir/ops.def).
// Private to the text parser (ir/text/).
#pragma once

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ir/text/ast.h"
#include "primjit/ir/attrs.h"
#include "primjit/ir/stmt.h"

namespace primjit::text_internal {

class Lowerer;

/// The attribute a scope form opens: AttrStmt(node, key, value, <the rest>).
struct AttrHead {
  Ref<Object> node;
  std::string key;
  Expr value;
};

struct Form {
  std::string_view name;  // T.<name>
  /// A value inside an expression: `T.name(...)` in `x + T.name(...)`.
  Expr (*expr)(Lowerer& lowerer, const Ast& call) = nullptr;
  /// An expression statement: `T.name(...)` on its own line. `top`: in the function's top-level
  /// block.
  void (*stmt)(Lowerer& lowerer, const StmtAst& s, bool top, std::vector<Stmt>* out) = nullptr;
  /// A definition: `x = T.name(...)`, with s.target a name.
  void (*assign)(Lowerer& lowerer, const StmtAst& s, bool top, std::vector<Stmt>* out) = nullptr;
  /// An attribute scope: `with T.name(...) [as x]:`, or `[x =] T.name(...)` on its own line
  /// with the rest of the block as its body. `name`: the `as`/assigned name, or null.
  AttrHead (*scope)(Lowerer& lowerer, const Ast& call, const Ast* name) = nullptr;
  /// Whether the scope form may define a name (`as x`, `x = ...`).
  bool scope_defines_name = false;
  /// A loop: `for i in T.name(...):`.
  Stmt (*loop)(Lowerer& lowerer, const StmtAst& s) = nullptr;
  /// A value in an attribute dict (T.func_attr, annotations=, T.attr nodes).
  AttrValue (*attr_value)(Lowerer& lowerer, const Ast& call) = nullptr;
  /// A parameter's annotation: `def f(A: T.name(...))`.
  void (*param)(Lowerer& lowerer, const Param& param) = nullptr;
};

/// The entry for `T.<name>`, or null when the name has none.
const Form* find_form(std::string_view name);

// The families' tables (each defined in its forms_*.cc).
std::span<const Form> expression_forms();
std::span<const Form> statement_forms();
std::span<const Form> buffer_forms();

}  // namespace primjit::text_internal
