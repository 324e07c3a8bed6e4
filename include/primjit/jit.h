// The JIT runtime: kernels that compile lazily, once per argument signature, and are cached.
//
//   primjit::Jit jit;                                  // ORC session, device state, the cache
//   primjit::Kernel k = jit.kernel(func);              // compiles nothing yet
//   k(a, b, 2.0f);                                     // DLTensor* / Tensor / C++ numbers
//   primjit::KernelStats st = k.stats();
//
// The first call with a new key (see Policy) lowers the function (Specialize, then the default
// pipeline), compiles the host code with LLVM ORC and the kernels for the device, loads them,
// stores the variant and calls it. Later calls with the same key run the stored variant: a
// check of the kernel's last variant, then a lookup that takes no writer lock and allocates
// nothing. Kernels and the Jit are safe to use from several threads at once; concurrent first
// calls with one key compile once, distinct keys compile in parallel.
#pragma once

#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "primjit/abi.h"
#include "primjit/benchmark.h"
#include "primjit/ir/function.h"
#include "primjit/ir/target.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"

namespace primjit {

/// How argument shapes select variants.
enum class Policy {
  kExact,     // every distinct shape tuple is its own variant, dimensions compiled in
  kDynamic,   // one variant per dtype/ndim signature; dimensions bound at call time
  kAuto,      // exact until a dimension has taken more than auto_threshold values, then that
              // dimension stays symbolic in the variants compiled from then on
  kBucketed,  // each dimension keyed on its value when at most bucket_limit, else only on
              // whether it is a multiple of 16 (the variant assumes n % 16 == 0 then, so
              // vectorized and tiled loops keep their fast paths); a tensor's strides on its
              // contiguity, its data on 16-byte alignment. Shapes of one bucket share a variant
};

/// What happens when a kernel would compile more than recompile_limit variants.
enum class OnRecompileLimit {
  kError,              // throw primjit::Error naming the dimension that keeps changing
  kFallbackToDynamic,  // use (and compile once) the fully dynamic variant
};

struct KernelOptions {
  /// llvm, cuda or emu. Undefined: the function's own "target" attribute, else cuda when a
  /// driver and a device exist, else llvm. A device target (cuda, emu) runs the host part on
  /// the CPU (llvm).
  Target target;
  /// kBucketed is the default: a kernel's first shape compiles its exact variant (what kExact
  /// would), a second shape of a bucket the bucket's variant, and a shape called promote_after
  /// times in a row its own exact one. bench_policy's 20 matmul shapes: 3 compiles in 75 ms,
  /// 1.07x kExact's speed (kExact: 20 compiles in 650 ms); bench/README.md.
  Policy policy = Policy::kBucketed;
  int auto_threshold = 4;
  /// kBucketed: dimensions up to this value are compiled in (at least 1: a dimension of 1 is
  /// always its own bucket); larger ones are keyed on their divisibility by 16.
  int64_t bucket_limit = 16;
  /// kBucketed: a shape whose calls by one thread reach this many in a row on its bucket's
  /// variant (calls from the cached path) gets a variant of its own with every dimension
  /// compiled in, as kExact would make it (after the call that reaches the count; in the
  /// background under JitOptions::tiered), and its later calls run that; so does the kernel's
  /// first shape, at once (not under tiered, whose first call makes the generic variant).
  /// Only for calls whose tensors are compact, at offset 0 and 16-byte aligned (others take the
  /// bucket's variant); no hot shapes on target cuda (their calls may be captured into a CUDA
  /// graph, where nothing may compile). Up to 8 shapes per kernel; never when it would reach
  /// recompile_limit. 0: never (every shape runs its bucket's variant).
  int promote_after = 16;
  /// The most distinct argument keys compiled as exact variants (a variant compiled again
  /// after its eviction does not count again).
  int recompile_limit = 32;
  OnRecompileLimit on_recompile_limit = OnRecompileLimit::kError;
  /// cuda: let NVRTC use fast, less accurate math (--use_fast_math, __expf & co.).
  bool fast_math = false;
  /// Checked mode: an integer division by zero or MIN / -1 throws primjit::Error naming the
  /// function and the division (on cuda the kernel traps), instead of giving the defined
  /// results of docs/semantics.md (x / 0 = -1, x % 0 = x, MIN / -1 = MIN). Costs a compare and
  /// branch per division whose divisor is not a constant.
  bool checked_arithmetic = false;
  /// Contraction: floating a * b + c is computed as T.fma(a, b, c), rounded once, on every
  /// backend (FuseMultiplyAdd). Off: two roundings everywhere; LLVM and NVRTC never contract on
  /// their own. Off by default: bench/README.md (bench_host_codegen) measured no gain for it.
  bool fp_contract = false;
  /// cuda: the CUstream of calls that name none (CallOptions::cuda_stream); nullptr: the
  /// default stream. The stream is part of each call, not of the compiled code: kernels and
  /// calls on different streams share variants.
  void* cuda_stream = nullptr;
  /// The most iterations a T.unroll loop is unrolled for (LLVM's full-unroll hint, CUDA's
  /// `#pragma unroll`); longer loops stay loops (see passes::kDefaultMaxUnroll).
  int64_t max_unroll = passes::kDefaultMaxUnroll;
};

/// Milliseconds spent in each compile stage, summed over a kernel's compiles.
struct StageTimes {
  double passes_ms = 0;
  double host_ms = 0;  // LLVM code generation, optimization and ORC linking
  double device_codegen_ms = 0;
  double device_compile_ms = 0;  // NVRTC
  double load_ms = 0;            // loading device code
  /// Disk cache: reading, checking and linking/loading entries (disk hits), and writing new
  /// ones after a compile.
  double disk_ms = 0;
};

struct KernelStats {
  uint64_t calls = 0;
  uint64_t hits = 0;         // calls served by a variant in memory
  uint64_t misses = 0;       // = compiles (lowering, LLVM, NVRTC)
  uint64_t disk_hits = 0;    // variants loaded from the disk cache instead of compiled
  uint64_t remote_hits = 0;  // variants loaded from the remote (Redis) cache
  uint64_t variants = 0;     // this kernel's variants in memory (compiled or loaded)
  uint64_t evictions = 0;    // of this kernel's variants
  StageTimes compile;
  /// JitOptions::tiered: calls served by the generic variant while the variant their key
  /// selects compiled in the background (or after its compile failed), and the variants that
  /// finished compiling in the background (calls with their keys then run them).
  uint64_t tiered_calls = 0;
  uint64_t switch_overs = 0;
  /// kBucketed: the shapes given variants of their own (KernelOptions::promote_after; the
  /// kernel's first shape among them; a compile that failed counts too), and the calls that ran
  /// those variants from the cached path.
  uint64_t promotions = 0;
  uint64_t promoted_calls = 0;
  /// Why each variant was made, in order: "first call", "n: 128 -> 130" (a dimension that is a
  /// shape variable is named by it, once), "A.shape[1]: 4 -> 8" (any other), ...; for a
  /// variant loaded from the disk cache the reason ends with " (disk cache)". Only the last 256
  /// are kept (a kernel that makes variants forever keeps bounded memory).
  std::vector<std::string> reasons;
};

/// A Jit's counters over all its kernels, live and gone (Jit::stats). to_json prints them.
struct JitStats {
  uint64_t compiles = 0;         // variants compiled (lowering, LLVM, NVRTC), failed ones included
  uint64_t memory_hits = 0;      // calls served by a variant in memory
  uint64_t disk_hits = 0;        // variants loaded from the disk cache instead of compiled
  uint64_t remote_hits = 0;      // variants loaded from the remote (Redis) cache
  uint64_t tiered_hits = 0;      // calls served by a generic variant (JitOptions::tiered)
  uint64_t switch_overs = 0;     // variants that finished compiling in the background
  StageTimes compile;            // per stage, summed over every compile and cache load
  uint64_t host_code_bytes = 0;  // host objects of the variants made or loaded
  uint64_t device_code_bytes = 0;  // device images (CUBIN or PTX) of those
};

/// `stats` as one line of JSON with a fixed layout (keys in this order, times in milliseconds
/// with three decimals):
///   {"compiles":2,"hits":{"memory":5,"disk":1,"remote":0,"tiered":0},"switch_overs":0,
///    "compile_ms":{"passes":..,"host_codegen":..,"device_codegen":..,"nvrtc":..,"load":..,
///                  "disk":..,"total":..},
///    "code_bytes":{"host":..,"device":..,"total":..}}
std::string to_json(const JitStats& stats);

/// Whether compiled variants are also kept on disk, for later processes.
enum class DiskCacheMode {
  kEnvironment,  // on, unless the environment says PRIMJIT_CACHE=0
  kEnabled,      // on, whatever the environment says
  kDisabled,
};

struct JitOptions {
  /// Variants kept in memory across all kernels; the least recently used is evicted beyond it.
  size_t cache_capacity = 256;
  /// LLVM optimization level of host code (0-3).
  int opt_level = 3;
  /// cuda: ptxas optimization level of device code (0-3); -1: ptxas's default (3). Level 1
  /// compiles faster at some register cost (bench/README.md, "NVRTC options").
  int ptxas_opt_level = -1;
  /// The persistent cache (llvm and cuda variants; emu variants compile nothing).
  DiskCacheMode disk_cache = DiskCacheMode::kEnvironment;
  /// Its directory. Empty: $PRIMJIT_CACHE_DIR, else $XDG_CACHE_HOME/primjit, else
  /// ~/.cache/primjit. It must belong to the current user and be closed to writes by others
  /// (primjit creates it 0700); otherwise it is refused: with kEnvironment, a warning and no
  /// disk cache; with kEnabled, a primjit::Error. See docs/cache.md for the trust model.
  std::string cache_dir;
  /// Size cap of the directory; the least recently used files are removed beyond it. 0:
  /// $PRIMJIT_CACHE_MAX_BYTES (e.g. 512M), else 1 GiB.
  uint64_t disk_cache_max_bytes = 0;
  /// The remote tier, shared by a fleet: redis://host:port[/db]. Empty: $PRIMJIT_CACHE_REMOTE,
  /// else none. Off when the disk cache is disabled (kDisabled). See docs/cache.md.
  std::string remote_cache;
  /// The team's key file for it (`primjit-cache keygen`): the public key verifies values, the
  /// secret key (writers only) signs them. Empty: $PRIMJIT_CACHE_KEY_FILE.
  std::string remote_key_file;
  /// Time budget of each connect and lookup; a server slower than this is a miss.
  int remote_budget_ms = 50;
  /// Tiered compilation. A call whose key is new under its kernel's policy (kExact, kAuto or
  /// kBucketed) runs at once on the kernel's generic variant, the kDynamic one for the call's
  /// dtypes, ranks and layout (compiled by the first such call, which waits for it, or reused),
  /// while the variant its key selects compiles on a background task; calls with that key
  /// switch to it once it is ready (KernelStats::tiered_calls, switch_overs). A background
  /// compile that fails is logged as a warning, and calls with its key keep running the
  /// generic variant (they do not compile it again); a lookup that waits for the variant
  /// instead (Kernel::prewarm, compiled, compile_async, or the calls of a kernel without a
  /// generic variant) compiles it again in its own thread and gets that compile's variant or
  /// error. At most 64 background compiles per Jit are queued or running: a call with a new key
  /// beyond that runs the generic variant without queueing, and a later call with its key
  /// queues it. Both variants compute the same bits for
  /// arithmetic: specializing never changes floating-point semantics (docs/semantics.md); math
  /// functions (T.exp, ...) agree within their ulp bound, since a vectorized lane and a scalar
  /// iteration may call different implementations and specializing changes which loops
  /// vectorize. Kernels of policy kDynamic, and kernels after the recompile limit's fallback,
  /// are not tiered. The Jit's destructor cancels its background compiles that have not
  /// started and waits for the running ones; its kernels (which keep what they use alive, see
  /// ~Jit) then compile each new key's variant in the calling thread. Off by default: the
  /// first call with a new shape then compiles its own variant and waits for it.
  bool tiered = false;
};

/// What a variant depends on in one argument, for compiling without data (Kernel::prewarm,
/// Kernel::compile_async): a tensor's dtype and shape, or a scalar's dtype.
struct ArgSpec {
  bool is_tensor = false;
  DataType dtype;
  std::vector<int64_t> shape;

