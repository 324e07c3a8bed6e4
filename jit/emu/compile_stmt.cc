// Statements, buffers and the compilation of a whole function.
#include <algorithm>
#include <sstream>

#include "jit/emu/compiler.h"
#include "primjit/abi.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {
namespace {

class BindNode : public CStmt {
 public:
  BindNode(Stmt s, int slot, bool vector, CExprPtr value)
      : CStmt(std::move(s)), slot_(slot), vector_(vector), value_(std::move(value)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    if (vector_) {
      value_->eval_lanes(ex, &ex.frame->vslots[static_cast<size_t>(slot_)]);
    } else {
      ex.slot(slot_) = value_->eval(ex);
    }
  }

 private:
  int slot_;
  bool vector_;
  CExprPtr value_;
};

class SeqNode : public CStmt {
 public:
  SeqNode(Stmt s, std::vector<CStmtPtr> seq) : CStmt(std::move(s)), seq_(std::move(seq)) {}
  void exec(Exec& ex) const override {
    for (const CStmtPtr& s : seq_) {
      s->exec(ex);
      if (ex.frame->returned) return;
    }
  }

 private:
  std::vector<CStmtPtr> seq_;
};

class ForNode : public CStmt {
 public:
  ForNode(Stmt s, int slot, DataType var, CExprPtr min, CExprPtr extent, CStmtPtr body)
      : CStmt(std::move(s)),
        slot_(slot),
        var_(var),
        min_(std::move(min)),
        extent_(std::move(extent)),
        body_(std::move(body)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    const int64_t min = min_->eval(ex).i;
    const int64_t extent = extent_->eval(ex).i;
    if (extent > 0) ex.tick(extent);  // a loop too long for the budget fails before it starts
    for (int64_t i = 0; i < extent; ++i) {
      ex.slot(slot_) = from_integer(var_, min + i, false);
      body_->exec(ex);
      if (ex.frame->returned) return;
    }
  }

 private:
  int slot_;
  TypeInfo var_;
  CExprPtr min_, extent_;
  CStmtPtr body_;
};

class WhileNode : public CStmt {
 public:
  WhileNode(Stmt s, CExprPtr cond, CStmtPtr body)
      : CStmt(std::move(s)), cond_(std::move(cond)), body_(std::move(body)) {}
  void exec(Exec& ex) const override {
    while (true) {
      ex.stmt = this;
      if (cond_->eval(ex).i == 0) return;
      ex.tick(1);
      body_->exec(ex);
      if (ex.frame->returned) return;
    }
  }

 private:
  CExprPtr cond_;
  CStmtPtr body_;
};

class IfNode : public CStmt {
 public:
  IfNode(Stmt s, CExprPtr cond, CStmtPtr then_case, CStmtPtr else_case)
      : CStmt(std::move(s)),
        cond_(std::move(cond)),
        then_(std::move(then_case)),
        else_(std::move(else_case)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    if (cond_->eval(ex).i != 0) {
      then_->exec(ex);
    } else if (else_) {
      else_->exec(ex);
    }
  }

 private:
  CExprPtr cond_;
  CStmtPtr then_, else_;
};

class EvaluateNode : public CStmt {
 public:
  EvaluateNode(Stmt s, CExprPtr value) : CStmt(std::move(s)), value_(std::move(value)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    if (value_->dtype.lanes() > 1) {
      Lanes discard;
      value_->eval_lanes(ex, &discard);
    } else {
      value_->eval(ex);
    }
  }

 private:
  CExprPtr value_;
};

class NopNode : public CStmt {
 public:
  explicit NopNode(Stmt s) : CStmt(std::move(s)) {}
  void exec(Exec&) const override {}
};

class AssertNode : public CStmt {
 public:
  AssertNode(Stmt s, CExprPtr cond, std::string message, bool is_format,
             std::vector<CExprPtr> values)
      : CStmt(std::move(s)),
        cond_(std::move(cond)),
        message_(std::move(message)),
        is_format_(is_format),
        values_(std::move(values)) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    if (cond_->eval(ex).i != 0) return;
    if (!is_format_) throw AssertionError(message_);
    std::vector<Scalar> values;
    std::vector<DataType> types;
    for (const CExprPtr& v : values_) {
      values.push_back(v->eval(ex));
      types.push_back(v->dtype);
    }
    std::vector<PJValue> packed(values.size());
    pack_values(values, types, packed.data());
    throw AssertionError(format_message(message_, packed.data(), static_cast<int>(packed.size())));
  }

