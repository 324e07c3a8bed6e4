#include "jit/llvm/codegen_llvm.h"

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/MDBuilder.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include <map>
#include <set>
#include <unordered_map>

#include "jit/common/host_abi.h"
#include "jit/llvm/semantics_llvm.h"
#include "passes/free_vars.h"
#include "primjit/abi.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::jit {
namespace {

using llvm::Value;

// Byte offsets of DLTensor's fields (dlpack.h, 64-bit) for T.tvm_struct_get on a DLTensor*.
int dltensor_offset(int field) {
  switch (field) {
    case kPJTensorData:
      return 0;
    case kPJTensorDeviceType:
      return 8;
    case kPJTensorDeviceId:
      return 12;
    case kPJTensorNDim:
      return 16;
    case kPJTensorTypeCode:
      return 20;
    case kPJTensorTypeBits:
      return 21;
    case kPJTensorTypeLanes:
      return 22;
    case kPJTensorShape:
      return 24;
    case kPJTensorStrides:
      return 32;
    case kPJTensorByteOffset:
      return 40;
    case kPJValueTypeIndex:
      return 0;  // within one 16-byte PJValue
    case kPJValuePadding:
      return 4;
    case kPJValueUnion:
      return 8;
    default:
      PRIMJIT_USER_ERROR() << "T.tvm_struct_get/set: unknown field " << field
                           << " (see the field numbers in primjit/abi.h)";
  }
}

bool is_value_field(int field) { return field >= kPJValueTypeIndex; }

// How host code computes a math builtin: an LLVM intrinsic, or code of its own. Math ops not
// registered here call the C library function the op table names.
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

// State shared by the functions of one module.
struct ModuleState {
  llvm::LLVMContext& ctx;
  llvm::Module& mod;
  const IRModule& ir;
  std::string suffix;
  HostCodegenOptions options;
  std::map<std::string, llvm::Function*> functions;  // by IR function name
  std::set<std::string> launched;                    // kernel symbols launched by host code
  int outlined = 0;
};

class FunctionCodegen : public ExprFunctor<FunctionCodegen, Value*>,
                        public StmtFunctor<FunctionCodegen, void> {
 public:
  FunctionCodegen(ModuleState& m, llvm::Function* fn, bool returns_error, bool in_parallel)
      : m_(m), fn_(fn), b_(m.ctx), returns_error_(returns_error), in_parallel_(in_parallel) {
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(m_.ctx, "entry", fn_);
    b_.SetInsertPoint(entry);
    // No fast-math flags: a * b + c is two roundings unless the IR says T.fma (contraction is
    // primjit's decision, FuseMultiplyAdd), and NaN, infinities and signed zeros are honoured.
  }

  void bind(const VarNode* var, Value* v) { vars_[var] = v; }

  // Emits `body`, then returns `fallthrough` (nullptr: void) if control reaches the end.
  void emit_body(const Stmt& body, Value* fallthrough) {
    visit_stmt(body);
    if (b_.GetInsertBlock()->getTerminator() != nullptr) return;
    if (fallthrough != nullptr) {
      b_.CreateRet(fallthrough);
    } else if (fn_->getReturnType()->isVoidTy()) {
      b_.CreateRetVoid();
    } else {
      b_.CreateRet(llvm::Constant::getNullValue(fn_->getReturnType()));
    }
  }

  // --- types --------------------------------------------------------------------------------

  llvm::Type* type_of(DataType t) {
    llvm::Type* scalar = nullptr;
    if (t.is_handle()) return b_.getPtrTy();
    if (t.is_void()) return b_.getVoidTy();
    if (t.is_bool()) {
      scalar = b_.getInt1Ty();
    } else if (t.is_int_or_bool()) {
      scalar = b_.getIntNTy(t.bits());
    } else if (t.is_float()) {
      scalar = t.bits() == 16   ? b_.getHalfTy()
               : t.bits() == 32 ? b_.getFloatTy()
                                : b_.getDoubleTy();
    } else {
      PRIMJIT_USER_ERROR() << "host code generation: dtype " << t
                           << " needs the storage legalization passes (BF16StorageLegalize, "
                              "FP8StorageLegalize) before it reaches the LLVM code generator";
    }
    return t.lanes() > 1 ? llvm::FixedVectorType::get(scalar, t.lanes()) : scalar;
  }

  // In memory, bool is one byte.
  llvm::Type* memory_type_of(DataType t) {
    if (t.is_bool()) {
      llvm::Type* byte = b_.getInt8Ty();
      return t.lanes() > 1 ? llvm::FixedVectorType::get(byte, t.lanes()) : byte;
    }
    return type_of(t);
  }

  // --- expressions --------------------------------------------------------------------------

  Value* visit(const IntImm* op) {
    if (op->dtype.is_bool()) return b_.getInt1(op->value != 0);
    return llvm::ConstantInt::get(type_of(op->dtype), static_cast<uint64_t>(op->value),
                                  op->dtype.is_int());
  }
  Value* visit(const FloatImm* op) {
    // A literal of a type narrower than float32 rounds through float32, as casts do.
    double v =
        op->dtype.bits() < 32 ? static_cast<double>(static_cast<float>(op->value)) : op->value;
    return llvm::ConstantFP::get(type_of(op->dtype), v);
  }
  Value* visit(const StringImm* op) { return b_.CreateGlobalStringPtr(op->value); }
  Value* visit(const VarNode* op) {
    auto it = vars_.find(op);
    PRIMJIT_ICHECK(it != vars_.end()) << "host codegen: variable '" << op->name << "' is undefined";
    return it->second;
  }

  Value* visit(const Add* op) { return arith(op->a, op->b, Arith::kAdd); }
  Value* visit(const Sub* op) { return arith(op->a, op->b, Arith::kSub); }
  Value* visit(const Mul* op) { return arith(op->a, op->b, Arith::kMul); }
  Value* visit(const Div* op) { return arith(op->a, op->b, Arith::kDiv); }
  Value* visit(const Mod* op) { return arith(op->a, op->b, Arith::kMod); }
  Value* visit(const FloorDiv* op) { return arith(op->a, op->b, Arith::kFloorDiv); }
  Value* visit(const FloorMod* op) { return arith(op->a, op->b, Arith::kFloorMod); }
  Value* visit(const Min* op) { return min_max(op->a, op->b, true); }
  Value* visit(const Max* op) { return min_max(op->a, op->b, false); }
  Value* visit(const EQ* op) { return compare(op->a, op->b, Cmp::kEQ); }
  Value* visit(const NE* op) { return compare(op->a, op->b, Cmp::kNE); }
  Value* visit(const LT* op) { return compare(op->a, op->b, Cmp::kLT); }
  Value* visit(const LE* op) { return compare(op->a, op->b, Cmp::kLE); }
  Value* visit(const GT* op) { return compare(op->a, op->b, Cmp::kGT); }
  Value* visit(const GE* op) { return compare(op->a, op->b, Cmp::kGE); }
  Value* visit(const And* op) { return b_.CreateAnd(visit_expr(op->a), visit_expr(op->b)); }
  Value* visit(const Or* op) { return b_.CreateOr(visit_expr(op->a), visit_expr(op->b)); }
  Value* visit(const Not* op) { return b_.CreateNot(visit_expr(op->a)); }
  Value* visit(const Select* op) {
    Value* c = visit_expr(op->condition);
    Value* t = visit_expr(op->true_value);
    Value* f = visit_expr(op->false_value);
    return b_.CreateSelect(c, t, f);
  }
  Value* visit(const Cast* op) { return cast(op->value.dtype(), op->dtype, visit_expr(op->value)); }
  Value* visit(const Let* op) {
    bind(op->var.get(), visit_expr(op->value));
    return visit_expr(op->body);
  }
  Value* visit(const Ramp* op) {
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
  Value* visit(const Broadcast* op) {
    return b_.CreateVectorSplat(op->lanes, visit_expr(op->value));
  }

  Value* visit(const BufferLoad* op) {
    DataType t = op->dtype;
    const Buffer& buf = op->buffer;
    Expr index = flat_index(op->buffer, op->indices);
    if (const auto* ramp = index.as<Ramp>(); ramp != nullptr && is_one(ramp->stride)) {
      Value* ptr = element_ptr(buf, visit_expr(ramp->base));
      llvm::Type* mt = memory_type_of(t);
      Value* v = b_.CreateAlignedLoad(mt, ptr, element_align(buf->dtype));
      return from_memory(t, v);
    }
    if (index.dtype().is_vector()) {  // gather lane by lane
      Value* idx = visit_expr(index);
      Value* base = base_ptr(buf);
      Value* out = llvm::PoisonValue::get(type_of(t));
      for (int i = 0; i < t.lanes(); ++i) {
        Value* lane_ptr = element_ptr(buf, b_.CreateExtractElement(idx, b_.getInt32(i)), base);
        Value* v = b_.CreateAlignedLoad(memory_type_of(t.element_of()), lane_ptr,
                                        element_align(buf->dtype));
        out = b_.CreateInsertElement(out, from_memory(t.element_of(), v), b_.getInt32(i));
      }
      return out;
    }
    Value* ptr = element_ptr(buf, visit_expr(index));
    Value* v = b_.CreateAlignedLoad(memory_type_of(t), ptr, element_align(buf->dtype));
    return from_memory(t, v);
  }

  Value* visit(const Call* op) {
    if (!op->op.defined()) return call_function(op);
    const std::string& name = op->op->name;
    if (name == "tvm_struct_get") return struct_get(op);
    if (name == "tvm_struct_set") return struct_set(op);
    if (name == "isnullptr") {
      return b_.CreateICmpEQ(visit_expr(op->args[0]),
                             llvm::ConstantPointerNull::get(b_.getPtrTy()));
    }
    if (name == "if_then_else") return if_then_else(op);
    if (name == "likely") return visit_expr(op->args[0]);
    if (name == "reinterpret") {
      return b_.CreateBitCast(visit_expr(op->args[0]), type_of(op->dtype));
    }
    if (name == "address_of") {
      const auto* load = op->args[0].as<BufferLoad>();
      PRIMJIT_USER_CHECK(load != nullptr) << "T.address_of needs a buffer load";
      return element_ptr(load->buffer, visit_expr(flat_index(load->buffer, load->indices)));
    }
    if (name == "shift_left" || name == "shift_right") {
      Value* a = visit_expr(op->args[0]);
      Value* s = visit_expr(op->args[1]);
      return emit_shift(b_, name == "shift_left", op->dtype.is_int(), a, s,
                        op->args[1].dtype().is_int());
    }
    if (name == "bitwise_and")
      return b_.CreateAnd(visit_expr(op->args[0]), visit_expr(op->args[1]));
    if (name == "bitwise_or") return b_.CreateOr(visit_expr(op->args[0]), visit_expr(op->args[1]));
    if (name == "bitwise_xor")
      return b_.CreateXor(visit_expr(op->args[0]), visit_expr(op->args[1]));
    if (name == "bitwise_not") return b_.CreateNot(visit_expr(op->args[0]));
    if (name == "call_extern" || name == "call_pure_extern") return call_extern(op);
    if (name == "call_cpacked") return call_cpacked(op);
    if (name == "call_packed") return launch_kernel(op);
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

  // --- statements ---------------------------------------------------------------------------

  void visit(const Bind* op) { bind(op->var.get(), visit_expr(op->value)); }
  void visit(const SeqStmt* op) {
    for (const Stmt& s : op->seq) visit_stmt(s);
  }
  void visit(const Evaluate* op) {
    if (op->value.as<IntImm>() != nullptr) return;
    visit_expr(op->value);
  }
  void visit(const DeclBuffer*) {}
  void visit(const AllocBuffer* op) {
    const Buffer& buf = op->buffer;
    int64_t count = 1;
    for (const Expr& dim : buf->shape) {
      auto n = as_const_int(dim);
      PRIMJIT_USER_CHECK(n.has_value())
          << "host code generation: buffer '" << buf->name
          << "' has a symbolic size; host allocations need constant shapes";
      count *= *n;
    }
    PRIMJIT_USER_CHECK(count * buf->dtype.bytes() <= (1 << 20))
        << "host code generation: buffer '" << buf->name << "' needs " << count * buf->dtype.bytes()
        << " bytes; host stack allocations are limited to 1 MiB";
    // Allocas go to the entry block so loops do not grow the stack.
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* mem =
        entry.CreateAlloca(memory_type_of(buf->dtype.element_of()),
                           entry.getInt64(count * buf->dtype.lanes()), buf->name);
    mem->setAlignment(llvm::Align(std::max(16, buf->data_alignment)));
    bind(buf->data.get(), mem);
  }
  void visit(const BufferStore* op) {
    const Buffer& buf = op->buffer;
    DataType t = op->value.dtype();
    Value* v = to_memory(t, visit_expr(op->value));
    Expr index = flat_index(buf, op->indices);
    if (const auto* ramp = index.as<Ramp>(); ramp != nullptr && is_one(ramp->stride)) {
      b_.CreateAlignedStore(v, element_ptr(buf, visit_expr(ramp->base)), element_align(buf->dtype));
      return;
    }
    if (index.dtype().is_vector()) {
      Value* idx = visit_expr(index);
      Value* base = base_ptr(buf);
      for (int i = 0; i < t.lanes(); ++i) {
        Value* lane_ptr = element_ptr(buf, b_.CreateExtractElement(idx, b_.getInt32(i)), base);
        b_.CreateAlignedStore(b_.CreateExtractElement(v, b_.getInt32(i)), lane_ptr,
                              element_align(buf->dtype));
      }
      return;
    }
    b_.CreateAlignedStore(v, element_ptr(buf, visit_expr(index)), element_align(buf->dtype));
  }
  void visit(const AssertStmt* op) {
    Value* ok = visit_expr(op->condition);
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(m_.ctx, "assert_fail", fn_);
    llvm::BasicBlock* cont = llvm::BasicBlock::Create(m_.ctx, "assert_ok", fn_);
    llvm::MDBuilder md(m_.ctx);
    b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(fail);
    raise(op->message);
    b_.SetInsertPoint(cont);
  }
  void visit(const IfThenElse* op) {
    Value* c = visit_expr(op->condition);
    llvm::BasicBlock* then_bb = llvm::BasicBlock::Create(m_.ctx, "then", fn_);
    llvm::BasicBlock* else_bb =
        op->else_case.defined() ? llvm::BasicBlock::Create(m_.ctx, "else", fn_) : nullptr;
    llvm::BasicBlock* end = llvm::BasicBlock::Create(m_.ctx, "endif", fn_);
    b_.CreateCondBr(c, then_bb, else_bb != nullptr ? else_bb : end);
    b_.SetInsertPoint(then_bb);
    visit_stmt(op->then_case);
    branch_to(end);
    if (else_bb != nullptr) {
      b_.SetInsertPoint(else_bb);
      visit_stmt(op->else_case);
      branch_to(end);
    }
    b_.SetInsertPoint(end);
  }
  void visit(const While* op) {
    llvm::BasicBlock* head = llvm::BasicBlock::Create(m_.ctx, "while_head", fn_);
    llvm::BasicBlock* body = llvm::BasicBlock::Create(m_.ctx, "while_body", fn_);
    llvm::BasicBlock* end = llvm::BasicBlock::Create(m_.ctx, "while_end", fn_);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    b_.CreateCondBr(visit_expr(op->condition), body, end);
    b_.SetInsertPoint(body);
    visit_stmt(op->body);
    branch_to(head);
    b_.SetInsertPoint(end);
  }
  void visit(const For* op) {
    PRIMJIT_USER_CHECK(op->for_kind != ForKind::kThreadBinding)
        << "host code generation: thread-bound loop over '" << op->loop_var->name
        << "' in host code; run SplitHostDevice so device code leaves the host function";
    if (op->for_kind == ForKind::kParallel && !in_parallel_) {
      parallel_for(op);
      return;
    }
    ForKind kind = op->for_kind;
    if (kind == ForKind::kUnrolled &&
        !passes::unroll_within_limit(*op, m_.options.max_unroll, "host code generation")) {
      kind = ForKind::kSerial;  // LLVM's full unroll of a long loop takes minutes
    }
    serial_for(op->loop_var, visit_expr(op->min), visit_expr(op->extent), op->body, kind);
  }
  void visit(const AttrStmt* op) {
    PRIMJIT_USER_CHECK(op->key != attr::kThreadExtent && op->key != attr::kVirtualThread)
        << "host code generation: a thread launch in host code; run SplitHostDevice first";
    if (op->key == attr::kComputeScope) {
      outline_compute_scope(op);
      return;
    }
    visit_stmt(op->body);
  }

 private:
  enum class Arith { kAdd, kSub, kMul, kDiv, kMod, kFloorDiv, kFloorMod };
  enum class Cmp { kEQ, kNE, kLT, kLE, kGT, kGE };

  static bool is_one(const Expr& e) { return as_const_int(e) == 1; }

  llvm::Align element_align(DataType t) { return llvm::Align(std::max(1, t.element_of().bytes())); }

  void branch_to(llvm::BasicBlock* bb) {
    if (b_.GetInsertBlock()->getTerminator() == nullptr) b_.CreateBr(bb);
  }
  // After a return, code that follows is unreachable but still needs a block.
  void start_dead_block() {
    b_.SetInsertPoint(llvm::BasicBlock::Create(m_.ctx, "after_return", fn_));
  }

  Value* from_memory(DataType t, Value* v) {
    return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
  }
  Value* to_memory(DataType t, Value* v) {
    return t.is_bool() ? b_.CreateZExt(v, memory_type_of(t)) : v;
  }

  // Row-major flattening for buffers still accessed with several indices. The index counts
  // from the buffer's first element: element_ptr applies elem_offset to the base pointer.
  Expr flat_index(const Buffer& buf, const std::vector<Expr>& indices) {
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
  static Expr cast_like(const Expr& e, const Expr& like) {
    DataType t = like.dtype().element_of();
    if (e.dtype() == t) return e;
    if (auto c = as_const_int(e)) return IntImm::make(t, *c);
    return Cast::make(t, e);
  }

  // The address of `buf`'s first element: its data pointer advanced by elem_offset.
  Value* base_ptr(const Buffer& buf) {
    Value* data = visit(buf->data.get());
    const Expr& offset = buf->elem_offset;
    if (!offset.defined() || as_const_int(offset) == 0) return data;
    return b_.CreateInBoundsGEP(memory_type_of(buf->dtype.element_of()), data,
                                b_.CreateSExtOrTrunc(visit_expr(offset), b_.getInt64Ty()));
  }
  // The address of element `index` (from flat_index) of `buf`, from base_ptr(buf) or `base`.
  Value* element_ptr(const Buffer& buf, Value* index, Value* base = nullptr) {
    return b_.CreateInBoundsGEP(memory_type_of(buf->dtype.element_of()),
                                base != nullptr ? base : base_ptr(buf),
                                b_.CreateSExtOrTrunc(index, b_.getInt64Ty()));
  }

  Value* arith(const Expr& ea, const Expr& eb, Arith kind) {
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

  Value* compare(const Expr& ea, const Expr& eb, Cmp kind) {
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
      return b_.CreateICmp(kind == Cmp::kNE ? llvm::CmpInst::ICMP_NE : llvm::CmpInst::ICMP_EQ, a,
                           bv);
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

  Value* min_max(const Expr& ea, const Expr& eb, bool is_min) {
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

  Value* cast(DataType from, DataType to, Value* v) {
    if (from == to) return v;
    llvm::Type* t = type_of(to);
    if (to.is_bool()) {
      if (from.is_floating())
        return b_.CreateFCmpUNE(v, llvm::Constant::getNullValue(v->getType()));
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

  Value* intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args) {
    llvm::Function* f = llvm::Intrinsic::getDeclaration(&m_.mod, id, {args[0]->getType()});
    return b_.CreateCall(f, args);
  }

  // Math builtins: LLVM intrinsics where they exist, the C library otherwise (scalars only).
  Value* math_call(const Call* op) {
    if (!op->op->is_math()) return nullptr;
    std::vector<Value*> args;
    for (const Expr& a : op->args) args.push_back(visit_expr(a));
    const HostMathLowering* lowering = host_math().find(op->op);
    if (lowering == nullptr) return libm_call(op, args);
    llvm::Type* type = args[0]->getType();
    switch (lowering->how) {
      case HostMath::kIntrinsic:
        return intrinsic(lowering->intrinsic, args);
      case HostMath::kRsqrt:
        return b_.CreateFDiv(llvm::ConstantFP::get(type, 1.0),
                             intrinsic(llvm::Intrinsic::sqrt, args));
      case HostMath::kSigmoid: {
        Value* one = llvm::ConstantFP::get(type, 1.0);
        Value* e = intrinsic(llvm::Intrinsic::exp, {b_.CreateFNeg(args[0])});
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

  // The op table's C library function: "tanhf" for float32, "tanh" for float64.
  Value* libm_call(const Call* op, const std::vector<Value*>& args) {
    DataType t = op->dtype;
    const std::string& name = op->op->name;
    PRIMJIT_USER_CHECK(t.is_scalar() && t.is_float() && t.bits() >= 32)
        << "host code generation: T." << name << " on " << t << " is not supported";
    std::string symbol = op->op->libm + (t.bits() == 32 ? "f" : "");
    std::vector<llvm::Type*> params(args.size(), type_of(t));
    llvm::FunctionCallee callee =
        m_.mod.getOrInsertFunction(symbol, llvm::FunctionType::get(type_of(t), params, false));
    return b_.CreateCall(callee, args);
  }

  Value* if_then_else(const Call* op) {
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

  Value* field_ptr(const Call* op, int* field) {
    Value* base = visit_expr(op->args[0]);
    auto index = as_const_int(op->args[1]);
    auto f = as_const_int(op->args[2]);
    PRIMJIT_USER_CHECK(f.has_value()) << "T.tvm_struct_get/set: the field must be a constant";
    *field = static_cast<int>(*f);
    Value* element = base;
    if (is_value_field(*field)) {  // element i of a PJValue array
      Value* i = index ? static_cast<Value*>(b_.getInt64(*index))
                       : b_.CreateSExt(visit_expr(op->args[1]), b_.getInt64Ty());
      element = b_.CreateInBoundsGEP(b_.getInt8Ty(), base, b_.CreateMul(i, b_.getInt64(16)));
    }
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), element, b_.getInt64(dltensor_offset(*field)));
  }

  Value* struct_get(const Call* op) {
    int field = 0;
    Value* ptr = field_ptr(op, &field);
    DataType t = op->dtype;
    Value* v = b_.CreateLoad(memory_type_of(t), ptr);
    return from_memory(t, v);
  }

  Value* struct_set(const Call* op) {
    int field = 0;
    Value* ptr = field_ptr(op, &field);
    DataType t = op->args[3].dtype();
    b_.CreateStore(to_memory(t, visit_expr(op->args[3])), ptr);
    return b_.getInt32(0);
  }

  Value* call_extern(const Call* op) {
    const auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
    PRIMJIT_USER_CHECK(name != nullptr) << "T.call_extern needs the function name first";
    std::vector<Value*> args;
    std::vector<llvm::Type*> types;
    for (size_t i = 1; i < op->args.size(); ++i) {
      args.push_back(visit_expr(op->args[i]));
      types.push_back(args.back()->getType());
    }
    llvm::Type* ret = op->dtype.is_void() ? b_.getVoidTy() : type_of(op->dtype);
    llvm::FunctionCallee callee =
        m_.mod.getOrInsertFunction(name->value, llvm::FunctionType::get(ret, types, false));
    Value* v = b_.CreateCall(callee, args);
    return op->dtype.is_void() ? b_.getInt32(0) : v;
  }

  // A PJValue array on the stack holding `values`.
  Value* pack_values(const std::vector<Expr>& values) {
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* array =
        entry.CreateAlloca(b_.getInt8Ty(), entry.getInt64(16 * std::max<size_t>(values.size(), 1)));
    array->setAlignment(llvm::Align(8));
    for (size_t i = 0; i < values.size(); ++i) {
      DataType t = values[i].dtype();
      Value* v = visit_expr(values[i]);
      Value* slot = b_.CreateInBoundsGEP(b_.getInt8Ty(), array, b_.getInt64(16 * i));
      const int32_t type_index = type_index_of(t);
      if (type_index == kPJBool) {
        v = b_.CreateZExt(v, b_.getInt64Ty());
      } else if (type_index == kPJFloat) {
        v = b_.CreateFPCast(v, b_.getDoubleTy());
      } else if (type_index == kPJInt) {
        v = b_.CreateIntCast(v, b_.getInt64Ty(), t.is_int());
      }
      b_.CreateStore(b_.getInt32(type_index), slot);
      b_.CreateStore(b_.getInt32(0), b_.CreateInBoundsGEP(b_.getInt8Ty(), slot, b_.getInt64(4)));
      b_.CreateStore(v, b_.CreateInBoundsGEP(b_.getInt8Ty(), slot, b_.getInt64(8)));
    }
    return array;
  }

  // Failure: record the message, return -1 (or propagate an error already recorded).
  void raise(const Expr& message) {
    llvm::FunctionCallee set_error = m_.mod.getOrInsertFunction(
        kSetErrorSymbol, b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty());
    if (const auto* text = message.as<StringImm>()) {
      b_.CreateCall(set_error, {b_.CreateGlobalStringPtr(escape_format(text->value)),
                                llvm::ConstantPointerNull::get(b_.getPtrTy()), b_.getInt32(0)});
    } else {
      const auto* fmt = message.as<Call>();
      std::vector<Expr> values(fmt->args.begin() + 1, fmt->args.end());
      Value* array = pack_values(values);
      b_.CreateCall(set_error, {visit_expr(fmt->args[0]), array,
                                b_.getInt32(static_cast<int>(values.size()))});
    }
    return_error();
  }
  void return_error() {
    PRIMJIT_USER_CHECK(returns_error_)
        << "host code generation: function '" << fn_->getName().str()
        << "' can fail (an assert or a packed call) but does not return an int32 error code";
    b_.CreateRet(b_.getInt32(-1));
  }

  void check_status(Value* status) {
    llvm::BasicBlock* fail = llvm::BasicBlock::Create(m_.ctx, "call_fail", fn_);
    llvm::BasicBlock* cont = llvm::BasicBlock::Create(m_.ctx, "call_ok", fn_);
    llvm::MDBuilder md(m_.ctx);
    b_.CreateCondBr(b_.CreateICmpEQ(status, b_.getInt32(0)), cont, fail,
                    md.createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(fail);
    return_error();
    b_.SetInsertPoint(cont);
  }

  Value* call_cpacked(const Call* op) {
    const auto* symbol = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
    PRIMJIT_USER_CHECK(symbol != nullptr) << "T.call_cpacked needs the function symbol first";
    llvm::Function* callee = nullptr;
    for (const auto& [gvar, func] : m_.ir->functions) {
      if (func->global_symbol() == symbol->value) callee = m_.functions.at(gvar->name);
    }
    PRIMJIT_USER_CHECK(callee != nullptr)
        << "T.call_cpacked(\"" << symbol->value << "\"): no function of the module has that symbol";
    std::vector<Expr> values(op->args.begin() + 1, op->args.end());
    Value* array = pack_values(values);
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* result = entry.CreateAlloca(b_.getInt8Ty(), entry.getInt64(16));
    result->setAlignment(llvm::Align(8));
    Value* status = b_.CreateCall(callee, {llvm::ConstantPointerNull::get(b_.getPtrTy()), array,
                                           b_.getInt32(static_cast<int>(values.size())), result});
    check_status(status);
    return b_.getInt32(0);
  }

  // T.call_packed("kernel", args..., launch values...): the launch ABI of jit/common/host_abi.h.
  Value* launch_kernel(const Call* op) {
    const auto* symbol = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
    PRIMJIT_USER_CHECK(symbol != nullptr) << "T.call_packed needs the callee's name first";
    PrimFunc kernel;
    for (const auto& [gvar, func] : m_.ir->functions) {
      std::string sym = func->global_symbol().empty() ? gvar->name : func->global_symbol();
      if (func->is_kernel() && sym == symbol->value) kernel = func;
    }
    PRIMJIT_USER_CHECK(kernel.defined())
        << "host code generation: T.call_packed(\"" << symbol->value
        << "\") names no kernel of the module; packed calls launch kernels (calling_conv 2)";
    const AttrValue* tags = kernel->attr(attr::kKernelLaunchParams);
    size_t num_launch = tags != nullptr && tags->is_array() ? tags->as_array().size() : 0;
    size_t num_params = kernel->params.size();
    PRIMJIT_USER_CHECK(op->args.size() == 1 + num_params + num_launch)
        << "T.call_packed(\"" << symbol->value << "\"): the kernel takes " << num_params
        << " arguments and " << num_launch << " launch values, the call passes "
        << op->args.size() - 1;
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* launch = entry.CreateAlloca(
        b_.getInt64Ty(), entry.getInt32(static_cast<int>(std::max<size_t>(num_launch, 1))));
    llvm::AllocaInst* arg_ptrs = entry.CreateAlloca(
        b_.getPtrTy(), entry.getInt32(static_cast<int>(std::max<size_t>(num_params, 1))));
    for (size_t i = 0; i < num_params; ++i) {
      DataType t = kernel->params[i].dtype();
      Value* v = to_memory(t, visit_expr(op->args[1 + i]));
      llvm::AllocaInst* slot = entry.CreateAlloca(v->getType());
      b_.CreateStore(v, slot);
      b_.CreateStore(slot, b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), arg_ptrs, i));
    }
    for (size_t i = 0; i < num_launch; ++i) {
      Value* v = visit_expr(op->args[1 + num_params + i]);
      b_.CreateStore(b_.CreateSExtOrTrunc(v, b_.getInt64Ty()),
                     b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), launch, i));
    }
    std::string handle_name = kernel_handle_symbol(symbol->value, m_.suffix);
    llvm::GlobalVariable* handle = m_.mod.getGlobalVariable(handle_name);
    if (handle == nullptr) {
      handle =
          new llvm::GlobalVariable(m_.mod, b_.getPtrTy(), false, llvm::GlobalValue::ExternalLinkage,
                                   llvm::ConstantPointerNull::get(b_.getPtrTy()), handle_name);
    }
    llvm::FunctionCallee run = m_.mod.getOrInsertFunction(
        kLaunchSymbol, b_.getInt32Ty(), b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy());
    Value* status = b_.CreateCall(run, {b_.CreateLoad(b_.getPtrTy(), handle), launch, arg_ptrs});
    m_.launched.insert(symbol->value);
    check_status(status);
    return b_.getInt32(0);
  }

  Value* call_function(const Call* op) {
    auto it = m_.functions.find(op->callee->name);
    PRIMJIT_USER_CHECK(it != m_.functions.end())
        << "host code generation: call of '" << op->callee->name
        << "', which is not a host function of the module (a kernel must be launched)";
    std::vector<Value*> args;
    for (const Expr& a : op->args) args.push_back(visit_expr(a));
    return b_.CreateCall(it->second, args);
  }

  void serial_for(const Var& loop_var, Value* min, Value* extent, const Stmt& body, ForKind kind) {
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    llvm::BasicBlock* head = llvm::BasicBlock::Create(m_.ctx, "for_head", fn_);
    llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(m_.ctx, "for_body", fn_);
    llvm::BasicBlock* end = llvm::BasicBlock::Create(m_.ctx, "for_end", fn_);
    Value* stop = b_.CreateAdd(min, extent);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(min->getType(), 2, loop_var->name);
    i->addIncoming(min, pre);
    b_.CreateCondBr(
        loop_var.dtype().is_int() ? b_.CreateICmpSLT(i, stop) : b_.CreateICmpULT(i, stop), body_bb,
        end);
    b_.SetInsertPoint(body_bb);
    bind(loop_var.get(), i);
    visit_stmt(body);
    if (b_.GetInsertBlock()->getTerminator() == nullptr) {
      Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "", true, true);
      i->addIncoming(next, b_.GetInsertBlock());
      llvm::BranchInst* latch = b_.CreateBr(head);
      latch->setMetadata(llvm::LLVMContext::MD_loop, loop_metadata(kind));
    }
    b_.SetInsertPoint(end);
  }

  llvm::MDNode* loop_metadata(ForKind kind) {
    std::vector<llvm::Metadata*> ops = {nullptr};
    auto flag = [&](const char* name) {
      ops.push_back(llvm::MDNode::get(m_.ctx, {llvm::MDString::get(m_.ctx, name),
                                               llvm::ConstantAsMetadata::get(b_.getTrue())}));
    };
    if (kind == ForKind::kVectorized) flag("llvm.loop.vectorize.enable");
    if (kind == ForKind::kUnrolled) {
      ops.push_back(
          llvm::MDNode::get(m_.ctx, {llvm::MDString::get(m_.ctx, "llvm.loop.unroll.full")}));
    }
    llvm::MDNode* node = llvm::MDNode::getDistinct(m_.ctx, ops);
    node->replaceOperandWith(0, node);
    return node;
  }

  // Free variables of `body`, in first-use order, excluding `skip`.
  std::vector<const VarNode*> captured(const Stmt& body, const VarNode* skip) {
    // Buffers used but declared outside bring their data pointer (and shape) along.
    passes::FreeVarCollector buffers;
    buffers.visit_stmt(body);
    std::vector<Stmt> seq;
    for (const Buffer& b : buffers.undeclared_buffers()) seq.push_back(DeclBuffer::make(b));
    seq.push_back(body);
    passes::FreeVarCollector free;
    free.visit_stmt(SeqStmt::make(seq));
    std::vector<const VarNode*> out;
    for (const VarNode* v : free.free_vars()) {
      if (v != skip) out.push_back(v);
    }
    return out;
  }

  // compute_scope: an internal function whose pointer parameters are noalias.
  void outline_compute_scope(const AttrStmt* op) {
    std::vector<const VarNode*> vars = captured(op->body, nullptr);
    std::vector<llvm::Type*> types;
    std::vector<Value*> args;
    for (const VarNode* v : vars) {
      args.push_back(visit(v));
      types.push_back(args.back()->getType());
    }
    const auto* label = op->value.as<StringImm>();
    std::string name =
        (label != nullptr ? label->value : fn_->getName().str() + "_compute_") + m_.suffix;
    llvm::Function* f =
        llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), types, false),
                               llvm::Function::InternalLinkage, name, &m_.mod);
    f->addFnAttr(llvm::Attribute::NoInline);
    FunctionCodegen inner(m_, f, /*returns_error=*/true, in_parallel_);
    for (size_t i = 0; i < vars.size(); ++i) {
      llvm::Argument* arg = f->getArg(static_cast<unsigned>(i));
      arg->setName(vars[i]->name);
      if (vars[i]->is_pointer()) arg->addAttr(llvm::Attribute::NoAlias);
      inner.bind(vars[i], arg);
    }
    inner.emit_body(op->body, inner.b_.getInt32(0));
    Value* status = b_.CreateCall(f, args);
    check_status(status);
  }

  // T.parallel: body(i, closure) -> int32 run by primjit_rt_parallel_for.
  void parallel_for(const For* op) {
    std::vector<const VarNode*> vars = captured(op->body, op->loop_var.get());
    std::vector<llvm::Type*> field_types;
    for (const VarNode* v : vars) field_types.push_back(visit(v)->getType());
    llvm::StructType* closure_type = llvm::StructType::get(m_.ctx, field_types);
    llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
    llvm::AllocaInst* closure = entry.CreateAlloca(closure_type);
    for (size_t i = 0; i < vars.size(); ++i) {
      b_.CreateStore(visit(vars[i]),
                     b_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(i)));
    }
    std::string name = fn_->getName().str() + "_parallel_" + std::to_string(m_.outlined++);
    llvm::Function* f = llvm::Function::Create(
        llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt64Ty(), b_.getPtrTy()}, false),
        llvm::Function::InternalLinkage, name, &m_.mod);
    FunctionCodegen inner(m_, f, /*returns_error=*/true, /*in_parallel=*/true);
    llvm::Argument* index = f->getArg(0);
    llvm::Argument* env = f->getArg(1);
    index->setName("index");
    env->setName("closure");
    env->addAttr(llvm::Attribute::NoAlias);
    for (size_t i = 0; i < vars.size(); ++i) {
      Value* field = inner.b_.CreateLoad(
          field_types[i], inner.b_.CreateStructGEP(closure_type, env, static_cast<unsigned>(i)),
          vars[i]->name);
      inner.bind(vars[i], field);
    }
    inner.bind(op->loop_var.get(),
               inner.b_.CreateIntCast(index, inner.type_of(op->loop_var.dtype()), true));
    inner.emit_body(op->body, inner.b_.getInt32(0));

    Value* min = b_.CreateSExtOrTrunc(visit_expr(op->min), b_.getInt64Ty());
    Value* extent = b_.CreateSExtOrTrunc(visit_expr(op->extent), b_.getInt64Ty());
    llvm::FunctionCallee run =
        m_.mod.getOrInsertFunction(kParallelForSymbol, b_.getInt32Ty(), b_.getInt64Ty(),
                                   b_.getInt64Ty(), b_.getPtrTy(), b_.getPtrTy());
    Value* status = b_.CreateCall(run, {min, b_.CreateAdd(min, extent), f, closure});
    check_status(status);
  }

