// TVM's spelling of builtins whose primjit name TVM does not read: the text format registers
// them against the op table (as a backend registers its lowering), the printer writes them and
// the parser reads both spellings into the same Call.
#pragma once

#include <string>
#include <string_view>

#include "primjit/ir/op.h"

namespace primjit::text_internal {

struct TvmSpelling {
  /// The dotted name after `T.`: "s_tir.cp_async_raw", "ptx.cp.async_.commit_group".
  std::string name;
  /// TVM's form takes the call's dtype as a leading string argument.
  bool leading_dtype = false;
};

/// The TVM spelling of `op`, or nullptr when TVM reads primjit's own `T.<name>(...)`.
const TvmSpelling* tvm_spelling(const OpNode* op);
/// The op a dotted TVM name denotes (Op() when none): the reverse of tvm_spelling.
Op op_of_tvm_spelling(std::string_view dotted, const TvmSpelling** spelling);

}  // namespace primjit::text_internal
