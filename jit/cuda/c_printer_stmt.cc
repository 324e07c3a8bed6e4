// CPrinter's functions, statements, types and buffer accesses.
#include <algorithm>
#include <map>
#include <numeric>

#include "jit/cuda/c_printer.h"
#include "primjit/error.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

bool reads_memory(const Expr& e) {
  bool found = false;
  post_order_visit(e, [&](const Ref<Object>& node) {
    found = found || node.as<BufferLoad>() != nullptr || node.as<Call>() != nullptr;
  });
  return found;
}

bool zero_offset(const Buffer& buf) {
  return !buf->elem_offset.defined() || as_const_int(buf->elem_offset) == 0;
}

// The C element type of `buf` differs from its data pointer's.
bool needs_typed_view(const Buffer& buf) {
  const VarNode* data = buf->data.get();
  return data->pointee.is_void() || data->pointee != buf->dtype;
}

// `Ramp(b, s, n) + Broadcast(c, n)` (either order; the merge pass offsets vector indices so)
// as the Ramp it is, `Ramp(b + c, s, n)`, so contiguity and alignment are seen; other indices
// as they are.
Expr as_ramp(const Expr& index) {
  const auto* add = index.as<Add>();
  if (add == nullptr || !index.dtype().is_vector()) return index;
  const Expr a = as_ramp(add->a), b = as_ramp(add->b);
  const auto* ramp = a.as<Ramp>() != nullptr ? a.as<Ramp>() : b.as<Ramp>();
  const auto* other = (a.as<Ramp>() != nullptr ? b : a).as<Broadcast>();
  if (ramp == nullptr || other == nullptr || other->value.dtype() != ramp->base.dtype()) {
    return index;
  }
  return Ramp::make(Add::make(ramp->base, other->value), ramp->stride, ramp->lanes);
}

// The constant term of a flat index (of a vector index: of its base) in the simplifier's
// canonical forms `x + c` and `c - x`; 0 when it has none.
int64_t constant_term(const Expr& index) {
  const Expr& e = index.as<Ramp>() != nullptr ? index.as<Ramp>()->base : index;
  if (std::optional<int64_t> c = as_const_int(e)) return *c;
  if (const auto* add = e.as<Add>()) return as_const_int(add->b).value_or(0);
  if (const auto* sub = e.as<Sub>()) return as_const_int(sub->a).value_or(0);
  return 0;
}

// `index` less `fold`, which its constant term covers (0 <= fold <= constant_term(index)).
Expr drop_constant(const Expr& index, int64_t fold) {
  if (fold == 0) return index;
  if (const auto* ramp = index.as<Ramp>()) {
    return Ramp::make(drop_constant(ramp->base, fold), ramp->stride, ramp->lanes);
  }
  const Expr rest = IntImm::make(index.dtype(), constant_term(index) - fold);
  if (const auto* add = index.as<Add>()) {
    return as_const_int(rest) == 0 ? add->a : Add::make(add->a, rest);
  }
  if (const auto* sub = index.as<Sub>()) return Sub::make(rest, sub->b);
  return rest;
}
}  // namespace

CPrinter::CPrinter(std::string component, std::string symbol, bool is_kernel,
                   const std::set<std::string>& reserved, int64_t max_unroll)
    : component_(std::move(component)),
      symbol_(std::move(symbol)),
      is_kernel_(is_kernel),
      max_unroll_(max_unroll) {
  for (const std::string& name : reserved) names_.reserve(name);
}