 private:
  CExprPtr cond_;
  std::string message_;
  bool is_format_;
  std::vector<CExprPtr> values_;
};

class StoreNode : public CStmt {
 public:
  StoreNode(Stmt s, const CBuffer* buffer, CExprPtr value, std::vector<CExprPtr> indices)
      : CStmt(std::move(s)),
        buffer_(buffer),
        value_(std::move(value)),
        indices_(std::move(indices)) {
    scalar_ = value_->dtype.lanes() == 1;
  }
  void exec(Exec& ex) const override {
    ex.stmt = this;
    int64_t idx[kMaxBufferDims];
    if (scalar_) {
      Scalar v = value_->eval(ex);
      for (size_t d = 0; d < indices_.size(); ++d) idx[d] = indices_[d]->eval(ex).i;
      const int64_t flat = buffer_->flat_index(ex, idx, "store");
      encode(buffer_->elem, v, buffer_->address(ex, flat, true, "store"));
      return;
    }
    Lanes v;
    value_->eval_lanes(ex, &v);
    std::vector<Lanes> index_lanes(indices_.size());
    size_t n = 1;
    for (size_t d = 0; d < indices_.size(); ++d) {
      indices_[d]->eval_lanes(ex, &index_lanes[d]);
      n = std::max(n, index_lanes[d].size());
    }
    const int bytes = buffer_->elem.bits / 8;
    for (size_t l = 0; l < n; ++l) {
      for (size_t d = 0; d < indices_.size(); ++d) {
        idx[d] = (index_lanes[d].size() == 1 ? index_lanes[d][0] : index_lanes[d][l]).i;
      }
      const int64_t flat = buffer_->flat_index(ex, idx, "store");
      uint8_t* p = buffer_->address(ex, flat, true, "store");
      for (int k = 0; k < buffer_->elem_lanes; ++k) {
        encode(buffer_->elem,
               v[l * static_cast<size_t>(buffer_->elem_lanes) + static_cast<size_t>(k)],
               p + k * bytes);
      }
    }
  }

 private:
  const CBuffer* buffer_;
  CExprPtr value_;
  std::vector<CExprPtr> indices_;
  bool scalar_;
};

