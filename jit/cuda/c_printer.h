// The C-family printer: one lowered PrimFunc as a C/C++-like function, for any target whose
// source is C with extensions (CUDA C today; plain C++ for checking kernels on the CPU later).
//
// CPrinter prints what C itself can say: literals, operators with minimal parentheses,
// docs/semantics.md's integer division, shifts and float-to-int conversions through the
// semantics helpers (semantics_cuda.h), casts, selects and lets, buffer loads and stores
// (vector accesses through the target's vector types), loops, branches, binds and the function
// signature. Everything a target spells its own way is a hook a subclass overrides: the names of
// the types beyond C's (half, ...), its vector types, NaN and infinity, conversions to and from
// the narrow floating types, math functions, builtin calls (the target's intrinsics table),
// thread indices, allocations, the function head and the trap of a failed assert.
//
// A printer prints one function; the module around it (includes, helpers, prototypes) is the
// target's code generator's business (codegen_cuda.cc). Printing is deterministic.
//
// The interface is free of CUDA headers.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jit/cuda/semantics_cuda.h"
#include "jit/cuda/source_printer.h"
#include "primjit/arith.h"
#include "primjit/ir/function.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/op.h"

namespace primjit::jit {

/// C++ operator precedence, tightest first. A printed expression carries the precedence of its
/// outermost operator so parentheses appear only where they are needed.
enum Prec : int {
  kPrimary = 1,  // names, literals, calls, a[i], p->x
  kUnary = 2,    // casts, !, ~, unary -, *p, &x
  kMul = 3,
  kAdd = 4,
  kShift = 5,
  kRel = 6,
  kEq = 7,
  kBitAnd = 8,
  kBitXor = 9,
  kBitOr = 10,
  kLogAnd = 11,
  kLogOr = 12,
  kCond = 13,
  kAny = 14,
};

/// A printed expression and the precedence of its outermost operator.
struct Code {
  std::string text;
  int prec = kPrimary;
};

/// `c` as an operand that may be at most as loose as `max_prec`.
std::string wrap(const Code& c, int max_prec);

/// `s` as a C string literal (quotes, escapes).
std::string c_string_literal(const std::string& s);

/// The member that names `lane` (0..3) of a C vector struct: x, y, z, w.
const char* lane_member(int lane);

class CPrinter : public ExprFunctor<CPrinter, Code, int>, public StmtFunctor<CPrinter, void> {
 public:
  virtual ~CPrinter() = default;

  /// Prints the whole function; returns its source text.
  std::string emit(const PrimFunc& f);
  /// The signature, without a trailing `;` (after emit()).
  const std::string& prototype() const { return prototype_; }
  /// dtype of each parameter in order, DataType::Handle() for pointers (after emit()).
  const std::vector<DataType>& param_types() const { return param_types_; }

  // --- expressions (c_printer.cc); `lane` >= 0 picks one lane of a vector value -----------
  Code visit(const IntImm* op, int);
  Code visit(const FloatImm* op, int);
  Code visit(const StringImm* op, int);
  Code visit(const VarNode* op, int lane);
  Code visit(const Add* op, int lane);
  Code visit(const Sub* op, int lane);
  Code visit(const Mul* op, int lane);
  Code visit(const Div* op, int lane);
  Code visit(const Mod* op, int lane);
  Code visit(const FloorDiv* op, int lane);
  Code visit(const FloorMod* op, int lane);
  Code visit(const Min* op, int lane);
  Code visit(const Max* op, int lane);
  Code visit(const EQ* op, int lane);
  Code visit(const NE* op, int lane);
  Code visit(const LT* op, int lane);
  Code visit(const LE* op, int lane);
  Code visit(const GT* op, int lane);
  Code visit(const GE* op, int lane);
  Code visit(const And* op, int lane);
  Code visit(const Or* op, int lane);
  Code visit(const Not* op, int lane);
  Code visit(const Select* op, int lane);
  Code visit(const Cast* op, int lane);
  Code visit(const Let* op, int lane);
  Code visit(const BufferLoad* op, int lane);
  Code visit(const Ramp* op, int lane);
  Code visit(const Broadcast* op, int lane);
  Code visit(const Call* op, int lane);