  static ArgSpec tensor(DataType dtype, std::vector<int64_t> shape) {
    return ArgSpec{true, dtype, std::move(shape)};
  }
  static ArgSpec scalar(DataType dtype) { return ArgSpec{false, dtype, {}}; }
};
/// One call's arguments, in parameter order.
using Signature = std::vector<ArgSpec>;

/// Options of one call (Kernel::call, Kernel::prepare; also as the last argument of
/// Kernel::operator()). Ignored by targets llvm and emu.
struct CallOptions {
  /// cuda: the CUstream the call's kernels are launched on (nullptr: the default stream).
  /// Unset: KernelOptions::cuda_stream. Any stream uses the same compiled variants.
  ///
  /// CUDA graphs: a call on a stream that is capturing (cuStreamBeginCapture) only enqueues
  /// launches, so it is captured into the graph; a call that would first compile or load a
  /// variant throws primjit::Error instead (call it once before capturing, or prewarm).
  std::optional<void*> cuda_stream;
};

namespace detail {
/// True when the last of Ts is a CallOptions (Kernel::operator() and prepare).
template <typename... Ts>
constexpr bool last_is_call_options() {
  if constexpr (sizeof...(Ts) == 0) {
    return false;
  } else {
    using Last = std::tuple_element_t<sizeof...(Ts) - 1, std::tuple<std::remove_cvref_t<Ts>...>>;
    return std::is_same_v<Last, CallOptions>;
  }
}
}  // namespace detail

/// One argument of a call: a tensor (DLTensor*) or a scalar.
struct Arg {
  PJValue value{};

