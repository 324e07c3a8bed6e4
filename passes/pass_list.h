// Factories of the registered passes, one per pass file, in pipeline order.
#pragma once

#include "primjit/passes.h"

namespace primjit::passes {

Pass make_verify_well_formed_pass();
Pass make_specialize_pass();
Pass make_flatten_buffer_pass();
Pass make_simplify_pass();
Pass make_remove_no_op_pass();
Pass make_convert_ssa_pass();
Pass make_unroll_loops_pass();

/// The RemoveNoOp rewrite on one statement (also used by Simplify).
Stmt remove_no_op(const Stmt& body);

/// Throws primjit::Error when `args` holds a key the pass does not take.
void check_no_args(const std::string& pass, const PassArgs& args);

/// A pass without arguments that rewrites each function on its own; functions that come back
/// unchanged (same node) keep their place in the module untouched.
Pass function_pass(std::string name, std::string summary,
                   std::function<PrimFunc(const PrimFunc&)> rewrite);
/// The same for a rewrite of the function body only.
Pass body_pass(std::string name, std::string summary, std::function<Stmt(const Stmt&)> rewrite);

}  // namespace primjit::passes
