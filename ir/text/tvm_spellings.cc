// TVM's spellings of primjit builtins (see tvm_spellings.h and docs/text-format.md).
#include "ir/text/tvm_spellings.h"

namespace primjit::text_internal {
namespace {

const OpMap<TvmSpelling>& spellings() {
  // cp.async as TVM's InjectPTXAsyncCopy prints its raw call (python/tvm/backend/cuda/script.py:
  // the 6-argument `(dtype, dst, dst_off, src, src_off, bytes)` form), and the group commit and
  // wait under the names TVM's PTX namespace reads.
  static const OpMap<TvmSpelling> map = [] {
    OpMap<TvmSpelling> m("TVM spelling");
    m.set("ptx_cp_async", {"s_tir.cp_async_raw", true});
    m.set("ptx_commit_group", {"ptx.cp.async_.commit_group", false});
    m.set("ptx_wait_group", {"ptx.cp.async_.wait_group", false});
    return m;
  }();
  return map;
}

}  // namespace

const TvmSpelling* tvm_spelling(const OpNode* op) { return spellings().find(op); }

Op op_of_tvm_spelling(std::string_view dotted, const TvmSpelling** spelling) {
  for (const Op& op : Op::all()) {
    const TvmSpelling* s = spellings().find(op);
    if (s != nullptr && s->name == dotted) {
      *spelling = s;
      return op;
    }
  }
  return Op();
}

}  // namespace primjit::text_internal
