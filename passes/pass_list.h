// Every registered pass, in pipeline order, one factory per pass file.
#pragma once

#include "primjit/passes.h"

namespace primjit::passes {

/// VerifyWellFormed: rejects IR that breaks scoping, single definition or buffer declaration.
Pass make_verify_well_formed_pass();
/// VerifyDeviceMemory: rejects host code touching device buffers, device code host buffers.
Pass make_verify_device_memory_pass();
/// Specialize{n=128}: binds size variables / scalar parameters to constants.
Pass make_specialize_pass();
/// InsertDivisionChecks: checked mode, asserts before integer divisions by zero or MIN / -1.
Pass make_insert_division_checks_pass();
/// FlattenBuffer: N-d buffers and accesses to 1-D; parameter buffers get a flat alias.
Pass make_flatten_buffer_pass();
/// VersionLoops: loop nests over symbolic dimensions get a fast path for multiples of the tile
/// or vector width, chosen at run time (the JIT runs it after FlattenBuffer for variants with
/// symbolic dimensions).
Pass make_version_loops_pass();
/// Simplify: arithmetic simplification under loop/thread bounds; folds proven branches.
Pass make_simplify_pass();
/// LowerVectorReductions: T.vectorized reduction loops to lane-wise partials and a fixed tree.
Pass make_lower_vector_reductions_pass();
/// VectorizeLoop: host T.vectorized loops of constant extent to Ramp/Broadcast vector statements.
Pass make_vectorize_loop_pass();
/// FuseMultiplyAdd: contraction when enabled, floating a * b + c to T.fma (one rounding).
Pass make_fuse_multiply_add_pass();
/// MergeSharedMemoryAllocations: one merged shared.dyn buffer per kernel launch, with reuse.
Pass make_merge_shared_memory_allocations_pass();
/// AnnotateDeviceRegions: marks the outermost thread launches of device functions as regions.
Pass make_annotate_device_regions_pass();
/// SplitHostDevice: moves each device region into a kernel function called by the host.
Pass make_split_host_device_pass();
/// LowerDeviceKernelLaunch: host calls of kernels become launches with launch parameters.
Pass make_lower_device_kernel_launch_pass();
/// MakePackedAPI: public host functions take the packed calling convention (primjit/abi.h).
Pass make_make_packed_api_pass();
/// LowerComputeScopes: host compute_scope regions to functions called with a status check.
Pass make_lower_compute_scopes_pass();
/// LowerParallelLoops: host parallel loops to task functions run by the runtime's parallel-for.
Pass make_lower_parallel_loops_pass();
/// BF16StorageLegalize: bfloat16 compute in float32 and storage as uint16 without native support.
Pass make_bf16_storage_legalize_pass();
/// FP8StorageLegalize: float8 compute in float32 and storage as uint8 without native support.
Pass make_fp8_storage_legalize_pass();
/// CommonSubexprElim: binds pure subexpressions computed more than once within a scope.
Pass make_common_subexpr_elim_pass();
/// RemoveNoOp: drops statements, loops, branches and Binds that do nothing.
Pass make_remove_no_op_pass();
/// ConvertSSA: gives every variable a single definition across the module.
Pass make_convert_ssa_pass();
/// UnrollLoops: expands T.unroll loops with constant bounds.
Pass make_unroll_loops_pass();

/// Throws primjit::Error when `args` holds a key the pass does not take.
void check_no_args(const std::string& pass, const PassArgs& args);

/// A pass without arguments that rewrites each function on its own; functions that come back
/// unchanged (same node) keep their place in the module untouched.
Pass function_pass(std::string name, std::string summary,
                   std::function<PrimFunc(const PrimFunc&)> rewrite);
/// The same for a rewrite of the function body only.
Pass body_pass(std::string name, std::string summary, std::function<Stmt(const Stmt&)> rewrite);

/// The RemoveNoOp rewrite of one statement.
Stmt remove_no_op(const Stmt& body);

}  // namespace primjit::passes
