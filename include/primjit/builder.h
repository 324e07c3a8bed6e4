// Header-first C++ builder for PrimFuncs.
//
//   namespace pb = primjit::builder;
//   pb::FunctionBuilder f("vadd");
//   pb::Var n = f.dim("n");                              // size variable shared by the buffers
//   pb::BufferRef A = f.arg_buffer("A", {n}), B = f.arg_buffer("B", {n}),
//                 C = f.arg_buffer("C", {n});
//   f.for_("i", n, [&](pb::Var i) { C[i] = A[i] + B[i]; });
//   primjit::PrimFunc func = f.finish();                 // verified (VerifyWellFormed)
//
// Expressions use C++ operators; on integers `/` and `%` are floor division and modulo, as in
// the IR's text form (`//`, `%`). A C++ literal adopts the dtype of the other operand
// (`x + 1` with an int64 x is int64; `A[i] * 2.0` with a float16 A is float16).
// Statements are emitted into the innermost open scope: loop, branch and launch bodies are
// lambdas. Every misuse (wrong index count, dtype mismatch in a store, a variable used outside
// its scope or taken from another builder, a statement after finish()) throws primjit::Error.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <set>
#include <source_location>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "primjit/builder_expr.h"
#include "primjit/error.h"
#include "primjit/ir.h"
#include "primjit/ir/verify.h"

namespace primjit {
namespace builder {

// =============================================================================================
// FunctionBuilder
// =============================================================================================

class FunctionBuilder;
class BufferRef;

/// One element (or a vector of elements) of a buffer: reads convert to a BufferLoad,
/// assignment emits a BufferStore. Errors of either name where the element was indexed.
class ElementRef {
 public:
  ElementRef(const BufferRef* buffer, std::vector<Expr> indices, Loc loc = Loc::current())
      : buffer_(buffer), indices_(std::move(indices)), loc_(loc) {}

  Expr load() const;
  operator Expr() const { return load(); }  // NOLINT

  ElementRef& operator=(const ExprLike& value);
  ElementRef& operator=(const ElementRef& other) { return *this = ExprLike(other.load()); }
  ElementRef& operator+=(const ExprLike& v) { return update("+=", v, Add::make); }
  ElementRef& operator-=(const ExprLike& v) { return update("-=", v, Sub::make); }
  ElementRef& operator*=(const ExprLike& v) { return update("*=", v, Mul::make); }

 private:
  ElementRef& update(const char* op, const ExprLike& v, Expr (*make)(Expr, Expr));

  const BufferRef* buffer_;
  std::vector<Expr> indices_;
  Loc loc_;
};

/// A buffer made by a FunctionBuilder; index it to load or store.
class BufferRef {
 public:
  BufferRef() = default;

  // The location comes with the (first) index: operator[] cannot take a defaulted one.
  ElementRef operator[](const ExprLike& index) const {
    return ElementRef(this, {index.expr()}, index.loc());
  }
  ElementRef operator[](std::initializer_list<ExprLike> indices) const {
    return ElementRef(this, exprs(indices), indices.size() > 0 ? indices.begin()->loc() : Loc());
  }
  template <typename... I>
  ElementRef operator()(const ExprLike& first, const I&... rest) const {
    return ElementRef(this, {first.expr(), ExprLike(rest).expr()...}, first.loc());
  }
  /// The element of a 0-d buffer.
  ElementRef operator()(Loc loc = Loc::current()) const { return ElementRef(this, {}, loc); }

  const Buffer& buffer() const { return buffer_; }
  operator const Buffer&() const { return buffer_; }  // NOLINT
  /// The data pointer (for T.call_packed, decl_buffer views, extern calls).
  Var data() const { return buffer_->data; }
  DataType dtype() const { return buffer_->dtype; }

 private:
  friend class FunctionBuilder;
  friend class ElementRef;
  BufferRef(FunctionBuilder* owner, Buffer buffer) : owner_(owner), buffer_(std::move(buffer)) {}
  static std::vector<Expr> exprs(std::initializer_list<ExprLike> list) {
    std::vector<Expr> out;
    for (const ExprLike& e : list) out.push_back(e.expr());
    return out;
  }

