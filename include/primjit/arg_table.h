// The argument table of a packed function: the checks of its arguments that need no symbolic
// expression, described by constants and run by one runtime function instead of generated code.
//
// MakePackedAPI writes `T.check_args(args, num_args, "<signature>", "<texts>", table...)` at the
// top of every packed function, where `table` is a list of integer constants in the layout below
// and `texts` holds the names and expected values the messages quote (a text is an offset and a
// length into it). The host code generator turns the table into a constant array passed to the
// runtime's check (jit/common/arg_check.h); the interpreter runs the same check. A failed check
// fails the call with exactly the message the generated assert it replaces had.
//
// Layout (every entry an int64):
//   table := num_params, param * num_params
//   param := kind (ArgKind); a kArgTensor continues with a tensor record:
//     name_at, name_len,                  the buffer's name
//     dtype_at, dtype_len,                the expected dtype's name ("float32")
//     ndim, code, bits, lanes,            the expected ndim and DLDataType
//     flags,                              ArgTensorFlags
//     device_type,                        the expected DLDeviceType (kDLCUDA also takes managed)
//     device_id_param,                    a tensor parameter whose device id this one must match,
//                                         or -1
//     device_id_at, device_id_len,        the expected text of that check ("to match A.device_id")
//     then ndim dimension records: dim_kind (ArgDimKind), a, b, text_at, text_len
//       kArgDimDefine: the extent defines a variable: a is its largest value (a variable
//                      narrower than int64) or -1 (no limit), text the expected text
//       kArgDimConst:  the extent must be a: text is the expected text
//       kArgDimMatch:  the extent must equal dimension b of tensor parameter a (which defines a
//                      variable): text is the expected text ("to match A.shape[0]")
//       kArgDimGenerated: the generated code checks it (an expression, a scalar parameter)
//
// The checks run in the order the generated code had them: the argument count and args
// pointer; each parameter's type; per tensor its null check, ndim, dtype, shape array and the
// range of the variables its dimensions define; then per tensor the dimensions that must match
// a constant or an earlier definition, compact strides, byte offset, device type and id and a
// non-null data pointer. Checks that stay generated code (strides a buffer declares, an element
// offset, extents given by expressions or scalar parameters) come after the table's.
#pragma once

#include <cstdint>

namespace primjit {

enum ArgKind : int64_t {
  kArgPointer = 0,  // an opaque pointer (a handle parameter without a buffer)
  kArgTensor = 1,   // a buffer parameter: a DLTensor*
  kArgBool = 2,
  kArgInt = 3,
  kArgFloat = 4,
};

enum ArgTensorFlags : int64_t {
  kArgCompactStrides = 1,  // null strides or compact row-major ones (extent-1 dims: any stride)
  kArgZeroByteOffset = 2,  // byte_offset must be 0
};

enum ArgDimKind : int64_t {
  kArgDimGenerated = 0,
  kArgDimDefine = 1,
  kArgDimConst = 2,
  kArgDimMatch = 3,
};

/// Where each field of a tensor record lies, counted from the entry after its kind.
enum ArgTensorField : int {
  kArgNameText = 0,   // name_at, name_len
  kArgDtypeText = 2,  // dtype_at, dtype_len
  kArgNdim = 4,
  kArgCode = 5,
  kArgBits = 6,
  kArgLanes = 7,
  kArgFlags = 8,
  kArgDeviceType = 9,
  kArgDeviceIdParam = 10,
  kArgDeviceIdText = 11,  // device_id_at, device_id_len
};

/// Entries of a tensor record before its dimension records, and of one dimension record.
inline constexpr int kArgTensorEntries = 13;
inline constexpr int kArgDimEntries = 5;

}  // namespace primjit
