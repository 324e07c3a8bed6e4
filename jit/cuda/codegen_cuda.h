// Device code generation: the CUDA kernels of a lowered module as one CUDA C translation unit,
// for NVRTC (jit/cuda/nvrtc_compiler.h).
//
// Input: an IRModule after the default pipeline. A kernel is a function with "calling_conv" 2
// and a "target" of kind cuda; a function with a cuda target that has no host and is neither a
// kernel nor a packed host function becomes an `extern "C" __device__` helper (called by its
// symbol, from a module call or T.call_extern). Everything else (host code) is skipped. All
// kernels go into one source, in module order, named by their "global_symbol" (else the
// function name), which must be a valid C identifier.
//
// Kernel parameter ABI. The host builds cuLaunchKernel's `void** kernelParams` from this: one
// entry per parameter, in the function's parameter order, each pointing at a value of the C type
//   pointer parameter (pointee T)  T* __restrict__ name   (T* without "tirx.noalias"; void* for
//                                                          an opaque handle), 8 bytes
//   int8/int16/int32/int64         int8_t / int16_t / int / long long
//   uint8/uint16/uint32/uint64     uint8_t / uint16_t / unsigned int / uint64_t
//   bool                           bool (1 byte)
//   float16/float32/float64        half / float / double
//   bfloat16, float8_e4m3fn/e5m2   __nv_bfloat16, __nv_fp8_e4m3 / __nv_fp8_e5m2 (their bits)
// Vector-typed parameters are an error. CudaKernelInfo::param_types gives each parameter's
// dtype (handle for pointers). The launch dimensions follow CudaKernelInfo::launch_params (the
// kernel's "tirx.kernel_launch_params"); "tirx.use_dyn_shared_memory" there means the last
// launch argument is the dynamic shared memory size in bytes.
//
// What the source looks like:
// - `extern "C" __global__ void __launch_bounds__(N) name(...)` when the product N of the
//   kernel's threadIdx extents (first appearance of each tag, as LowerDeviceKernelLaunch
//   counts them) is a constant; no bound when it is symbolic.
// - A thread_extent binds its variable once: `int tx = (int)threadIdx.x;` (in the variable's
//   dtype). Binds are local variables, loops `for (int i = a; i < b; ++i)`, `#pragma unroll`
//   before unrolled loops; vectorized loops run serially.
// - Allocations: `extern __shared__ __align__(A) T name[];` for the kernel's shared.dyn buffer
//   (the merged uint8 `buf_dyn_shmem`; extern names are unique in the module), `__shared__
//   __align__(A) T name[N];` for static shared memory and `T name[N];` for local arrays (N must
//   be constant). A buffer whose dtype differs from its pointer's element type (the typed views
//   over the merged buffer) or with an element offset gets a typed pointer at its DeclBuffer,
//   `float* B = (float*)buf_dyn_shmem;` (`+ elem_offset` when it has one), and is accessed
//   through it. MergeSharedMemoryAllocations folds each view's place into its indices (a view
//   512 bytes into the merged buffer reads `B[i + 128]`); the printer moves the constant part
//   common to a shared view's indices back into its pointer, `float* B = (float*)(buf_dyn_shmem
//   + 512);` and `B[i]`, so each view has one constant base (CudaCodegenOptions).
// - Semantics follow docs/semantics.md (helpers in semantics_cuda.h, emitted when used): Div,
//   Mod, FloorDiv and FloorMod print as C's `/` and `%` only where C gives the IR's result (a
//   divisor provably neither 0 nor -1; for the floor forms also non-negative operands: thread
//   indices, loop variables, constants, size variables), else they call primjit_truncdiv /
//   truncmod / floordiv / floormod, defined for every input (x / 0 = -1, x % 0 = x). Shifts
//   call primjit_shl/shr, float-to-int casts primjit_ftoi (saturating), floating FloorMod
//   primjit_floormod. int8/int16/uint8/uint16 results are cast back to their type (C promotes
//   them to int). 32/64-bit wraparound of + - * is left to the hardware (two's complement), as
//   in TVM's CUDA output.
// - `T.if_then_else` is `c ? t : f` (only the chosen branch runs). Select also prints as
//   `c ? t : f` when its branches have no side effects: not evaluating a pure operand is not
//   observable (a load that would fault in the unchosen branch is simply not done). With side
//   effects, the operands are evaluated left to right into temporaries inside an immediately
//   invoked lambda, as are Let expressions and And/Or whose second operand has side effects.
// - float16 and bfloat16 compute with the toolkit's operators; their math functions and all
//   float8 arithmetic compute in float32 and round each IR operation's result back to its
//   dtype. Math uses the float or double CUDA functions (expf, exp, ...), the `__expf` family
//   only with fast_math; Min/Max are CUDA's min/max on integers, primjit_fmin/fmax on float
//   and double, __hmin/__hmax on half and bfloat16. Integers and float64 become half,
//   bfloat16 or float8 through float (two roundings, as on the other backends). NVRTC runs
//   with --fmad=false: only T.fma fuses.
// - Vectors: lane-wise expressions; a contiguous access whose byte offset is provably aligned
//   and whose dtype has a CUDA vector type (float4, int2, half2, ...) loads or stores it whole.
// - tvm_storage_sync("shared"|"shared.dyn") is `__syncthreads();` ("warp": `__syncwarp();`);
//   AssertStmt traps (`__trap()`) when its condition is false; ptx_cp_async / commit / wait
//   call helpers of inline PTX.
// - Host C++: under `#ifdef PRIMJIT_CUDA_ON_CPU` the source has a portable form of what host
//   C++ lacks (the shared.dyn buffer is `PRIMJIT_CPU_DYN_SHARED(T, name);`, the copy helpers
//   copy at once), so the CUDA-on-CPU tests (tests/cuda_on_cpu/) compile it against their shim.
//   NVRTC never defines the macro: its source is unchanged.
// Unsupported constructs (global allocations in a kernel, symbolic static sizes, packed calls,
// virtual threads, ...) raise primjit::Error naming the construct and the kernel. The output is
// deterministic: the same module gives the same text.
//
// Where it is done: c_printer.h prints the C that any C-family target shares; cuda_printer.h
// spells its hooks in CUDA (types, conversions, threads, shared memory, kernel heads);
// cuda_intrinsics.cc is the table of the builtin ops' lowerings, keyed by the op table;
// ptx_helpers.cc holds the inline PTX; codegen_cuda.cc assembles the module (preamble,
// helpers, prototypes, functions in order).
//
// The interface is free of CUDA headers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/passes.h"

