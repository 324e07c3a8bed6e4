// The host code generator's translation of one function (private to jit/llvm): TIR
// expressions and statements to LLVM IR through an IRBuilder. codegen_llvm.cc drives it per
// module; its parts are defined by concern in codegen_llvm_{expr,stmt,call}.cc.
#pragma once

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "jit/llvm/codegen_llvm.h"
#include "primjit/ir/functor.h"

namespace primjit::jit {

using llvm::Value;

// State shared by the functions of one module.
struct HostModuleState {
  llvm::LLVMContext& ctx;
  llvm::Module& mod;
  const IRModule& ir;
  std::string suffix;
  HostCodegenOptions options;
  std::map<std::string, llvm::Function*> functions;     // by IR function name
  std::vector<std::string> launched;                    // kernel symbols, in kernel table order
  std::map<std::string, unsigned> kernel_slots;         // kernel symbol -> index in `launched`
  std::map<const PrimFuncNode*, std::string> launches;  // see launched_by
  std::map<std::string, llvm::Constant*> shared_text;   // see shared_string
  std::unordered_map<const StringImm*, llvm::Constant*> shared_nodes;

  /// One private constant per distinct text in the module: the signature that every argument
  /// check of a packed function quotes (one StringImm, a `{str}` value) is emitted once.
  llvm::Constant* shared_string(const std::string& text);
  llvm::Constant* shared_string(const StringImm* text);