std::string CPrinter::emit(const PrimFunc& f) {
  PRIMJIT_USER_CHECK(f->buffer_map.empty())
      << component_ << ": " << where() << " still has a buffer_map; lower it with the "
      << "default pipeline (SplitHostDevice gives kernels plain pointer parameters)";
  reserve_extern_call_names(f->body);
  collect_view_offsets(f->body);

  const AttrValue* noalias_attr = f->attr(attr::kNoAlias);
  const bool noalias =
      noalias_attr != nullptr && noalias_attr->is_bool() && noalias_attr->as_bool();
  std::vector<std::string> params;
  for (const Var& p : f->params) {
    std::string name = names_.unique(p->name);
    var_names_[p.get()] = name;
    if (p->is_pointer() || p.dtype().is_handle()) {
      trusted_pointers_.insert(p.get());
      params.push_back(pointer_type(p.get()) +
                       (noalias && p->is_pointer() ? " __restrict__ " : " ") + name);
      param_types_.push_back(DataType::Handle());
    } else {
      PRIMJIT_USER_CHECK(p.dtype().is_scalar())
          << component_ << ": parameter '" << p->name << "' of " << where()
          << " has the vector type " << p.dtype() << "; kernels take scalars and pointers";
      params.push_back(scalar_type(p.dtype()) + " " + name);
      param_types_.push_back(p.dtype());
    }
  }
  std::string joined;
  for (size_t i = 0; i < params.size(); ++i) joined += (i == 0 ? "" : ", ") + params[i];
  prototype_ = function_head(f) + symbol_ + "(" + joined + ")";

  w_.open(prototype_);
  visit_stmt(f->body);
  w_.close();
  finish_function();
  return w_.str();
}

// --- types ------------------------------------------------------------------------------------

std::string CPrinter::scalar_type(DataType t) {
  PRIMJIT_USER_CHECK(t.is_scalar())
      << component_ << ": no C type for the vector " << t << " here (in " << where() << ")";
  static const std::map<std::string, std::string> kTypes = {
      {"bool", "bool"},       {"int8", "int8_t"},         {"int16", "int16_t"},
      {"int32", "int"},       {"int64", "long long"},     {"uint8", "uint8_t"},
      {"uint16", "uint16_t"}, {"uint32", "unsigned int"}, {"uint64", "uint64_t"},
      {"float32", "float"},   {"float64", "double"},      {"handle", "void*"},
  };
  if (auto it = kTypes.find(t.str()); it != kTypes.end()) return it->second;
  std::optional<std::string> type = extension_type(t);
  PRIMJIT_USER_CHECK(type.has_value())
      << component_ << ": dtype " << t << " is not supported (in " << where() << ")";
  return *type;
}

std::string CPrinter::element_type(DataType t) {
  if (t.is_scalar()) return scalar_type(t);
  std::optional<std::string> vt = vector_type(t);
  PRIMJIT_USER_CHECK(vt.has_value())
      << component_ << ": buffers of " << t << " are not supported (in " << where()
      << "); use a scalar element type with vector (Ramp) indices";
  scalar_type(t.element_of());  // records what the element type needs
  return *vt;
}

std::string CPrinter::pointer_type(const VarNode* v) {
  if (!v->is_pointer() || v->pointee.is_void()) return "void*";
  return element_type(v->pointee) + "*";
}

std::string CPrinter::value_type(const VarNode* v) {
  if (v->dtype.is_handle()) return pointer_type(v);
  return scalar_type(v->dtype);
}

std::string CPrinter::coerce_to_var(const VarNode* v, const Expr& value) {
  Code c = sub(value, -1);
  if (!v->dtype.is_handle()) return c.text;
  if (const auto* src = value.as<VarNode>();
      src != nullptr && pointer_type(src) == pointer_type(v)) {
    return c.text;
  }
  return "(" + pointer_type(v) + ")" + wrap(c, kUnary);
}

// --- statements -------------------------------------------------------------------------------

void CPrinter::visit(const Bind* op) {
  const VarNode* v = op->var.get();
  std::string name = names_.unique(v->name);
  DataType t = v->dtype;
  if (t.is_vector()) {
    if (std::optional<std::string> vt = vector_type(t)) {
      scalar_type(t.element_of());
      w_.line(*vt + " " + name + " = " + vector_value(op->value).text + ";");
    } else {
      std::string lanes;
      for (int i = 0; i < t.lanes(); ++i) lanes += (i == 0 ? "" : ", ") + sub(op->value, i).text;
      w_.line(scalar_type(t.element_of()) + " " + name + "[" + std::to_string(t.lanes()) + "] = {" +
              lanes + "};");
    }
    var_names_[v] = name;
    return;
  }
  w_.line(value_type(v) + " " + name + " = " + coerce_to_var(v, op->value) + ";");
  var_names_[v] = name;
  if (t.is_integer()) an_.bind(op->var, op->value);
}

