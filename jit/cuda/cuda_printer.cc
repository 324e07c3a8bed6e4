// CPrinter's hooks in CUDA C: the toolkit's types and conversions, thread indices, shared
// memory, and the kernel and device function heads.
#include "jit/cuda/cuda_printer.h"

#include <cmath>
#include <functional>
#include <map>

#include "jit/common/launch_limits.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

constexpr int64_t kMaxThreadsPerBlock = LaunchLimits{}.max_threads_per_block;

// Threads per block: the product of the first extent of each threadIdx tag, Binds met before it
// inlined (the rule of LowerDeviceKernelLaunch); 0 when one is not constant.
int64_t static_thread_count(const Stmt& body) {
  VarMap binds;
  std::map<std::string, Expr> extents;
  std::function<void(const Stmt&)> walk = [&](const Stmt& s) {
    if (const auto* bind = s.as<Bind>()) {
      binds[bind->var.get()] = substitute(bind->value, binds);
    } else if (const auto* attr_stmt = s.as<AttrStmt>()) {
      const IterVarNode* iv = attr_stmt->iter_var();
      if (iv != nullptr && attr_stmt->key == attr::kThreadExtent &&
          !extents.count(iv->thread_tag)) {
        extents[iv->thread_tag] = substitute(attr_stmt->value, binds);
      }
      walk(attr_stmt->body);
    } else if (const auto* seq = s.as<SeqStmt>()) {
      for (const Stmt& c : seq->seq) walk(c);
    } else if (const auto* loop = s.as<For>()) {
      walk(loop->body);
    } else if (const auto* loop = s.as<While>()) {
      walk(loop->body);
    } else if (const auto* branch = s.as<IfThenElse>()) {
      walk(branch->then_case);
      if (branch->else_case.defined()) walk(branch->else_case);
    }
  };
  walk(body);
  int64_t threads = 1;
  for (const char* tag : {"threadIdx.x", "threadIdx.y", "threadIdx.z"}) {
    auto it = extents.find(tag);
    if (it == extents.end()) continue;
    std::optional<int64_t> n = as_const_int(arith::simplify(it->second));
    if (!n.has_value() || *n <= 0) return 0;
    threads *= *n;
    if (threads > kMaxThreadsPerBlock) return threads;  // too many: the caller reports it
  }
  return threads;
}

}  // namespace

CudaPrinter::CudaPrinter(CudaModuleState& m, std::string symbol, bool is_kernel)
    : CPrinter("CUDA code generation", std::move(symbol), is_kernel, m.reserved,
               m.options.max_unroll),
      m_(m) {
  fold_view_offsets_ = m.options.fold_view_offsets;
}

// --- types ------------------------------------------------------------------------------------

std::optional<std::string> CudaPrinter::extension_type(DataType t) {
  static const std::map<std::string, std::string> kTypes = {
      {"float16", "half"},
      {"bfloat16", "__nv_bfloat16"},
      {"float8_e4m3fn", "__nv_fp8_e4m3"},
      {"float8_e5m2", "__nv_fp8_e5m2"},
  };
  auto it = kTypes.find(t.str());
  if (it == kTypes.end()) return std::nullopt;
  // The toolkit header each narrow floating type needs.
  m_.uses_fp16 = m_.uses_fp16 || (t.is_float() && t.bits() == 16);
  m_.uses_bf16 = m_.uses_bf16 || t.is_bfloat16();
  m_.uses_fp8 = m_.uses_fp8 || t.is_float8();
  return it->second;
}

// The CUDA vector type with `t`'s element type and lane count, when the toolkit has one that is
// naturally aligned to its size (float4, int2, half2, ...).
std::optional<std::string> CudaPrinter::vector_type(DataType t) {
  static const std::map<std::pair<std::string, int>, std::string> kTypes = {
      {{"float32", 2}, "float2"},
      {{"float32", 4}, "float4"},
      {{"float64", 2}, "double2"},
      {{"int32", 2}, "int2"},
      {{"int32", 4}, "int4"},
      {{"uint32", 2}, "uint2"},
      {{"uint32", 4}, "uint4"},
      {{"int16", 2}, "short2"},
      {{"int16", 4}, "short4"},
      {{"uint16", 2}, "ushort2"},
      {{"uint16", 4}, "ushort4"},
      {{"int8", 4}, "char4"},
      {{"uint8", 4}, "uchar4"},
      {{"int64", 2}, "longlong2"},
      {{"uint64", 2}, "ulonglong2"},
      {{"float16", 2}, "half2"},
      {{"bfloat16", 2}, "nv_bfloat162"},
  };
  auto it = kTypes.find({t.element_of().str(), t.lanes()});
  if (it == kTypes.end()) return std::nullopt;
  return it->second;
}