  Arg(DLTensor* t) { set_ptr(kPJDLTensorPtr, t); }  // NOLINT: implicit by design
  Arg(const DLTensor* t) { set_ptr(kPJDLTensorPtr, const_cast<DLTensor*>(t)); }  // NOLINT
  Arg(const Tensor& t) { set_ptr(kPJDLTensorPtr, t.dl()); }                      // NOLINT
  Arg(bool b) {                                                                  // NOLINT
    value.type_index = kPJBool;
    value.v_int64 = b ? 1 : 0;
  }
  template <typename T, std::enable_if_t<std::is_integral_v<T>, int> = 0>
  Arg(T v) {  // NOLINT
    value.type_index = kPJInt;
    value.v_int64 = static_cast<int64_t>(v);
  }
  template <typename T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Arg(T v) {  // NOLINT
    value.type_index = kPJFloat;
    value.v_float64 = static_cast<double>(v);
  }

 private:
  void set_ptr(int32_t type, void* p) {
    value.type_index = type;
    value.v_ptr = p;
  }
};

class Jit;
class CompiledVariant;
class PreparedCall;

class Kernel {
 public:
  Kernel() = default;

  /// Calls the kernel; returns the function's return value (type index kPJNone if none).
  /// Bad arguments throw primjit::Error naming the function, the argument, expected and
  /// actual; nothing is compiled for a bad call. k(a, b) or k(a, b, CallOptions{...}): the
  /// arguments, optionally followed by the call's options (its stream).
  template <typename... Args>
  PJValue operator()(Args&&... args) const {
    if constexpr (detail::last_is_call_options<Args...>()) {
      auto all = std::forward_as_tuple(std::forward<Args>(args)...);
      return call_with_options(all, std::make_index_sequence<sizeof...(Args) - 1>());
    } else {
      Arg packed[] = {Arg(std::forward<Args>(args))..., Arg(0)};
      return call(std::span<const Arg>(packed, sizeof...(Args)));
    }
  }
  PJValue call(std::span<const Arg> args) const;
  PJValue call(std::span<const Arg> args, const CallOptions& options) const;