void CPrinter::visit(const AttrStmt* op) {
  if (op->key == attr::kThreadExtent) {
    print_thread_extent(op);
    return;
  }
  PRIMJIT_USER_CHECK(op->key != attr::kVirtualThread)
      << component_ << ": virtual threads in " << where() << " must be lowered first";
  arith::Analyzer::Scope scope(an_);
  visit_stmt(op->body);
}

void CPrinter::visit(const AssertStmt* op) {
  std::string message;
  if (const auto* text = op->message.as<StringImm>()) {
    // One comment line: no line breaks, and no backslash that could continue it.
    for (char c : text->value) message += (c == '\n' || c == '\r' || c == '\\') ? ' ' : c;
  } else {
    message = "(formatted message)";
  }
  w_.line("// assert: " + message);
  w_.line("if (!" + wrap(sub(op->condition, -1), kUnary) + ") " + trap_statement());
}

void CPrinter::visit(const BufferStore* op) {
  const Buffer& buf = op->buffer;
  Expr index = flat_index(buf, op->indices);
  DataType t = op->value.dtype();
  if (t.is_scalar() || !index.dtype().is_vector()) {
    PRIMJIT_USER_CHECK(t.is_scalar() || t == buf->dtype)
        << component_ << ": a store of " << t << " into '" << buf->name
        << "' at a scalar index (in " << where() << ")";
    std::string value = t.is_scalar() ? sub(op->value, -1).text : vector_value(op->value).text;
    w_.line(wrap(pointer_of(buf), kPrimary) + "[" + sub(index, -1).text + "] = " + value + ";");
    return;
  }
  check_no_effects(op->value, "a vector store");
  if (std::optional<Code> whole = vector_access(buf, index, t, /*is_store=*/true)) {
    w_.line("*" + wrap(*whole, kUnary) + " = " + vector_value(op->value).text + ";");
    return;
  }
  // Scatter: every lane is computed before the first store, and so is every lane's index when
  // it reads memory (a store of an earlier lane may change what it reads).
  const std::string count = "[" + std::to_string(t.lanes()) + "]";
  std::string tmp = names_.unique("lanes");
  std::string lanes;
  for (int i = 0; i < t.lanes(); ++i) lanes += (i == 0 ? "" : ", ") + sub(op->value, i).text;
  w_.open("");
  w_.line(scalar_type(t.element_of()) + " " + tmp + count + " = {" + lanes + "};");
  std::string index_tmp;
  if (reads_memory(index)) {
    index_tmp = names_.unique("lane_index");
    std::string indices;
    for (int i = 0; i < t.lanes(); ++i) indices += (i == 0 ? "" : ", ") + sub(index, i).text;
    w_.line(scalar_type(index.dtype().element_of()) + " " + index_tmp + count + " = {" + indices +
            "};");
  }
  for (int i = 0; i < t.lanes(); ++i) {
    std::string lane = "[" + std::to_string(i) + "]";
    std::string at = index_tmp.empty() ? sub(index, i).text : index_tmp + lane;
    w_.line(wrap(pointer_of(buf), kPrimary) + "[" + at + "] = " + tmp + lane + ";");
  }
  w_.close();
}

void CPrinter::visit(const AllocBuffer* op) {
  const Buffer& buf = op->buffer;
  const VarNode* data = buf->data.get();
  DataType elem = data->pointee.is_void() ? buf->dtype : data->pointee;
  std::string type = element_type(elem);
  int align = std::max(buf->data_alignment > 0 ? buf->data_alignment : 64, elem.bytes());
  print_allocation(op, elem, type, align);
  declare_view(buf);
}

void CPrinter::visit(const DeclBuffer* op) { declare_view(op->buffer); }

void CPrinter::visit(const SeqStmt* op) {
  for (const Stmt& s : op->seq) visit_stmt(s);
}

