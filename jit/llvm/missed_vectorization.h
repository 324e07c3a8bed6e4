// Warnings for `T.vectorized` loops that LLVM does not vectorize, with LLVM's reasons.
//
// Host code generation puts a tag into the loop ID of every T.vectorized loop, next to
// llvm.loop.vectorize.enable: a distinct node !{!"primjit.vectorized", !"<function>", !"<var>"}
// (vectorized_loop_tag), so a loop copied by LLVM keeps its identity and untagged loops are
// never reported. While the engine optimizes a module with tagged loops, watch_vectorization
// installs a diagnostic handler on its context that turns LoopVectorize's remarks on, keeps
// those about tagged loops (found through the remark's code region and the loop nest around
// it) and swallows the rest. A tagged loop that LoopVectorize gives up on, or that the
// missed-transformation check still finds unvectorized, gets one warning per compile, at the
// default log level, naming the function and the loop variable:
//
//   function 'f': the T.vectorized loop over 'i' was not vectorized by LLVM: cannot identify
//   array bounds
//
// Modules without a tagged loop are optimized without remarks (they cost compile time).
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace llvm {
class LLVMContext;
class MDNode;
class Module;
}  // namespace llvm

namespace primjit::jit {

/// The first operand of the loop-ID entry that marks a T.vectorized loop.
inline constexpr const char* kVectorizedLoopTag = "primjit.vectorized";

/// The loop-ID entry for the T.vectorized loop over `loop_var` in `function` (a new distinct
/// node per loop).
llvm::MDNode* vectorized_loop_tag(llvm::LLVMContext& context, std::string_view function,
                                  std::string_view loop_var);

/// Runs `optimize` (LLVM's pipeline over `module`) and logs a warning for every tagged loop it
/// leaves unvectorized; returns the warnings, in the order the loops were first reported.
/// The context's diagnostic handler is restored afterwards, also when `optimize` throws.
std::vector<std::string> watch_vectorization(llvm::Module& module,
                                             const std::function<void()>& optimize);

}  // namespace primjit::jit
