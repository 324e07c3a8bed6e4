// Host code generation of builtin calls: DLTensor and PJValue fields, packed and extern
// calls, kernel launches, raising errors and checking the status of callees.
#include "jit/llvm/function_codegen.h"

#include <dlpack/dlpack.h>
#include <llvm/IR/MDBuilder.h>

#include "jit/common/arg_check.h"
#include "jit/common/host_abi.h"
#include "primjit/abi.h"
#include "primjit/arg_table.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

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

// T.check_args's table (primjit/arg_table.h) as straight-line code that tests what the runtime's
// check would and branches to `slow` when anything fails: each check a compare and-ed into one
// flag, a branch only before a load a failed check makes unsafe (a null tensor or shape, a
// shape of another ndim) and at the end. No message and no error path per check: `slow` calls
// the runtime's check, which finds the first failure and its message. Calling the runtime's
// check on every call instead cost 1.5x the per-call time of the generated asserts (it walks
// the table; here the table's constants are the code's), and this code is faster than they
// were (bench_dispatch direct_ns, 3 tensors: 20 ns, table walk 28 ns, this 14 ns).
//
// Functions of more parameters than this only call the runtime's check: their compile stays a
// few instructions per parameter (1,000 tensors: about 20 ms), and a call of such a function
// spends the table walk's few nanoseconds per argument.
constexpr int64_t kMaxInlineArgChecks = 64;

class FastArgChecks {
 public:
  FastArgChecks(llvm::IRBuilder<>& b, llvm::Function* fn, llvm::BasicBlock* slow)
      : b_(b), fn_(fn), slow_(slow), ok_(b.getTrue()) {}

