// Keys of the function attributes, AttrStmt keys and statement annotations that primjit reads or
// writes. Code names a key only through these constants, so each key is spelled once. The
// strings are part of the text format and must not change; keys a user invents are kept and
// printed as they are, but primjit gives them no meaning.
#pragma once

namespace primjit::attr {

// Function attributes (PrimFuncNode::attrs, `T.func_attr`).

/// Function attr: the function's Target (a device target may carry its host); also an AttrStmt
/// key whose node is a device Target (value 0): a device region, from AnnotateDeviceRegions.
inline constexpr const char* kTarget = "target";
/// Function attr: the exported symbol (string), set for public functions by parser and builder.
inline constexpr const char* kGlobalSymbol = "global_symbol";
/// Function attr: int of CallingConv (0 plain, 1 packed, 2 kernel launch, 3 parallel task,
/// 4 compute scope), set by
/// lowering.
inline constexpr const char* kCallingConv = "calling_conv";
/// Kernel attr from LowerDeviceKernelLaunch: array of the launch values' names (thread tags,
/// then possibly kUseDynSharedMemory) that a caller passes after the arguments, in order.
inline constexpr const char* kKernelLaunchParams = "tirx.kernel_launch_params";
/// Last entry of kKernelLaunchParams when the kernel takes its dynamic shared memory bytes.
inline constexpr const char* kUseDynSharedMemory = "tirx.use_dyn_shared_memory";
/// Kernel attr from SplitHostDevice: bool, true when no two pointer params alias (__restrict__).
inline constexpr const char* kNoAlias = "tirx.noalias";

// AttrStmt keys.

/// AttrStmt key: node the IterVar (variable + thread tag), value the extent of a thread launch.
inline constexpr const char* kThreadExtent = "thread_extent";
/// AttrStmt key: like kThreadExtent for a virtual thread; only the interpreter runs it.
inline constexpr const char* kVirtualThread = "virtual_thread";
/// AttrStmt key (node 0, value 0): device code without a thread launch; becomes a device region.
inline constexpr const char* kDeviceScope = "device_scope";
/// AttrStmt key from MakePackedAPI (node 0, value the name): LLVM outlines the body to a function.
inline constexpr const char* kComputeScope = "compute_scope";

// Annotations (For and AllocBuffer `annotations`).

/// AllocBuffer annotation: bool, true marks the memory volatile; kept by shared-memory merging.
inline constexpr const char* kVolatile = "volatile";

}  // namespace primjit::attr
