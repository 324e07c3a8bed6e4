#include "primjit/ir/stmt.h"

#include "ir/node_key.h"
#include "primjit/error.h"

namespace primjit {
namespace {

void check_stmt(const Stmt& s, const char* node, const char* field) {
  PRIMJIT_USER_CHECK(s.defined()) << node << ": " << field << " is undefined";
}

void check_condition(const Expr& e, const char* node) {
  PRIMJIT_USER_CHECK(e.defined()) << node << ": condition is undefined";
  PRIMJIT_USER_CHECK(e.dtype() == DataType::Bool())
      << node << ": condition must be a scalar bool, got " << e.dtype();
}

bool is_thread_tag(const std::string& tag) {
  return tag == "blockIdx.x" || tag == "blockIdx.y" || tag == "blockIdx.z" ||
         tag == "threadIdx.x" || tag == "threadIdx.y" || tag == "threadIdx.z" || tag == "vthread";
}

}  // namespace

IterVar IterVar::make(Var var, std::string thread_tag) {
  PRIMJIT_USER_CHECK(var.defined()) << "IterVar: variable is undefined";
  PRIMJIT_USER_CHECK(var.dtype().is_integer() && var.dtype().is_scalar())
      << "thread variable '" << var->name << "' must be a scalar integer, got " << var.dtype();
  PRIMJIT_USER_CHECK(thread_tag.empty() || is_thread_tag(thread_tag))
      << "unknown thread tag \"" << thread_tag
      << "\"; use blockIdx.x/y/z, threadIdx.x/y/z or vthread";
  return IterVar(new IterVarNode(node_key(), std::move(var), std::move(thread_tag)));
}

Stmt Bind::make(Var var, Expr value) {
  PRIMJIT_USER_CHECK(var.defined()) << "Bind: variable is undefined";
  PRIMJIT_USER_CHECK(value.defined()) << "Bind of '" << var->name << "': value is undefined";
  PRIMJIT_USER_CHECK(var.dtype() == value.dtype())
      << "Bind: variable '" << var->name << "' has dtype " << var.dtype()
      << " but the value has dtype " << value.dtype();
  return Stmt(new Bind(node_key(), std::move(var), std::move(value)));
}

Stmt AttrStmt::make(Ref<Object> node, std::string key, Expr value, Stmt body) {
  PRIMJIT_USER_CHECK(!key.empty()) << "AttrStmt: key is empty";
  check_stmt(body, "AttrStmt", "body");
  PRIMJIT_USER_CHECK(value.defined()) << "AttrStmt \"" << key << "\": value is undefined";
  if (key == attr::kThreadExtent || key == attr::kVirtualThread) {
    PRIMJIT_USER_CHECK(node.as<IterVarNode>() != nullptr)
        << "AttrStmt \"" << key << "\" needs an IterVar (thread variable) as its node";
    PRIMJIT_USER_CHECK(value.dtype().is_integer() && value.dtype().is_scalar())
        << "thread extent must be a scalar integer, got " << value.dtype();
  }
  return Stmt(
      new AttrStmt(node_key(), std::move(node), std::move(key), std::move(value), std::move(body)));
}

Stmt AssertStmt::make(Expr condition, Expr message) {
  check_condition(condition, "assert");
  const auto* call = message.as<Call>();
  PRIMJIT_USER_CHECK(message.as<StringImm>() != nullptr ||
                     (call != nullptr && call->is_op("format")))
      << "assert: the message must be a string or T.format(...)";
  return Stmt(new AssertStmt(node_key(), std::move(condition), std::move(message)));
}

Stmt BufferStore::make(Buffer buffer, Expr value, std::vector<Expr> indices) {
  Expr load = BufferLoad::make(buffer, indices);  // checks the indices, gives the element type
  PRIMJIT_USER_CHECK(value.defined()) << "store to '" << buffer->name << "': value is undefined";
  PRIMJIT_USER_CHECK(value.dtype() == load.dtype())
      << "store to '" << buffer->name << "': value has dtype " << value.dtype()
      << " but the buffer element" << (load.dtype().lanes() > 1 ? "s" : "") << " accessed "
      << (load.dtype().lanes() > 1 ? "are " : "is ") << load.dtype() << " (insert a Cast)";
  return Stmt(new BufferStore(node_key(), std::move(buffer), std::move(value), std::move(indices)));
}

Stmt AllocBuffer::make(Buffer buffer, Annotations annotations) {
  PRIMJIT_USER_CHECK(buffer.defined()) << "AllocBuffer: buffer is undefined";
  return Stmt(new AllocBuffer(node_key(), std::move(buffer), std::move(annotations)));
}

std::optional<int64_t> AllocBuffer::constant_allocation_size() const {
  int64_t size = 1;
  for (const Expr& extent : buffer->shape) {
    std::optional<int64_t> value = as_const_int(extent);
    if (!value) return std::nullopt;
    size *= *value;
  }
  return size;
}

Stmt DeclBuffer::make(Buffer buffer) {
  PRIMJIT_USER_CHECK(buffer.defined()) << "DeclBuffer: buffer is undefined";
  return Stmt(new DeclBuffer(node_key(), std::move(buffer)));
}

Stmt SeqStmt::make(std::vector<Stmt> seq) {
  std::vector<Stmt> flat;
  flat.reserve(seq.size());
  for (Stmt& s : seq) {
    PRIMJIT_USER_CHECK(s.defined()) << "SeqStmt: undefined statement in a sequence";
    if (const auto* inner = s.as<SeqStmt>()) {
      flat.insert(flat.end(), inner->seq.begin(), inner->seq.end());
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.empty()) return Evaluate::make(make_const(0));
  if (flat.size() == 1) return flat.front();
  return Stmt(new SeqStmt(node_key(), std::move(flat)));
}

const char* for_kind_name(ForKind kind) {
  switch (kind) {
    case ForKind::kSerial:
      return "serial";
    case ForKind::kParallel:
      return "parallel";
    case ForKind::kVectorized:
      return "vectorized";
    case ForKind::kUnrolled:
      return "unroll";
    case ForKind::kThreadBinding:
      return "thread_binding";
  }
  return "?";
}

Stmt For::make(Var loop_var, Expr min, Expr extent, ForKind kind, Stmt body, std::string thread_tag,
               Annotations annotations) {
  PRIMJIT_USER_CHECK(loop_var.defined()) << "For: loop variable is undefined";
  const std::string& name = loop_var->name;
  PRIMJIT_USER_CHECK(loop_var.dtype().is_integer() && loop_var.dtype().is_scalar())
      << "loop variable '" << name << "' must be a scalar integer, got " << loop_var.dtype();
  PRIMJIT_USER_CHECK(min.defined() && extent.defined())
      << "loop over '" << name << "': min and extent must be defined";
  PRIMJIT_USER_CHECK(min.dtype() == loop_var.dtype() && extent.dtype() == loop_var.dtype())
      << "loop over '" << name << "' (" << loop_var.dtype() << "): min (" << min.dtype()
      << ") and extent (" << extent.dtype() << ") must have the loop variable's dtype";
  check_stmt(body, "For", "body");
  PRIMJIT_USER_CHECK((kind == ForKind::kThreadBinding) == !thread_tag.empty())
      << "loop over '" << name << "': a thread tag is required for thread_binding loops and "
      << "only allowed there";
  PRIMJIT_USER_CHECK(thread_tag.empty() || is_thread_tag(thread_tag))
      << "loop over '" << name << "': unknown thread tag \"" << thread_tag << "\"";
  return Stmt(new For(node_key(), std::move(loop_var), std::move(min), std::move(extent), kind,
                      std::move(body), std::move(thread_tag), std::move(annotations)));
}

Stmt While::make(Expr condition, Stmt body) {
  check_condition(condition, "while");
  check_stmt(body, "While", "body");
  return Stmt(new While(node_key(), std::move(condition), std::move(body)));
}

Stmt IfThenElse::make(Expr condition, Stmt then_case, Stmt else_case) {
  check_condition(condition, "if");
  check_stmt(then_case, "IfThenElse", "then branch");
  return Stmt(
      new IfThenElse(node_key(), std::move(condition), std::move(then_case), std::move(else_case)));
}

Stmt Evaluate::make(Expr value) {
  PRIMJIT_USER_CHECK(value.defined()) << "Evaluate: value is undefined";
  return Stmt(new Evaluate(node_key(), std::move(value)));
}

}  // namespace primjit
