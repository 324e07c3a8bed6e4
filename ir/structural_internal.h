// Rules shared by structural equality (structural_equal.cc), hashing (structural_hash.cc) and
// the descriptions in diff messages (structural_describe.cc). Private to ir/.
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
#pragma once

#include <string>

#include "primjit/ir/attrs.h"
#include "primjit/ir/expr.h"
#include "primjit/ir/stmt.h"
#include "primjit/ir/target.h"

namespace primjit::structural_internal {

// Brief descriptions for diff messages (kept apart from the printer: a diff must not depend
// on it).
std::string describe(const Expr& e);
/// `describe(e)` followed by the expression's dtype.
std::string describe_with_dtype(const Expr& e);
std::string describe_var(const VarNode* v);
std::string describe_buffer(const BufferNode* b);
std::string describe(const Stmt& s);
std::string describe(const Target& t);
std::string describe(const AttrValue& v);
std::string describe(const Ref<Object>& node);
/// "N elements" (N = count).
std::string elements(size_t count);
/// `text` in double quotes.
std::string quoted(const std::string& text);
/// A loop's header: variable, range and kind.
std::string loop_text(const For* op);

}  // namespace primjit::structural_internal
