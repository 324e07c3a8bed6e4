// The reference interpreter's execution model (internal to jit/emu).
//
// A PrimFunc is compiled once into a tree of CExpr/CStmt nodes whose variables are resolved to
// slots of a Frame. Execution state lives in an Exec: the frame of the running function, where
// its allocations go, and, inside a kernel launch, the block and thread it runs as.
//
// Kernel launches: the outermost thread_extent (or thread-bound For) of a function is a
// LaunchStmt. It evaluates the grid, then runs its own statement once per (block, thread), each
// thread with a copy of the launching frame (its own locals). Shared allocations are made once
// per block; `tvm_storage_sync` is a barrier: threads of a block run as fibers that switch at
// barriers (fiber.h), blocks run in parallel on oneTBB.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "jit/emu/interpreter.h"
#include "jit/emu/memory.h"
#include "jit/emu/value.h"
#include "primjit/ir/function.h"

namespace primjit::jit::emu {

class Exec;
class FiberScheduler;
class Session;
struct CompiledFunction;

// --- compiled code --------------------------------------------------------------------------

class CExpr {
 public:
  explicit CExpr(DataType dtype) : dtype(dtype), type(dtype) {}
  virtual ~CExpr() = default;
  /// The value of a scalar expression.
  virtual Scalar eval(Exec& ex) const = 0;
  /// The lanes of any expression (one lane for scalars).
  virtual void eval_lanes(Exec& ex, Lanes* out) const { out->assign(1, eval(ex)); }

  const DataType dtype;
  const TypeInfo type;  // of one lane
};
using CExprPtr = std::unique_ptr<CExpr>;

class CStmt {
 public:
  explicit CStmt(Stmt stmt) : stmt(std::move(stmt)) {}
  virtual ~CStmt() = default;
  virtual void exec(Exec& ex) const = 0;

  const Stmt stmt;  // the source statement, for messages
};
using CStmtPtr = std::unique_ptr<CStmt>;

/// The most dimensions a buffer may have; accesses keep their indices in an array this long.
/// Compiler::buffer() rejects buffers with more.
inline constexpr size_t kMaxBufferDims = 16;

/// A buffer as the compiled code accesses it.
struct CBuffer {
  Buffer buffer;
  int data_slot = -1;
  TypeInfo elem;           // one lane of the buffer's dtype
  int elem_lanes = 1;      // lanes of the buffer's dtype
  int64_t elem_bytes = 0;  // bytes of one element (all its lanes)
  std::vector<CExprPtr> shape;
  std::vector<CExprPtr> strides;  // empty: row-major
  std::vector<int64_t> const_shape;
  bool shape_is_const = false;
  CExprPtr elem_offset;  // null when it is 0