  ModuleState& m_;
  llvm::Function* fn_;
  llvm::IRBuilder<> b_;
  bool returns_error_;
  bool in_parallel_;
  std::unordered_map<const VarNode*, Value*> vars_;
};

// The LLVM type of a parameter or return value of a private function.
llvm::Type* scalar_type(llvm::LLVMContext& ctx, DataType t) {
  PRIMJIT_USER_CHECK(t.is_scalar())
      << "host code generation: private functions take and return scalars, not " << t;
  if (t.is_handle()) return llvm::PointerType::getUnqual(ctx);
  if (t.is_bool()) return llvm::Type::getInt1Ty(ctx);
  if (t.is_float()) {
    return t.bits() == 16   ? llvm::Type::getHalfTy(ctx)
           : t.bits() == 32 ? llvm::Type::getFloatTy(ctx)
                            : llvm::Type::getDoubleTy(ctx);
  }
  PRIMJIT_USER_CHECK(t.is_integer()) << "host code generation: unsupported dtype " << t;
  return llvm::Type::getIntNTy(ctx, t.bits());
}

}  // namespace

HostModule::HostModule() = default;
HostModule::~HostModule() {
  module.reset();  // before its context
}
HostModule::HostModule(HostModule&&) noexcept = default;
HostModule& HostModule::operator=(HostModule&&) noexcept = default;