  // --- statements (c_printer_stmt.cc) -----------------------------------------------------
  void visit(const Bind* op);
  void visit(const AttrStmt* op);
  void visit(const AssertStmt* op);
  void visit(const BufferStore* op);
  void visit(const AllocBuffer* op);
  void visit(const DeclBuffer* op);
  void visit(const SeqStmt* op);
  void visit(const For* op);
  void visit(const While* op);
  void visit(const IfThenElse* op);
  void visit(const Evaluate* op);

 protected:
  /// `component` starts every error message ("CUDA code generation"); `reserved` are names no
  /// local may take; T.unroll loops up to `max_unroll` iterations get the unroll pragma.
  CPrinter(std::string component, std::string symbol, bool is_kernel,
           const std::set<std::string>& reserved, int64_t max_unroll);

  // --- hooks: what the target spells its own way ------------------------------------------

  /// The name of a scalar type C does not have (half, ...), or nullopt when unsupported.
  virtual std::optional<std::string> extension_type(DataType t) = 0;
  /// The target's vector type of `t` when it has one naturally aligned to its size.
  virtual std::optional<std::string> vector_type(DataType t) { return std::nullopt; }
  /// The function building a `type` vector from its lanes.
  virtual std::string make_vector_fn(const std::string& type) { return "make_" + type; }
  /// A NaN or infinite literal.
  virtual Code special_float(double v, bool single) = 0;
  /// A narrow floating value (16-bit, float8) as float; float and double are returned as is.
  virtual Code to_compute_float(DataType t, const Code& v) = 0;
  /// A float (or double) value rounded to `t` when t is narrower than float.
  virtual Code from_float(DataType t, const Code& v) = 0;
  /// Min or Max of two values of type t.
  virtual Code min_max(DataType t, const Expr& ea, const Expr& eb, bool is_min, int lane);
  /// The math op `fn` (its C library function) on float, or double when `dbl`.
  virtual Code float_function(bool dbl, const Op& fn, const std::vector<Code>& args);
  /// A call of a builtin op (the target's intrinsics table).
  virtual Code lower_call(const Call* op, int lane) = 0;
  /// A call of another function of the module.
  virtual Code call_function(const Call* op, int lane) = 0;
  /// The output will need the definitions of `helper`.
  virtual void require(SemanticsHelper helper) = 0;
  /// A thread_extent attribute and its body.
  virtual void print_thread_extent(const AttrStmt* op) = 0;
  /// The declaration of an allocated buffer of C element type `type` (`elem`) aligned to `align`
  /// bytes; the typed view of the buffer follows it.
  virtual void print_allocation(const AllocBuffer* op, DataType elem, const std::string& type,
                                int align) = 0;
  /// Everything of the prototype before the symbol (linkage, qualifiers, return type); called
  /// after the parameters are printed.
  virtual std::string function_head(const PrimFunc& f) = 0;
  /// Checks after the body is printed.
  virtual void finish_function() {}
  /// The statement run when an assertion fails.
  virtual const char* trap_statement() const = 0;
  /// The line before a loop to unroll, or nullptr.
  virtual const char* unroll_pragma() const { return nullptr; }

  // --- generic builtin lowerings a target's intrinsics table may register -----------------
  Code lower_if_then_else(const Call* op, int lane);
  Code lower_likely(const Call* op, int lane);
  Code lower_shift_left(const Call* op, int lane);
  Code lower_shift_right(const Call* op, int lane);
  Code lower_bitwise_and(const Call* op, int lane);
  Code lower_bitwise_or(const Call* op, int lane);
  Code lower_bitwise_xor(const Call* op, int lane);
  Code lower_bitwise_not(const Call* op, int lane);
  Code lower_isnullptr(const Call* op, int lane);
  Code lower_address_of(const Call* op, int lane);
  Code lower_call_extern(const Call* op, int lane);

