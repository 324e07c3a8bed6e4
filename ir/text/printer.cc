// The text printer: IR -> TVMScript subset (see text.h and the README, "IR text format").
//
// The output is deterministic and parses back (parse.cc) to a structurally equal IR:
//  - names are made unique per function in order of definition (`i`, `i_1`, ...); hints that are
//    not identifiers, or are keywords or names the format uses (`T`, `I`, `Module`, `range`),
//    are sanitized;
//  - variables and buffers that nothing in the function defines (free variables, undeclared
//    buffers, pointer variables a buffer definition cannot introduce, re-launched thread
//    variables) are declared at the function's top level right before the first top-level
//    statement that needs them: `m = T.int32()`, `B = T.Buffer(...)`, `t = T.env_thread(...)`;
//  - a Call whose dtype is not the one the parser's rule gives is printed in an explicit form
//    (`T.call_intrin`, `T.call_global`).
#include <algorithm>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ir/text/printer.h"
#include "ir/text/text_rules.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"

namespace primjit::text_internal {
namespace {

std::string sanitize(const std::string& hint) {
  std::string name;
  for (char c : hint) {
    bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    name += ok ? c : '_';
  }
  if (name.empty()) name = "v";
  if (name[0] >= '0' && name[0] <= '9') name = "v" + name;
  if (text_internal::is_reserved_name(name)) name += "_";
  return name;
}

bool is_zero_int32(const Expr& e) {
  const auto* imm = e.as<IntImm>();
  return imm != nullptr && imm->dtype == DataType::Int(32) && imm->value == 0;
}

bool is_zero(const Expr& e) {
  const auto* imm = e.as<IntImm>();
  return imm != nullptr && imm->value == 0;
}

// ---------------------------------------------------------------------------------------------
// Pre-pass: thread variables and which variables are referenced at all
// ---------------------------------------------------------------------------------------------

class ThreadScan : public StmtExprVisitor {
 public:
  std::unordered_map<const VarNode*, ThreadInfo> threads;
  std::unordered_set<const VarNode*> used;

  void run_function(const PrimFunc& func) {
    for (int pass = 0; pass < 2; ++pass) {
      second_pass_ = pass == 1;
      for (const auto& [param, buffer] : func->buffer_map) visit_buffer_def(buffer);
      for (const auto& [key, value] : func->attrs) visit_attr_value(value);
      visit_stmt(func->body);
      finish_pass();
    }
  }
  void run_stmt(const Stmt& stmt) {
    for (int pass = 0; pass < 2; ++pass) {
      second_pass_ = pass == 1;
      visit_stmt(stmt);
      finish_pass();
    }
  }

  void visit(const VarNode* op) override {
    used.insert(op);
    if (!second_pass_) return;
    auto it = threads.find(op);
    if (it != threads.end() && active_[op] == 0) it->second.env = true;
  }

  void visit(const AttrStmt* op) override {
    if (const IterVarNode* iv = op->iter_var()) {
      const VarNode* var = iv->var.get();
      used.insert(var);
      if (!second_pass_) {
        ThreadInfo& info = threads[var];
        if (!info.seen) {
          info.seen = true;
          info.tag = iv->thread_tag;
        }
        if (op->key == attr::kThreadExtent) {
          ++info.launches;
          if (iv->var.dtype() != op->value.dtype()) info.env = true;
        } else {
          info.env = true;
        }
      }
      visit_expr(op->value);
      ++active_[var];
      visit_stmt(op->body);
      --active_[var];
      return;
    }
    if (op->node.defined() && is_expr_kind(op->node.kind())) {
      visit_expr(Expr(static_cast<const ExprNode*>(op->node.get())));
    }
    visit_expr(op->value);
    visit_stmt(op->body);
  }

  void visit(const For* op) override {
    for (const auto& [key, value] : op->annotations) visit_attr_value(value);
    StmtExprVisitor::visit(op);
  }
  void visit(const AllocBuffer* op) override {
    for (const auto& [key, value] : op->annotations) visit_attr_value(value);
    StmtExprVisitor::visit(op);
  }