  void emit(Value* args, Value* num_args, const std::vector<uint64_t>& table) {
    auto entry = [&](size_t at) { return static_cast<int64_t>(table[at]); };
    const int64_t n = entry(0);
    all(b_.CreateICmpEQ(num_args, b_.getInt32(static_cast<uint32_t>(n))));
    if (n > 0) guard(b_.CreateIsNotNull(args));
    std::vector<Value*> tensors(static_cast<size_t>(n)), shapes(static_cast<size_t>(n));
    size_t at = 1;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t kind = entry(at++);
      Value* type = load(b_.getInt32Ty(), args, 16 * i);
      std::vector<int> accepted = kind == kArgTensor || kind == kArgPointer
                                      ? std::vector<int>{kPJNone, kPJOpaquePtr, kPJDLTensorPtr}
                                  : kind == kArgFloat ? std::vector<int>{kPJFloat, kPJInt, kPJBool}
                                                      : std::vector<int>{kPJInt, kPJBool};
      Value* type_ok = b_.getFalse();
      for (int t : accepted) type_ok = b_.CreateOr(type_ok, b_.CreateICmpEQ(type, b_.getInt32(t)));
      all(type_ok);
      if (kind != kArgTensor) continue;
      const size_t r = at;  // the tensor record
      const int64_t ndim = entry(r + kArgNdim);
      at += kArgTensorEntries + kArgDimEntries * static_cast<size_t>(ndim);
      Value* x = load(b_.getPtrTy(), args, 16 * i + 8);
      guard(b_.CreateIsNotNull(x));
      tensors[static_cast<size_t>(i)] = x;
      all(b_.CreateICmpEQ(load(b_.getInt32Ty(), x, 16), b_.getInt32(static_cast<uint32_t>(ndim))));
      const uint64_t dtype =
          table[r + kArgCode] | table[r + kArgBits] << 8 | table[r + kArgLanes] << 16;
      all(b_.CreateICmpEQ(load(b_.getInt32Ty(), x, 20), b_.getInt32(static_cast<uint32_t>(dtype))));
      const int64_t flags = entry(r + kArgFlags);
      if ((flags & kArgZeroByteOffset) != 0) all(b_.CreateIsNull(load(b_.getInt64Ty(), x, 40)));
      Value* device = load(b_.getInt32Ty(), x, 8);
      Value* device_ok =
          b_.CreateICmpEQ(device, b_.getInt32(static_cast<uint32_t>(entry(r + kArgDeviceType))));
      if (entry(r + kArgDeviceType) == kDLCUDA) {
        device_ok = b_.CreateOr(device_ok, b_.CreateICmpEQ(device, b_.getInt32(kDLCUDAManaged)));
      }
      all(device_ok);
      if (const int64_t p = entry(r + kArgDeviceIdParam); p >= 0) {
        all(b_.CreateICmpEQ(load(b_.getInt32Ty(), x, 12),
                            load(b_.getInt32Ty(), tensors[static_cast<size_t>(p)], 12)));
      }
      Value* data_ok = b_.CreateIsNotNull(load(b_.getPtrTy(), x, 0));
      if (ndim == 0) {
        all(data_ok);
        continue;
      }
      guard(b_.getTrue());  // the ndim is right: the shape may be read
      Value* shape = load(b_.getPtrTy(), x, 24);
      guard(b_.CreateIsNotNull(shape));
      shapes[static_cast<size_t>(i)] = shape;
      std::vector<Value*> extents;
      Value* empty = b_.getFalse();  // an extent 0 (a product of extents could wrap to 0)
      for (int64_t k = 0; k < ndim; ++k) {
        const size_t d = r + kArgTensorEntries + kArgDimEntries * static_cast<size_t>(k);
        Value* extent = load(b_.getInt64Ty(), shape, 8 * k);
        extents.push_back(extent);
        empty = b_.CreateOr(empty, b_.CreateICmpEQ(extent, b_.getInt64(0)));
        const int64_t a = entry(d + 1);
        if (entry(d) == kArgDimDefine && a >= 0) {
          all(b_.CreateICmpSLE(extent, b_.getInt64(static_cast<uint64_t>(a))));
        } else if (entry(d) == kArgDimConst) {
          all(b_.CreateICmpEQ(extent, b_.getInt64(static_cast<uint64_t>(a))));
        } else if (entry(d) == kArgDimMatch) {
          Value* other = load(b_.getInt64Ty(), shapes[static_cast<size_t>(a)], 8 * entry(d + 2));
          all(b_.CreateICmpEQ(extent, other));
        }
      }
      all(b_.CreateOr(data_ok, empty));
      if ((flags & kArgCompactStrides) != 0) compact_strides(x, extents);
    }
    guard(b_.getTrue());
  }

 private:
  Value* load(llvm::Type* type, Value* base, int64_t offset) {
    return b_.CreateLoad(type, b_.CreateConstInBoundsGEP1_64(b_.getInt8Ty(), base, offset));
  }
  void all(Value* condition) { ok_ = b_.CreateAnd(ok_, condition); }
  // On to a new block when everything so far (and `condition`) holds, else to the slow path.
  void guard(Value* condition) {
    all(condition);
    llvm::BasicBlock* next = llvm::BasicBlock::Create(b_.getContext(), "args_ok", fn_);
    llvm::MDBuilder md(b_.getContext());
    b_.CreateCondBr(ok_, next, slow_, md.createBranchWeights(1 << 20, 1));
    b_.SetInsertPoint(next);
    ok_ = b_.getTrue();
  }
  // Null strides, or compact row-major ones (any stride in a dimension of extent 1).
  void compact_strides(Value* x, const std::vector<Value*>& extents) {
    Value* strides = load(b_.getPtrTy(), x, 32);
    llvm::BasicBlock* from = b_.GetInsertBlock();
    llvm::BasicBlock* given = llvm::BasicBlock::Create(b_.getContext(), "strides", fn_);
    llvm::BasicBlock* done = llvm::BasicBlock::Create(b_.getContext(), "strides_done", fn_);
    b_.CreateCondBr(b_.CreateIsNull(strides), done, given);
    b_.SetInsertPoint(given);
    Value* compact = b_.getTrue();
    Value* expected = b_.getInt64(1);
    for (size_t k = extents.size(); k-- > 0;) {
      Value* stride = load(b_.getInt64Ty(), strides, 8 * static_cast<int64_t>(k));
      compact = b_.CreateAnd(compact, b_.CreateOr(b_.CreateICmpEQ(extents[k], b_.getInt64(1)),
                                                  b_.CreateICmpEQ(stride, expected)));
      expected = b_.CreateMul(expected, extents[k]);
    }
    b_.CreateBr(done);
    b_.SetInsertPoint(done);
    llvm::PHINode* phi = b_.CreatePHI(b_.getInt1Ty(), 2);
    phi->addIncoming(b_.getTrue(), from);
    phi->addIncoming(compact, given);
    all(phi);
  }

  llvm::IRBuilder<>& b_;
  llvm::Function* fn_;
  llvm::BasicBlock* slow_;
  Value* ok_;
};

}  // namespace

Value* FunctionCodegen::field_ptr(const Call* op, int* field) {
  Value* base = visit_expr(op->args[0]);
  auto index = as_const_int(op->args[1]);
  auto f = as_const_int(op->args[2]);
  PRIMJIT_USER_CHECK(f.has_value()) << "T.tvm_struct_get/set: the field must be a constant";
  *field = static_cast<int>(*f);
  Value* element = base;
  if (is_value_field(*field)) {  // element i of a PJValue array
    Value* i = index ? static_cast<Value*>(b_.getInt64(*index))
                     : to_i64(visit_expr(op->args[1]), op->args[1].dtype());
    element = b_.CreateInBoundsGEP(b_.getInt8Ty(), base, b_.CreateMul(i, b_.getInt64(16)));
  }
  return b_.CreateInBoundsGEP(b_.getInt8Ty(), element, b_.getInt64(dltensor_offset(*field)));
}