  FunctionBuilder* owner_ = nullptr;
  Buffer buffer_;
};

class FunctionBuilder {
 public:
  using Loc = std::source_location;
  using Body = std::function<void()>;
  using LoopBody = std::function<void(Var)>;

  explicit FunctionBuilder(std::string name) : name_(std::move(name)) {
    PRIMJIT_USER_CHECK(!name_.empty()) << "a function needs a name";
    frames_.push_back(Frame{});
  }
  FunctionBuilder(const FunctionBuilder&) = delete;
  FunctionBuilder& operator=(const FunctionBuilder&) = delete;

  const std::string& name() const { return name_; }

  // --- signature -----------------------------------------------------------------------------

  /// A symbolic dimension (size variable); the same name gives the same variable.
  Var dim(const std::string& name, DataType dtype = i32, Loc loc = Loc::current()) {
    check_open("dim", loc);
    auto it = dims_.find(name);
    if (it != dims_.end()) {
      PRIMJIT_USER_CHECK(it->second.dtype() == dtype)
          << at(loc) << "dim(\"" << name << "\") was declared as " << it->second.dtype()
          << " and is now requested as " << dtype;
      return it->second;
    }
    Var v = Var::make(name, dtype, /*is_size_var=*/true);
    dims_.emplace(name, v);
    define_in_signature(v);
    return v;
  }

  /// A buffer argument (global memory) with static or symbolic shape.
  BufferRef arg_buffer(const std::string& name, std::initializer_list<ExprLike> shape,
                       DataType dtype = f32, Loc loc = Loc::current()) {
    check_open("arg_buffer", loc);
    check_signature_open(loc);
    std::vector<Expr> extents = BufferRef::exprs(shape);
    for (const Expr& e : extents) check_uses(e, loc);
    Buffer buffer = Buffer::make(name, dtype, extents);
    Var handle = Var::make_handle(name + "_handle");
    params_.push_back(handle);
    buffer_map_.emplace_back(handle, buffer);
    define_in_signature(handle);
    define_in_signature(buffer->data);
    visible_buffers_.insert(buffer.get());
    return BufferRef(this, buffer);
  }

  /// A scalar argument.
  Var arg(const std::string& name, DataType dtype, Loc loc = Loc::current()) {
    check_open("arg", loc);
    check_signature_open(loc);
    Var v = Var::make(name, dtype);
    params_.push_back(v);
    define_in_signature(v);
    return v;
  }

  void attr(const std::string& key, AttrValue value, Loc loc = Loc::current()) {
    check_open("attr", loc);
    attrs_[key] = std::move(value);
  }
  void target(const Target& target, Loc loc = Loc::current()) { attr(attr::kTarget, target, loc); }

  // --- statements ----------------------------------------------------------------------------

  /// A flat Bind: `name` holds `value` for the rest of the current scope.
  Var bind(const std::string& name, const ExprLike& value, Loc loc = Loc::current()) {
    check_open("bind", loc);
    check_uses(value, loc);
    Var v = Var::make(name, value.expr().dtype());
    emit(Bind::make(v, value), loc);
    define(v);
    return v;
  }

  void for_(const std::string& var, const ExprLike& extent, const LoopBody& body,
            Loc loc = Loc::current()) {
    loop(ForKind::kSerial, var, ExprLike(0), extent, body, loc, false);
  }
  void for_(const std::string& var, const ExprLike& begin, const ExprLike& end,
            const LoopBody& body, Loc loc = Loc::current()) {
    loop(ForKind::kSerial, var, begin, end, body, loc, true);
  }
  void parallel(const std::string& var, const ExprLike& extent, const LoopBody& body,
                Loc loc = Loc::current()) {
    loop(ForKind::kParallel, var, ExprLike(0), extent, body, loc, false);
  }
  void vectorized(const std::string& var, const ExprLike& extent, const LoopBody& body,
                  Loc loc = Loc::current()) {
    loop(ForKind::kVectorized, var, ExprLike(0), extent, body, loc, false);
  }
  void unrolled(const std::string& var, const ExprLike& extent, const LoopBody& body,
                Loc loc = Loc::current()) {
    loop(ForKind::kUnrolled, var, ExprLike(0), extent, body, loc, false);
  }