class AllocNode : public CStmt {
 public:
  AllocNode(Stmt s, const CBuffer* buffer) : CStmt(std::move(s)), buffer_(buffer) {}
  void exec(Exec& ex) const override {
    ex.stmt = this;
    const Buffer& b = buffer_->buffer;
    int64_t count = 1;
    bool overflow = false;
    if (buffer_->strides.empty()) {
      for (const CExprPtr& e : buffer_->shape)
        overflow |= __builtin_mul_overflow(count, e->eval(ex).i, &count);
    } else {
      for (size_t d = 0; d < buffer_->shape.size(); ++d) {
        const int64_t extent = buffer_->shape[d]->eval(ex).i;
        int64_t span = 0;
        overflow |= __builtin_mul_overflow(extent - 1, buffer_->strides[d]->eval(ex).i, &span) ||
                    __builtin_add_overflow(count, span, &count);
        if (extent == 0) count = 0;
      }
    }
    PRIMJIT_USER_CHECK(count >= 0 || overflow)
        << "allocation of buffer '" << b->name << "' has a negative size (" << count << " elements)"
        << ex.where();
    int64_t bytes = 0;
    overflow |= __builtin_mul_overflow(count, buffer_->elem_bytes, &bytes);
    PRIMJIT_USER_CHECK(!overflow) << "allocation of buffer '" << b->name
                                  << "' needs more bytes than an int64 can count" << ex.where();
    const std::string& scope = b->scope();
    const bool shared = scope.rfind("shared", 0) == 0;
    Allocation* alloc = nullptr;
    if (ex.block != nullptr && shared) {
      alloc = ex.block->shared.find(this);  // one per block: the first thread allocates
      int64_t size = bytes;
      const int64_t dyn = ex.block->grid.dyn_shmem_bytes;
      if (scope == "shared.dyn" && dyn >= 0) {
        PRIMJIT_USER_CHECK(!ex.checked() || bytes <= dyn)
            << "dynamic shared memory: buffer '" << b->name << "' needs " << bytes
            << " bytes, but the kernel was launched with " << dyn << " bytes" << ex.where();
        size = std::max(bytes, dyn);
      }
      if (alloc == nullptr) {
        Block& block = *ex.block;
        (scope == "shared" ? block.static_shared_bytes : block.dynamic_shared_bytes) += size;
        const std::string why =
            shared_memory_error(ex.session.program.options.launch_limits, block.static_shared_bytes,
                                std::max(block.dynamic_shared_bytes, block.grid.dyn_shmem_bytes));
        PRIMJIT_USER_CHECK(why.empty())
            << "launching kernel '" << ex.frame->func->name << "': " << why << ex.where();
        alloc = ex.block->shared.insert(
            this, Allocation::make_owned(b->name, scope, size, b->data_alignment, ex.checked(),
                                         ex.checked()));
      } else {
        PRIMJIT_USER_CHECK(alloc->size == size)
            << "threads of block " << ex.block->coords() << " disagree about the size of shared "
            << "buffer '" << b->name << "' (" << alloc->size << " and " << size << " bytes)"
            << ex.where();
      }
    } else {
      alloc = ex.allocs->find(this);
      if (alloc != nullptr && alloc->size == bytes) {
        alloc->reset_tracking();  // a new allocation in the same storage
      } else {
        alloc = ex.allocs->insert(
            this,
            Allocation::make_owned(b->name, scope, bytes, b->data_alignment, ex.checked(), false));
        if (ex.block == nullptr) ex.session.registry.add(alloc);
      }
    }
    ex.slot(buffer_->data_slot) =
        Scalar::of_pointer(reinterpret_cast<uint64_t>(alloc->base), alloc);
  }

 private:
  const CBuffer* buffer_;
};

class StmtCompiler : public StmtFunctor<StmtCompiler, CStmtPtr> {
 public:
  explicit StmtCompiler(Compiler& c) : c_(c) {}

