// The runtime side of T.check_args (primjit/arg_table.h): one precompiled function checks the
// arguments of a packed call against the constant table MakePackedAPI wrote. Compiled host code
// calls it through the runtime symbol kCheckArgsSymbol (primjit_rt_check_args, defined here:
// jit/common/host_abi.h); the interpreter calls it directly, so both report the same messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "primjit/abi.h"

namespace primjit::jit {

/// What is wrong with `table` (size entries) as an argument table whose texts have
/// `texts_size` characters; "" when check_packed_args may run it. For T.check_args written by
/// hand: the code generator and the interpreter refuse a table that would read out of bounds.
std::string arg_table_problem(const int64_t* table, size_t size, size_t texts_size);

/// Checks `args` against `table` (signature: the function's parameter list as messages quote
/// it; texts: the table's texts). Returns 0, or -1 with the message of the first failed check in
/// *message. Reads the DLTensors the arguments point at; never throws.
int32_t check_packed_args(const PJValue* args, int32_t num_args, const char* signature,
                          const char* texts, const int64_t* table, std::string* message) noexcept;

}  // namespace primjit::jit