  /// Launches the rest of the current scope over a thread dimension ("blockIdx.x",
  /// "threadIdx.x", ...), like `bx = T.launch_thread("blockIdx.x", n)`.
  Var launch_thread(const std::string& tag, const ExprLike& extent, Loc loc = Loc::current()) {
    check_open("launch_thread", loc);
    Var v = thread_var(tag, extent, loc);
    Frame frame;
    frame.closes_with_parent = true;
    frame.close = [iv = IterVar::make(v, tag), extent = extent.expr()](Stmt body) {
      return AttrStmt::make(iv, attr::kThreadExtent, extent, std::move(body));
    };
    frames_.push_back(std::move(frame));
    define(v);
    return v;
  }
  /// Launches `body` over a thread dimension, like `with T.launch_thread(...) as v:`.
  void launch_thread(const std::string& tag, const ExprLike& extent, const LoopBody& body,
                     Loc loc = Loc::current()) {
    check_open("launch_thread", loc);
    Var v = thread_var(tag, extent, loc);
    IterVar iv = IterVar::make(v, tag);
    Expr ext = extent.expr();
    scope(
        loc,
        [&] {
          define(v);
          body(v);
        },
        [&](Stmt s) { return AttrStmt::make(iv, attr::kThreadExtent, ext, std::move(s)); });
  }

  void if_then(const ExprLike& cond, const Body& then_body, Loc loc = Loc::current()) {
    check_open("if_then", loc);
    check_uses(cond, loc);
    Stmt then_case = capture(loc, then_body);
    emit(IfThenElse::make(cond, then_case), loc);
  }
  void if_then_else(const ExprLike& cond, const Body& then_body, const Body& else_body,
                    Loc loc = Loc::current()) {
    check_open("if_then_else", loc);
    check_uses(cond, loc);
    Stmt then_case = capture(loc, then_body);
    Stmt else_case = capture(loc, else_body);
    emit(IfThenElse::make(cond, then_case, else_case), loc);
  }
  void while_(const ExprLike& cond, const Body& body, Loc loc = Loc::current()) {
    check_open("while_", loc);
    check_uses(cond, loc);
    Stmt b = capture(loc, body);
    emit(While::make(cond, b), loc);
  }

  /// A buffer allocated for the rest of the current scope; scope is "global", "local",
  /// "shared" or "shared.dyn".
  BufferRef alloc_buffer(const std::string& name, std::initializer_list<ExprLike> shape,
                         DataType dtype = f32, const std::string& scope = "global",
                         Loc loc = Loc::current()) {
    check_open("alloc_buffer", loc);
    PRIMJIT_USER_CHECK(scope == "global" || scope == "local" || scope == "shared" ||
                       scope == "shared.dyn")
        << at(loc) << "unknown storage scope \"" << scope
        << "\"; use global, local, shared or shared.dyn";
    std::vector<Expr> extents = BufferRef::exprs(shape);
    for (const Expr& e : extents) check_uses(e, loc);
    Buffer buffer = Buffer::make(name, dtype, extents, scope);
    emit(AllocBuffer::make(buffer), loc);
    define(buffer->data);
    define(buffer);
    return BufferRef(this, buffer);
  }

  /// A typed view over existing storage (`data`), declared for the rest of the scope.
  BufferRef decl_buffer(const std::string& name, std::initializer_list<ExprLike> shape,
                        DataType dtype, const Var& data, Loc loc = Loc::current()) {
    check_open("decl_buffer", loc);
    check_uses(data, loc);
    std::vector<Expr> extents = BufferRef::exprs(shape);
    for (const Expr& e : extents) check_uses(e, loc);
    Buffer buffer = Buffer::make(data, dtype, extents, {}, Expr(), name);
    emit(DeclBuffer::make(buffer), loc);
    define(buffer);
    return BufferRef(this, buffer);
  }

