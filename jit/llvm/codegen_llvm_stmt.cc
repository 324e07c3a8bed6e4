// Host code generation of statements: control flow, stores, allocations, loops with their
// metadata, compute scopes outlined into functions, and the launch of parallel tasks.
#include "jit/llvm/function_codegen.h"

#include <llvm/Analysis/ValueTracking.h>
#include <llvm/IR/MDBuilder.h>

#include <algorithm>
#include <vector>

#include "jit/common/host_abi.h"
#include "jit/llvm/missed_vectorization.h"
#include "primjit/error.h"

namespace primjit::jit {
namespace {

bool is_noalias_param(Value* v) {
  auto* arg = llvm::dyn_cast<llvm::Argument>(v);
  return arg != nullptr && arg->hasNoAliasAttr();
}

// Which captures of a parallel task are noalias in its body: only what the launching function
// already states. A capture qualifies when it is a noalias parameter of the launching function
// (a compute scope's buffer pointer), captured once, and every other pointer capture is another
// such parameter or a stack allocation of the launching function, neither of which can be based
// on it. Any other pointer capture (one computed from a parameter, say) might overlap, and then
// no capture is noalias.
std::vector<bool> noalias_captures(const std::vector<Value*>& captured) {
  std::vector<bool> noalias(captured.size(), false);
  for (Value* v : captured) {
    if (v->getType()->isPointerTy() && !is_noalias_param(v) && !llvm::isa<llvm::AllocaInst>(v)) {
      return noalias;
    }
  }
  for (size_t i = 0; i < captured.size(); ++i) {
    noalias[i] = is_noalias_param(captured[i]) &&
                 std::count(captured.begin(), captured.end(), captured[i]) == 1;
  }
  return noalias;
}

}  // namespace

void FunctionCodegen::visit(const SeqStmt* op) {
  for (const Stmt& s : op->seq) visit_stmt(s);
}

void FunctionCodegen::visit(const Evaluate* op) {
  if (op->value.as<IntImm>() != nullptr) return;
  visit_expr(op->value);
}

void FunctionCodegen::visit(const AllocBuffer* op) {
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
  llvm::AllocaInst* mem = entry.CreateAlloca(memory_type_of(buf->dtype.element_of()),
                                             entry.getInt64(count * buf->dtype.lanes()), buf->name);
  mem->setAlignment(llvm::Align(std::max(16, buf->data_alignment)));
  bind(buf->data.get(), mem);
}

void FunctionCodegen::visit(const BufferStore* op) {
  const Buffer& buf = op->buffer;
  DataType t = op->value.dtype();
  Value* v = to_memory(t, visit_expr(op->value));
  Expr index = flat_index(buf, op->indices);
  if (const auto* ramp = index.as<Ramp>(); ramp != nullptr && is_one(ramp->stride)) {
    b_.CreateAlignedStore(v, element_ptr(buf, visit_expr(ramp->base), ramp->base.dtype()),
                          element_align(buf->dtype));
    return;
  }
  if (index.dtype().is_vector()) {
    Value* idx = visit_expr(index);
    Value* base = base_ptr(buf);
    for (int i = 0; i < t.lanes(); ++i) {
      Value* lane_ptr =
          element_ptr(buf, b_.CreateExtractElement(idx, b_.getInt32(i)), index.dtype(), base);
      b_.CreateAlignedStore(b_.CreateExtractElement(v, b_.getInt32(i)), lane_ptr,
                            element_align(buf->dtype));
    }
    return;
  }
  b_.CreateAlignedStore(v, element_ptr(buf, visit_expr(index), index.dtype()),
                        element_align(buf->dtype));
}

void FunctionCodegen::visit(const AssertStmt* op) {
  Value* ok = visit_expr(op->condition);
  llvm::BasicBlock* fail = llvm::BasicBlock::Create(m_.ctx, "assert_fail", fn_);
  llvm::BasicBlock* cont = llvm::BasicBlock::Create(m_.ctx, "assert_ok", fn_);
  llvm::MDBuilder md(m_.ctx);
  b_.CreateCondBr(ok, cont, fail, md.createBranchWeights(1 << 20, 1));
  b_.SetInsertPoint(fail);
  raise(op->message);
  b_.SetInsertPoint(cont);
}

void FunctionCodegen::visit(const IfThenElse* op) {
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

void FunctionCodegen::visit(const While* op) {
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

void FunctionCodegen::visit(const For* op) {
  PRIMJIT_USER_CHECK(op->for_kind != ForKind::kThreadBinding)
      << "host code generation: thread-bound loop over '" << op->loop_var->name
      << "' in host code; run SplitHostDevice so device code leaves the host function";
  PRIMJIT_USER_CHECK(op->for_kind != ForKind::kParallel)
      << "host code generation: parallel loop over '" << op->loop_var->name
      << "'; run the host lowering (LowerParallelLoops, passes::host_lowering_pipeline()) first";
  ForKind kind = op->for_kind;
  if (kind == ForKind::kUnrolled &&
      !passes::unroll_within_limit(*op, m_.options.max_unroll, "host code generation")) {
    kind = ForKind::kSerial;  // LLVM's full unroll of a long loop takes minutes
  }
  serial_for(op->loop_var, visit_expr(op->min), visit_expr(op->extent), op->body, kind);
}

void FunctionCodegen::visit(const AttrStmt* op) {
  PRIMJIT_USER_CHECK(op->key != attr::kThreadExtent && op->key != attr::kVirtualThread)
      << "host code generation: a thread launch in host code; run SplitHostDevice first";
  PRIMJIT_USER_CHECK(op->key != attr::kComputeScope)
      << "host code generation: a compute_scope region; run the host lowering "
         "(LowerComputeScopes, passes::host_lowering_pipeline()) first";
  visit_stmt(op->body);
}

void FunctionCodegen::serial_for(const Var& loop_var, Value* min, Value* extent, const Stmt& body,
                                 ForKind kind) {
  llvm::BasicBlock* pre = b_.GetInsertBlock();
  llvm::BasicBlock* head = llvm::BasicBlock::Create(m_.ctx, "for_head", fn_);
  llvm::BasicBlock* body_bb = llvm::BasicBlock::Create(m_.ctx, "for_body", fn_);
  llvm::BasicBlock* end = llvm::BasicBlock::Create(m_.ctx, "for_end", fn_);
  Value* stop = b_.CreateAdd(min, extent);
  b_.CreateBr(head);
  b_.SetInsertPoint(head);
  llvm::PHINode* i = b_.CreatePHI(min->getType(), 2, loop_var->name);
  i->addIncoming(min, pre);
  b_.CreateCondBr(loop_var.dtype().is_int() ? b_.CreateICmpSLT(i, stop) : b_.CreateICmpULT(i, stop),
                  body_bb, end);
  b_.SetInsertPoint(body_bb);
  bind(loop_var.get(), i);
  visit_stmt(body);
  if (b_.GetInsertBlock()->getTerminator() == nullptr) {
    // i < stop, so i + 1 does not overflow in the loop variable's own signedness; the other
    // flag would be wrong (a signed loop from -1 to 0 wraps as unsigned values do).
    const bool is_signed = loop_var.dtype().is_int();
    Value* next = b_.CreateAdd(i, llvm::ConstantInt::get(i->getType(), 1), "",
                               /*HasNUW=*/!is_signed, /*HasNSW=*/is_signed);
    i->addIncoming(next, b_.GetInsertBlock());
    llvm::BranchInst* latch = b_.CreateBr(head);
    latch->setMetadata(
        llvm::LLVMContext::MD_loop,
        loop_metadata(kind, loop_var, interleave_count(extent, body, body_bb, end),
                      !m_.options.runtime_unroll && !llvm::isa<llvm::Constant>(extent)));
  }
  b_.SetInsertPoint(end);
}

// LLVM's loop vectorizer steps through a float32 loop 32 elements at a time on 256-bit
// vectors (8 lanes, interleaved 4), so a symbolic trip count known to be a multiple of 16 but
// not of 32 (a bucketed variant's `N_16 * 16`) ends every other run of the loop in 16 scalar
// iterations. An innermost loop with such a trip count gets the interleave count that makes
// the vector step 16 (or a divisor of it): 2 for 32-bit elements, 4 for 64-bit ones (the
// vector loop then leaves no remainder). The lanes assume 256-bit vectors, the x86-64 hosts'
// vector width (AVX2, and AVX-512 hosts, whose LLVM tuning prefers 256 bits); with 128-bit
// vectors the step is 8, which still divides. 0: no hint (constant trip counts, which LLVM
// sees itself; loops with a loop inside; known multiples of 32; elements under 32 bits).
int FunctionCodegen::interleave_count(Value* extent, const Stmt& body, llvm::BasicBlock* first,
                                      llvm::BasicBlock* end) {
  if (llvm::isa<llvm::Constant>(extent)) return 0;
  const unsigned trailing_zeros =
      llvm::computeKnownBits(extent, m_.mod.getDataLayout()).countMinTrailingZeros();
  if (trailing_zeros != 4 || contains_loop(body)) return 0;
  // The widest scalar the body loads or stores (its blocks: `first` and those made after
  // `end`).
  std::vector<const llvm::BasicBlock*> blocks = {first};
  for (auto bb = std::next(end->getIterator()); bb != fn_->end(); ++bb) blocks.push_back(&*bb);
  uint64_t widest = 0;
  for (const llvm::BasicBlock* bb : blocks) {
    for (const llvm::Instruction& inst : *bb) {
      llvm::Type* type = nullptr;
      if (const auto* load = llvm::dyn_cast<llvm::LoadInst>(&inst)) type = load->getType();
      if (const auto* store = llvm::dyn_cast<llvm::StoreInst>(&inst)) {
        type = store->getValueOperand()->getType();
      }
      if (type != nullptr) widest = std::max<uint64_t>(widest, type->getScalarSizeInBits());
    }
  }
  if (widest < 32 || widest > 64) return 0;
  return static_cast<int>(16 / (256 / widest));
}

llvm::MDNode* FunctionCodegen::loop_metadata(ForKind kind, const Var& loop_var, int interleave,
                                             bool no_runtime_unroll) {
  std::vector<llvm::Metadata*> ops = {nullptr};
  if (interleave > 0) {
    ops.push_back(llvm::MDNode::get(
        m_.ctx, {llvm::MDString::get(m_.ctx, "llvm.loop.interleave.count"),
                 llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(interleave)))}));
  }
  auto flag = [&](const char* name) {
    ops.push_back(llvm::MDNode::get(
        m_.ctx, {llvm::MDString::get(m_.ctx, name), llvm::ConstantAsMetadata::get(b_.getTrue())}));
  };
  if (kind == ForKind::kVectorized) {
    flag("llvm.loop.vectorize.enable");
    // Names the loop in the warning when LLVM does not vectorize it (missed_vectorization.h).
    ops.push_back(vectorized_loop_tag(m_.ctx, user_function(), loop_var->name));
  }
  if (kind == ForKind::kUnrolled) {
    ops.push_back(
        llvm::MDNode::get(m_.ctx, {llvm::MDString::get(m_.ctx, "llvm.loop.unroll.full")}));
  }
  if (no_runtime_unroll) {
    ops.push_back(llvm::MDNode::get(
        m_.ctx, {llvm::MDString::get(m_.ctx, "llvm.loop.unroll.runtime.disable")}));
  }
  llvm::MDNode* node = llvm::MDNode::getDistinct(m_.ctx, ops);
  node->replaceOperandWith(0, node);
  return node;
}

PrimFunc FunctionCodegen::emitted_at_call(const Call* op, CallingConv conv) {
  const std::string& builtin = op->op->name;
  const auto* name = op->args.empty() ? nullptr : op->args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(name != nullptr) << "T." << builtin << " needs the callee's name first";
  PrimFunc callee = m_.ir->find(name->value);
  PRIMJIT_USER_CHECK(callee.defined() && callee->calling_conv() == conv)
      << "T." << builtin << "(\"" << name->value << "\"): the module has no function of that name "
      << "with calling_conv " << static_cast<int>(conv);
  PRIMJIT_USER_CHECK(!m_.functions.count(name->value))
      << "T." << builtin << "(\"" << name->value << "\"): the function is called twice; it is "
      << "emitted where it is called, once";
  return callee;
}

Value* FunctionCodegen::call_compute_scope(const Call* op) {
  PrimFunc scope = emitted_at_call(op, CallingConv::kComputeScope);
  const std::string& name = op->args[0].as<StringImm>()->value;
  PRIMJIT_USER_CHECK(op->args.size() == scope->params.size() + 1)
      << "T.call_compute_scope(\"" << name << "\"): the function takes " << scope->params.size()
      << " arguments, the call passes " << op->args.size() - 1;
  std::vector<llvm::Type*> types;
  std::vector<Value*> args;
  for (size_t i = 1; i < op->args.size(); ++i) {
    args.push_back(visit_expr(op->args[i]));
    types.push_back(args.back()->getType());
  }
  // A scope that launches kernels takes the kernel table as a trailing parameter.
  std::string kernel = m_.launched_by(scope);
  if (!kernel.empty()) {
    args.push_back(self_for(kernel));
    types.push_back(b_.getPtrTy());
  }
  llvm::Function* f =
      llvm::Function::Create(llvm::FunctionType::get(b_.getInt32Ty(), types, false),
                             llvm::Function::InternalLinkage, name + m_.suffix, &m_.mod);
  m_.functions[name] = f;
  f->addFnAttr(llvm::Attribute::NoInline);
  mark_glue_if_loopless(f, scope->body);
  FunctionCodegen inner(m_, f, /*returns_error=*/true);
  inner.user_function_ = user_function();
  for (size_t i = 0; i < scope->params.size(); ++i) {
    const Var& param = scope->params[i];
    llvm::Argument* arg = f->getArg(static_cast<unsigned>(i));
    arg->setName(param->name);
    // The buffers of one call do not overlap (as TVM assumes).
    if (param->is_pointer()) arg->addAttr(llvm::Attribute::NoAlias);
    inner.bind(param.get(), arg);
  }
  if (!kernel.empty()) {
    llvm::Argument* self = f->getArg(static_cast<unsigned>(scope->params.size()));
    self->setName("self");
    inner.set_self(self);
  }
  inner.emit_body(scope->body, inner.b_.getInt32(0));
  Value* status = b_.CreateCall(f, args);
  check_status(status);
  return b_.getInt32(0);
}

Value* FunctionCodegen::parallel_for(const Call* op) {
  PrimFunc task = emitted_at_call(op, CallingConv::kParallelTask);
  const auto* name = op->args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(task->params.size() >= 2 && op->args.size() == task->params.size() + 1 &&
                     task->params[0].dtype() == DataType::Int(64) &&
                     task->params[1].dtype() == DataType::Int(64))
      << "T.parallel_for(\"" << name->value
      << "\"): the task takes int64 begin and end, then one parameter per capture; it has "
      << task->params.size() << " parameters and the call passes " << op->args.size() - 3
      << " captures";
  std::vector<llvm::Type*> field_types;
  for (size_t i = 2; i < task->params.size(); ++i) {
    field_types.push_back(type_of(task->params[i].dtype()));
  }
  // A task that launches kernels finds the kernel table in a trailing closure field.
  const size_t num_captures = field_types.size();
  std::string kernel = m_.launched_by(task);
  if (!kernel.empty()) field_types.push_back(b_.getPtrTy());
  llvm::StructType* closure_type = llvm::StructType::get(m_.ctx, field_types);
  llvm::IRBuilder<> entry(&fn_->getEntryBlock(), fn_->getEntryBlock().begin());
  llvm::AllocaInst* closure = entry.CreateAlloca(closure_type);
  std::vector<Value*> captured;
  for (size_t i = 0; i < num_captures; ++i) {
    captured.push_back(visit_expr(op->args[3 + i]));
    b_.CreateStore(captured.back(),
                   b_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(i)));
  }
  if (!kernel.empty()) {
    b_.CreateStore(self_for(kernel),
                   b_.CreateStructGEP(closure_type, closure, static_cast<unsigned>(num_captures)));
  }
  // The task's entry loads the captures from the closure once and calls the body, an
  // always-inlined function of (begin, end, captures..., self) whose buffer pointers keep the
  // noalias facts of the launching function (inlining turns them into scoped alias metadata).
  // Without them, LLVM must check at run time that the loads of a vectorized loop do not
  // overlap its stores, which it cannot do for index arithmetic that may wrap.
  llvm::Function* f = llvm::Function::Create(
      llvm::FunctionType::get(b_.getInt32Ty(), {b_.getInt64Ty(), b_.getInt64Ty(), b_.getPtrTy()},
                              false),
      llvm::Function::InternalLinkage, name->value + m_.suffix, &m_.mod);
  m_.functions[name->value] = f;
  std::vector<llvm::Type*> body_types = {b_.getInt64Ty(), b_.getInt64Ty()};
  body_types.insert(body_types.end(), field_types.begin(), field_types.end());
  llvm::Function* body = llvm::Function::Create(
      llvm::FunctionType::get(b_.getInt32Ty(), body_types, false), llvm::Function::InternalLinkage,
      name->value + "_body" + m_.suffix, &m_.mod);
  body->addFnAttr(llvm::Attribute::AlwaysInline);
  llvm::Argument* env = f->getArg(2);
  f->getArg(0)->setName(task->params[0]->name);
  f->getArg(1)->setName(task->params[1]->name);
  env->setName("closure");
  env->addAttr(llvm::Attribute::NoAlias);
  llvm::IRBuilder<> task_entry(llvm::BasicBlock::Create(m_.ctx, "entry", f));
  std::vector<Value*> body_args = {f->getArg(0), f->getArg(1)};
  for (size_t i = 0; i < field_types.size(); ++i) {
    const std::string field_name = i < num_captures ? task->params[2 + i]->name : "self";
    body_args.push_back(task_entry.CreateLoad(
        field_types[i], task_entry.CreateStructGEP(closure_type, env, static_cast<unsigned>(i)),
        field_name));
  }
  task_entry.CreateRet(task_entry.CreateCall(body, body_args));