void CPrinter::visit(const For* op) {
  PRIMJIT_USER_CHECK(op->for_kind != ForKind::kThreadBinding)
      << component_ << ": loop over '" << op->loop_var->name << "' bound to " << op->thread_tag
      << " in " << where() << "; express thread indices with T.launch_thread (thread_extent)";
  PRIMJIT_USER_CHECK(op->for_kind != ForKind::kParallel)
      << component_ << ": T.parallel loop over '" << op->loop_var->name << "' in " << where()
      << "; bind it to a thread index instead";
  const Var& v = op->loop_var;
  DataType t = v.dtype();
  std::string type = scalar_type(t);
  Code min = sub(op->min, -1);
  Expr end_expr = arith::simplify(Add::make(op->min, op->extent));
  Code end = sub(end_expr, -1);
  if (reads_memory(end_expr)) {  // the extent is evaluated once, before the loop
    std::string end_name = names_.unique(v->name + "_end");
    w_.line(type + " " + end_name + " = " + end.text + ";");
    end = {end_name, kPrimary};
  }
  std::string name = names_.unique(v->name);
  var_names_[v.get()] = name;
  if (op->for_kind == ForKind::kUnrolled &&
      passes::unroll_within_limit(*op, max_unroll_, component_.c_str())) {
    if (const char* pragma = unroll_pragma()) w_.line(pragma);
  }
  w_.open("for (" + type + " " + name + " = " + min.text + "; " + name + " < " +
          wrap(end, kRel - 1) + "; ++" + name + ")");
  {
    arith::Analyzer::Scope scope(an_);
    if (t.is_integer()) an_.bind(v, op->min, op->extent);
    visit_stmt(op->body);
  }
  w_.close();
}

void CPrinter::visit(const While* op) {
  w_.open("while (" + sub(op->condition, -1).text + ")");
  {
    arith::Analyzer::Scope scope(an_);
    visit_stmt(op->body);
  }
  w_.close();
}

void CPrinter::visit(const IfThenElse* op) {
  arith::Analyzer::Scope chain(an_);  // holds the negated conditions of an else-if chain
  w_.open("if (" + sub(op->condition, -1).text + ")");
  const IfThenElse* current = op;
  while (true) {
    {
      arith::Analyzer::Scope scope(an_);
      an_.assume(current->condition);
      visit_stmt(current->then_case);
    }
    if (!current->else_case.defined()) {
      w_.close();
      return;
    }
    // `else if` chains stay flat.
    if (const auto* next = current->else_case.as<IfThenElse>()) {
      w_.dedent();
      w_.line("} else if (" + sub(next->condition, -1).text + ") {");
      w_.indent();
      an_.assume(Not::make(current->condition));
      current = next;
      continue;
    }
    w_.dedent();
    w_.line("} else {");
    w_.indent();
    {
      arith::Analyzer::Scope scope(an_);
      an_.assume(Not::make(current->condition));
      visit_stmt(current->else_case);
    }
    w_.close();
    return;
  }
}

void CPrinter::visit(const Evaluate* op) {
  if (op->value.as<IntImm>() != nullptr) return;
  const auto* call = op->value.as<Call>();
  if (call != nullptr && call->is_op("ret")) {
    PRIMJIT_USER_CHECK(!is_kernel_ && call->args.size() == 1)
        << component_ << ": T.ret in " << where()
        << "; kernels return nothing (LowerDeviceKernelLaunch removes `T.ret(0)`)";
    w_.line("return " + sub(call->args[0], -1).text + ";");
    return;
  }
  if (!has_side_effects(op->value)) return;  // nothing observable to do
  check_scalar(op->value.dtype(), "an evaluated expression", -1);
  w_.line(sub(op->value, -1).text + ";");
}

// Extern functions called by name must not be hidden by local variables.
void CPrinter::reserve_extern_call_names(const Stmt& body) {
  post_order_visit(body, [&](const Ref<Object>& node) {
    const auto* call = node.as<Call>();
    if (call == nullptr || !(call->is_op("call_extern") || call->is_op("call_pure_extern"))) {
      return;
    }
    if (const auto* fn = call->args.empty() ? nullptr : call->args[0].as<StringImm>()) {
      names_.reserve(fn->value);
    }
  });
}

// --- buffers and pointers ---------------------------------------------------------------------