  /// The element index of `indices` (one per dimension) from the data pointer, elem_offset
  /// included; in checked mode each index must lie within its dimension.
  int64_t flat_index(Exec& ex, const int64_t* indices, const char* what) const;
  /// The host address of element `flat` (from flat_index), checked for `bytes` bytes.
  uint8_t* address(Exec& ex, int64_t flat, bool is_write, const char* what) const;
};

/// Dimensions of a launch: blockIdx.x/y/z then threadIdx.x/y/z.
enum ThreadDim { kBlockX, kBlockY, kBlockZ, kThreadX, kThreadY, kThreadZ, kNumThreadDims };
/// The ThreadDim of a thread tag, or -1.
int thread_dim_of(const std::string& tag);
const char* thread_dim_name(int dim);

struct CompiledFunction {
  std::string name;
  PrimFunc func;
  int num_slots = 0;
  int num_vslots = 0;
  int calling_conv = 0;
  std::vector<int> param_slots;  // -1 for vector params
  /// For each buffer_map entry: the param index and the buffer.
  std::vector<std::pair<int, const CBuffer*>> param_buffers;
  std::vector<std::string> launch_params;  // "tirx.kernel_launch_params"
  CStmtPtr body;
  std::vector<std::unique_ptr<CBuffer>> buffers;
  std::map<const VarNode*, int> slots;  // scalar slots by variable
};

// --- execution state ------------------------------------------------------------------------

/// Launch extents given by the caller (`T.call_packed` of a kernel): tag → extent.
struct LaunchConfig {
  std::array<int64_t, kNumThreadDims> extents{1, 1, 1, 1, 1, 1};
  std::array<bool, kNumThreadDims> given{};
  int64_t dyn_shmem_bytes = -1;  // -1: none given
};

struct Frame {
  const CompiledFunction* func = nullptr;
  std::vector<Scalar> slots;
  std::vector<Lanes> vslots;
  const LaunchConfig* launch = nullptr;
  bool returned = false;
  Scalar ret;
};

/// The grid of a running launch.
struct Grid {
  std::array<int64_t, kNumThreadDims> extents{1, 1, 1, 1, 1, 1};
  int64_t num_blocks = 1;
  int64_t threads_per_block = 1;
  int64_t dyn_shmem_bytes = -1;
};

class Block {
 public:
  Block(const Grid& grid, int64_t linear);
  /// "(x, y, z)" of a thread of this block.
  std::string thread_coords(int64_t thread) const;
  std::string coords() const;

  const Grid& grid;
  int64_t linear;
  std::array<int64_t, 3> index{};
  AllocTable shared;
  uint32_t epoch = 1;                // barrier intervals, for race detection
  int64_t static_shared_bytes = 0;   // "shared" allocations of the block
  int64_t dynamic_shared_bytes = 0;  // "shared.dyn": the launch's size, else the allocation's
  /// An error found in this barrier interval but reported at its end (see check_access).
  std::string pending_error;
  /// Throws the pending error, if any; called at every barrier and when the block ends.
  void end_interval() {
    if (!pending_error.empty()) throw Error(pending_error);
    ++epoch;
  }
  FiberScheduler* scheduler = nullptr;  // when the threads run as fibers (launch.cc)
  /// T.ptx_cp_async copies (checked mode) that the issuing thread has not waited for: the
  /// interpreter copies at once, but on a GPU the bytes land at some point before the wait, so
  /// no access may touch the destination meanwhile (see check_access).
  struct AsyncCopy {
    const Allocation* alloc;
    int64_t start, bytes, thread;
    int64_t group;  // the thread's commit that closed its group, 0 while not committed
  };
  std::vector<AsyncCopy> async_copies;
  std::map<int64_t, int64_t> async_commits;  // thread -> groups it committed
};

class Exec {
 public:
  Exec(Session& session, Frame* frame, AllocTable* allocs)
      : session(session), frame(frame), allocs(allocs) {}
  ~Exec();
  Exec(const Exec&) = delete;
  Exec& operator=(const Exec&) = delete;

  /// Counts `n` steps (loop iterations) against the run's budget, Options::max_steps; they
  /// reach the session in batches of kStepBatch (and when the Exec ends).
  void tick(int64_t n);
  static constexpr int64_t kStepBatch = 1024;

  Scalar& slot(int i) { return frame->slots[static_cast<size_t>(i)]; }
  bool checked() const;
  /// " in `<statement>` (function 'f', block (..), thread (..))" for messages.
  std::string where() const;
  /// "block (..), thread (..)" or "" on the host.
  std::string thread_text() const;

  Session& session;
  Frame* frame;
  AllocTable* allocs;
  Block* block = nullptr;  // null on the host
  int64_t thread = 0;      // linear thread index in the block
  std::array<int64_t, kNumThreadDims> thread_index{};
  const CStmt* stmt = nullptr;  // the statement running, for messages
  int64_t pending_steps = 0;    // counted by tick(), not yet charged to the session
};

/// What the interpreter shares between runs: the module and the compiled functions.
class Program {
 public:
  Program(IRModule module, Options options);
  /// The compiled function named `name` (module name); compiled on first use.
  const CompiledFunction& function(const std::string& name) const;
  /// The module function whose "global_symbol" (or name) is `symbol`, or "".
  std::string function_by_symbol(const std::string& symbol) const;