Value* FunctionCodegen::struct_get(const Call* op) {
  int field = 0;
  Value* ptr = field_ptr(op, &field);
  DataType t = op->dtype;
  Value* v = b_.CreateLoad(memory_type_of(t), ptr);
  return from_memory(t, v);
}

Value* FunctionCodegen::struct_set(const Call* op) {
  int field = 0;
  Value* ptr = field_ptr(op, &field);
  DataType t = op->args[3].dtype();
  b_.CreateStore(to_memory(t, visit_expr(op->args[3])), ptr);
  return b_.getInt32(0);
}

Value* FunctionCodegen::call_extern(const Call* op) {
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

Value* FunctionCodegen::pack_values(const std::vector<Expr>& values) {
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

void FunctionCodegen::raise(const Expr& message) {
  llvm::FunctionCallee set_error = m_.mod.getOrInsertFunction(
      kSetErrorSymbol, b_.getVoidTy(), b_.getPtrTy(), b_.getPtrTy(), b_.getInt32Ty());
  if (const auto* text = message.as<StringImm>()) {
    b_.CreateCall(set_error, {m_.shared_string(escape_format(text->value)),
                              llvm::ConstantPointerNull::get(b_.getPtrTy()), b_.getInt32(0)});
  } else {
    const auto* fmt = message.as<Call>();
    std::vector<Expr> values(fmt->args.begin() + 1, fmt->args.end());
    Value* array = pack_values(values);
    b_.CreateCall(set_error,
                  {visit_expr(fmt->args[0]), array, b_.getInt32(static_cast<int>(values.size()))});
  }
  return_error();
}

void FunctionCodegen::return_error() {
  PRIMJIT_USER_CHECK(returns_error_)
      << "host code generation: function '" << fn_->getName().str()
      << "' can fail (an assert or a packed call) but does not return an int32 error code";
  b_.CreateRet(b_.getInt32(-1));
}

void FunctionCodegen::check_status(Value* status) {
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(m_.ctx, "call_fail", fn_);
  llvm::BasicBlock* cont = llvm::BasicBlock::Create(m_.ctx, "call_ok", fn_);
  llvm::MDBuilder md(m_.ctx);
  b_.CreateCondBr(b_.CreateICmpEQ(status, b_.getInt32(0)), cont, fail,
                  md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail);
  return_error();
  b_.SetInsertPoint(cont);
}

Value* FunctionCodegen::self_for(const std::string& kernel) {
  PRIMJIT_USER_CHECK(self_ != nullptr)
      << "host code generation: function '" << ir_name() << "' launches kernel '" << kernel
      << "' but is private, so it has no kernel table (the packed `self` argument); launch "
         "kernels from a public function (or the compute scopes and parallel loops it runs), "
         "or give '"
      << ir_name() << "' a global_symbol so that it becomes a packed function";
  return self_;
}

std::string FunctionCodegen::ir_name() const {
  std::string name = fn_->getName().str();
  if (!m_.suffix.empty() && name.ends_with(m_.suffix)) name.resize(name.size() - m_.suffix.size());
  return name;
}

Value* FunctionCodegen::check_args(const Call* op) {
  const auto* signature = op->args.size() > 4 ? op->args[2].as<StringImm>() : nullptr;
  const auto* texts = signature != nullptr ? op->args[3].as<StringImm>() : nullptr;
  PRIMJIT_USER_CHECK(texts != nullptr)
      << "T.check_args takes args, num_args, the signature and texts as strings, then the table";
  std::vector<uint64_t> table;
  for (size_t k = 4; k < op->args.size(); ++k) {
    std::optional<int64_t> v = as_const_int(op->args[k]);
    PRIMJIT_USER_CHECK(v.has_value())
        << "T.check_args: entry " << k - 4 << " of the table is not an integer constant";
    table.push_back(static_cast<uint64_t>(*v));
  }
  const std::string problem = arg_table_problem(reinterpret_cast<const int64_t*>(table.data()),
                                                table.size(), texts->value.size());
  PRIMJIT_USER_CHECK(problem.empty())
      << "T.check_args in '" << ir_name() << "': the table is malformed (" << problem
      << "); it is MakePackedAPI's, see primjit/arg_table.h";
  llvm::Constant* init = llvm::ConstantDataArray::get(m_.ctx, table);
  auto* global = new llvm::GlobalVariable(m_.mod, init->getType(), /*isConstant=*/true,
                                          llvm::GlobalValue::PrivateLinkage, init, ".args");
  global->setAlignment(llvm::Align(8));
  llvm::FunctionCallee check =
      m_.mod.getOrInsertFunction(kCheckArgsSymbol, b_.getInt32Ty(), b_.getPtrTy(), b_.getInt32Ty(),
                                 b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy());
  Value* args = visit_expr(op->args[0]);
  Value* num_args = visit_expr(op->args[1]);
  llvm::BasicBlock* slow = llvm::BasicBlock::Create(m_.ctx, "args_slow", fn_);
  llvm::BasicBlock* checked = llvm::BasicBlock::Create(m_.ctx, "args_checked", fn_);
  const bool inline_checks = static_cast<int64_t>(table[0]) <= kMaxInlineArgChecks;
  if (inline_checks) {
    FastArgChecks(b_, fn_, slow).emit(args, num_args, table);
    b_.CreateBr(checked);
  } else {
    b_.CreateBr(slow);
  }
  b_.SetInsertPoint(slow);
  Value* status = b_.CreateCall(
      check, {args, num_args, m_.shared_string(signature), m_.shared_string(texts), global});
  if (inline_checks) {
    // The inline checks refused the call: the runtime's check says why. The call never goes
    // on from here, so the code after the checks sees the fields the inline checks loaded
    // (only the good path reaches it) and does not load them again.
    llvm::BasicBlock* refused = llvm::BasicBlock::Create(m_.ctx, "args_refused", fn_);
    llvm::BasicBlock* disagree = llvm::BasicBlock::Create(m_.ctx, "args_disagree", fn_);
    b_.CreateCondBr(b_.CreateICmpEQ(status, b_.getInt32(0)), disagree, refused);
    b_.SetInsertPoint(disagree);
    raise(StringImm::make("internal error: the inline argument checks of '" + ir_name() +
                          "' refused a call that the runtime's check accepts; please report it"));
    b_.SetInsertPoint(refused);
    return_error();
  } else {
    check_status(status);
    b_.CreateBr(checked);
  }
  b_.SetInsertPoint(checked);
  return b_.getInt32(0);
}

Value* FunctionCodegen::call_cpacked(const Call* op) {
  const auto* symbol = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(symbol != nullptr) << "T.call_cpacked needs the function symbol first";
  llvm::Function* callee = nullptr;
  PrimFunc callee_func;
  for (const auto& [gvar, func] : m_.ir->functions) {
    if (func->global_symbol() == symbol->value) {
      callee = m_.functions.at(gvar->name);
      callee_func = func;
    }
  }
  PRIMJIT_USER_CHECK(callee != nullptr)
      << "T.call_cpacked(\"" << symbol->value << "\"): no function of the module has that symbol";
  // The module's packed functions share one kernel table: a callee that launches kernels gets
  // the caller's.
  std::string kernel = m_.launched_by(callee_func);
  Value* self = kernel.empty() ? llvm::ConstantPointerNull::get(b_.getPtrTy()) : self_for(kernel);
  std::vector<Expr> values(op->args.begin() + 1, op->args.end());
  Value* array = pack_values(values);
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::AllocaInst* result = entry.CreateAlloca(b_.getInt8Ty(), entry.getInt64(16));
  result->setAlignment(llvm::Align(8));
  Value* status =
      b_.CreateCall(callee, {self, array, b_.getInt32(static_cast<int>(values.size())), result});
  check_status(status);
  return b_.getInt32(0);
}

Value* FunctionCodegen::launch_kernel(const Call* op) {
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
    const Expr& value = op->args[1 + num_params + i];
    b_.CreateStore(to_i64(visit_expr(value), value.dtype()),
                   b_.CreateConstInBoundsGEP1_64(b_.getInt64Ty(), launch, i));
  }
  // The kernel's handle: its slot of the kernel table (null until the runtime loads it).
  Value* table = self_for(symbol->value);
  unsigned slot = m_.kernel_slot(symbol->value);
  Value* handle =
      b_.CreateLoad(b_.getPtrTy(), b_.CreateConstInBoundsGEP1_64(b_.getPtrTy(), table, slot),
                    symbol->value + ".handle");
  llvm::FunctionCallee run = m_.mod.getOrInsertFunction(
      kLaunchSymbol, b_.getInt32Ty(), b_.getPtrTy(), b_.getPtrTy(), b_.getPtrTy());
  Value* status = b_.CreateCall(run, {handle, launch, arg_ptrs});
  check_status(status);
  return b_.getInt32(0);
}

Value* FunctionCodegen::call_function(const Call* op) {
  auto it = m_.functions.find(op->callee->name);
  PRIMJIT_USER_CHECK(it != m_.functions.end())
      << "host code generation: call of '" << op->callee->name
      << "', which is not a host function of the module (a kernel must be launched)";
  std::vector<Value*> args;
  for (const Expr& a : op->args) args.push_back(visit_expr(a));
  return b_.CreateCall(it->second, args);
}

}  // namespace primjit::jit