// Row-major (or strided) flattening for buffers still accessed with several indices.
Expr CPrinter::flat_index(const Buffer& buf, const std::vector<Expr>& indices) {
  if (indices.size() == 1 && buf->strides.empty()) {
    Expr index = as_ramp(indices[0]);
    auto it = view_fold_.find(buf.get());
    // A view's pointer starts `fold` elements in (declare_view).
    return it == view_fold_.end() ? index : drop_constant(index, it->second);
  }
  for (const Expr& i : indices) {
    PRIMJIT_USER_CHECK(i.dtype().is_scalar())
        << component_ << ": vector index into the multi-dimensional buffer '" << buf->name
        << "' in " << where() << "; run FlattenBuffer";
  }
  Expr index;
  Expr stride;
  for (size_t k = indices.size(); k-- > 0;) {
    DataType t = indices[k].dtype();
    Expr s = !buf->strides.empty() ? buf->strides[k] : stride;
    if (s.defined() && s.dtype() != t) s = Cast::make(t, s);
    Expr term = s.defined() ? Mul::make(indices[k], s) : indices[k];
    index =
        index.defined() ? Add::make(term, index.dtype() == t ? index : Cast::make(t, index)) : term;
    if (buf->strides.empty()) {
      Expr dim = buf->shape[k].dtype() == t ? buf->shape[k] : Cast::make(t, buf->shape[k]);
      stride = stride.defined() ? Mul::make(stride, dim) : dim;
    }
  }
  if (!index.defined()) return IntImm::make(DataType::Int(32), 0);
  return arith::simplify(index);
}

// The smallest constant term of the accesses to each 1-D view declared in `body` (the offset
// MergeSharedMemoryAllocations folded into their indices); see declare_view.
void CPrinter::collect_view_offsets(const Stmt& body) {
  std::unordered_set<const BufferNode*> views;
  post_order_visit(body, [&](const Ref<Object>& node) {
    if (const auto* decl = node.as<DeclBuffer>()) views.insert(decl->buffer.get());
  });
  auto access = [&](const Buffer& buf, const std::vector<Expr>& indices) {
    if (views.count(buf.get()) == 0) return;
    const int64_t c =
        indices.size() == 1 ? std::max<int64_t>(constant_term(as_ramp(indices[0])), 0) : 0;
    auto [it, inserted] = view_offsets_.emplace(buf.get(), c);
    if (!inserted) it->second = std::min(it->second, c);
  };
  post_order_visit(body, [&](const Ref<Object>& node) {
    if (const auto* load = node.as<BufferLoad>()) access(load->buffer, load->indices);
    if (const auto* store = node.as<BufferStore>()) access(store->buffer, store->indices);
  });
}

// A typed pointer for buffers that view their data at another type or offset (the views over
// the merged shared buffer); declared where the buffer is. A 1-D view into shared memory this
// function allocates starts where its accesses do: when every index is `x + c` with c >= k, the
// pointer is `base + k` and the accesses print `x + (c - k)`, so the compiler sees one constant
// base per view instead of an offset in every index (k is rounded down to keep the base's
// alignment, which the vector accesses' proofs rely on).
void CPrinter::declare_view(const Buffer& buf) {
  int64_t fold = 0;
  const VarNode* data = buf->data.get();
  auto offset = view_offsets_.find(buf.get());
  auto align = pointer_align_.find(data);
  if (fold_view_offsets_ && offset != view_offsets_.end() && align != pointer_align_.end() &&
      zero_offset(buf) && buf->shape.size() == 1 && buf->strides.empty() &&
      buf->dtype.is_scalar() && buf->scope().rfind("shared", 0) == 0) {
    const int64_t step = std::max<int64_t>(1, align->second / buf->dtype.bytes());
    fold = offset->second / step * step;
  }
  if (!needs_typed_view(buf) && zero_offset(buf) && fold == 0) return;
  std::string type = element_type(buf->dtype);
  Code base = {name_of(data), kPrimary};
  Code ptr = needs_typed_view(buf) ? Code{"(" + type + "*)" + base.text, kUnary} : base;
  if (!zero_offset(buf)) ptr = infix(ptr, "+", kAdd, sub(buf->elem_offset, -1));
  if (fold != 0) {
    const int pointee_bytes = data->pointee.is_void() ? 1 : data->pointee.bytes();
    const int64_t bytes = fold * buf->dtype.bytes();
    if (needs_typed_view(buf) && bytes % pointee_bytes == 0) {  // (float*)(buf_dyn_shmem + 1024)
      Code moved = infix(base, "+", kAdd, {std::to_string(bytes / pointee_bytes), kPrimary});
      ptr = {"(" + type + "*)(" + moved.text + ")", kUnary};
    } else {
      ptr = infix(ptr, "+", kAdd, {std::to_string(fold), kPrimary});
    }
    view_fold_[buf.get()] = fold;
  }
  std::string name = names_.unique(buf->name);
  w_.line(type + "* " + name + " = " + ptr.text + ";");
  views_[buf.get()] = name;
}