  /// A barrier for the threads of a block over `scope` memory (T.tvm_storage_sync).
  void sync_threads(const std::string& scope = "shared", Loc loc = Loc::current()) {
    evaluate(Call::make(i32, Op::get("tvm_storage_sync"), {StringImm::make(scope)}), loc);
  }
  void evaluate(const ExprLike& value, Loc loc = Loc::current()) {
    check_open("evaluate", loc);
    check_uses(value, loc);
    emit(Evaluate::make(value), loc);
  }
  void assert_(const ExprLike& cond, const std::string& message, Loc loc = Loc::current()) {
    check_open("assert_", loc);
    check_uses(cond, loc);
    emit(AssertStmt::make(cond, StringImm::make(message)), loc);
  }
  /// Returns `value` from the function (`return value`); sets the function's return type.
  void ret(const ExprLike& value, Loc loc = Loc::current()) {
    check_open("ret", loc);
    check_uses(value, loc);
    DataType t = value.expr().dtype();
    PRIMJIT_USER_CHECK(ret_type_.is_void() || ret_type_ == t)
        << at(loc) << "ret(): the function already returns " << ret_type_ << ", not " << t;
    ret_type_ = t;
    emit(Evaluate::make(Call::make(t, Op::get("ret"), {value})), loc);
  }

  /// Closes the function, verifies it and returns it. The builder cannot be used afterwards.
  PrimFunc finish(Loc loc = Loc::current()) {
    check_open("finish", loc);
    close_auto_frames();
    PRIMJIT_USER_CHECK(frames_.size() == 1)
        << at(loc) << "finish() called with " << frames_.size() - 1
        << " scope(s) still open; call finish() after the loop/branch/launch lambdas return";
    Stmt body = SeqStmt::make(std::move(frames_.back().stmts));
    finished_ = true;
    Attrs attrs = attrs_;
    attrs.emplace(attr::kGlobalSymbol, name_);
    PrimFunc func = PrimFunc::make(params_, buffer_map_, body, ret_type_, std::move(attrs));
    verify_well_formed(func, name_);
    return func;
  }

  /// Where a statement was built, for error messages: "file.cc:12: ".
  static std::string at(const Loc& loc) { return builder_detail::at(loc); }

 private:
  friend class ElementRef;

  struct Frame {
    std::vector<Stmt> stmts;
    std::vector<const VarNode*> vars;
    std::vector<const BufferNode*> buffers;
    bool closes_with_parent = false;  // a concise launch_thread: ends with its enclosing scope
    std::function<Stmt(Stmt)> close;  // wraps the frame's statements (for auto-closing frames)
  };

  void check_open(const char* what, const Loc& loc) const {
    PRIMJIT_USER_CHECK(!finished_)
        << at(loc) << what << "(): function '" << name_
        << "' is already finished; statements cannot be added after finish()";
  }
  void check_signature_open(const Loc& loc) const {
    PRIMJIT_USER_CHECK(!body_started_)
        << at(loc) << "arguments of '" << name_ << "' must be declared before its first statement";
  }

  void own(const Var& v) { owned_.insert(v.get()); }
  // Parameters, dimensions and parameter buffers' data are visible everywhere in the function.
  void define_in_signature(const Var& v) {
    own(v);
    ++visible_vars_[v.get()];
  }

  void define(const Var& v) {
    own(v);
    ++visible_vars_[v.get()];
    frames_.back().vars.push_back(v.get());
  }
  void define(const Buffer& b) {
    visible_buffers_.insert(b.get());
    frames_.back().buffers.push_back(b.get());
  }