  /// The slot of kernel `symbol` in the kernel table; the next free one at its first launch.
  unsigned kernel_slot(const std::string& symbol);
  /// Fills `launches` for every host function of the module (before code generation).
  void find_launches();
  /// A kernel that `func` launches, itself or through the compute scopes, parallel tasks and
  /// packed functions of the module it runs (one of them, for messages); empty when none.
  /// Such a function needs the caller's `self`.
  std::string launched_by(const PrimFunc& func) const;
};

/// Whether `body` holds a loop (a For or a While).
bool contains_loop(const Stmt& body);

/// Marks `f` as glue for the engine (kGlueFunctionAttr) when `body` has no loop.
void mark_glue_if_loopless(llvm::Function* f, const Stmt& body);

class FunctionCodegen : public ExprFunctor<FunctionCodegen, Value*>,
                        public StmtFunctor<FunctionCodegen, void> {
 public:
  FunctionCodegen(HostModuleState& m, llvm::Function* fn, bool returns_error)
      : m_(m), fn_(fn), b_(m.ctx), returns_error_(returns_error) {
    llvm::BasicBlock* entry = llvm::BasicBlock::Create(m_.ctx, "entry", fn_);
    b_.SetInsertPoint(entry);
    // No fast-math flags: a * b + c is two roundings unless the IR says T.fma (contraction is
    // primjit's decision, FuseMultiplyAdd), and NaN, infinities and signed zeros are honoured.
  }

  void bind(const VarNode* var, Value* v) { vars_[var] = v; }
  /// The kernel table (the packed function's `self`), for functions that launch kernels.
  void set_self(Value* self) { self_ = self; }

  // Emits `body`, then returns `fallthrough` (nullptr: void) if control reaches the end.
  void emit_body(const Stmt& body, Value* fallthrough);

  // --- types --------------------------------------------------------------------------------

  llvm::Type* type_of(DataType t);

  // In memory, bool is one byte.
  llvm::Type* memory_type_of(DataType t);

  // --- expressions --------------------------------------------------------------------------

  Value* visit(const IntImm* op);
  Value* visit(const FloatImm* op);
  Value* visit(const StringImm* op) { return m_.shared_string(op); }
  Value* visit(const VarNode* op);

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
  Value* visit(const Select* op);
  Value* visit(const Cast* op) { return cast(op->value.dtype(), op->dtype, visit_expr(op->value)); }
  Value* visit(const Let* op);
  Value* visit(const Ramp* op);
  Value* visit(const Broadcast* op);

  Value* visit(const BufferLoad* op);

  Value* visit(const Call* op);

  // --- statements ---------------------------------------------------------------------------

  void visit(const Bind* op) { bind(op->var.get(), visit_expr(op->value)); }
  void visit(const SeqStmt* op);
  void visit(const Evaluate* op);
  void visit(const DeclBuffer*) {}
  void visit(const AllocBuffer* op);
  void visit(const BufferStore* op);
  void visit(const AssertStmt* op);
  void visit(const IfThenElse* op);
  void visit(const While* op);
  void visit(const For* op);
  void visit(const AttrStmt* op);

 private:
  enum class Arith { kAdd, kSub, kMul, kDiv, kMod, kFloorDiv, kFloorMod };
  enum class Cmp { kEQ, kNE, kLT, kLE, kGT, kGE };

  static bool is_one(const Expr& e) { return as_const_int(e) == 1; }

  llvm::Align element_align(DataType t) { return llvm::Align(std::max(1, t.element_of().bytes())); }

  void branch_to(llvm::BasicBlock* bb);
  // After a return, code that follows is unreachable but still needs a block.
  void start_dead_block();

  Value* from_memory(DataType t, Value* v);
  Value* to_memory(DataType t, Value* v);

  // Row-major flattening for buffers still accessed with several indices. The index counts
  // from the buffer's first element: element_ptr applies elem_offset to the base pointer.
  Expr flat_index(const Buffer& buf, const std::vector<Expr>& indices);
  static Expr cast_like(const Expr& e, const Expr& like);

  // The address of `buf`'s first element: its data pointer advanced by elem_offset.
  Value* base_ptr(const Buffer& buf);
  // The address of element `index` (from flat_index) of `buf`, from base_ptr(buf) or `base`.
  // `index` (of `index_type`: unsigned indices widen with zero extension) into `buf`.
  Value* element_ptr(const Buffer& buf, Value* index, DataType index_type, Value* base = nullptr);

  Value* arith(const Expr& ea, const Expr& eb, Arith kind);

  Value* compare(const Expr& ea, const Expr& eb, Cmp kind);

  Value* min_max(const Expr& ea, const Expr& eb, bool is_min);

  Value* cast(DataType from, DataType to, Value* v);

  Value* intrinsic(llvm::Intrinsic::ID id, std::vector<Value*> args);

  // Math builtins: LLVM intrinsics where they exist, the C library otherwise (scalars only).
  Value* math_call(const Call* op);

  // The op table's C library function: "tanhf" for float32, "tanh" for float64.
  Value* libm_call(const Call* op, const std::vector<Value*>& args);

  Value* if_then_else(const Call* op);

  Value* field_ptr(const Call* op, int* field);

  Value* struct_get(const Call* op);

  Value* struct_set(const Call* op);

  Value* call_extern(const Call* op);

  // A PJValue array on the stack holding `values`.
  Value* pack_values(const std::vector<Expr>& values);

  // Failure: record the message, return -1 (or propagate an error already recorded).
  void raise(const Expr& message);
  void return_error();

  void check_status(Value* status);

  // The kernel table, where `kernel` is launched (here or in a function this one runs); an
  // error naming the function and the kernel when this function has none (a private function).
  Value* self_for(const std::string& kernel);
  // The function's IR name (its LLVM name without the module's symbol suffix).
  std::string ir_name() const;
  // The function the user wrote that this code comes from (a compute scope or parallel task
  // names its caller's), for messages.
  std::string user_function() const { return user_function_.empty() ? ir_name() : user_function_; }

  Value* call_cpacked(const Call* op);

  // T.check_args: the table becomes a private constant array passed to the runtime's check.
  Value* check_args(const Call* op);

  // T.call_packed("kernel", args..., launch values...): the launch ABI of jit/common/host_abi.h.
  Value* launch_kernel(const Call* op);

  Value* call_function(const Call* op);

  // `v` (of type `t`) as an int64, widened as its type reads: unsigned values and bools
  // zero-extended (a uint8 200 is 200, not -56), signed ones sign-extended.
  Value* to_i64(Value* v, DataType t);

  void serial_for(const Var& loop_var, Value* min, Value* extent, const Stmt& body, ForKind kind);

  // The interleave count hint for the loop whose body was just emitted (0: none).
  int interleave_count(Value* extent, const Stmt& body, llvm::BasicBlock* first,
                       llvm::BasicBlock* end);

  llvm::MDNode* loop_metadata(ForKind kind, const Var& loop_var, int interleave = 0,
                              bool no_runtime_unroll = false);

  // The function (of calling convention `conv`) that `op` names first; such functions are
  // emitted where they are called, so the module keeps the order of first use.
  PrimFunc emitted_at_call(const Call* op, CallingConv conv);

  // T.call_compute_scope("scope", captures...): an internal noinline function whose pointer
  // parameters are noalias, called with a status check.
  Value* call_compute_scope(const Call* op);

  // T.parallel_for("task", min, extent, captures...): the captures go into a closure struct on
  // the stack, the task (emitted here, where it is launched) becomes body(begin, end, closure)
  // -> int32, and primjit_rt_parallel_for runs it once per chunk of [min, min + extent). The
  // task loads the captures and calls the always-inlined body(begin, end, captures..., self),
  // whose pointers are noalias where the launching function's are (noalias_captures).
  Value* parallel_for(const Call* op);

  HostModuleState& m_;
  llvm::Function* fn_;
  llvm::IRBuilder<> b_;
  bool returns_error_;
  Value* self_ = nullptr;      // the kernel table; null in functions that launch no kernel
  std::string user_function_;  // see user_function(); empty: this function
  std::unordered_map<const VarNode*, Value*> vars_;
};

}  // namespace primjit::jit