  CStmtPtr visit(const Bind* op) {
    c_.define(op->var.get());
    CExprPtr value = c_.expr(op->value);
    return std::make_unique<BindNode>(Stmt(op), c_.slot(op->var.get()), op->var.dtype().lanes() > 1,
                                      std::move(value));
  }
  CStmtPtr visit(const AttrStmt* op) {
    const IterVarNode* iv = op->iter_var();
    const bool vthread =
        op->key == attr::kVirtualThread ||
        (iv != nullptr && (iv->thread_tag == "vthread" || iv->thread_tag == "cthread"));
    if (iv != nullptr && vthread) {
      return c_.virtual_thread(Stmt(op), iv->var, op->value, op->body);
    }
    if (op->key == attr::kThreadExtent && iv != nullptr) {
      if (c_.launch_depth == 0) return c_.launch(Stmt(op));
      return c_.thread_binding(Stmt(op), iv->var, iv->thread_tag, Expr(), op->value, op->body);
    }
    // Other attributes (target, device_scope, compute_scope, storage_alignment, pragmas, ...)
    // only annotate their body.
    return c_.stmt(op->body);
  }
  CStmtPtr visit(const AssertStmt* op) {
    CExprPtr cond = c_.expr(op->condition);
    if (const auto* s = op->message.as<StringImm>()) {
      return std::make_unique<AssertNode>(Stmt(op), std::move(cond), s->value, false,
                                          std::vector<CExprPtr>{});
    }
    const auto* call = op->message.as<Call>();
    PRIMJIT_USER_CHECK(call != nullptr && call->is_op("format") && !call->args.empty() &&
                       call->args[0].as<StringImm>() != nullptr)
        << "assert message must be a string or T.format(...), in `" << stmt_text(Stmt(op)) << "`";
    std::vector<CExprPtr> values;
    for (size_t i = 1; i < call->args.size(); ++i) values.push_back(c_.expr(call->args[i]));
    return std::make_unique<AssertNode>(
        Stmt(op), std::move(cond), call->args[0].as<StringImm>()->value, true, std::move(values));
  }
  CStmtPtr visit(const BufferStore* op) {
    CExprPtr value = c_.expr(op->value);
    std::vector<CExprPtr> indices;
    for (const Expr& e : op->indices) indices.push_back(c_.expr(e));
    return std::make_unique<StoreNode>(Stmt(op), c_.buffer(op->buffer), std::move(value),
                                       std::move(indices));
  }
  CStmtPtr visit(const AllocBuffer* op) {
    c_.define(op->buffer->data.get());
    return std::make_unique<AllocNode>(Stmt(op), c_.buffer(op->buffer));
  }
  CStmtPtr visit(const DeclBuffer* op) {
    c_.buffer(op->buffer);
    return std::make_unique<NopNode>(Stmt(op));
  }
  CStmtPtr visit(const SeqStmt* op) {
    std::vector<CStmtPtr> seq;
    for (const Stmt& s : op->seq) seq.push_back(c_.stmt(s));
    return std::make_unique<SeqNode>(Stmt(op), std::move(seq));
  }
  CStmtPtr visit(const For* op) {
    if (op->for_kind == ForKind::kThreadBinding) {
      if (c_.launch_depth == 0) return c_.launch(Stmt(op));
      return c_.thread_binding(Stmt(op), op->loop_var, op->thread_tag, op->min, op->extent,
                               op->body);
    }
    c_.define(op->loop_var.get());
    CExprPtr min = c_.expr(op->min);
    CExprPtr extent = c_.expr(op->extent);
    // Parallel, vectorized and unrolled loops run their iterations in order.
    return std::make_unique<ForNode>(Stmt(op), c_.slot(op->loop_var.get()), op->loop_var.dtype(),
                                     std::move(min), std::move(extent), c_.stmt(op->body));
  }
  CStmtPtr visit(const While* op) {
    return std::make_unique<WhileNode>(Stmt(op), c_.expr(op->condition), c_.stmt(op->body));
  }
  CStmtPtr visit(const IfThenElse* op) {
    CExprPtr cond = c_.expr(op->condition);
    CStmtPtr then_case = c_.stmt(op->then_case);
    CStmtPtr else_case = op->else_case.defined() ? c_.stmt(op->else_case) : nullptr;
    return std::make_unique<IfNode>(Stmt(op), std::move(cond), std::move(then_case),
                                    std::move(else_case));
  }
  CStmtPtr visit(const Evaluate* op) {
    return std::make_unique<EvaluateNode>(Stmt(op), c_.expr(op->value));
  }

 private:
  Compiler& c_;
};

}  // namespace

std::string stmt_text(const Stmt& stmt) {
  std::string text = print(stmt);
  size_t start = text.find_first_not_of(" \n");
  if (start == std::string::npos) return text;
  size_t end = text.find('\n', start);
  std::string line = text.substr(start, end == std::string::npos ? std::string::npos : end - start);
  if (end != std::string::npos && text.find_first_not_of(" \n", end) != std::string::npos &&
      line.back() == ':') {
    line += " ...";
  }
  return line;
}

Compiler::Compiler(const Program& program, std::string name, PrimFunc func)
    : program(program),
      name(std::move(name)),
      func(std::move(func)),
      out_(std::make_unique<CompiledFunction>()) {}

