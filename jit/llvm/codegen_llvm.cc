// Host code generation: the functions of a lowered module (after MakePackedAPI) to one LLVM
// module. FunctionCodegen (function_codegen.h) translates each function.
#include "jit/llvm/codegen_llvm.h"

#include <llvm/Support/raw_ostream.h>

#include "jit/llvm/function_codegen.h"
#include "jit/llvm/orc_engine.h"
#include "primjit/error.h"

namespace primjit::jit {

void FunctionCodegen::emit_body(const Stmt& body, Value* fallthrough) {
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

llvm::Type* FunctionCodegen::type_of(DataType t) {
  llvm::Type* scalar = nullptr;
  if (t.is_handle()) return b_.getPtrTy();
  if (t.is_void()) return b_.getVoidTy();
  if (t.is_bool()) {
    scalar = b_.getInt1Ty();
  } else if (t.is_int_or_bool()) {
    scalar = b_.getIntNTy(t.bits());
  } else if (t.is_float()) {
    scalar = t.bits() == 16 ? b_.getHalfTy() : t.bits() == 32 ? b_.getFloatTy() : b_.getDoubleTy();
  } else {
    PRIMJIT_USER_ERROR() << "host code generation: dtype " << t
                         << " needs the storage legalization passes (BF16StorageLegalize, "
                            "FP8StorageLegalize) before it reaches the LLVM code generator";
  }
  return t.lanes() > 1 ? llvm::FixedVectorType::get(scalar, t.lanes()) : scalar;
}

llvm::Type* FunctionCodegen::memory_type_of(DataType t) {
  if (t.is_bool()) {
    llvm::Type* byte = b_.getInt8Ty();
    return t.lanes() > 1 ? llvm::FixedVectorType::get(byte, t.lanes()) : byte;
  }
  return type_of(t);
}

void FunctionCodegen::branch_to(llvm::BasicBlock* bb) {
  if (b_.GetInsertBlock()->getTerminator() == nullptr) b_.CreateBr(bb);
}

void FunctionCodegen::start_dead_block() {
  b_.SetInsertPoint(llvm::BasicBlock::Create(m_.ctx, "after_return", fn_));
}

Value* FunctionCodegen::from_memory(DataType t, Value* v) {
  return t.is_bool() ? b_.CreateICmpNE(v, llvm::Constant::getNullValue(v->getType())) : v;
}

Value* FunctionCodegen::to_memory(DataType t, Value* v) {
  return t.is_bool() ? b_.CreateZExt(v, memory_type_of(t)) : v;
}

namespace {

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

llvm::Constant* HostModuleState::shared_string(const std::string& text) {
  llvm::Constant*& slot = shared_text[text];
  if (slot == nullptr) {
    llvm::Constant* init = llvm::ConstantDataArray::getString(ctx, text);
    auto* global = new llvm::GlobalVariable(mod, init->getType(), /*isConstant=*/true,
                                            llvm::GlobalValue::PrivateLinkage, init, ".str");
    global->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    global->setAlignment(llvm::Align(1));
    slot = global;
  }
  return slot;
}

bool contains_loop(const Stmt& body) {
  bool loop = false;
  post_order_visit(body, [&](const Ref<Object>& node) {
    loop = loop || node.as<For>() != nullptr || node.as<While>() != nullptr;
  });
  return loop;
}

void mark_glue_if_loopless(llvm::Function* f, const Stmt& body) {
  if (!contains_loop(body)) f->addFnAttr(kGlueFunctionAttr);
}

llvm::Constant* HostModuleState::shared_string(const StringImm* text) {
  llvm::Constant*& slot = shared_nodes[text];
  if (slot == nullptr) slot = shared_string(text->value);
  return slot;
}

unsigned HostModuleState::kernel_slot(const std::string& symbol) {
  auto [it, added] = kernel_slots.emplace(symbol, static_cast<unsigned>(launched.size()));
  if (added) launched.push_back(symbol);
  return it->second;
}

void HostModuleState::find_launches() {
  // Each function's own launches and the functions it runs (compute scopes, parallel tasks,
  // packed functions), then what it launches through them, to a fixed point: packed functions
  // may call each other in cycles.
  std::map<const PrimFuncNode*, std::vector<const PrimFuncNode*>> runs;
  for (const auto& [gvar, func] : ir->functions) {
    if (func->is_kernel()) continue;
    std::string& kernel = launches[func.get()];
    std::vector<const PrimFuncNode*>& callees = runs[func.get()];
    post_order_visit(func->body, [&](const Ref<Object>& node) {
      const auto* call = node.as<Call>();
      if (call == nullptr || !call->op.defined() || call->args.empty()) return;
      const auto* name = call->args[0].as<StringImm>();
      if (name == nullptr) return;
      if (call->is_op("call_packed")) {
        if (kernel.empty()) kernel = name->value;
      } else if (call->is_op("call_compute_scope") || call->is_op("parallel_for")) {
        if (PrimFunc callee = ir->find(name->value); callee.defined()) {
          callees.push_back(callee.get());
        }
      } else if (call->is_op("call_cpacked")) {
        for (const auto& [g, f] : ir->functions) {
          if (f->global_symbol() == name->value) callees.push_back(f.get());
        }
      }
    });
  }
  for (bool changed = true; changed;) {
    changed = false;
    for (auto& [func, callees] : runs) {
      std::string& kernel = launches[func];
      for (size_t i = 0; i < callees.size() && kernel.empty(); ++i) {
        kernel = launches[callees[i]];
        if (!kernel.empty()) changed = true;
      }
    }
  }
}

std::string HostModuleState::launched_by(const PrimFunc& func) const {
  auto it = launches.find(func.get());
  return it == launches.end() ? "" : it->second;
}

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
  HostModuleState state{*out.context, *out.module, module, symbol_suffix, options, {}, {}, {}, {}};
  state.find_launches();
  llvm::IRBuilder<> types(*out.context);

  // Declarations first, so functions can call each other in any order.
  std::vector<std::pair<PrimFunc, llvm::Function*>> bodies;
  for (const auto& [gvar, func] : module->functions) {
    // Kernels are device code; compute scopes and parallel tasks are emitted where they are
    // called (T.call_compute_scope, T.parallel_for).
    CallingConv conv = func->calling_conv();
    if (conv == CallingConv::kKernelLaunch || conv == CallingConv::kComputeScope ||
        conv == CallingConv::kParallelTask) {
      continue;
    }
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
    if (func->is_packed()) mark_glue_if_loopless(f, func->body);
    bool returns_error = f->getReturnType()->isIntegerTy(32);
    FunctionCodegen gen(state, f, returns_error);
    if (func->is_packed()) gen.set_self(f->getArg(0));
    for (size_t i = 0; i < func->params.size(); ++i) {
      f->getArg(static_cast<unsigned>(i))->setName(func->params[i]->name);
      gen.bind(func->params[i].get(), f->getArg(static_cast<unsigned>(i)));
    }
    gen.emit_body(func->body, nullptr);
  }
  out.launched_kernels = std::move(state.launched);
  return out;
}

std::string to_llvm_text(const HostModule& host) {
  std::string text;
  llvm::raw_string_ostream stream(text);
  host.module->print(stream, nullptr);
  return text;
}

}  // namespace primjit::jit
