// Differential pass checking: run a module before and after each pass of a pipeline on the same
// generated inputs, in the reference interpreter, and report the first pass that changes an
// output.
//
//   emu::DifferentialReport r = emu::check_pipeline(module, passes::default_pipeline());
//   if (const emu::FunctionOutcome* bad = r.first_change()) std::cerr << r.str();
//
// For every function a user can call (not a kernel, not a device-only function), inputs are
// generated from its signature: each buffer parameter gets a tensor filled deterministically
// (floats uniform in [0, 1), integers in [0, 10), bools 0/1), symbolic dimensions and integer
// parameters get DifferentialOptions::dims[name] or the first of default_dims with which the
// input runs (19, else 4, else 128). Then again with every buffer and non-dimension parameter
// all zeros, and all ones (DifferentialOptions::uniform_inputs). After every pass that changed
// the module, the function runs again on a fresh copy of the same inputs; every buffer argument
// and the return value are compared with the previous run: integers and bools exactly, floats
// within a relative tolerance suited to the dtype (legalizing bfloat16/float8 compute changes
// intermediate rounding). A function the interpreter cannot run, or whose input already fails,
// is reported as skipped with the reason; it never counts as checked.
#pragma once

#include <dlpack/dlpack.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "jit/emu/interpreter.h"
#include "primjit/passes.h"

namespace primjit::jit::emu {

/// An owning tensor in host memory (its DLTensor may claim another device type; the
/// interpreter reads it in place).
class HostTensor {
 public:
  HostTensor(DataType dtype, std::vector<int64_t> shape, int device_type = kDLCPU);
  HostTensor(const HostTensor& other);
  HostTensor& operator=(const HostTensor& other);

  DLTensor* dl() { return &tensor_; }
  DataType dtype() const { return dtype_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  /// Number of scalar values (elements times lanes).
  int64_t size() const { return size_; }
  /// Value `i` (row-major, lanes innermost) as a double / stores `v` rounded to the dtype.
  double get(int64_t i) const;
  void set(int64_t i, double v);
  /// Fills with deterministic values: floats uniform in [0, 1), integers in [0, 10).
  void fill_random(uint64_t seed);
  /// "[1, 2]" for the multi-index of value `i`.
  std::string index_text(int64_t i) const;
  /// Lays the elements out with `strides` (elements, non-negative) after `elem_offset`
  /// elements: the storage (what get, set and size see) spans them, gaps included, and the
  /// DLTensor carries the strides and the byte offset. Contents are reset to zero.
  void set_layout(std::vector<int64_t> strides, int64_t elem_offset);

 private:
  void init_tensor();
  DataType dtype_;
  std::vector<int64_t> shape_;
  std::vector<int64_t> strides_;  // empty: compact
  int64_t elem_offset_ = 0;
  int64_t size_ = 1;
  std::vector<uint8_t> bytes_;
  DLTensor tensor_{};
};

/// Relative tolerance for comparing values of floating `dtype` (0 for integers).
double comparison_tolerance(DataType dtype);

struct DifferentialOptions {
  /// Values of symbolic dimensions and integer parameters, by variable name.
  std::map<std::string, int64_t> dims;
  /// Values tried, in order, for the dimensions and integer parameters not in `dims`: the
  /// first with which the input module runs without error is used for every later stage.
  std::vector<int64_t> default_dims = {19, 4, 128};
  /// Seed of the generated buffer contents.
  uint64_t seed = 20240611;
  /// Also run every function on all-zero and on all-one inputs (buffers, and the integer and
  /// float parameters that are no dimension), where the input module runs on them: branches
  /// that test memory against parameters then go both ways.
  bool uniform_inputs = true;
  /// When defined, functions without a "target" attribute get this one before the first pass.
  Target default_target;
  /// Only these functions (empty: every function a user can call).
  std::vector<std::string> functions;
  /// The interpreter's options (checked mode by default).
  Options interpreter;
};

struct FunctionOutcome {
  enum class Status { kUnchanged, kChanged, kSkipped };
  std::string function;
  Status status = Status::kUnchanged;
  /// kChanged: the pass that changed an output; kSkipped: where it stopped ("" = the input).
  std::string pass;
  int pass_index = -1;
  /// What changed (buffer, index, values) or why it was skipped.
  std::string detail;
  /// How many times the function ran (the input, then after each pass that changed the module;
  /// once per input set: random, zeros, ones).
  int runs = 0;
};

struct DifferentialReport {
  std::vector<std::string> passes;
  std::vector<FunctionOutcome> functions;
  /// A pass that raised an error (the pipeline stopped there), with its message.
  std::string pipeline_error;

  /// The outcome changed by the earliest pass, or nullptr.
  const FunctionOutcome* first_change() const;
  /// Functions that ran before and after every pass (unchanged or changed).
  int num_checked() const;
  int num_skipped() const;
  bool ok() const { return first_change() == nullptr && pipeline_error.empty(); }
  /// One line per function.
  std::string str() const;
};

/// Checks `passes` (objects, run without arguments) on `module`.
DifferentialReport check_pipeline(const IRModule& module, const std::vector<passes::Pass>& passes,
                                  const DifferentialOptions& options = {});
/// Checks named pass invocations ("Name" or "Name{k=v}") on `module`.
DifferentialReport check_pipeline(const IRModule& module,
                                  const std::vector<std::string>& invocations,
                                  const DifferentialOptions& options = {});

/// One way to run function `name` of the module being checked (a backend): buffer arguments
/// are host DLTensors (on the device the function's target names, read in place by the
/// interpreter) that it reads and writes; it returns the function's return value. It throws
/// UnsupportedError when it cannot run the function at all, Error when the call fails.
using BackendRunner =
    std::function<std::optional<Arg>(const std::string& name, std::span<const Arg> args)>;
struct Backend {
  std::string name;  // in the report: "emu", "cuda"
  BackendRunner run;
};

/// Backend against backend: every function a user can call (or `options.functions`) runs on the
/// inputs check_pipeline makes (random, with the first default dimension that `reference`
/// runs; then all zeros and all ones) through `reference` and then `candidate`, and their
/// results are compared as check_pipeline compares two passes (docs/semantics.md's tolerances).
/// The report has one step, the candidate's name: a function is kUnchanged when the two agree
/// on every input set, kChanged when the candidate differs or fails where the reference ran,
/// kSkipped when no input runs on the reference or the candidate cannot run it.
///
///   emu::check_backend(module, {"emu", run_in_emu}, {"cuda", run_on_gpu})
DifferentialReport check_backend(const IRModule& module, const Backend& reference,
                                 const Backend& candidate, const DifferentialOptions& options = {});

}  // namespace primjit::jit::emu
