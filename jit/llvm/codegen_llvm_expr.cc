// Host code generation of expressions: arithmetic with primjit's defined semantics, casts,
// math builtins, buffer loads and element addresses.
#include "jit/llvm/function_codegen.h"

#include "jit/llvm/semantics_llvm.h"
#include "jit/llvm/vector_math.h"
#include "primjit/abi.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

// How host code computes a math builtin: an LLVM intrinsic, or code of its own. Math ops not
// registered here call the C library function the op table names; so do those with a vector
// form (jit/llvm/vector_math.h) on float32/float64, which then vectorize.
enum class HostMath { kIntrinsic, kRsqrt, kSigmoid, kIsNan, kIsInf, kIsFinite, kFrem };
struct HostMathLowering {
  HostMath how = HostMath::kIntrinsic;
  llvm::Intrinsic::ID intrinsic = llvm::Intrinsic::not_intrinsic;
};

const OpMap<HostMathLowering>& host_math() {
  static const OpMap<HostMathLowering> lowering = [] {
    OpMap<HostMathLowering> m("host code generation's math lowering");
    const std::pair<const char*, llvm::Intrinsic::ID> intrinsics[] = {
        {"exp", llvm::Intrinsic::exp},     {"exp2", llvm::Intrinsic::exp2},
        {"log", llvm::Intrinsic::log},     {"log2", llvm::Intrinsic::log2},
        {"log10", llvm::Intrinsic::log10}, {"sqrt", llvm::Intrinsic::sqrt},
        {"sin", llvm::Intrinsic::sin},     {"cos", llvm::Intrinsic::cos},
        {"fabs", llvm::Intrinsic::fabs},   {"floor", llvm::Intrinsic::floor},
        {"ceil", llvm::Intrinsic::ceil},   {"round", llvm::Intrinsic::roundeven},
        {"trunc", llvm::Intrinsic::trunc}, {"pow", llvm::Intrinsic::pow},
        {"fma", llvm::Intrinsic::fma},
    };
    for (const auto& [name, id] : intrinsics) m.set(name, {HostMath::kIntrinsic, id});
    m.set("rsqrt", {HostMath::kRsqrt})
        .set("sigmoid", {HostMath::kSigmoid})
        .set("isnan", {HostMath::kIsNan})
        .set("isinf", {HostMath::kIsInf})
        .set("isfinite", {HostMath::kIsFinite})
        .set("fmod", {HostMath::kFrem});
    std::vector<std::string> missing =
        m.missing([](const OpNode& op) { return op.is_math() && op.libm.empty(); });
    PRIMJIT_ICHECK(missing.empty()) << m.what() << " lacks T." << missing.front();
    return m;
  }();
  return lowering;
}

}  // namespace

Value* FunctionCodegen::visit(const IntImm* op) {
  if (op->dtype.is_bool()) return b_.getInt1(op->value != 0);
  return llvm::ConstantInt::get(type_of(op->dtype), static_cast<uint64_t>(op->value),
                                op->dtype.is_int());
}

Value* FunctionCodegen::visit(const FloatImm* op) {
  // A literal of a type narrower than float32 rounds through float32, as casts do.
  double v = op->dtype.bits() < 32 ? static_cast<double>(static_cast<float>(op->value)) : op->value;
  return llvm::ConstantFP::get(type_of(op->dtype), v);
}

Value* FunctionCodegen::visit(const VarNode* op) {
  auto it = vars_.find(op);
  PRIMJIT_ICHECK(it != vars_.end()) << "host codegen: variable '" << op->name << "' is undefined";
  return it->second;
}

Value* FunctionCodegen::visit(const Select* op) {
  Value* c = visit_expr(op->condition);
  Value* t = visit_expr(op->true_value);
  Value* f = visit_expr(op->false_value);
  return b_.CreateSelect(c, t, f);
}

Value* FunctionCodegen::visit(const Let* op) {
  bind(op->var.get(), visit_expr(op->value));
  return visit_expr(op->body);
}

