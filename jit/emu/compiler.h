// Compilation of one PrimFunc into the interpreter's node tree (internal to jit/emu).
//
// compile_expr.cc  expressions (arithmetic, casts, loads, vectors)
// builtins.cc      builtin calls (math, bits, barriers, pointers) and the dispatch of calls
// calls.cc         function calls, packed calls and launches, the calling convention ops
// compile_stmt.cc  statements and the function itself
// launch.cc        kernel launches: grid, blocks, threads, barriers
#pragma once

#include <set>
#include <string>
#include <unordered_map>

#include "jit/emu/machine.h"
#include "primjit/abi.h"

namespace primjit::jit::emu {

class Compiler {
 public:
  Compiler(const Program& program, std::string name, PrimFunc func);

  std::unique_ptr<CompiledFunction> compile();

  CExprPtr expr(const Expr& e);
  CStmtPtr stmt(const Stmt& s);
  /// Builtin and function calls (builtins.cc).
  CExprPtr call(const Call* op);
  /// The outermost thread_extent AttrStmt or thread-bound For of a launch (launch.cc).
  CStmtPtr launch(const Stmt& s);
  /// A thread_extent / thread-bound For inside a launch: binds its variable (launch.cc).
  CStmtPtr thread_binding(const Stmt& s, const Var& var, const std::string& tag, const Expr& min,
                          const Expr& extent, const Stmt& body);
  /// A virtual thread: a loop (launch.cc).
  CStmtPtr virtual_thread(const Stmt& s, const Var& var, const Expr& extent, const Stmt& body);

  /// The slot of a scalar variable, or of a vector variable among the vector slots.
  int slot(const VarNode* var);
  /// Records a definition of `var` (for the check that every used variable is defined).
  void define(const VarNode* var) { defined_.insert(var); }
  /// The slot of a variable the code reads.
  int use(const VarNode* var) {
    used_.push_back(var);
    return slot(var);
  }
  const CBuffer* buffer(const Buffer& b);

  const Program& program;
  const std::string name;
  const PrimFunc func;
  int launch_depth = 0;  // > 0 while compiling code that runs per device thread

 private:
  std::unique_ptr<CompiledFunction> out_;
  std::unordered_map<const VarNode*, int> slots_;
  std::unordered_map<const BufferNode*, const CBuffer*> buffers_;
  std::set<const VarNode*> defined_;
  std::vector<const VarNode*> used_;
};

/// A scalar constant node.
CExprPtr make_const_node(DataType dtype, Scalar value);
/// A node that raises UnsupportedError with `message` when evaluated.
CExprPtr make_unsupported_node(DataType dtype, std::string message);
/// Converts a value of `from` into `to` (a cast node, or `e` itself when the types agree).
CExprPtr convert(CExprPtr e, DataType to);

// Call nodes (calls.cc).
CExprPtr make_ret_node(DataType t, CExprPtr value);
CExprPtr make_struct_get_node(DataType t, int field, CExprPtr ptr, CExprPtr index);
CExprPtr make_struct_set_node(DataType t, int field, CExprPtr ptr, CExprPtr index, CExprPtr value);
CExprPtr make_is_null_node(DataType t, CExprPtr ptr);
/// T.check_args (primjit/arg_table.h) with its constant signature, texts and table.
CExprPtr make_check_args_node(DataType t, CExprPtr args, CExprPtr num_args, std::string signature,
                              std::string texts, std::vector<int64_t> table);
/// call_extern of a function neither the module nor libm has: Options::symbol_lookup's.
CExprPtr make_extern_node(DataType t, std::string name, std::vector<CExprPtr> args);
/// popcount / abs.
CExprPtr make_int_extern_node(DataType t, bool popcount, CExprPtr arg);
CExprPtr make_packed_call_node(DataType t, bool cpacked, std::string symbol,
                               std::vector<CExprPtr> args);
CExprPtr make_function_call_node(DataType t, std::string callee, std::vector<CExprPtr> args);

/// Barrier of the block running `ex` (launch.cc); a no-op on the host.
void barrier(Exec& ex, const std::string& scope);

/// Writes `values` (of types `types`) to `out` as PJValues, tagged by type_index_of like
/// compiled code tags them (a pointer is kPJOpaquePtr, also when null or a tensor).
void pack_values(std::span<const Scalar> values, std::span<const DataType> types, PJValue* out);
/// Packs `values` into a session-owned PJValue array; returns its pointer.
Scalar pack_values(Exec& ex, std::span<const Scalar> values, std::span<const DataType> types);

}  // namespace primjit::jit::emu