  const IRModule module;
  const Options options;

 private:
  mutable std::mutex mutex_;
  mutable std::map<std::string, std::unique_ptr<CompiledFunction>> compiled_;
};

/// One run() call: the registry of known memory and the host-level allocations.
class Session {
 public:
  explicit Session(const Program& program) : program(program) {}
  bool checked() const { return program.options.checked; }
  /// Registers a user tensor (struct, shape, strides, data) passed as `name`; returns its
  /// header allocation.
  Allocation* register_tensor(DLTensor* tensor, const std::string& name);
  /// Memory owned by the session (packed argument arrays, ...), registered.
  Allocation* make_owned(std::string name, AllocKind kind, int64_t size);
  /// The allocation of a pointer without hint (nullptr when unknown).
  Allocation* resolve(uint64_t address) const { return registry.find(address, 1); }
  /// Adds `n` steps to the run's count; throws primjit::Error naming where `ex` is when that
  /// exceeds Options::max_steps. Thread-safe.
  void charge_steps(int64_t n, const Exec& ex);
  /// The same without the check (an Exec that ends hands in its last steps).
  void add_steps(int64_t n) {
    steps_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed);
  }

  const Program& program;
  Registry registry;
  AllocTable host_allocs;

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<Allocation>> owned_;
  std::map<const DLTensor*, Allocation*> tensors_;
  std::atomic<uint64_t> steps_{0};
};

inline bool Exec::checked() const { return session.checked(); }
inline Exec::~Exec() {
  if (pending_steps > 0) session.add_steps(pending_steps);
}
inline void Exec::tick(int64_t n) {
  pending_steps += n;
  if (pending_steps >= kStepBatch) {
    const int64_t n_steps = pending_steps;
    pending_steps = 0;
    session.charge_steps(n_steps, *this);
  }
}

// --- operations shared by the compiled nodes ------------------------------------------------

/// What an access is, for messages ("load of buffer 'A' element 3"); formatted only on error.
struct AccessDesc {
  const char* kind;  // "load", "store", ...
  const BufferNode* buffer = nullptr;
  int64_t element = -1;
  std::string str() const;
};

/// Checked memory access: the host address of [ptr + offset, + bytes).
uint8_t* check_access(Exec& ex, const Scalar& ptr, int64_t offset, int64_t bytes, bool is_write,
                      const AccessDesc& what);
/// T.ptx_cp_async's destination [ptr + offset, + bytes), copied already: pending until the
/// thread waits for it (T.ptx_commit_group, T.ptx_wait_group(n)); no-ops unchecked.
void record_async_copy(Exec& ex, const Scalar& ptr, int64_t offset, int64_t bytes);
void commit_async_copies(Exec& ex);
void wait_async_copies(Exec& ex, int64_t n);
/// The allocation a pointer points into (hint, else registry), or nullptr.
Allocation* allocation_of(Exec& ex, const Scalar& ptr);

/// Calls compiled function `f` with parameter values `args` (one per param; vector params not
/// supported) and returns its return value.
Scalar call_function(Exec& caller, const CompiledFunction& f, std::span<const Scalar> args,
                     const LaunchConfig* launch);
/// Binds the parameters of `f` in `frame` from `args` (buffer params from DLTensor headers).
void bind_params(Exec& ex, const CompiledFunction& f, std::span<const Scalar> args);

/// A compact text of a statement for messages: its first line.
std::string stmt_text(const Stmt& stmt);
/// A value of type `t` as an Arg (an extern call's argument, a function's result).
Arg to_arg(const TypeInfo& t, const Scalar& v);

/// Compiles a function (compiler.cc).
std::unique_ptr<CompiledFunction> compile_function(const Program& program, const std::string& name,
                                                   const PrimFunc& func);

}  // namespace primjit::jit::emu