  // --- building blocks --------------------------------------------------------------------
  std::string where() const;
  /// An expression as an operand: vector values need a lane, scalars ignore it.
  Code sub(const Expr& e, int lane);
  void check_scalar(DataType t, const std::string& what, int lane);
  void check_no_effects(const Expr& e, const char* what);
  const std::string& name_of(const VarNode* v);

  std::string scalar_type(DataType t);
  /// The C type of a buffer element or a vector value with a vector type of the target.
  std::string element_type(DataType t);
  std::string pointer_type(const VarNode* v);
  std::string return_type(DataType t) { return t.is_void() ? "void" : scalar_type(t); }
  /// Declared C type of a scalar variable (pointers keep their element type).
  std::string value_type(const VarNode* v);
  /// `value` as the initializer of `v`: pointers are cast to v's pointer type.
  std::string coerce_to_var(const VarNode* v, const Expr& value);

  Code int_literal(DataType t, int64_t value);
  static Code infix(const Code& a, const char* op, int prec, const Code& b);
  static Code call(const std::string& fn, const std::vector<Code>& args);
  static Code conditional(const Code& c, const Code& t, const Code& f);
  static Code immediately_invoked(const std::string& type, const std::string& body);
  Code narrow_result(DataType t, const Code& c);
  template <typename Node>
  Code binary(const Node* op, const char* sym, int prec, int lane);
  Code float_binary(DataType t, const Expr& ea, const Expr& eb, const char* sym, int prec, int lane,
                    bool keep_type);
  Code compare(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane);
  Code logical(const Expr& ea, const Expr& eb, const char* sym, int prec, int lane);
  template <typename Node>
  Code int_division(const Node* op, const char* sym, const char* helper, bool floor, int lane);
  Code shift(const Call* op, int lane, bool left);
  Code float_to_int(DataType to, DataType from, const Code& v);
  Code cast(DataType to, DataType from, const Code& v);
  Code float_of(DataType from, const Code& v);
  /// The math op `fn` applied in float (or double for float64), rounded back to t.
  Code float_math(DataType t, const Op& fn, std::vector<Code> args);

  // --- buffers and pointers (c_printer_stmt.cc) -------------------------------------------
  Expr flat_index(const Buffer& buf, const std::vector<Expr>& indices);
  void collect_view_offsets(const Stmt& body);
  void declare_view(const Buffer& buf);
  Code pointer_of(const Buffer& buf);
  int64_t buffer_alignment(const Buffer& buf);
  std::optional<Code> vector_access(const Buffer& buf, const Expr& index, DataType t,
                                    bool is_store);
  Code vector_value(const Expr& e);
  void reserve_extern_call_names(const Stmt& body);

  const std::string component_;
  const std::string symbol_;
  const bool is_kernel_;
  const int64_t max_unroll_;
  /// Shared views get a pointer to where their accesses start (declare_view).
  bool fold_view_offsets_ = true;
  SourceWriter w_;
  NameTable names_;
  arith::Analyzer an_;
  std::string prototype_;
  std::vector<DataType> param_types_;
  std::unordered_map<const VarNode*, std::string> var_names_;
  std::unordered_map<const BufferNode*, std::string> views_;
  /// Smallest constant index term of each DeclBuffer view's accesses (collect_view_offsets).
  std::unordered_map<const BufferNode*, int64_t> view_offsets_;
  /// Elements a view's pointer starts after its data; its accesses' indices are that much less.
  std::unordered_map<const BufferNode*, int64_t> view_fold_;
  /// Known alignment in bytes of pointers the function allocates.
  std::unordered_map<const VarNode*, int64_t> pointer_align_;
  /// Pointer parameters: their buffers' declared alignment holds.
  std::unordered_set<const VarNode*> trusted_pointers_;
};

}  // namespace primjit::jit
