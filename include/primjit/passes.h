// Passes over IRModules, their registry and the pass manager.
//
// Every pass is `IRModule -> IRModule`, registered under its class-style name
// ("VerifyWellFormed", "FlattenBuffer", ...). A pass may take options, written after its name in
// braces and separated by ',' (or ';'): "Specialize{n=128,m=64}". Each pass declares its options
// once (name, type, default, help): they are checked and converted by one function,
// parse_pass_options, and listed by `primjit-opt --list-passes`. The default pipeline lists the
// passes in the order of DESIGN.md; passes/pipeline.cc holds it with one reason per step.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "primjit/ir/function.h"

namespace primjit::passes {

/// Arguments of one pass invocation as written, e.g. {"n": "128"} for "Specialize{n=128}".
using PassArgs = std::map<std::string, std::string>;

/// One option a pass declares.
struct PassOption {
  enum class Type { kInt, kBool, kString };
  /// The key, e.g. "max". A name in angle brackets ("<name>") stands for any key the pass does
  /// not declare otherwise (Specialize's variable names).
  std::string name;
  Type type = Type::kInt;
  /// The value used when the option is not given, as text; empty when there is none.
  std::string default_value;
  /// One line, shown by `primjit-opt --list-passes`.
  std::string help;
  /// Smallest accepted value of an integer option.
  int64_t min = INT64_MIN;
};

/// A converted option value: int64_t, bool or std::string after its declared type.
using PassOptionValue = std::variant<int64_t, bool, std::string>;

struct Pass {
  std::string name;
  std::string summary;  // one line, shown by `primjit-opt --list-passes`
  std::function<IRModule(const IRModule&, const PassArgs&)> run;
  /// The options `run` accepts, in the order `--list-passes` shows them.
  std::vector<PassOption> options = {};
};

/// Checks every key of `args` against the options `pass` declares and converts its value to
/// the declared type, in key order. Throws primjit::Error naming the pass, the option and the
/// accepted options for an unknown key, and the expected type for an ill-typed value.
std::vector<std::pair<std::string, PassOptionValue>> parse_pass_options(
    std::string_view pass, const std::vector<PassOption>& options, const PassArgs& args);

/// "max=int (default 4096): help": one option as `primjit-opt --list-passes` shows it.
std::string describe_option(const PassOption& option);

/// The pass named `name`; throws primjit::Error listing the registered passes if unknown.
const Pass& get_pass(std::string_view name);
/// Every registered pass, sorted by name.
const std::vector<Pass>& registered_passes();

struct PipelineOptions {
  /// Run CommonSubexprElim after Simplify.
  bool common_subexpr_elim = true;
  /// Run InsertDivisionChecks first: an integer division by zero or MIN / -1 fails the call
  /// with an error naming the function and the division (docs/semantics.md, checked mode).
  bool checked_arithmetic = false;
  /// Run FuseMultiplyAdd after Simplify: floating a * b + c becomes T.fma, rounded once.
  bool fp_contract = false;
};

/// The default lowering pipeline, first to last.
std::vector<std::string> default_pipeline(const PipelineOptions& options = {});

/// The host lowering run on a lowered module right before host (LLVM) code generation: what
/// the code generator would otherwise have to lower itself (parallel loops), first to last.
std::vector<std::string> host_lowering_pipeline();
/// Runs host_lowering_pipeline() on `module` (no dumps or timings: it is part of compiling).
IRModule lower_for_host(const IRModule& module);

/// Splits "A,B{k=v,k2=v2},C" into invocations "A", "B{k=v,k2=v2}", "C": commas inside braces
/// separate a pass's options, not passes.
std::vector<std::string> split_pass_list(std::string_view list);

struct PassTiming {
  std::string pass;
  double milliseconds = 0;
};

struct RunOptions {
  /// Run VerifyWellFormed after every pass (also turned on by PRIMJIT_VERIFY_EACH=1).
  bool verify_each = false;
  /// Print the module after every pass to `print_stream` (stderr when null).
  bool print_after_all = false;
  std::ostream* print_stream = nullptr;
  /// Write the module before the first and after every pass as `DIR/NN_<pass>.tir`. Empty means
  /// the directory of PRIMJIT_DUMP=ir (or PRIMJIT_DUMP_IR) when set, else no dump.
  std::string dump_dir;
  /// When set, receives the wall time of every pass, in order.
  std::vector<PassTiming>* timings = nullptr;
};

/// Runs the named passes in order ("Name" or "Name{k=v,...}"). A failing verification names
/// the pass that broke the IR.
IRModule run_passes(IRModule module, const std::vector<std::string>& invocations,
                    const RunOptions& options = {});
/// Runs passes given as objects (they need not be registered), without arguments.
IRModule run_passes(IRModule module, const std::vector<Pass>& passes,
                    const RunOptions& options = {});

// --- T.unroll ---------------------------------------------------------------------------------

/// The most iterations a `T.unroll` loop is unrolled for, everywhere it can be: by UnrollLoops,
/// and by the code generators (LLVM's full-unroll hint, CUDA's `#pragma unroll`). A loop over
/// more iterations, or over an extent that is not a constant, stays a loop, and the reason is
/// logged at info level (PRIMJIT_LOG=info). (Fully unrolling 65,536 iterations kept LLVM busy
/// for half a minute.) Configurable per kernel (KernelOptions::max_unroll) and per pass
/// invocation (UnrollLoops{max=N}).
inline constexpr int64_t kDefaultMaxUnroll = 4096;

/// Whether `loop`, a T.unroll loop, is unrolled under the limit `max_unroll`: its extent is a
/// constant of at most `max_unroll` iterations. When not, logs why at info level, naming `who`
/// ("UnrollLoops", "host code generation", ...).
bool unroll_within_limit(const For& loop, int64_t max_unroll, const char* who);

// --- passes usable directly from C++ ---------------------------------------------------------

/// Binds size variables / scalar parameters of `func` to values everywhere (signature, buffer
/// shapes, body). A specialized scalar parameter stays in the signature and is asserted.
PrimFunc specialize(const PrimFunc& func, const std::unordered_map<const VarNode*, Expr>& values);

}  // namespace primjit::passes
