// Inline PTX: the asynchronous global -> shared copies (T.ptx_cp_async, ptx_commit_group,
// ptx_wait_group) and the helper function the copies call.
#include "jit/cuda/cuda_printer.h"
#include "primjit/error.h"

namespace primjit::jit {

// ptx_cp_async(dst, dst_offset, src, src_offset, bytes): an asynchronous global -> shared copy;
// offsets count elements of each pointer's type.
Code CudaPrinter::lower_cp_async(const Call* op, int) {
  std::optional<int64_t> bytes = as_const_int(op->args[4]);
  PRIMJIT_USER_CHECK(bytes && (*bytes == 4 || *bytes == 8 || *bytes == 16))
      << component_ << ": T.ptx_cp_async copies 4, 8 or 16 constant bytes (in " << where() << ")";
  auto address = [&](const Expr& ptr, const Expr& offset) {
    const auto* v = ptr.as<VarNode>();
    Code base = sub(ptr, -1);
    if (v == nullptr || v->pointee.is_void()) base = {"(uint8_t*)" + wrap(base, kUnary), kUnary};
    if (as_const_int(offset) == 0) return base;
    return infix(base, "+", kAdd, sub(offset, -1));
  };
  m_.helpers.insert(Helper::kCpAsync);
  return call("primjit_cp_async<" + std::to_string(*bytes) + ">",
              {address(op->args[0], op->args[1]), address(op->args[2], op->args[3])});
}

Code CudaPrinter::lower_commit_group(const Call*, int) {
  m_.helpers.insert(Helper::kCpAsync);
  return {"primjit_cp_async_commit()", kPrimary};
}

Code CudaPrinter::lower_wait_group(const Call* op, int) {
  std::optional<int64_t> n = as_const_int(op->args[0]);
  PRIMJIT_USER_CHECK(n.has_value())
      << component_ << ": T.ptx_wait_group needs a constant group count (in " << where() << ")";
  m_.helpers.insert(Helper::kCpAsync);
  return {"primjit_cp_async_wait<" + std::to_string(*n) + ">()", kPrimary};
}

void print_cp_async_helper(SourceWriter& w) {
  // Host C++ has no PTX: under PRIMJIT_CUDA_ON_CPU (tests/cuda_on_cpu/) a copy completes at
  // once, which is one of the orders the asynchronous copy allows (its destination may be read
  // only after the wait), and commit and wait do nothing.
  w.line("// An asynchronous copy of N bytes from global to shared memory (T.ptx_cp_async), the");
  w.line("// end of a group of copies (T.ptx_commit_group) and the wait until at most N groups");
  w.line("// are pending (T.ptx_wait_group).");
  w.line("template <int N>");
  w.open("__device__ __forceinline__ void primjit_cp_async(void* shared, const void* global)");
  w.raw_line("#ifdef PRIMJIT_CUDA_ON_CPU");
  w.line("memcpy(shared, global, N);");
  w.raw_line("#else");
  w.line("unsigned int address = static_cast<unsigned int>(__cvta_generic_to_shared(shared));");
  w.line(
      "asm volatile(\"cp.async.ca.shared.global [%0], [%1], %2;\" ::\"r\"(address), "
      "\"l\"(global), \"n\"(N));");
  w.raw_line("#endif");
  w.close();
  w.open("__device__ __forceinline__ void primjit_cp_async_commit()");
  w.raw_line("#ifndef PRIMJIT_CUDA_ON_CPU");
  w.line("asm volatile(\"cp.async.commit_group;\");");
  w.raw_line("#endif");
  w.close();
  w.line("template <int N>");
  w.open("__device__ __forceinline__ void primjit_cp_async_wait()");
  w.raw_line("#ifndef PRIMJIT_CUDA_ON_CPU");
  w.line("asm volatile(\"cp.async.wait_group %0;\" ::\"n\"(N));");
  w.raw_line("#endif");
  w.close();
}

}  // namespace primjit::jit