namespace primjit::jit {

struct CudaKernelInfo {
  /// The kernel's symbol in the source (its "global_symbol").
  std::string name;
  /// dtype of each parameter in order (DataType::Handle() for pointers); see the ABI above.
  std::vector<DataType> param_types;
  /// The kernel's "tirx.kernel_launch_params": thread tags, then "tirx.use_dyn_shared_memory".
  std::vector<std::string> launch_params;
  /// Threads per block when every threadIdx extent is constant (1 without any), else 0.
  int64_t static_threads = 0;
  /// Alignment in bytes of the dynamic shared memory array; 0 when the kernel has none.
  int dyn_shared_align = 0;
};

struct CudaModuleSource {
  std::string code;
  /// The kernels' architecture, e.g. "sm_90"; empty when there are no kernels.
  std::string arch;
  std::vector<CudaKernelInfo> kernels;
};

struct CudaCodegenOptions {
  /// Use the fast, less accurate intrinsics (__expf, __logf, __sinf, ...) for float32 math.
  bool fast_math = false;
  /// T.unroll loops of at most this many iterations get `#pragma unroll`; longer ones (or ones
  /// with a symbolic extent) stay plain loops.
  int64_t max_unroll = passes::kDefaultMaxUnroll;
  /// A view into shared memory (MergeSharedMemoryAllocations' typed views) gets a pointer to
  /// where its accesses start, `float* B = (float*)(buf_dyn_shmem + 1024);`, and its indices
  /// drop that offset. Off: the pointer is the merged buffer's and every index carries the
  /// offset (bench_device_codegen's "before").
  bool fold_view_offsets = true;
};

/// The CUDA C source of `lowered`'s kernels (and device helpers). A module without kernels gives
/// a source with no functions and an empty `kernels`. All kernels must target the same arch.
CudaModuleSource codegen_cuda(const IRModule& lowered, const CudaCodegenOptions& options = {});

}  // namespace primjit::jit