  // Every variable and buffer in `e` must come from this builder and be visible here.
  void check_uses(const Expr& e, const Loc& loc) const {
    PRIMJIT_USER_CHECK(e.defined()) << at(loc) << "an expression is undefined";
    post_order_visit(e, [&](const Ref<Object>& node) {
      if (const auto* var = node.as<VarNode>()) check_var(var, loc);
      if (const auto* load = node.as<BufferLoad>()) check_buffer(load->buffer.get(), loc);
    });
  }
  void check_var(const VarNode* var, const Loc& loc) const {
    PRIMJIT_USER_CHECK(owned_.count(var) > 0)
        << at(loc) << "variable '" << var->name << "' does not belong to function '" << name_
        << "'; variables cannot be shared between builders";
    PRIMJIT_USER_CHECK(visible_vars_.count(var) > 0)
        << at(loc) << "variable '" << var->name
        << "' is used outside its scope (a loop, launch or bind variable is visible only "
           "inside the body that defines it)";
  }
  void check_buffer(const BufferNode* buffer, const Loc& loc) const {
    PRIMJIT_USER_CHECK(owned_.count(buffer->data.get()) > 0)
        << at(loc) << "buffer '" << buffer->name << "' does not belong to function '" << name_
        << "'; buffers cannot be shared between builders";
    PRIMJIT_USER_CHECK(visible_buffers_.count(buffer) > 0)
        << at(loc) << "buffer '" << buffer->name << "' is used outside its scope";
  }

  void emit(Stmt s, const Loc& loc) {
    body_started_ = true;
    frames_.back().stmts.push_back(std::move(s));
  }

  // Pops the innermost frame, undoing what it defined, and returns its statements.
  Stmt pop_frame() {
    Frame frame = std::move(frames_.back());
    frames_.pop_back();
    for (const VarNode* v : frame.vars) {
      if (--visible_vars_[v] == 0) visible_vars_.erase(v);
    }
    for (const BufferNode* b : frame.buffers) visible_buffers_.erase(b);
    Stmt body = SeqStmt::make(std::move(frame.stmts));
    return frame.close ? frame.close(std::move(body)) : body;
  }

  // Ends concise launches opened in the current scope: they wrap the rest of it.
  void close_auto_frames() {
    while (frames_.size() > 1 && frames_.back().closes_with_parent) {
      Stmt s = pop_frame();
      frames_.back().stmts.push_back(std::move(s));
    }
  }

  // Runs `body` in a new scope and returns its statements.
  Stmt capture(const Loc& loc, const Body& body) {
    size_t depth = frames_.size();
    frames_.push_back(Frame{});
    try {
      body();
    } catch (...) {
      while (frames_.size() > depth) frames_.pop_back();
      throw;
    }
    check_open("a scope", loc);
    close_auto_frames();
    PRIMJIT_ICHECK(frames_.size() == depth + 1) << "unbalanced builder scopes";
    return pop_frame();
  }

  template <typename F, typename W>
  void scope(const Loc& loc, F&& body, W&& wrap) {
    body_started_ = true;
    Stmt inner = capture(loc, body);
    emit(wrap(std::move(inner)), loc);
  }

  Var thread_var(const std::string& tag, const ExprLike& extent, const Loc& loc) {
    check_uses(extent, loc);
    PRIMJIT_USER_CHECK(extent.expr().dtype().is_integer())
        << at(loc) << "launch_thread(\"" << tag << "\"): the extent must be an integer, got "
        << extent.expr().dtype();
    std::string name = tag;
    for (char& ch : name) ch = ch == '.' ? '_' : ch;
    return Var::make(name, extent.expr().dtype());
  }

  void loop(ForKind kind, const std::string& name, const ExprLike& begin, const ExprLike& end,
            const LoopBody& body, const Loc& loc, bool has_begin) {
    check_open("for_", loc);
    Expr min = begin.expr();
    Expr extent = end.expr();
    check_uses(min, loc);
    check_uses(extent, loc);
    // The loop variable takes the extent's dtype; a literal bound adopts the other's dtype.
    DataType t = extent.dtype();
    PRIMJIT_USER_CHECK(t.is_integer() && t.is_scalar() && min.dtype().is_integer())
        << at(loc) << "loop '" << name << "': the bounds must be scalar integers, got "
        << min.dtype() << " and " << t;
    if (has_begin) {
      if (min.as<IntImm>() != nullptr && !extent.as<IntImm>())
        min = IntImm::make(t, as_const_int(min).value());
      if (extent.as<IntImm>() != nullptr && !min.as<IntImm>()) {
        t = min.dtype();
        extent = IntImm::make(t, as_const_int(extent).value());
      }
      PRIMJIT_USER_CHECK(min.dtype() == extent.dtype())
          << at(loc) << "loop '" << name << "': begin is " << min.dtype() << " but end is "
          << extent.dtype();
      extent = (as_const_int(min) && as_const_int(extent))
                   ? IntImm::make(t, *as_const_int(extent) - *as_const_int(min))
                   : Sub::make(extent, min);
    } else {
      min = IntImm::make(t, 0);
    }
    Var v = Var::make(name, t);
    scope(
        loc,
        [&] {
          define(v);
          body(v);
        },
        [&](Stmt s) { return For::make(v, min, extent, kind, std::move(s)); });
  }

