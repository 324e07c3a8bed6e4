// The CUDA printer: CPrinter's hooks spelled in CUDA C (cuda_printer.cc), the intrinsics table
// of the builtin ops (cuda_intrinsics.cc) and the inline PTX helpers (ptx_helpers.cc). One
// CudaPrinter prints one kernel or device function; codegen_cuda.cc assembles the module.
//
// The interface is free of CUDA headers.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "jit/cuda/c_printer.h"
#include "jit/cuda/codegen_cuda.h"

namespace primjit::jit {

// Helpers the source may need besides the semantics helpers; each is emitted once, and only when
// used.
enum class Helper { kReinterpret, kCpAsync };

// State shared by the functions of one module.
struct CudaModuleState {
  CudaCodegenOptions options;
  bool uses_fp16 = false;
  bool uses_bf16 = false;
  bool uses_fp8 = false;
  std::set<Helper> helpers;
  std::set<SemanticsHelper> semantics;
  // Names every function must keep free: function symbols, helpers, extern shared arrays.
  std::set<std::string> reserved;
  // Symbols of the module's device functions, by IR function name.
  std::map<std::string, std::string> device_functions;
};

class CudaPrinter final : public CPrinter {
 public:
  CudaPrinter(CudaModuleState& m, std::string symbol, bool is_kernel);

  /// Threads per block of a kernel when every threadIdx extent is constant, else 0.
  int64_t static_threads() const { return static_threads_; }
  /// Alignment of the dynamic shared memory array; 0 when the kernel has none.
  int dyn_shared_align() const { return dyn_shared_align_; }

 private:
  // --- CPrinter's hooks (cuda_printer.cc) -------------------------------------------------
  std::optional<std::string> extension_type(DataType t) override;
  std::optional<std::string> vector_type(DataType t) override;
  std::string make_vector_fn(const std::string& type) override;
  Code special_float(double v, bool single) override;
  Code to_compute_float(DataType t, const Code& v) override;
  Code from_float(DataType t, const Code& v) override;
  Code min_max(DataType t, const Expr& ea, const Expr& eb, bool is_min, int lane) override;
  Code call_function(const Call* op, int lane) override;
  void require(SemanticsHelper helper) override { m_.semantics.insert(helper); }
  void print_thread_extent(const AttrStmt* op) override;
  void print_allocation(const AllocBuffer* op, DataType elem, const std::string& type,
                        int align) override;
  std::string function_head(const PrimFunc& f) override;
  void finish_function() override;
  const char* trap_statement() const override { return "__trap();"; }
  const char* unroll_pragma() const override { return "#pragma unroll"; }

  // --- the intrinsics table (cuda_intrinsics.cc) ------------------------------------------
  /// How a builtin op prints: `lower(op, lane)`; `lane_wise` ops also work on vectors (one lane
  /// at a time), the others need scalars.
  struct Intrinsic {
    Code (CudaPrinter::*lower)(const Call*, int);
    bool lane_wise;
  };
  static const OpMap<Intrinsic>& intrinsics();
  Code lower_call(const Call* op, int lane) override;
  Code float_function(bool dbl, const Op& fn, const std::vector<Code>& args) override;
  Code lower_math(const Call* op, int lane);
  Code lower_reinterpret(const Call* op, int lane);
  Code lower_storage_sync(const Call* op, int lane);
  Code lower_access_ptr(const Call* op, int lane);
  Code lower_ret(const Call* op, int lane);

  // --- inline PTX (ptx_helpers.cc) --------------------------------------------------------
  Code lower_cp_async(const Call* op, int lane);
  Code lower_commit_group(const Call* op, int lane);
  Code lower_wait_group(const Call* op, int lane);

  CudaModuleState& m_;
  std::string dyn_shared_buffer_;
  int dyn_shared_align_ = 0;
  int64_t static_threads_ = 0;
  int64_t static_shared_bytes_ = 0;  // __shared__ arrays (alignment padding aside)
};

/// The definition of primjit_cp_async, the inline PTX of T.ptx_cp_async (ptx_helpers.cc).
void print_cp_async_helper(SourceWriter& w);

}  // namespace primjit::jit
