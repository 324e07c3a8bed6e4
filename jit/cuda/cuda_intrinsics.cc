// The CUDA intrinsics table: how each builtin op of the op table (primjit/ir/ops.def) prints in
// CUDA C, registered against the op's entry. Math ops compute with the CUDA math functions
// (their C library names, or the fast intrinsics under fast_math); the other builtins print
// through the lowering registered here. An op without a lowering is reported as unsupported in
// device code.
#include "jit/cuda/cuda_printer.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

// How CUDA code computes the math builtins that have no C library function in the op table
// (the others call it: "expf" for float, "exp" for double).
enum class CudaMath {
  kFunction,  // the CUDA math function of the op's name (rsqrtf, rsqrt)
  kSigmoid,   // 1 / (1 + exp(-x))
  kClassify,  // isnan, isinf, isfinite: CUDA's classification functions on float or double
};

const OpMap<CudaMath>& cuda_math() {
  static const OpMap<CudaMath> lowering = [] {
    OpMap<CudaMath> m("CUDA code generation's math lowering");
    m.set("rsqrt", CudaMath::kFunction)
        .set("sigmoid", CudaMath::kSigmoid)
        .set("isnan", CudaMath::kClassify)
        .set("isinf", CudaMath::kClassify)
        .set("isfinite", CudaMath::kClassify);
    std::vector<std::string> missing =
        m.missing([](const OpNode& op) { return op.is_math() && op.libm.empty(); });
    PRIMJIT_ICHECK(missing.empty()) << m.what() << " lacks T." << missing.front();
    return m;
  }();
  return lowering;
}

// The float32 math ops CUDA also has as fast, less accurate intrinsics, used under fast_math.
const OpMap<std::string>& cuda_fast_math() {
  static const OpMap<std::string> fast = [] {
    OpMap<std::string> m("CUDA code generation's fast math");
    m.set("exp", "__expf")
        .set("exp10", "__exp10f")
        .set("log", "__logf")
        .set("log2", "__log2f")
        .set("log10", "__log10f")
        .set("sin", "__sinf")
        .set("cos", "__cosf")
        .set("tan", "__tanf")
        .set("pow", "__powf");
    return m;
  }();
  return fast;
}

}  // namespace

const OpMap<CudaPrinter::Intrinsic>& CudaPrinter::intrinsics() {
  static const OpMap<Intrinsic> table = [] {
    OpMap<Intrinsic> m("CUDA code generation's intrinsics");
    // Lane-wise: usable inside vector expressions.
    m.set("if_then_else", {&CudaPrinter::lower_if_then_else, true})
        .set("likely", {&CudaPrinter::lower_likely, true})
        .set("reinterpret", {&CudaPrinter::lower_reinterpret, true})
        .set("shift_left", {&CudaPrinter::lower_shift_left, true})
        .set("shift_right", {&CudaPrinter::lower_shift_right, true})
        .set("bitwise_and", {&CudaPrinter::lower_bitwise_and, true})
        .set("bitwise_or", {&CudaPrinter::lower_bitwise_or, true})
        .set("bitwise_xor", {&CudaPrinter::lower_bitwise_xor, true})
        .set("bitwise_not", {&CudaPrinter::lower_bitwise_not, true})
        .set("isnullptr", {&CudaPrinter::lower_isnullptr, true});
    // Scalar only.
    m.set("tvm_storage_sync", {&CudaPrinter::lower_storage_sync, false})
        .set("tvm_access_ptr", {&CudaPrinter::lower_access_ptr, false})
        .set("address_of", {&CudaPrinter::lower_address_of, false})
        .set("ptx_cp_async", {&CudaPrinter::lower_cp_async, false})
        .set("ptx_commit_group", {&CudaPrinter::lower_commit_group, false})
        .set("ptx_wait_group", {&CudaPrinter::lower_wait_group, false})
        .set("call_extern", {&CudaPrinter::lower_call_extern, false})
        .set("call_pure_extern", {&CudaPrinter::lower_call_extern, false})
        .set("ret", {&CudaPrinter::lower_ret, false});
    // Device code must handle every selection, bit, pointer and synchronization op; the
    // runtime's calls and messages belong to host code.
    std::vector<std::string> missing = m.missing([](const OpNode& op) {
      return op.op_kind == OpKind::kSelect || op.op_kind == OpKind::kBits ||
             op.op_kind == OpKind::kPointer || op.op_kind == OpKind::kSync;
    });
    PRIMJIT_ICHECK(missing.empty()) << m.what() << " lacks T." << missing.front();
    return m;
  }();
  return table;
}