Value* FunctionCodegen::visit(const Ramp* op) {
  Value* base = visit_expr(op->base);
  Value* stride = visit_expr(op->stride);
  llvm::Type* t = type_of(op->dtype);
  Value* out = llvm::PoisonValue::get(t);
  for (int i = 0; i < op->lanes; ++i) {
    Value* lane =
        b_.CreateAdd(base, b_.CreateMul(stride, llvm::ConstantInt::get(base->getType(), i)));
    out = b_.CreateInsertElement(out, lane, b_.getInt32(i));
  }
  return out;
}

Value* FunctionCodegen::visit(const Broadcast* op) {
  return b_.CreateVectorSplat(op->lanes, visit_expr(op->value));
}

Value* FunctionCodegen::visit(const BufferLoad* op) {
  DataType t = op->dtype;
  const Buffer& buf = op->buffer;
  Expr index = flat_index(op->buffer, op->indices);
  if (const auto* ramp = index.as<Ramp>(); ramp != nullptr && is_one(ramp->stride)) {
    Value* ptr = element_ptr(buf, visit_expr(ramp->base), ramp->base.dtype());
    llvm::Type* mt = memory_type_of(t);
    Value* v = b_.CreateAlignedLoad(mt, ptr, element_align(buf->dtype));
    return from_memory(t, v);
  }
  if (index.dtype().is_vector()) {  // gather lane by lane
    Value* idx = visit_expr(index);
    Value* base = base_ptr(buf);
    Value* out = llvm::PoisonValue::get(type_of(t));
    for (int i = 0; i < t.lanes(); ++i) {
      Value* lane_ptr =
          element_ptr(buf, b_.CreateExtractElement(idx, b_.getInt32(i)), index.dtype(), base);
      Value* v =
          b_.CreateAlignedLoad(memory_type_of(t.element_of()), lane_ptr, element_align(buf->dtype));
      out = b_.CreateInsertElement(out, from_memory(t.element_of(), v), b_.getInt32(i));
    }
    return out;
  }
  Value* ptr = element_ptr(buf, visit_expr(index), index.dtype());
  Value* v = b_.CreateAlignedLoad(memory_type_of(t), ptr, element_align(buf->dtype));
  return from_memory(t, v);
}

Value* FunctionCodegen::visit(const Call* op) {
  if (!op->op.defined()) return call_function(op);
  const std::string& name = op->op->name;
  if (name == "tvm_struct_get") return struct_get(op);
  if (name == "tvm_struct_set") return struct_set(op);
  if (name == "isnullptr") {
    return b_.CreateICmpEQ(visit_expr(op->args[0]), llvm::ConstantPointerNull::get(b_.getPtrTy()));
  }
  if (name == "if_then_else") return if_then_else(op);
  if (name == "likely") return visit_expr(op->args[0]);
  if (name == "reinterpret") {
    return b_.CreateBitCast(visit_expr(op->args[0]), type_of(op->dtype));
  }
  if (name == "address_of") {
    const auto* load = op->args[0].as<BufferLoad>();
    PRIMJIT_USER_CHECK(load != nullptr) << "T.address_of needs a buffer load";
    Expr index = flat_index(load->buffer, load->indices);
    return element_ptr(load->buffer, visit_expr(index), index.dtype());
  }
  if (name == "shift_left" || name == "shift_right") {
    Value* a = visit_expr(op->args[0]);
    Value* s = visit_expr(op->args[1]);
    return emit_shift(b_, name == "shift_left", op->dtype.is_int(), a, s,
                      op->args[1].dtype().is_int());
  }
  if (name == "bitwise_and") return b_.CreateAnd(visit_expr(op->args[0]), visit_expr(op->args[1]));
  if (name == "bitwise_or") return b_.CreateOr(visit_expr(op->args[0]), visit_expr(op->args[1]));
  if (name == "bitwise_xor") return b_.CreateXor(visit_expr(op->args[0]), visit_expr(op->args[1]));
  if (name == "bitwise_not") return b_.CreateNot(visit_expr(op->args[0]));
  if (name == "call_extern" || name == "call_pure_extern") return call_extern(op);
  if (name == "call_cpacked") return call_cpacked(op);
  if (name == "check_args") return check_args(op);
  if (name == "call_packed") return launch_kernel(op);
  if (name == "parallel_for") return parallel_for(op);
  if (name == "call_compute_scope") return call_compute_scope(op);
  if (name == "ret") {
    Value* v = visit_expr(op->args[0]);
    b_.CreateRet(fn_->getReturnType()->isVoidTy() ? nullptr : v);
    start_dead_block();
    return v;
  }
  if (name == "tvm_storage_sync") return b_.getInt32(0);  // host code runs one thread
  if (Value* math = math_call(op)) return math;
  PRIMJIT_USER_ERROR() << "host code generation does not support T." << name << " (in function '"
                       << fn_->getName().str() << "')";
}

