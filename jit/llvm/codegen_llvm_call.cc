// Host code generation of builtin calls: DLTensor and PJValue fields, packed and extern
// calls, kernel launches, raising errors and checking the status of callees.
#include "jit/llvm/function_codegen.h"

#include <llvm/IR/MDBuilder.h>

#include "jit/common/arg_check.h"
#include "jit/common/host_abi.h"
#include "primjit/abi.h"
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
                     : b_.CreateSExt(visit_expr(op->args[1]), b_.getInt64Ty());
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
  Value* status =
      b_.CreateCall(check, {visit_expr(op->args[0]), visit_expr(op->args[1]),
                            m_.shared_string(signature), m_.shared_string(texts), global});
  check_status(status);
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
    Value* v = visit_expr(op->args[1 + num_params + i]);
    b_.CreateStore(b_.CreateSExtOrTrunc(v, b_.getInt64Ty()),
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