  /// A call made ready for the fastest repeated launch (cuda): runs the call's host code once
  /// now, with all its checks (compiling the variant if needed), recording the kernel launches
  /// it makes instead of running them; PreparedCall::launch then replays them. Throws
  /// primjit::Error for targets other than cuda and for host code that does more than launch
  /// kernels (see PreparedCall). k.prepare(a, b) or k.prepare(a, b, CallOptions{...}).
  PreparedCall prepare(std::span<const Arg> args, const CallOptions& options = {}) const;
  template <typename... Args,
            std::enable_if_t<!detail::first_converts_to<std::span<const Arg>, Args...>(), int> = 0>
  PreparedCall prepare(Args&&... args) const;

  KernelStats stats() const;

  /// Compiles (or loads from the disk cache) the variants the given signatures select, in
  /// parallel, so later calls with them do not wait; variants already in memory are kept.
  /// Signatures are checked like calls. Throws the first failure after all have finished.
  void prewarm(const std::vector<Signature>& signatures) const;
  /// The same for one signature, in the background. The future's get() rethrows a failure.
  /// (Like every std::async future, destroying it waits for the compile.)
  std::future<void> compile_async(Signature signature) const;
  /// The lowered module a call with `signature` compiles under the kernel's policy as it
  /// stands (specialized to the shapes unless the policy leaves them symbolic; the default
  /// pipeline with the kernel's options), checked like a call. Compiles, caches and learns
  /// nothing: for tools and benchmarks that build baselines from the code the kernel runs.
  IRModule lowered(const Signature& signature) const;
  /// The variant a call with `signature` runs under the kernel's policy as it stands, compiled
  /// (or loaded) now if it is not in memory, checked like a call; counted like a prewarm.
  /// For benchmarks and tools that call the kernel's code without its dispatch.
  CompiledVariant compiled(const Signature& signature) const;
  /// The function as given to Jit::kernel.
  const PrimFunc& function() const;
  /// The target variants are compiled for.
  const Target& target() const;
  /// The options the kernel was made with (target as given, possibly undefined).
  const KernelOptions& options() const;