  std::string name_;
  std::vector<Frame> frames_;
  std::vector<Var> params_;
  std::vector<std::pair<Var, Buffer>> buffer_map_;
  std::map<std::string, Var> dims_;
  Attrs attrs_;
  DataType ret_type_ = DataType::Void();
  std::set<const VarNode*> owned_;
  std::map<const VarNode*, int> visible_vars_;
  std::set<const BufferNode*> visible_buffers_;
  bool finished_ = false;
  bool body_started_ = false;
};

// --- ElementRef -------------------------------------------------------------------------------

inline Expr ElementRef::load() const {
  using builder_detail::at;
  PRIMJIT_USER_CHECK(buffer_ != nullptr && buffer_->owner_ != nullptr)
      << at(loc_)
      << "this buffer does not belong to any function; make buffers with a FunctionBuilder";
  const Buffer& b = buffer_->buffer_;
  PRIMJIT_USER_CHECK(indices_.size() == b->ndim())
      << at(loc_) << "buffer '" << b->name << "' has " << b->ndim() << " dimension"
      << (b->ndim() == 1 ? "" : "s") << " but is indexed with " << indices_.size()
      << (indices_.size() == 1 ? " index" : " indices");
  return builder_detail::located(loc_, "load", [&] { return BufferLoad::make(b, indices_); });
}

inline ElementRef& ElementRef::update(const char* op, const ExprLike& v, Expr (*make)(Expr, Expr)) {
  Expr value = load();
  Expr updated = builder_detail::located(loc_, op, [&] {
    builder_detail::check_operand(v.expr());
    return make(value, builder_detail::adopt_literal(value.dtype(), v.expr()));
  });
  return *this = ExprLike(updated, loc_);
}

inline ElementRef& ElementRef::operator=(const ExprLike& value) {
  using builder_detail::at;
  PRIMJIT_USER_CHECK(buffer_ != nullptr && buffer_->owner_ != nullptr)
      << at(loc_)
      << "this buffer does not belong to any function; make buffers with a FunctionBuilder";
  FunctionBuilder& f = *buffer_->owner_;
  const Buffer& b = buffer_->buffer_;
  const Loc& loc = loc_;  // where the element was indexed: operator= cannot take a location
  PRIMJIT_USER_CHECK(!f.finished_)
      << at(loc) << "store to '" << b->name << "': function '" << f.name_
      << "' is already finished; statements cannot be added after finish()";
  Expr load = this->load();  // checks the index count
  Expr v = value.expr();
  PRIMJIT_USER_CHECK(v.defined()) << at(loc) << "store to '" << b->name
                                  << "': the value is undefined";
  v = builder_detail::located(loc, "store",
                              [&] { return builder_detail::adopt_literal(load.dtype(), v); });
  PRIMJIT_USER_CHECK(v.dtype() == load.dtype())
      << at(loc) << "store to '" << b->name << "': the value has dtype " << v.dtype()
      << " but the buffer holds " << load.dtype() << " (use cast(" << load.dtype().str()
      << ", value))";
  f.check_buffer(b.get(), loc);
  for (const Expr& index : indices_) f.check_uses(index, loc);
  f.check_uses(v, loc);
  f.emit(BufferStore::make(b, v, indices_), loc);
  return *this;
}

}  // namespace builder
}  // namespace primjit
