// The text printer's state and operations, in two files by concern: printer.cc prints functions
// and statements and gives names (the pre-pass over thread variables, declarations of free
// variables and buffers); print_expr.cc prints expressions, literals and attribute values.
// Private to the text printer (ir/text/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "primjit/ir/function.h"
#include "primjit/ir/stmt.h"
#include "primjit/ir/target.h"

namespace primjit::text_internal {

constexpr int kIndentStep = 4;

// Python precedence levels, lowest first.
enum Prec : int {
  kPrecNone = 0,
  kPrecOr,
  kPrecAnd,
  kPrecNot,
  kPrecCmp,
  kPrecAdd,
  kPrecMul,
  kPrecUnary,
  kPrecAtom,
};

/// A Python string literal with `text`'s value.
std::string quote(std::string_view text);
/// The shortest text that reads back as the same double, always with a '.' or an exponent.
std::string float_repr(double value);
/// `T.<dtype>`.
std::string dtype_ctor(DataType t);
/// `T.target("llvm")`, or with an arch or host TVM's config dict
/// `T.target({"arch": "sm_90", "host": "llvm", "kind": "cuda"})` (keys sorted, as TVM prints).
std::string target_text(const Target& target);

/// What the pre-pass found about a thread variable.
struct ThreadInfo {
  int launches = 0;
  std::string tag;
  bool seen = false;
  /// Declared with T.env_thread and launched by reference: launched more than once, used
  /// outside its launches, used as a non-thread_extent attribute node, or its dtype differs
  /// from the extent's.
  bool env = false;
};

class Printer {
 public:
  /// `module` gives the functions `Module.f(...)` may call; null when printing alone.
  Printer(const IRModuleNode* module, bool standalone) : module_(module), standalone_(standalone) {}

  std::string function(const PrimFunc& func, const std::string& name, int indent);
  std::string stmt_alone(const Stmt& stmt);
  std::string expr_alone(const Expr& e) { return expr(e); }

 private:
  enum class BufferForm { kParam, kMatch, kAlloc, kAllocScoped, kDecl, kFree };

  // --- names (printer.cc) ---------------------------------------------------------------------
  std::string fresh_name(const std::string& hint);
  std::string define_var(const Var& var);
  std::string define_buffer(const Buffer& buffer);
  /// The name of a variable; declares it (free variable or env thread) on first sight.
  std::string var_ref(const VarNode* var);
  std::string buffer_ref(const Buffer& buffer);
  void declare(std::string line);
  /// Inserts the pending declarations at `mark` (the start of the current top-level statement).
  void flush_declarations(size_t mark, int indent);
  static std::string annotation(const VarNode* var);
  static std::string free_var_ctor(const VarNode* var);

  // --- buffers (printer.cc) -------------------------------------------------------------------
  std::string shape_tuple(const std::vector<Expr>& dims);
  std::string buffer_args(const Buffer& buffer, const std::string& name, BufferForm form);
  bool all_named(const Expr& e);
  bool is_simple_param(const PrimFunc& func, const Var& param, const Buffer& buffer,
                       const std::unordered_set<const VarNode*>& used);

  // --- statements (printer.cc) ----------------------------------------------------------------
  void line(int indent, const std::string& text);
  void block(const Stmt& body, int indent);
  void stmt(const Stmt& s, int indent, bool last);
  std::string evaluate(const Evaluate* op);
  void if_stmt(const IfThenElse* op, int indent, const char* keyword);
  void attr_stmt(const AttrStmt* op, int indent, bool last, size_t mark);
  static bool plain_serial(const For* op);
  void for_stmt(const For* op, int indent);
  std::string loop_range(const For* op);

  // --- expressions and attribute values (print_expr.cc) ---------------------------------------
  std::string attr_value(const AttrValue& value);
  std::string attr_dict(const Attrs& attrs);
  std::string indices(const std::vector<Expr>& idx);
  std::string index(const Expr& e);
  std::string args(const std::vector<Expr>& list, size_t from = 0);
  static std::string int_literal(DataType t, int64_t value);
  static std::string typed_int(const IntImm* imm);
  std::string expr(const Expr& e, int min_prec = kPrecNone);
  std::string binary(const Expr& a, const char* op, const Expr& b, int prec, int* out_prec,
                     bool comparison = false);
  std::string call(const char* name, std::initializer_list<Expr> operands);
  std::string expr_inner(const Expr& e, int* prec);
  std::string call_expr(const Call* op);

  const IRModuleNode* module_;
  bool standalone_;
  int body_indent_ = -1;
  std::string out_;
  std::vector<std::string> pending_;
  std::unordered_map<const VarNode*, std::string> var_names_;
  std::unordered_map<const BufferNode*, std::string> buffer_names_;
  std::unordered_set<std::string> used_names_;
  std::unordered_map<const VarNode*, ThreadInfo> threads_;
};

}  // namespace primjit::text_internal