Expr FunctionCodegen::flat_index(const Buffer& buf, const std::vector<Expr>& indices) {
  if (indices.size() == 1 && buf->strides.empty()) return indices[0];
  Expr index;
  Expr stride;
  for (size_t k = indices.size(); k-- > 0;) {
    Expr s = !buf->strides.empty() ? buf->strides[k] : stride;
    Expr term = s.defined() ? Mul::make(indices[k], cast_like(s, indices[k])) : indices[k];
    index = index.defined() ? Add::make(term, index) : term;
    if (buf->strides.empty()) {
      Expr dim = cast_like(buf->shape[k], indices[k]);
      stride = stride.defined() ? Mul::make(stride, dim) : dim;
    }
  }
  if (!index.defined()) index = IntImm::make(DataType::Int(32), 0);
  return index;
}

Expr FunctionCodegen::cast_like(const Expr& e, const Expr& like) {
  DataType t = like.dtype().element_of();
  if (e.dtype() == t) return e;
  if (auto c = as_const_int(e)) return IntImm::make(t, *c);
  return Cast::make(t, e);
}

Value* FunctionCodegen::base_ptr(const Buffer& buf) {
  Value* data = visit(buf->data.get());
  const Expr& offset = buf->elem_offset;
  if (!offset.defined() || as_const_int(offset) == 0) return data;
  return b_.CreateInBoundsGEP(memory_type_of(buf->dtype.element_of()), data,
                              to_i64(visit_expr(offset), offset.dtype()));
}

Value* FunctionCodegen::to_i64(Value* v, DataType t) {
  return t.is_int() ? b_.CreateSExtOrTrunc(v, b_.getInt64Ty())
                    : b_.CreateZExtOrTrunc(v, b_.getInt64Ty());
}

Value* FunctionCodegen::element_ptr(const Buffer& buf, Value* index, DataType index_type,
                                    Value* base) {
  return b_.CreateInBoundsGEP(memory_type_of(buf->dtype.element_of()),
                              base != nullptr ? base : base_ptr(buf), to_i64(index, index_type));
}

Value* FunctionCodegen::arith(const Expr& ea, const Expr& eb, Arith kind) {
  DataType t = ea.dtype();
  Value* a = visit_expr(ea);
  Value* bv = visit_expr(eb);
  if (t.is_floating()) {
    switch (kind) {
      case Arith::kAdd:
        return b_.CreateFAdd(a, bv);
      case Arith::kSub:
        return b_.CreateFSub(a, bv);
      case Arith::kMul:
        return b_.CreateFMul(a, bv);
      case Arith::kDiv:
        return b_.CreateFDiv(a, bv);
      case Arith::kMod:
        return b_.CreateFRem(a, bv);
      case Arith::kFloorDiv:
        return intrinsic(llvm::Intrinsic::floor, {b_.CreateFDiv(a, bv)});
      case Arith::kFloorMod: {
        Value* q = intrinsic(llvm::Intrinsic::floor, {b_.CreateFDiv(a, bv)});
        return b_.CreateFSub(a, b_.CreateFMul(q, bv));
      }
    }
  }
  bool is_signed = t.is_int();
  switch (kind) {
    case Arith::kAdd:
      return b_.CreateAdd(a, bv);
    case Arith::kSub:
      return b_.CreateSub(a, bv);
    case Arith::kMul:
      return b_.CreateMul(a, bv);
    case Arith::kDiv:
      return emit_int_division(b_, IntDivision::kTruncDiv, is_signed, a, bv);
    case Arith::kMod:
      return emit_int_division(b_, IntDivision::kTruncMod, is_signed, a, bv);
    case Arith::kFloorDiv:
      return emit_int_division(b_, IntDivision::kFloorDiv, is_signed, a, bv);
    case Arith::kFloorMod:
      return emit_int_division(b_, IntDivision::kFloorMod, is_signed, a, bv);
  }
  PRIMJIT_INTERNAL_ERROR() << "unreachable";
}