  /// Times cached calls with these arguments (see primjit/benchmark.h): one untimed call that
  /// compiles if needed, warm-up calls, then timed repetitions. Bad options or arguments throw
  /// primjit::Error. The kernel's stats count every call it makes.
  BenchResult benchmark(std::span<const Arg> args, const BenchOptions& bench_options = {}) const;
  /// k.benchmark(a, b, 2.0f) or k.benchmark(a, b, 2.0f, options): arguments as for a call,
  /// optionally followed by BenchOptions.
  template <typename... Args,
            std::enable_if_t<!detail::first_converts_to<std::span<const Arg>, Args...>(), int> = 0>
  BenchResult benchmark(Args&&... args) const {
    if constexpr (detail::last_is_bench_options<Args...>()) {
      auto all = std::forward_as_tuple(std::forward<Args>(args)...);
      return benchmark_with_options(all, std::make_index_sequence<sizeof...(Args) - 1>());
    } else {
      Arg packed[] = {Arg(std::forward<Args>(args))..., Arg(0)};
      return benchmark(std::span<const Arg>(packed, sizeof...(Args)));
    }
  }

  struct State;

 private:
  template <typename Tuple, size_t... I>
  PJValue call_with_options(Tuple& all, std::index_sequence<I...>) const {
    Arg packed[] = {Arg(std::get<I>(all))..., Arg(0)};
    return call(std::span<const Arg>(packed, sizeof...(I)), std::get<sizeof...(I)>(all));
  }
  template <typename Tuple, size_t... I>
  PreparedCall prepare_with_options(Tuple& all, std::index_sequence<I...>) const;
  template <typename Tuple, size_t... I>
  BenchResult benchmark_with_options(Tuple& all, std::index_sequence<I...>) const {
    Arg packed[] = {Arg(std::get<I>(all))..., Arg(0)};
    return benchmark(std::span<const Arg>(packed, sizeof...(I)), std::get<sizeof...(I)>(all));
  }
  friend class Jit;
  explicit Kernel(std::shared_ptr<State> state) : state_(std::move(state)) {}
  std::shared_ptr<State> state_;
};

/// One compiled variant of a kernel (Kernel::compiled), held: its code stays loaded while this
/// lives, even after the kernel's cache evicts it, and it keeps its Jit's state alive. A call
/// runs the variant directly: none of Kernel's argument checks, key or statistics (the
/// compiled code still checks its arguments, as the packed API does). Copies share the variant.
class CompiledVariant {
 public:
  CompiledVariant() = default;