 private:
  void visit_attr_value(const AttrValue& value) {
    if (value.is_expr()) {
      Expr e = value.as_expr();
      if (e.defined()) visit_expr(e);
    } else if (value.is_array()) {
      for (const AttrValue& item : value.as_array()) visit_attr_value(item);
    }
  }
  void finish_pass() {
    if (second_pass_) return;
    for (auto& [var, info] : threads) {
      if (info.launches > 1) info.env = true;
    }
  }

  bool second_pass_ = false;
  std::unordered_map<const VarNode*, int> active_;
};

}  // namespace

std::string Printer::stmt_alone(const Stmt& stmt) {
  ThreadScan scan;
  scan.run_stmt(stmt);
  threads_ = std::move(scan.threads);
  body_indent_ = -1;
  block(stmt, 0);
  return out_;
}

// --- names ------------------------------------------------------------------------------------
std::string Printer::fresh_name(const std::string& hint) {
  std::string base = sanitize(hint);
  std::string name = base;
  for (int k = 1; used_names_.count(name) != 0; ++k) name = base + "_" + std::to_string(k);
  used_names_.insert(name);
  return name;
}

std::string Printer::define_var(const Var& var) {
  auto it = var_names_.find(var.get());
  if (it != var_names_.end()) return it->second;  // defined twice (ill-formed): keep the name
  std::string name = fresh_name(var->name);
  var_names_.emplace(var.get(), name);
  return name;
}

std::string Printer::define_buffer(const Buffer& buffer) {
  auto it = buffer_names_.find(buffer.get());
  if (it != buffer_names_.end()) return it->second;
  std::string name = fresh_name(buffer->name);
  buffer_names_.emplace(buffer.get(), name);
  return name;
}

std::string Printer::var_ref(const VarNode* var) {
  auto it = var_names_.find(var);
  if (it != var_names_.end()) return it->second;
  std::string name = fresh_name(var->name);
  var_names_.emplace(var, name);
  auto thread = threads_.find(var);
  if (thread != threads_.end() && thread->second.env) {
    std::string decl = name + " = T.env_thread(" + quote(thread->second.tag);
    if (var->dtype != DataType::Int(32)) decl += ", dtype=" + quote(var->dtype.str());
    declare(decl + ")");
  } else {
    declare(name + " = " + free_var_ctor(var));
  }
  return name;
}

std::string Printer::buffer_ref(const Buffer& buffer) {
  auto it = buffer_names_.find(buffer.get());
  if (it != buffer_names_.end()) return it->second;
  std::string name = define_buffer(buffer);
  std::string args = buffer_args(buffer, name, BufferForm::kFree);
  declare(name + " = T.Buffer(" + args + ")");
  return name;
}

void Printer::declare(std::string line) {
  if (!standalone_) pending_.push_back(std::move(line));
}

void Printer::flush_declarations(size_t mark, int indent) {
  if (pending_.empty()) return;
  std::string text;
  for (const std::string& line : pending_) text += std::string(indent, ' ') + line + "\n";
  pending_.clear();
  out_.insert(mark, text);
}

std::string Printer::annotation(const VarNode* var) {
  if (var->is_pointer()) {
    return "T.handle(" + quote(var->pointee.str()) + ", " + quote(var->storage_scope) + ")";
  }
  if (var->dtype.is_handle()) return "T.handle";
  if (var->is_size_var) return dtype_ctor(var->dtype) + "(is_size_var=True)";
  return dtype_ctor(var->dtype);
}

std::string Printer::free_var_ctor(const VarNode* var) {
  if (var->is_pointer()) return annotation(var);
  if (var->dtype.is_handle()) return "T.handle()";
  if (var->is_size_var) return dtype_ctor(var->dtype) + "(is_size_var=True)";
  return dtype_ctor(var->dtype) + "()";
}

// --- buffers ----------------------------------------------------------------------------------
std::string Printer::shape_tuple(const std::vector<Expr>& dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + expr(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

/// Positional shape and dtype, then keywords in a fixed order. The buffer's data variable is
/// introduced (printed later as `NAME.data`) unless something defines it already, the form
/// cannot introduce one (decl_buffer), or its element type differs from the buffer's.
std::string Printer::buffer_args(const Buffer& buffer, const std::string& name, BufferForm form) {
  std::string out = shape_tuple(buffer->shape) + ", " + quote(buffer->dtype.str());
  const VarNode* data = buffer->data.get();
  bool introduce =
      form != BufferForm::kDecl && var_names_.count(data) == 0 && data->pointee == buffer->dtype;
  if (introduce) {
    var_names_.emplace(data, name + ".data");
  } else {
    out += ", data=" + var_ref(data);
  }
  if (!buffer->strides.empty()) out += ", strides=" + shape_tuple(buffer->strides);
  if (!is_zero_int32(buffer->elem_offset)) out += ", elem_offset=" + expr(buffer->elem_offset);
  if (introduce && buffer->scope() != "global" && form != BufferForm::kAllocScoped) {
    out += ", scope=" + quote(buffer->scope());
  }
  if (buffer->data_alignment != 64) out += ", align=" + std::to_string(buffer->data_alignment);
  if (buffer->offset_factor != 1) {
    out += ", offset_factor=" + std::to_string(buffer->offset_factor);
  }
  return out;
}

bool Printer::all_named(const Expr& e) {
  bool ok = true;
  post_order_visit(e, [&](const Ref<Object>& node) {
    if (const auto* var = node.as<VarNode>()) {
      ok = ok && var_names_.count(var) != 0;
    } else if (const auto* load = node.as<BufferLoad>()) {
      ok = ok && buffer_names_.count(load->buffer.get()) != 0;
    }
  });
  return ok;
}

/// A buffer parameter printed inline as `A: T.Buffer(shape, dtype)`.
bool Printer::is_simple_param(const PrimFunc& func, const Var& param, const Buffer& buffer,
                              const std::unordered_set<const VarNode*>& used) {
  if (param->is_pointer() || used.count(param.get()) != 0) return false;
  if (buffer->scope() != "global" || !buffer->strides.empty() ||
      !is_zero_int32(buffer->elem_offset) || buffer->data_alignment != 64 ||
      buffer->offset_factor != 1) {
    return false;
  }
  const VarNode* data = buffer->data.get();
  if (var_names_.count(data) != 0 || data->pointee != buffer->dtype) return false;
  for (const Var& p : func->params) {
    if (p.get() == data) return false;
  }
  for (const Expr& dim : buffer->shape) {
    if (!all_named(dim)) return false;
  }
  return true;
}

// --- statements -------------------------------------------------------------------------------
void Printer::line(int indent, const std::string& text) {
  out_.append(indent, ' ');
  out_ += text;
  out_ += '\n';
}

void Printer::block(const Stmt& body, int indent) {
  if (const auto* seq = body.as<SeqStmt>()) {
    for (size_t i = 0; i < seq->seq.size(); ++i) {
      stmt(seq->seq[i], indent, i + 1 == seq->seq.size());
    }
  } else {
    stmt(body, indent, true);
  }
}

void Printer::stmt(const Stmt& s, int indent, bool last) {
  size_t mark = out_.size();
  bool top = indent == body_indent_;
  switch (s.kind()) {
    case NodeKind::kSeqStmt:  // a non-canonical nested sequence: print it flat
      block(s, indent);
      break;
    case NodeKind::kBind: {
      const auto* op = s.as<Bind>();
      std::string value = expr(op->value);
      std::string name = define_var(op->var);
      // TVM's Bind spelling: `x: T.int32 = v` is a one-element buffer in its dialect. It has no
      // T.boolxN, so a bool vector takes its type from the value.
      const VarNode* var = op->var.get();
      bool from_value = var->dtype.is_bool() && var->dtype.is_vector() && !var->is_size_var;
      std::string type = from_value ? "T.let" : "T.let[" + annotation(var) + "]";
      line(indent, name + ": " + type + " = " + value);
      break;
    }
    case NodeKind::kAttrStmt:
      attr_stmt(s.as<AttrStmt>(), indent, last, mark);
      break;
    case NodeKind::kAssertStmt: {
      const auto* op = s.as<AssertStmt>();
      const auto* message = op->message.as<StringImm>();
      std::string condition = expr(op->condition);
      line(indent, "assert " + condition + ", " +
                       (message != nullptr ? quote(message->value) : expr(op->message)));
      break;
    }
    case NodeKind::kBufferStore: {
      const auto* op = s.as<BufferStore>();
      std::string target = buffer_ref(op->buffer);
      target += indices(op->indices);
      line(indent, target + " = " + expr(op->value));
      break;
    }
    case NodeKind::kAllocBuffer: {
      const auto* op = s.as<AllocBuffer>();
      const Buffer& buffer = op->buffer;
      std::string name = define_buffer(buffer);
      // T.alloc_shared / T.alloc_local, as TVM prints them, when the scope is not spelled by a
      // data= argument.
      const VarNode* data = buffer->data.get();
      bool introduce = var_names_.count(data) == 0 && data->pointee == buffer->dtype;
      const char* sugar = !introduce                    ? nullptr
                          : buffer->scope() == "shared" ? "T.alloc_shared"
                          : buffer->scope() == "local"  ? "T.alloc_local"
                                                        : nullptr;
      std::string args = buffer_args(
          buffer, name, sugar != nullptr ? BufferForm::kAllocScoped : BufferForm::kAlloc);
      if (!op->annotations.empty()) args += ", annotations=" + attr_dict(op->annotations);
      line(indent, name + " = " + (sugar != nullptr ? sugar : "T.alloc_buffer") + "(" + args + ")");
      break;
    }
    case NodeKind::kDeclBuffer: {
      const auto* op = s.as<DeclBuffer>();
      std::string name = define_buffer(op->buffer);
      std::string args = buffer_args(op->buffer, name, BufferForm::kDecl);
      line(indent, name + " = T.decl_buffer(" + args + ")");
      break;
    }
    case NodeKind::kFor:
      for_stmt(s.as<For>(), indent);
      break;
    case NodeKind::kWhile: {
      const auto* op = s.as<While>();
      line(indent, "while " + expr(op->condition) + ":");
      block(op->body, indent + kIndentStep);
      break;
    }
    case NodeKind::kIfThenElse:
      if_stmt(s.as<IfThenElse>(), indent, "if ");
      break;
    case NodeKind::kEvaluate:
      line(indent, evaluate(s.as<Evaluate>()));
      break;
    default:
      line(indent, std::string("# unprintable ") + node_kind_name(s.kind()));
  }
  // Declarations needed anywhere inside a top-level statement go right before it.
  if (top) flush_declarations(mark, indent);
}

std::string Printer::evaluate(const Evaluate* op) {
  if (const auto* call = op->value.as<Call>()) {
    if (call->is_op("ret") && call->args.size() == 1 && call->dtype == call->args[0].dtype()) {
      return "return " + expr(call->args[0]);
    }
    return expr(op->value);
  }
  return "T.evaluate(" + expr(op->value) + ")";
}

void Printer::if_stmt(const IfThenElse* op, int indent, const char* keyword) {
  line(indent, keyword + expr(op->condition) + ":");
  block(op->then_case, indent + kIndentStep);
  if (!op->else_case.defined()) return;
  if (const auto* nested = op->else_case.as<IfThenElse>()) {
    if_stmt(nested, indent, "elif ");
    return;
  }
  line(indent, "else:");
  block(op->else_case, indent + kIndentStep);
}

void Printer::attr_stmt(const AttrStmt* op, int indent, bool last, size_t mark) {
  bool top = indent == body_indent_;
  const IterVarNode* iv = op->iter_var();
  if (iv != nullptr && op->key == attr::kThreadExtent) {
    const VarNode* var = iv->var.get();
    auto info = threads_.find(var);
    bool env = (info != threads_.end() && info->second.env) || var_names_.count(var) != 0;
    std::string extent = expr(op->value);
    if (env) {
      std::string launch = "T.launch_thread(" + var_ref(var) + ", " + extent + ")";
      line(indent, last ? launch : "with " + launch + ":");
    } else {
      std::string name = define_var(iv->var);
      std::string launch = "T.launch_thread(" + quote(iv->thread_tag) + ", " + extent + ")";
      line(indent, last ? name + " = " + launch : "with " + launch + " as " + name + ":");
    }
    // In the concise form the body continues at this level, as statements of their own.
    if (top && last) flush_declarations(mark, indent);
    block(op->body, last ? indent : indent + kIndentStep);
    return;
  }
  std::string node;
  if (iv != nullptr) {
    node = var_ref(iv->var.get());
  } else if (!op->node.defined()) {
    node = "None";
  } else if (is_expr_kind(op->node.kind())) {
    node = expr(Expr(static_cast<const ExprNode*>(op->node.get())));
  } else if (const auto* buffer = op->node.as<BufferNode>()) {
    node = buffer_ref(Buffer(buffer));
  } else if (const auto* target = op->node.as<TargetNode>()) {
    node = target_text(Target(Ref<TargetNode>(target)));
  } else {
    node = std::string("<") + node_kind_name(op->node.kind()) + ">";
  }
  line(indent, "with T.attr(" + node + ", " + quote(op->key) + ", " + expr(op->value) + "):");
  block(op->body, indent + kIndentStep);
}

bool Printer::plain_serial(const For* op) {
  return op->for_kind == ForKind::kSerial && op->annotations.empty() && is_zero(op->min);
}

void Printer::for_stmt(const For* op, int indent) {
  // Nested zero-based serial loops whose extents do not depend on each other merge into
  // T.grid.
  std::vector<const For*> chain = {op};
  while (plain_serial(chain.back())) {
    const auto* inner = chain.back()->body.as<For>();
    if (inner == nullptr || !plain_serial(inner)) break;
    bool depends = false;
    post_order_visit(inner->extent, [&](const Ref<Object>& node) {
      for (const For* outer : chain) depends = depends || node.get() == outer->loop_var.get();
    });
    if (depends) break;
    chain.push_back(inner);
  }
  std::string head;
  if (chain.size() > 1) {
    std::string extents;
    for (size_t i = 0; i < chain.size(); ++i) {
      extents += (i ? ", " : "") + expr(chain[i]->extent);
    }
    std::string names;
    for (size_t i = 0; i < chain.size(); ++i) {
      names += (i ? ", " : "") + define_var(chain[i]->loop_var);
    }
    head = "for " + names + " in T.grid(" + extents + "):";
  } else {
    std::string range = loop_range(op);
    std::string iter;
    if (op->for_kind == ForKind::kSerial && op->annotations.empty()) {
      iter = "range(" + range + ")";
    } else {
      iter = std::string("T.") + for_kind_name(op->for_kind) + "(" + range;
      if (op->for_kind == ForKind::kThreadBinding) iter += ", thread=" + quote(op->thread_tag);
      if (!op->annotations.empty()) iter += ", annotations=" + attr_dict(op->annotations);
      iter += ")";
    }
    head = "for " + define_var(op->loop_var) + " in " + iter + ":";
  }
  line(indent, head);
  block(chain.back()->body, indent + kIndentStep);
}

/// `extent`, or `min, stop` with stop = min + extent (folded when both are constants).
std::string Printer::loop_range(const For* op) {
  if (is_zero(op->min)) return expr(op->extent);
  const auto* lo = op->min.as<IntImm>();
  const auto* ext = op->extent.as<IntImm>();
  if (lo != nullptr && ext != nullptr) {
    int64_t stop = 0;
    DataType t = lo->dtype;
    bool overflow = __builtin_add_overflow(lo->value, ext->value, &stop);
    bool fits = t.bits() >= 64 ||
                (stop >= -(int64_t{1} << (t.bits() - 1)) && stop < (int64_t{1} << (t.bits() - 1)));
    if (t.is_int() && !overflow && fits) {
      return expr(op->min) + ", " + int_literal(t, stop);
    }
  }
  // An extent `stop - min` prints as its stop, unless the parser would read that stop as
  // `min + e` (extent e) or fold it with a constant min.
  if (const auto* sub = op->extent.as<Sub>();
      sub != nullptr && text_internal::same_expr(sub->b, op->min)) {
    const auto* add = sub->a.as<Add>();
    bool read_as_sum = add != nullptr && text_internal::same_expr(add->a, op->min);
    bool folded = lo != nullptr && sub->a.as<IntImm>() != nullptr;
    if (!read_as_sum && !folded) {
      std::string min = expr(op->min);
      return min + ", " + expr(sub->a);
    }
  }
  std::string min = expr(op->min);
  std::string sum = expr(op->min, kPrecAdd) + " + ";
  return min + ", " + sum + expr(op->extent, kPrecAdd + 1);
}

std::string Printer::function(const PrimFunc& func, const std::string& name, int indent) {
  ThreadScan scan;
  scan.run_function(func);
  threads_ = std::move(scan.threads);
  body_indent_ = indent + kIndentStep;

  const AttrValue* symbol = func->attr(attr::kGlobalSymbol);
  line(indent, symbol != nullptr ? "@T.prim_func" : "@T.prim_func(private=True)");

  // Parameters: inline buffers, handles followed by match_buffer, scalars, pointers.
  std::string params;
  std::vector<std::pair<std::string, Buffer>> matched;  // handle name, buffer
  for (const Var& param : func->params) {
    Buffer buffer = func->buffer_of(param);
    std::string text;
    if (buffer.defined() && is_simple_param(func, param, buffer, scan.used)) {
      std::string buffer_name = define_buffer(buffer);
      var_names_.emplace(buffer->data.get(), buffer_name + ".data");
      text = buffer_name + ": T.Buffer(" + shape_tuple(buffer->shape) + ", " +
             quote(buffer->dtype.str()) + ")";
    } else {
      std::string var_name = define_var(param);
      text = var_name + ": " + annotation(param.get());
      if (buffer.defined()) matched.emplace_back(var_name, buffer);
    }
    params += (params.empty() ? "" : ", ") + text;
  }
  std::string head = "def " + name + "(" + params + ")";
  if (!func->ret_type.is_void()) head += " -> " + dtype_ctor(func->ret_type);
  line(indent, head + ":");

  Attrs shown = func->attrs;
  if (symbol != nullptr && symbol->is_string() && symbol->as_string() == name) {
    shown.erase(attr::kGlobalSymbol);
  }
  if (!shown.empty()) {
    size_t mark = out_.size();
    line(body_indent_, "T.func_attr(" + attr_dict(shown) + ")");
    flush_declarations(mark, body_indent_);
  }
  for (const auto& [handle, buffer] : matched) {
    size_t mark = out_.size();
    std::string buffer_name = define_buffer(buffer);
    std::string args = buffer_args(buffer, buffer_name, BufferForm::kMatch);
    line(body_indent_, buffer_name + " = T.match_buffer(" + handle + ", " + args + ")");
    flush_declarations(mark, body_indent_);
  }
  // A function whose whole body is T.evaluate(0) still prints it: Python needs a body.
  block(func->body, body_indent_);
  return out_;
}

}  // namespace primjit::text_internal

namespace primjit {

std::string print(const IRModule& module) {
  std::string out =
      "# from tvm.script import ir as I\n# from tvm.script import tirx as T\n\n@I.ir_module\n"
      "class Module:\n";
  // Sorted by name (the module keeps them sorted), `main` last.
  std::vector<std::pair<GlobalVar, PrimFunc>> functions = module->functions;
  std::stable_partition(functions.begin(), functions.end(),
                        [](const auto& entry) { return entry.first->name != "main"; });
  if (functions.empty()) out += "    pass\n";
  for (size_t i = 0; i < functions.size(); ++i) {
    if (i > 0) out += "\n";
    out += text_internal::Printer(module.get(), false)
               .function(functions[i].second, functions[i].first->name, text_internal::kIndentStep);
  }
  return out;
}

std::string print(const PrimFunc& func, std::string_view name) {
  return "# from tvm.script import tirx as T\n\n" +
         text_internal::Printer(nullptr, false).function(func, std::string(name), 0);
}

std::string print(const Stmt& stmt) {
  return text_internal::Printer(nullptr, true).stmt_alone(stmt);
}

std::string print(const Expr& expr) {
  return text_internal::Printer(nullptr, true).expr_alone(expr);
}

}  // namespace primjit
