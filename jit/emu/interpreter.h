// The reference interpreter (target `emu`): runs the IR exactly, at any stage of the pipeline.
//
//   emu::Interpreter interp(module);               // checked, blocks in parallel
//   interp.run("main", {emu::Arg(&A), emu::Arg(&B), emu::Arg(int64_t{128})});
//
// - Any stage: unlowered functions (buffer_map params, thread_extent launches in the body),
//   after SplitHostDevice (host calls `Module.kernel(args)`), after LowerDeviceKernelLaunch
//   (`T.call_packed("symbol", args..., extents..., dyn_shmem_bytes)`), after MakePackedAPI
//   (calling_conv 1: run() packs the plain arguments into a PJValue array itself).
// - Device code: every block runs (in parallel on oneTBB unless disabled), every thread of a
//   block with its own locals, one shared memory per block, `T.tvm_storage_sync("shared")` a
//   real barrier; threads that disagree about reaching a barrier are reported (deadlock).
// - Checked mode (default): accesses are bounds-checked against their buffer and against the
//   underlying allocation; reads of never-written bytes of interpreter allocations and shared
//   memory races between the threads of a block (between two barriers, one access a write) are
//   reported with the statement, block and thread.
// - Limits: a launch CUDA would refuse (more than 1,024 threads per block, too much shared
//   memory, ...) is refused with the CUDA runtime's message (Options::launch_limits); a run
//   stops with an error after Options::max_steps loop iterations and threads.
// - Semantics: docs/semantics.md, as llvm and CUDA code compute it: integers wrap, Div/Mod
//   truncate and FloorDiv/FloorMod floor, x / 0 is -1 and x % 0 is x, MIN / -1 is MIN (with
//   Options::checked_arithmetic both are errors instead); float32 computes in single precision,
//   float16/bfloat16/float8 compute through float32 and round every result to nearest even
//   (primjit/float_formats.h); `round` rounds half to even; parallel, vectorized and unrolled
//   loops run their iterations in order.
// - Memory: tensors are accessed in place through their data pointers, whatever their device
//   type says (the interpreter treats "device" memory as host memory). In checked mode a raw
//   pointer argument must point into a tensor of the same call.
// - Thread-safe: several threads may run() on one Interpreter at once.
//
// Errors: primjit::Error naming what is wrong and where. A failed `assert` of the interpreted
// code is an AssertionError whose message is the assert's (formatted) message; constructs the
// interpreter cannot run (an unknown extern function, ...) are UnsupportedError.
#pragma once

#include <dlpack/dlpack.h>

#include <concepts>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>

#include "jit/common/launch_limits.h"
#include "primjit/error.h"
#include "primjit/ir/function.h"

namespace primjit::jit::emu {

/// A failed `assert` in the interpreted code; what() is the assert's message.
class AssertionError : public Error {
 public:
  using Error::Error;
};

/// Something the interpreter cannot run (e.g. a GPU-only extern function).
class UnsupportedError : public Error {
 public:
  using Error::Error;
};

/// An argument of run(), or a value returned by it.
class Arg {
 public:
  enum class Kind { kNone, kTensor, kInt, kFloat, kBool, kPointer };

  Arg() = default;
  Arg(DLTensor* tensor) : kind_(Kind::kTensor), tensor_(tensor) {}  // NOLINT: implicit
  template <std::integral T>
  Arg(T value)  // NOLINT: implicit
      : kind_(std::same_as<T, bool> ? Kind::kBool : Kind::kInt),
        int_(static_cast<int64_t>(value)) {}
  template <std::floating_point T>
  Arg(T value) : kind_(Kind::kFloat), float_(static_cast<double>(value)) {}  // NOLINT
  static Arg pointer(void* p) {
    Arg a;
    a.kind_ = Kind::kPointer;
    a.pointer_ = p;
    return a;
  }

  Kind kind() const { return kind_; }
  DLTensor* tensor() const { return tensor_; }
  int64_t as_int() const { return int_; }
  double as_float() const { return float_; }
  bool as_bool() const { return int_ != 0; }
  void* as_pointer() const { return pointer_; }
  std::string str() const;

 private:
  Kind kind_ = Kind::kNone;
  DLTensor* tensor_ = nullptr;
  int64_t int_ = 0;
  double float_ = 0;
  void* pointer_ = nullptr;
};

/// An extern function supplied by the caller (Options::symbol_lookup): gets the call's
/// arguments (pointers as kPointer, numbers as kInt/kFloat/kBool) and returns its result (kNone
/// for void).
using ExternFunction = std::function<Arg(std::span<const Arg> args)>;

struct Options {
  /// Bounds, initialization and shared-memory race checks (slower).
  bool checked = true;
  /// Integer division by zero and MIN / -1 raise primjit::Error naming the division and the
  /// function, instead of giving the defined results of docs/semantics.md (which llvm and CUDA
  /// code give too). Off by default, so that the interpreter agrees with compiled code.
  bool checked_arithmetic = false;
  /// Run the blocks of a launch in parallel on oneTBB.
  bool parallel_blocks = true;
  /// Functions named by call_extern / call_pure_extern / call_packed that neither the module
  /// nor the interpreter's builtins (libm) provide; return an empty function for unknown names.
  std::function<ExternFunction(const std::string& name)> symbol_lookup;
  /// Stack size of each fiber (a thread of a block with barriers); 0 picks a default.
  size_t fiber_stack_bytes = 0;
  /// The device launches run on. A launch outside its limits (threads per block, block and
  /// grid extents, shared memory) is refused with the CUDA runtime's message. Default: sm_90.
  LaunchLimits launch_limits = sm90_launch_limits();
  /// The most steps one run() may take; a step is one iteration of a loop or one thread of a
  /// launch (counted in batches, so a run may go somewhat past it). Beyond it run() throws
  /// primjit::Error, so a huge grid or loop cannot hang the caller. 0: no limit. The default,
  /// 10^10 steps, is minutes of interpretation.
  static constexpr uint64_t kDefaultMaxSteps = 10'000'000'000;
  uint64_t max_steps = kDefaultMaxSteps;
};

class Program;

class Interpreter {
 public:
  explicit Interpreter(IRModule module, Options options = {});
  ~Interpreter();
  Interpreter(const Interpreter&) = delete;
  Interpreter& operator=(const Interpreter&) = delete;

  /// Runs function `name` (its module name) with `args`, one per parameter of its user-level
  /// signature: a DLTensor* for a buffer parameter (or a pointer parameter), numbers for
  /// scalars. For a packed (calling_conv 1) function, `args` are its original arguments; they
  /// are packed into PJValues here. Returns the function's return value, if it has one.
  std::optional<Arg> run(const std::string& name, std::span<const Arg> args) const;
  std::optional<Arg> run(const std::string& name, std::initializer_list<Arg> args) const {
    return run(name, std::span<const Arg>(args.begin(), args.size()));
  }

  const IRModule& module() const;

 private:
  std::unique_ptr<Program> program_;
};

}  // namespace primjit::jit::emu