Value* FunctionCodegen::compare(const Expr& ea, const Expr& eb, Cmp kind) {
  DataType t = ea.dtype();
  Value* a = visit_expr(ea);
  Value* bv = visit_expr(eb);
  if (t.is_floating()) {
    static constexpr llvm::CmpInst::Predicate kF[] = {
        llvm::CmpInst::FCMP_OEQ, llvm::CmpInst::FCMP_UNE, llvm::CmpInst::FCMP_OLT,
        llvm::CmpInst::FCMP_OLE, llvm::CmpInst::FCMP_OGT, llvm::CmpInst::FCMP_OGE};
    return b_.CreateFCmp(kF[static_cast<int>(kind)], a, bv);
  }
  if (t.is_handle()) {
    return b_.CreateICmp(kind == Cmp::kNE ? llvm::CmpInst::ICMP_NE : llvm::CmpInst::ICMP_EQ, a, bv);
  }
  bool s = t.is_int();
  static constexpr llvm::CmpInst::Predicate kS[] = {
      llvm::CmpInst::ICMP_EQ,  llvm::CmpInst::ICMP_NE,  llvm::CmpInst::ICMP_SLT,
      llvm::CmpInst::ICMP_SLE, llvm::CmpInst::ICMP_SGT, llvm::CmpInst::ICMP_SGE};
  static constexpr llvm::CmpInst::Predicate kU[] = {
      llvm::CmpInst::ICMP_EQ,  llvm::CmpInst::ICMP_NE,  llvm::CmpInst::ICMP_ULT,
      llvm::CmpInst::ICMP_ULE, llvm::CmpInst::ICMP_UGT, llvm::CmpInst::ICMP_UGE};
  return b_.CreateICmp((s ? kS : kU)[static_cast<int>(kind)], a, bv);
}

Value* FunctionCodegen::min_max(const Expr& ea, const Expr& eb, bool is_min) {
  DataType t = ea.dtype();
  Value* a = visit_expr(ea);
  Value* bv = visit_expr(eb);
  if (t.is_floating()) return emit_float_min_max(b_, is_min, a, bv);
  Value* a_first;
  if (t.is_int()) {
    a_first = is_min ? b_.CreateICmpSLT(a, bv) : b_.CreateICmpSGT(a, bv);
  } else {
    a_first = is_min ? b_.CreateICmpULT(a, bv) : b_.CreateICmpUGT(a, bv);
  }
  return b_.CreateSelect(a_first, a, bv);
}

Value* FunctionCodegen::cast(DataType from, DataType to, Value* v) {
  if (from == to) return v;
  llvm::Type* t = type_of(to);
  if (to.is_bool()) {
    if (from.is_floating()) return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
    if (from.is_handle()) return b_.CreateIsNotNull(v);
    return b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType()));
  }
  if (from.is_floating() && to.is_floating()) {
    // float64 to a type narrower than float32 rounds through float32 (on every backend).
    if (from.bits() == 64 && to.bits() < 32)
      v = b_.CreateFPCast(v, type_of(DataType::Float(32, to.lanes())));
    return b_.CreateFPCast(v, t);
  }
  if (from.is_floating()) return emit_float_to_int(b_, v, t, to.is_int());
  if (to.is_floating()) {
    return from.is_int() ? b_.CreateSIToFP(v, t) : b_.CreateUIToFP(v, t);
  }
  if (from.is_handle() || to.is_handle()) {
    return from.is_handle() ? b_.CreatePtrToInt(v, t) : b_.CreateIntToPtr(v, t);
  }
  return b_.CreateIntCast(v, t, from.is_int());
}