Code CudaPrinter::lower_call(const Call* op, int lane) {
  if (op->op->is_math()) return lower_math(op, lane);
  const Intrinsic* intrinsic = intrinsics().find(op->op);
  if (intrinsic == nullptr || !intrinsic->lane_wise) {
    check_scalar(op->dtype, "T." + op->op->name, lane);
  }
  PRIMJIT_USER_CHECK(intrinsic != nullptr)
      << component_ << ": T." << op->op->name << " is not supported in device code (in " << where()
      << ")";
  return (this->*intrinsic->lower)(op, lane);
}

// Math builtins: the float or double CUDA function; narrower floats compute in float.
Code CudaPrinter::lower_math(const Call* op, int lane) {
  const std::string& name = op->op->name;
  DataType t = op->args[0].dtype().element_of();
  PRIMJIT_USER_CHECK(t.is_floating())
      << component_ << ": T." << name << " needs a floating-point argument, got " << t << " (in "
      << where() << ")";
  std::vector<Code> args;
  for (const Expr& a : op->args) args.push_back(sub(a, lane));
  const CudaMath* how = cuda_math().find(op->op);
  if (how == nullptr || *how == CudaMath::kFunction) return float_math(t, op->op, args);
  if (*how == CudaMath::kClassify) return call(name, {to_compute_float(t, args[0])});
  // kSigmoid
  static const Op kExp = Op::get("exp");
  bool dbl = t.is_float() && t.bits() == 64;
  Code x = to_compute_float(t, args[0]);
  Code e = float_function(dbl, kExp, {{"-" + wrap(x, kUnary), kUnary}});
  Code one = {dbl ? "1.0" : "1.0f", kPrimary};
  return from_float(t, infix(one, "/", kMul, infix(one, "+", kAdd, e)));
}

Code CudaPrinter::float_function(bool dbl, const Op& fn, const std::vector<Code>& args) {
  if (!dbl && m_.options.fast_math) {
    if (const std::string* fast = cuda_fast_math().find(fn)) return call(*fast, args);
  }
  return CPrinter::float_function(dbl, fn, args);
}

Code CudaPrinter::lower_reinterpret(const Call* op, int lane) {
  DataType to = op->dtype.element_of();
  DataType from = op->args[0].dtype().element_of();
  PRIMJIT_USER_CHECK(op->dtype.lanes() == op->args[0].dtype().lanes() && to.bits() == from.bits())
      << component_ << ": T.reinterpret from " << op->args[0].dtype() << " to " << op->dtype
      << " needs the same lane count and element size (in " << where() << ")";
  m_.helpers.insert(Helper::kReinterpret);
  return call("primjit_reinterpret<" + scalar_type(to) + ", " + scalar_type(from) + ">",
              {sub(op->args[0], lane)});
}

Code CudaPrinter::lower_storage_sync(const Call* op, int) {
  const auto* scope = op->args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(scope != nullptr)
      << component_ << ": T.tvm_storage_sync needs a scope string (in " << where() << ")";
  if (scope->value == "shared" || scope->value == "shared.dyn") {
    return {"__syncthreads()", kPrimary};
  }
  if (scope->value == "warp") return {"__syncwarp()", kPrimary};
  PRIMJIT_USER_ERROR() << component_ << ": T.tvm_storage_sync(\"" << scope->value << "\") in "
                       << where()
                       << " is not supported; a kernel can synchronize \"shared\", "
                          "\"shared.dyn\" or \"warp\"";
}

// tvm_access_ptr(type, data, offset, extent, rw): data + offset in units of `type`.
Code CudaPrinter::lower_access_ptr(const Call* op, int) {
  const auto* data = op->args[1].as<VarNode>();
  PRIMJIT_USER_CHECK(data != nullptr)
      << component_ << ": T.tvm_access_ptr needs a pointer variable (in " << where() << ")";
  DataType unit = op->args[0].dtype();
  if (unit.is_handle()) unit = data->pointee.is_void() ? DataType::UInt(8) : data->pointee;
  std::string type = element_type(unit);
  Code base = {name_of(data), kPrimary};
  if (data->pointee != unit) base = {"(" + type + "*)" + base.text, kUnary};
  if (as_const_int(op->args[2]) == 0) return base;
  return infix(base, "+", kAdd, sub(op->args[2], -1));
}

// `T.ret(value)` is a statement of a device function (CPrinter's Evaluate), never a value.
Code CudaPrinter::lower_ret(const Call*, int) {
  PRIMJIT_USER_ERROR() << component_ << ": T.ret inside an expression in " << where()
                       << "; only `T.ret(value)` as a statement of a device function is "
                          "supported";
}

}  // namespace primjit::jit