std::string CudaPrinter::make_vector_fn(const std::string& type) {
  if (type == "half2") return "make_half2";
  if (type == "nv_bfloat162") return "make_bfloat162";
  return "make_" + type;
}

// --- floating point ---------------------------------------------------------------------------

Code CudaPrinter::special_float(double v, bool single) {
  if (std::isnan(v)) {
    return {single ? "__int_as_float(0x7fc00000)" : "__longlong_as_double(0x7ff8000000000000LL)",
            kPrimary};
  }
  std::string inf =
      single ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
  return v > 0 ? Code{inf, kPrimary} : Code{"-" + inf, kUnary};
}

Code CudaPrinter::to_compute_float(DataType t, const Code& v) {
  DataType e = t.element_of();
  if (e.is_float() && e.bits() == 16) {
    scalar_type(e);
    return call("__half2float", {v});
  }
  if (e.is_bfloat16()) {
    scalar_type(e);
    return call("__bfloat162float", {v});
  }
  if (e.is_float8()) return {"(float)" + wrap(v, kUnary), kUnary};
  return v;
}

Code CudaPrinter::from_float(DataType t, const Code& v) {
  DataType e = t.element_of();
  if (e.is_float() && e.bits() == 16) {
    scalar_type(e);
    return call("__float2half_rn", {v});
  }
  if (e.is_bfloat16()) {
    scalar_type(e);
    return call("__float2bfloat16_rn", {v});
  }
  if (e.is_float8()) return call(scalar_type(e), {v});
  return v;
}

// half and bfloat16 have the toolkit's __hmin/__hmax; the rest is C's.
Code CudaPrinter::min_max(DataType t, const Expr& ea, const Expr& eb, bool is_min, int lane) {
  DataType e = t.element_of();
  if ((e.is_float() && e.bits() == 16) || e.is_bfloat16()) {
    Code a = sub(ea, lane);
    Code b = sub(eb, lane);
    return call(is_min ? "__hmin" : "__hmax", {a, b});
  }
  return CPrinter::min_max(t, ea, eb, is_min, lane);
}

// --- functions --------------------------------------------------------------------------------

Code CudaPrinter::call_function(const Call* op, int lane) {
  check_scalar(op->dtype, "a function call", lane);
  auto it = m_.device_functions.find(op->callee->name);
  PRIMJIT_USER_CHECK(it != m_.device_functions.end())
      << component_ << ": " << where() << " calls '" << op->callee->name
      << "', which is not a device function of the module (kernels cannot call host code)";
  std::vector<Code> args;
  for (const Expr& a : op->args) args.push_back(sub(a, -1));
  return call(it->second, args);
}

std::string CudaPrinter::function_head(const PrimFunc& f) {
  if (!is_kernel_) return "extern \"C\" __device__ " + return_type(f->ret_type) + " ";
  int64_t threads = static_thread_count(f->body);
  // The message of the launch-time check (launch_limits.h), which the interpreter shares.
  if (std::string why = threads_per_block_error(LaunchLimits{}, threads); !why.empty()) {
    PRIMJIT_USER_ERROR() << component_ << ": " << where() << " launches " << why;
  }
  std::string head = "extern \"C\" __global__ void ";
  if (threads > 0) head += "__launch_bounds__(" + std::to_string(threads) + ") ";
  static_threads_ = threads;
  return head;
}

void CudaPrinter::finish_function() {
  if (std::string why = shared_memory_error(LaunchLimits{}, static_shared_bytes_, 0);
      !why.empty()) {
    PRIMJIT_USER_ERROR() << component_ << ": " << where() << " " << why;
  }
}

// --- threads and memory -----------------------------------------------------------------------

