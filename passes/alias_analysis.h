// Which memory a pointer may reach, and which expressions read memory that a store may write:
// the aliasing rule that every pass reusing a load or a fact about memory follows (CSE,
// Simplify, and later passes).
//
// Rule. Every pointer variable points into one *region*, named by the pointer variable at its
// origin: a function parameter or buffer_map data variable, or the data variable of an
// AllocBuffer. A pointer defined by a Bind or Let of another pointer (`p = A.data`), of
// `T.address_of(A[i])` or of `T.tvm_access_ptr(..., A.data, ...)` points into that pointer's
// region; any other definition (a call result, a select between pointers, a value read from
// memory) points anywhere. Buffers declared over the same data variable (`T.decl_buffer(...,
// data=p)`) therefore share a region with it. Two pointers may alias unless both regions are
// known and differ. Distinct parameters are distinct regions: the runtime refuses (or
// specializes for) overlapping tensor arguments, the assumption the code generators' noalias
// markings make too.
//
// Effects. A store writes its buffer's region. A call with side effects (op table: writes
// memory, or opaque) may write any region. An expression reads memory through its loads and
// through calls that are not pure.
#pragma once

#include <unordered_map>

#include "primjit/ir/function.h"
#include "primjit/ir/stmt.h"

namespace primjit::passes {

class AliasAnalysis {
 public:
  /// Follows the pointer definitions in `body` (parameters are their own regions).
  explicit AliasAnalysis(const Stmt& body);

  /// The region `data` points into, or nullptr when it may point anywhere.
  const VarNode* region(const VarNode* data) const;
  /// False only when `a` and `b` provably point into different regions.
  bool may_alias(const VarNode* a, const VarNode* b) const;
  /// True when evaluating `e` reads memory that a store through `written` may change (with
  /// `written` null: any memory).
  bool reads(const Expr& e, const VarNode* written) const;

 private:
  const VarNode* origin(const Expr& pointer) const;
  void define(const Var& var, const Expr& value);

  // Pointer variables defined from other pointers, by what they were defined as (nullptr:
  // anywhere). Variables not in the map are their own region.
  std::unordered_map<const VarNode*, const VarNode*> regions_;
};

}  // namespace primjit::passes