Value* FunctionCodegen::intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
  llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_.mod, id, {args[0]->getType()});
  return b_.CreateCall(f, args);
}

Value* FunctionCodegen::math_call(const Call* op) {
  if (!op->op->is_math()) return nullptr;
  std::vector<Value*> args;
  for (const Expr& a : op->args) args.push_back(visit_expr(a));
  const HostMathLowering* lowering = host_math().find(op->op);
  llvm::Type* type = args[0]->getType();
  const int bits = op->dtype.is_float() ? op->dtype.bits() : 0;
  if (lowering == nullptr || (bits >= 32 && has_vector_math(*op->op, bits))) {
    return libm_call(op, args);
  }
  switch (lowering->how) {
    case HostMath::kIntrinsic:
      return intrinsic(lowering->intrinsic, args);
    case HostMath::kRsqrt:
      return b_.CreateFDiv(llvm::ConstantFP::get(type, 1.0),
                           intrinsic(llvm::Intrinsic::sqrt, args));
    case HostMath::kSigmoid: {
      Value* one = llvm::ConstantFP::get(type, 1.0);
      static const Op exp = Op::get("exp");
      Value* e = bits >= 32 && has_vector_math(*exp, bits)
                     ? emit_math_call(b_, *exp, exp->libm, {b_.CreateFNeg(args[0])})
                     : intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(args[0])});
      return b_.CreateFDiv(one, b_.CreateFAdd(one, e));
    }
    case HostMath::kIsNan:
      return b_.CreateFCmpUNO(args[0], args[0]);
    case HostMath::kIsInf:
    case HostMath::kIsFinite: {
      Value* abs = intrinsic(llvm::Intrinsic::fabs, args);
      Value* inf = llvm::ConstantFP::getInfinity(type);
      return lowering->how == HostMath::kIsInf ? b_.CreateFCmpOEQ(abs, inf)
                                               : b_.CreateFCmpOLT(abs, inf);
    }
    case HostMath::kFrem:
      return b_.CreateFRem(args[0], args[1]);
  }
  return nullptr;
}

Value* FunctionCodegen::libm_call(const Call* op, const std::vector<Value*>& args) {
  DataType t = op->dtype;
  const std::string& name = op->op->name;
  PRIMJIT_USER_CHECK(t.is_float() && t.bits() >= 32)
      << "host code generation: T." << name << " on " << t
      << " is not supported (compute it in float32: cast the argument and the result)";
  return emit_math_call(b_, *op->op, op->op->libm, args);
}

Value* FunctionCodegen::if_then_else(const Call* op) {
  Value* c = visit_expr(op->args[0]);
  llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(m_.ctx, "ite_then", fn_);
  llvm::BasicBlock* else_bb = llvm::BasicBlock::Create(m_.ctx, "ite_else", fn_);
  llvm::BasicBlock* end = llvm::BasicBlock::Create(m_.ctx, "ite_end", fn_);
  b_.CreateCondBr(c, then_bb, else_bb);
  b_.SetInsertPoint(then_bb);
  Value* t = visit_expr(op->args[1]);
  llvm::BasicBlock* then_end = b_.GetInsertBlock();
  b_.CreateBr(end);
  b_.SetInsertPoint(else_bb);
  Value* f = visit_expr(op->args[2]);
  llvm::BasicBlock* else_end = b_.GetInsertBlock();
  b_.CreateBr(end);
  b_.SetInsertPoint(end);
  llvm::PHINode* phi = b_.CreatePHI(t->getType(), 2);
  phi->addIncoming(t, then_end);
  phi->addIncoming(f, else_end);
  return phi;
}

}  // namespace primjit::jit