  /// Runs the variant with arguments as for Kernel::call (its kernels on the options' stream,
  /// else the kernel's); a failure throws primjit::Error.
  PJValue call(std::span<const Arg> args, const CallOptions& options = {}) const;
  /// The packed entry point of the variant's host code (primjit/abi.h), to be called as
  /// packed_function()(packed_self(), args, num_args, &result); a non-zero return means the call
  /// failed (its message is not readable from C). Its kernels run on the default stream. Null
  /// for target emu, whose variants run in primjit's interpreter: use call.
  PJPackedFunc packed_function() const;
  /// The `self` argument the entry point must be given: the table of the variant's loaded
  /// kernels (null when its host code launches none).
  void* packed_self() const;

  struct State;

 private:
  friend class Kernel;
  explicit CompiledVariant(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

/// A call of a cuda kernel with its arguments bound, for the fastest repeated launch
/// (Kernel::prepare): launch() replays the kernel launches the call's host code made when it
/// was prepared (kernel, grid, block, dynamic shared memory, argument values) with
/// cuLaunchKernel, on the prepared stream, and does nothing else: no argument checks, no
/// lookup, no host code.
///
/// Rules: the bound tensors' memory must stay allocated (a replay writes where the call
/// wrote); shapes and scalars are those of the prepare. Only launches are replayed, so prepare
/// refuses (primjit::Error) a kernel whose function returns a value or whose host code stores
/// to memory, runs a parallel loop or calls anything but kernels and the module's functions.
/// The launched code stays loaded while the PreparedCall lives, even after the kernel's cache
/// evicts the variant. Copies share the recording; launch() may run on several threads at once.
class PreparedCall {
 public:
  PreparedCall() = default;

  /// Enqueues the recorded launches on the prepared stream; a failure throws primjit::Error
  /// naming the kernel.
  void launch() const;
  /// The same on another stream (e.g. one capturing a CUDA graph).
  void launch(void* cuda_stream) const;
  /// How many kernel launches one launch() makes.
  size_t num_launches() const;

  struct State;

 private:
  friend class Kernel;
  explicit PreparedCall(std::shared_ptr<const State> state) : state_(std::move(state)) {}
  std::shared_ptr<const State> state_;
};

template <typename... Args,
          std::enable_if_t<!detail::first_converts_to<std::span<const Arg>, Args...>(), int>>
PreparedCall Kernel::prepare(Args&&... args) const {
  if constexpr (detail::last_is_call_options<Args...>()) {
    auto all = std::forward_as_tuple(std::forward<Args>(args)...);
    return prepare_with_options(all, std::make_index_sequence<sizeof...(Args) - 1>());
  } else {
    Arg packed[] = {Arg(std::forward<Args>(args))..., Arg(0)};
    return prepare(std::span<const Arg>(packed, sizeof...(Args)));
  }
}

template <typename Tuple, size_t... I>
PreparedCall Kernel::prepare_with_options(Tuple& all, std::index_sequence<I...>) const {
  Arg packed[] = {Arg(std::get<I>(all))..., Arg(0)};
  return prepare(std::span<const Arg>(packed, sizeof...(I)), std::get<sizeof...(I)>(all));
}

class Jit {
 public:
  explicit Jit(JitOptions options = {});
  /// Kernels made by the Jit may outlive it: they keep its state (engine, caches) alive and
  /// go on working. Its background compiles (JitOptions::tiered) are cancelled or finished
  /// before this returns.
  ~Jit();
  Jit(const Jit&) = delete;
  Jit& operator=(const Jit&) = delete;

  /// A kernel for `func`; compiles nothing until the first call.
  Kernel kernel(const PrimFunc& func, KernelOptions options = {});
  /// A kernel for function `name` of `module` (other functions are its private callees).
  Kernel kernel(const IRModule& module, const std::string& name, KernelOptions options = {});

  /// The target used when KernelOptions and the function name none: cuda with a driver and a
  /// device, else llvm.
  static Target default_target();

  /// Counters of every kernel this Jit made, those still alive and those gone.
  JitStats stats() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace primjit
