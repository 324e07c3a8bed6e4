// CommonSubexprElim's first walk (cse_numbering.cc): every non-leaf expression position of a
// function gets an occurrence record, numbered in pre-order (a subtree is a contiguous range),
// with a value number (cse_value_table.h): equal numbers mean equal values at those positions.
// A load's number includes a memory version, renewed at every possible write to its memory
// region (AliasAnalysis) and, on entry to a loop or launch, for what its body writes. The walk
// also records the scopes (function body, loop bodies, If branches, launches), their statements
// and the existing Binds. The planner and the rewrite (common_subexpr_elim.cc) read these
// records; the rewrite visits expressions in the same order as this walk.
#pragma once

#include <climits>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "passes/alias_analysis.h"
#include "passes/cse_value_table.h"
#include "primjit/ir/function.h"

namespace primjit::passes::cse {

constexpr int kUnknownDepth = INT_MAX / 2;  // a variable the walk has not seen defined

// Immediates and variables: never recorded, never bound.
bool is_leaf(const Expr& e);

// Subexpressions that must keep their form: a Let body sees its variable, and the operand of
// address_of names a memory location rather than loading it.
bool has_opaque_children(const Expr& e);

// ---------------------------------------------------------------------------------------------
// What the first walk records
// ---------------------------------------------------------------------------------------------

enum class OccState : uint8_t { kLive, kDead, kReplaced };

struct Occurrence {
  const ExprNode* expr = nullptr;
  int value = 0;         // value number
  int end = 0;           // one past the last occurrence of the subtree
  int scope = 0;         // innermost scope
  int def_depth = 0;     // deepest scope defining a variable or buffer it uses
  uint64_t stamp = 0;    // newest memory version among its loads (0: none)
  int target = -1;       // when replaced: the binding read instead
  int existing = -1;     // the whole value of an existing Bind: that binding
  bool guarded = false;  // in an arm of if_then_else
  bool cheap = false;    // a cast of a variable or constant
  OccState state = OccState::kLive;
};

enum class ScopeKind : uint8_t { kFunction, kLoop, kBranch, kIsolated };

struct StmtSpan {
  int occ_end = 0;  // one past its last occurrence (they start where the previous one's end)
  uint64_t start_stamp = 0;  // memory versions newer than this were made by the statement
  int then_begin = -1;       // an If: its then branch's first occurrence (after the condition)
  int else_begin = -1;       // an If with an else branch: that branch's first occurrence
};

struct Scope {
  int depth = 0;
  int branch_depth = -1;   // depth of the nearest enclosing If branch (itself included)
  int isolated_root = -1;  // nearest enclosing launch or thread-bound loop (itself included)
  int occ_begin = 0;
  int occ_end = 0;
  std::vector<StmtSpan> stmts;
  std::vector<int> placed;  // new bindings placed before one of the statements
};

struct Binding {
  Var var;         // an existing Bind's variable; for a new one, made when it is emitted
  int stmt = 0;    // new: placed before this statement of its scope
  int rep = -1;    // new: the occurrence whose expression is the value
  int height = 0;  // new: emission order among Bindings placed before the same statement
};

class Numbering {
 public:
  ValueTable values;
  std::vector<Occurrence> occs;
  std::vector<Scope> scopes;
  std::vector<Binding> bindings;

  explicit Numbering(const PrimFunc& func) : alias_(func->body) {}

  void run(const PrimFunc& func);

 private:
  // A variable's value number (its Bind's value, else its own) and defining scope depth.
  struct VarInfo {
    int value = -1;
    int depth = kUnknownDepth;
  };
  struct Summary {
    int value = 0;
    int def_depth = 0;
    uint64_t stamp = 0;
  };

  // --- scopes and definitions ----------------------------------------------------------------
  int open_scope(ScopeKind kind);
  template <typename F>
  void in_new_scope(ScopeKind kind, F&& body);
  int depth() const { return scopes[current_].depth; }
  VarInfo& var_info(const VarNode* v);
  void define_var(const VarNode* v) { var_info(v).depth = depth(); }
  void define_buffer(const Buffer& buffer, bool with_fields);

  // --- memory versions -----------------------------------------------------------------------
  void write(const VarNode* data);
  void write_everything() { any_write_ = global_write_ = ++clock_; }
  uint64_t version_of(const VarNode* data) const;
  void write_loop_carried(const Stmt& body, const Expr* condition = nullptr);

  // --- statements ----------------------------------------------------------------------------
  void walk_scope_body(const Stmt& s);
  void walk_direct(std::initializer_list<const Expr*> exprs) { walk_direct_range(exprs); }
  void walk_direct(const std::vector<const Expr*>& exprs) { walk_direct_range(exprs); }
  template <typename Range>
  void walk_direct_range(const Range& exprs);
  void walk_stmt(const Stmt& s);

  // --- expressions ---------------------------------------------------------------------------
  int leaf_value(const Expr& e);
  Summary walk_expr(const Expr& e, bool guarded);
  template <typename F>
  static void walk_binary(const Expr& e, F& operand, ValueInfo* info);

  int current_ = 0;
  int then_begin_ = -1;  // set by walk_stmt for an If, read by walk_scope_body
  int else_begin_ = -1;
  std::vector<int64_t> key_;
  std::vector<int> operands_;  // value numbers of the operands of the nodes being walked
  bool saw_side_effect_ = false;
  NodeMap<VarInfo> vars_;
  std::unordered_map<const BufferNode*, int> buffer_depth_;
  std::unordered_map<std::string, size_t> strings_;
  AliasAnalysis alias_;
  std::unordered_map<const VarNode*, uint64_t> last_write_;  // by region
  uint64_t global_write_ = 0;                                // the last write to everything
  uint64_t any_write_ = 0;                                   // the last write to anything
  uint64_t clock_ = 0;
};

}  // namespace primjit::passes::cse