int Compiler::slot(const VarNode* var) {
  auto it = slots_.find(var);
  if (it != slots_.end()) return it->second;
  int s = var->dtype.lanes() > 1 ? out_->num_vslots++ : out_->num_slots++;
  slots_.emplace(var, s);
  if (var->dtype.lanes() == 1) out_->slots.emplace(var, s);
  return s;
}

const CBuffer* Compiler::buffer(const Buffer& b) {
  auto it = buffers_.find(b.get());
  if (it != buffers_.end()) return it->second;
  PRIMJIT_USER_CHECK(b->shape.size() <= kMaxBufferDims)
      << "buffer '" << b->name << "' of function '" << name << "' has " << b->shape.size()
      << " dimensions; the interpreter supports at most " << kMaxBufferDims
      << ", so reshape it to fewer dimensions";
  auto cb = std::make_unique<CBuffer>();
  cb->buffer = b;
  cb->data_slot = use(b->data.get());
  cb->elem = TypeInfo(b->dtype);
  cb->elem_lanes = b->dtype.lanes();
  cb->elem_bytes = static_cast<int64_t>(std::max(1, b->dtype.bits() / 8)) * b->dtype.lanes();
  cb->shape_is_const = true;
  for (const Expr& e : b->shape) {
    cb->shape.push_back(convert(expr(e), DataType::Int(64)));
    std::optional<int64_t> c = as_const_int(e);
    cb->shape_is_const = cb->shape_is_const && c.has_value();
    cb->const_shape.push_back(c.value_or(0));
  }
  for (const Expr& e : b->strides) cb->strides.push_back(convert(expr(e), DataType::Int(64)));
  if (b->elem_offset.defined() && as_const_int(b->elem_offset) != 0) {
    cb->elem_offset = convert(expr(b->elem_offset), DataType::Int(64));
  }
  const CBuffer* raw = cb.get();
  out_->buffers.push_back(std::move(cb));
  buffers_.emplace(b.get(), raw);
  return raw;
}

CStmtPtr Compiler::stmt(const Stmt& s) {
  PRIMJIT_USER_CHECK(s.defined()) << "function '" << name << "' holds an undefined statement";
  return StmtCompiler(*this).visit_stmt(s);
}

std::unique_ptr<CompiledFunction> Compiler::compile() {
  out_->name = name;
  out_->func = func;
  out_->calling_conv = static_cast<int>(func->calling_conv());
  if (const AttrValue* lp = func->attr(attr::kKernelLaunchParams);
      lp != nullptr && lp->is_array()) {
    for (const AttrValue& v : lp->as_array()) {
      if (v.is_string()) out_->launch_params.push_back(v.as_string());
    }
  }
  for (const Var& p : func->params) {
    define(p.get());
    out_->param_slots.push_back(p.dtype().lanes() > 1 ? -1 : slot(p.get()));
  }
  // A buffer_map buffer's bare variables (data, dimensions, strides, offset) are defined by the
  // tensor it receives.
  for (const auto& [param, b] : func->buffer_map) {
    auto define_bare = [&](const Expr& e) {
      if (const auto* v = e.as<VarNode>()) define(v);
    };
    define_bare(b->data);
    for (const Expr& e : b->shape) define_bare(e);
    for (const Expr& e : b->strides) define_bare(e);
    define_bare(b->elem_offset);
  }
  for (size_t i = 0; i < func->params.size(); ++i) {
    Buffer b = func->buffer_of(func->params[i]);
    if (b.defined()) out_->param_buffers.emplace_back(static_cast<int>(i), buffer(b));
  }
  out_->body = stmt(func->body);
  for (const VarNode* v : used_) {
    PRIMJIT_USER_CHECK(defined_.count(v) != 0)
        << "function '" << name << "' uses variable '" << v->name
        << "', which nothing in it defines (run VerifyWellFormed on the module)";
  }
  return std::move(out_);
}

std::unique_ptr<CompiledFunction> compile_function(const Program& program, const std::string& name,
                                                   const PrimFunc& func) {
  return Compiler(program, name, func).compile();
}

}  // namespace primjit::jit::emu