  FunctionCodegen inner(m_, body, /*returns_error=*/true);
  inner.user_function_ = user_function();
  const std::vector<bool> noalias = noalias_captures(captured);
  for (size_t i = 0; i < task->params.size(); ++i) {
    llvm::Argument* arg = body->getArg(static_cast<unsigned>(i));
    arg->setName(task->params[i]->name);
    if (i >= 2 && noalias[i - 2]) arg->addAttr(llvm::Attribute::NoAlias);
    inner.bind(task->params[i].get(), arg);
  }
  if (!kernel.empty()) {
    llvm::Argument* self = body->getArg(static_cast<unsigned>(task->params.size()));
    self->setName("self");
    inner.set_self(self);
  }
  inner.emit_body(task->body, inner.b_.getInt32(0));

  // The range in int64, widened as its type reads (a uint8 extent of 200 is 200, not -56).
  Value* min = to_i64(visit_expr(op->args[1]), op->args[1].dtype());
  Value* extent = to_i64(visit_expr(op->args[2]), op->args[2].dtype());
  llvm::FunctionCallee run =
      m_.mod.getOrInsertFunction(kParallelForSymbol, b_.getInt32Ty(), b_.getInt64Ty(),
                                 b_.getInt64Ty(), b_.getPtrTy(), b_.getPtrTy());
  Value* status = b_.CreateCall(run, {min, b_.CreateAdd(min, extent), f, closure});
  check_status(status);
  return b_.getInt32(0);
}

}  // namespace primjit::jit