HostModule codegen_llvm(const IRModule& module, const std::string& symbol_suffix,
                        const HostCodegenOptions& options) {
  HostModule out;
  out.context = std::make_unique<llvm::LLVMContext>();
  out.module = std::make_unique<llvm::Module>("primjit_host" + symbol_suffix, *out.context);
  ModuleState state{*out.context, *out.module, module, symbol_suffix, options, {}, {}, 0};
  llvm::IRBuilder<> types(*out.context);

  // Declarations first, so functions can call each other in any order.
  std::vector<std::pair<PrimFunc, llvm::Function*>> bodies;
  for (const auto& [gvar, func] : module->functions) {
    if (func->is_kernel()) continue;
    llvm::Function* f = nullptr;
    if (func->is_packed()) {
      auto* type = llvm::FunctionType::get(
          types.getInt32Ty(),
          {types.getPtrTy(), types.getPtrTy(), types.getInt32Ty(), types.getPtrTy()}, false);
      f = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                 func->global_symbol() + symbol_suffix, *out.module);
    } else {
      PRIMJIT_USER_CHECK(func->global_symbol().empty())
          << "host code generation: public function '" << gvar->name
          << "' has no packed entry point; run MakePackedAPI (it is in the default pipeline)";
      std::vector<llvm::Type*> params;
      for (const Var& p : func->params) params.push_back(scalar_type(*out.context, p.dtype()));
      llvm::Type* ret =
          func->ret_type.is_void() ? types.getVoidTy() : scalar_type(*out.context, func->ret_type);
      f = llvm::Function::Create(llvm::FunctionType::get(ret, params, false),
                                 llvm::Function::InternalLinkage, gvar->name + symbol_suffix,
                                 *out.module);
    }
    state.functions[gvar->name] = f;
    bodies.emplace_back(func, f);
  }
  for (auto& [func, f] : bodies) {
    bool returns_error = f->getReturnType()->isIntegerTy(32);
    FunctionCodegen gen(state, f, returns_error, false);
    for (size_t i = 0; i < func->params.size(); ++i) {
      f->getArg(static_cast<unsigned>(i))->setName(func->params[i]->name);
      gen.bind(func->params[i].get(), f->getArg(static_cast<unsigned>(i)));
    }
    gen.emit_body(func->body, nullptr);
  }
  out.launched_kernels.assign(state.launched.begin(), state.launched.end());
  return out;
}

std::string to_llvm_text(const HostModule& host) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  host.module->print(stream, nullptr);
  return text;
}

}  // namespace primjit::jit