Code CPrinter::pointer_of(const Buffer& buf) {
  if (auto it = views_.find(buf.get()); it != views_.end()) return {it->second, kPrimary};
  Code base = {name_of(buf->data.get()), kPrimary};
  if (needs_typed_view(buf)) base = {"(" + element_type(buf->dtype) + "*)" + base.text, kUnary};
  if (!zero_offset(buf)) base = infix(base, "+", kAdd, sub(buf->elem_offset, -1));
  return base;
}

// Known alignment in bytes of `buf`'s first element.
int64_t CPrinter::buffer_alignment(const Buffer& buf) {
  const VarNode* data = buf->data.get();
  int64_t align = std::max(1, buf->dtype.element_of().bytes());
  if (auto it = pointer_align_.find(data); it != pointer_align_.end()) {
    align = it->second;
  } else if (trusted_pointers_.count(data) != 0) {
    // Parameters: the buffer's declared alignment, as TVM assumes for its arguments.
    align = buf->data_alignment > 0 ? buf->data_alignment : 64;
  }
  if (!zero_offset(buf)) {
    std::optional<int64_t> off = as_const_int(buf->elem_offset);
    int64_t bytes = off ? *off * buf->dtype.bytes() : buf->dtype.element_of().bytes();
    align = std::gcd(align, bytes == 0 ? align : bytes);
  }
  if (auto it = view_fold_.find(buf.get()); it != view_fold_.end()) {
    align = std::gcd(align, it->second * buf->dtype.bytes());
  }
  return align;
}

// `*(T4*)(ptr + base)` for a contiguous, provably aligned access with a vector type.
std::optional<Code> CPrinter::vector_access(const Buffer& buf, const Expr& index, DataType t,
                                            bool is_store) {
  PRIMJIT_USER_CHECK(buf->dtype.is_scalar())
      << component_ << ": vector index into '" << buf->name << "', a buffer of " << buf->dtype
      << " (in " << where() << "); index its elements with scalars";
  const auto* ramp = index.as<Ramp>();
  if (ramp == nullptr || as_const_int(ramp->stride) != 1) return std::nullopt;
  std::optional<std::string> vt = vector_type(t);
  if (!vt.has_value()) return std::nullopt;
  const int64_t bytes = t.bytes();
  const int64_t elem = t.element_of().bytes();
  if (buffer_alignment(buf) % bytes != 0) return std::nullopt;
  arith::ModularSet ms = an_.modular_set(ramp->base);
  if ((ms.coeff * elem) % bytes != 0 || (ms.base * elem) % bytes != 0) return std::nullopt;
  scalar_type(t.element_of());
  Code addr = as_const_int(ramp->base) == 0
                  ? pointer_of(buf)
                  : infix(pointer_of(buf), "+", kAdd, sub(ramp->base, -1));
  return Code{"(" + std::string(is_store ? "" : "const ") + *vt + "*)" + wrap(addr, kUnary),
              kUnary};
}

// A whole vector value of a vector type: a vector load, a variable, or make_T(...).
Code CPrinter::vector_value(const Expr& e) {
  DataType t = e.dtype();
  std::optional<std::string> vt = vector_type(t);
  PRIMJIT_ICHECK(vt.has_value()) << "no vector type for " << t;
  if (const auto* load = e.as<BufferLoad>()) {
    Expr index = flat_index(load->buffer, load->indices);
    if (std::optional<Code> whole = vector_access(load->buffer, index, t, false)) {
      return {"*" + wrap(*whole, kUnary), kUnary};
    }
  }
  if (const auto* var = e.as<VarNode>()) return {name_of(var), kPrimary};
  std::vector<Code> lanes;
  for (int i = 0; i < t.lanes(); ++i) lanes.push_back(sub(e, i));
  return call(make_vector_fn(*vt), lanes);
}

}  // namespace primjit::jit