// A thread_extent binds its variable once: `int tx = (int)threadIdx.x;`.
void CudaPrinter::print_thread_extent(const AttrStmt* op) {
  const IterVarNode* iv = op->iter_var();
  PRIMJIT_USER_CHECK(iv != nullptr)
      << component_ << ": thread_extent without an IterVar in " << where();
  static const std::set<std::string> kTags = {"blockIdx.x",  "blockIdx.y",  "blockIdx.z",
                                              "threadIdx.x", "threadIdx.y", "threadIdx.z"};
  PRIMJIT_USER_CHECK(kTags.count(iv->thread_tag) != 0)
      << component_ << ": thread tag '" << iv->thread_tag << "' in " << where()
      << " is not supported; use blockIdx.x/y/z or threadIdx.x/y/z (virtual threads must be "
         "lowered first)";
  const Var& var = iv->var;
  std::string name = names_.unique(var->name);
  var_names_[var.get()] = name;
  std::string type = scalar_type(var.dtype());
  w_.line(type + " " + name + " = (" + type + ")" + iv->thread_tag + ";");
  arith::Analyzer::Scope scope(an_);
  if (var.dtype().is_integer()) {
    Expr extent = op->value;
    if (extent.dtype() != var.dtype()) extent = Cast::make(var.dtype(), extent);
    an_.bind(var, IntImm::make(var.dtype(), 0), extent);
  }
  visit_stmt(op->body);
}

// `extern __shared__` for the one shared.dyn buffer, `__shared__` arrays, local arrays.
void CudaPrinter::print_allocation(const AllocBuffer* op, DataType elem, const std::string& type,
                                   int align) {
  const Buffer& buf = op->buffer;
  const VarNode* data = buf->data.get();
  const std::string& scope = buf->scope();
  if (scope == "shared.dyn") {
    PRIMJIT_USER_CHECK(dyn_shared_buffer_.empty())
        << component_ << ": " << where() << " has two shared.dyn allocations ('"
        << dyn_shared_buffer_ << "' and '" << buf->name
        << "'); they would share the same memory. Run MergeSharedMemoryAllocations";
    dyn_shared_buffer_ = buf->name;
    std::string name = names_.unique(buf->name);
    m_.reserved.insert(name);  // extern names stay unique across the translation unit
    var_names_[data] = name;
    pointer_align_[data] = align;
    dyn_shared_align_ = align;
    // Host C++ has no extern __shared__: the CUDA-on-CPU tests (tests/cuda_on_cpu/) define
    // the macro and get the block's dynamic shared memory from their shim.
    w_.raw_line("#ifdef PRIMJIT_CUDA_ON_CPU");
    w_.line("PRIMJIT_CPU_DYN_SHARED(" + type + ", " + name + ");");
    w_.raw_line("#else");
    w_.line("extern __shared__ __align__(" + std::to_string(align) + ") " + type + " " + name +
            "[];");
    w_.raw_line("#endif");
  } else if (scope == "shared" || scope == "local") {
    std::optional<int64_t> count = op->constant_allocation_size();
    PRIMJIT_USER_CHECK(count.has_value() && *count > 0)
        << component_ << ": " << scope << " buffer '" << buf->name << "' in " << where()
        << " needs a constant, positive size; use scope \"shared.dyn\" for a size known only "
           "at launch";
    int64_t elements = *count * std::max(1, buf->dtype.lanes()) / std::max(1, elem.lanes());
    std::string name = names_.unique(buf->name);
    var_names_[data] = name;
    if (scope == "shared") {
      static_shared_bytes_ += elements * elem.bytes();
      pointer_align_[data] = align;
      w_.line("__shared__ __align__(" + std::to_string(align) + ") " + type + " " + name + "[" +
              std::to_string(elements) + "];");
    } else {
      pointer_align_[data] = elem.bytes();
      w_.line(type + " " + name + "[" + std::to_string(elements) + "];");
    }
  } else {
    PRIMJIT_USER_ERROR() << component_ << ": buffer '" << buf->name << "' in " << where()
                         << " is allocated in scope \"" << scope
                         << "\"; a kernel can allocate only shared, shared.dyn or local memory "
                            "(pass global buffers as parameters)";
  }
}

}  // namespace primjit::jit
