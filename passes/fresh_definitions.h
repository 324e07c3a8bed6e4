// Giving definitions fresh variables: shared by the passes that duplicate code (UnrollLoops)
// or must restore single definition (ConvertSSA).
#pragma once

#include "primjit/ir/functor.h"

namespace primjit::passes {

/// A new variable with the same name hint, dtype, pointer type and size-var flag.
Var fresh_copy(const VarNode* var);

/// A copy of `stmt` in which every variable and buffer defined inside it (Bind, For, Let,
/// thread launches, AllocBuffer, DeclBuffer) is a new object; uses follow the copies.
/// `pre` maps variables defined outside to their replacements (e.g. an unrolled loop variable
/// to its value).
Stmt copy_with_fresh_definitions(const Stmt& stmt, const VarMap& pre = {});

}  // namespace primjit::passes
