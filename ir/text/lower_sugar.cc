// Lowering of the forms TVM's printer writes for IR that primjit spells another way (see
// tests/tvmscript/README.md for each rule and its evidence in TVM's source):
//  - annotated assignments: `x: T.let[t] = v` / `x: T.let = v` (Binds), and one-element buffers
//    `x: T.dtype [= v]` (with the tirx header, or without a value);
//  - assignments to and reads of one-element buffers by their bare name (`acc = acc + 1`);
//  - buffer views `X = P.view(...)`;
//  - targets as config dicts, `T.target({"kind": "cuda", "arch": "sm_90", ...})`;
//  - symbolic dimensions written as strings in buffer annotations, `T.Buffer(("n + 1", 16))`.
#include <cctype>
#include <limits>
#include <set>

#include "ir/text/forms.h"
#include "ir/text/lexer.h"
#include "ir/text/lowerer.h"
#include "ir/text/syntax_parser.h"

namespace primjit::text_internal {

bool is_scalar_buffer(const Buffer& buffer) {
  if (buffer->ndim() != 1) return false;
  const auto* extent = buffer->shape[0].as<IntImm>();
  return extent != nullptr && extent->value == 1;
}

namespace {

/// `T.<dtype>` as a bare annotation (no call, not a handle), else nullopt.
std::optional<DataType> plain_dtype(const Ast& ann) {
  std::optional<std::string> type = ns_attr(ann, "T");
  DataType t;
  if (!type || *type == "handle" || !DataType::try_parse(*type, &t) || t.is_void()) {
    return std::nullopt;
  }
  return t;
}

}  // namespace

// --- annotated assignments and one-element buffers ------------------------------------------

void Lowerer::annotated(const StmtAst& s, std::vector<Stmt>* out) {
  if (s.target->kind != AK::kName) fail(s.target->loc, "only a plain name can be annotated");
  const std::string& name = s.target->text;
  Loc loc = s.target->loc;
  const Ast& ann = *s.annotation;
  bool let_type = ann.kind == AK::kSubscript && ns_attr(*ann.items[0], "T") == "let";
  if (let_type || ns_attr(ann, "T") == "let") {
    if (!s.value) fail(loc, "a T.let binding needs a value: " + name + ": T.let[T.int32] = value");
    if (let_type && ann.items.size() != 2) fail(ann.loc, "T.let[...] takes one type");
    Var var;
    Expr value;
    if (let_type) {
      var = rebound_or(name, typed_var(name, *ann.items[1], loc));
      value = expr(*s.value, var.dtype());
    } else {
      value = expr(*s.value);
      var = rebound_or(name, inferred_var(name, value, loc));
    }
    out->push_back(guard(s.loc, [&] { return Bind::make(var, value); }));
    define_var(name, loc, var);
    return;
  }
  std::optional<DataType> dtype = plain_dtype(ann);
  if (!s.value || (tirx_ && dtype)) {
    if (!dtype) {
      fail(ann.loc, "a one-element buffer '" + name + ": T.dtype' needs a type such as T.float32");
    }
    Expr value;
    if (s.value) value = expr(*s.value, *dtype);
    scalar_buffer(name, loc, *dtype, value, s.loc, out);
    return;
  }
  Var var = rebound_or(name, typed_var(name, ann, loc));
  Expr value = expr(*s.value, var.dtype());
  out->push_back(guard(s.loc, [&] { return Bind::make(var, value); }));
  define_var(name, loc, var);
}

void Lowerer::scalar_buffer(const std::string& name, Loc name_loc, DataType dtype,
                            const Expr& value, Loc loc, std::vector<Stmt>* out) {
  Buffer buffer = guard(name_loc, [&] {
    Var data = Var::make_pointer(name, dtype, "local");
    return Buffer::make(data, dtype, {make_const(DataType::Int(32), 1)}, {}, Expr(), name);
  });
  out->push_back(guard(loc, [&] { return AllocBuffer::make(buffer); }));
  if (value.defined()) {
    out->push_back(guard(
        loc, [&] { return BufferStore::make(buffer, value, {make_const(DataType::Int(32), 0)}); }));
  }
  define_buffer(name, name_loc, buffer);
}

bool Lowerer::sugar_assignment(const StmtAst& s, std::vector<Stmt>* out) {
  const std::string& name = s.target->text;
  const Ast& v = *s.value;
  std::optional<std::string> fn = t_call(v);
  bool definition = false;
  if (fn) {
    const Form* form = find_form(*fn);
    DataType t;
    definition = (form != nullptr && form->assign != nullptr) || *fn == "handle" ||
                 (DataType::try_parse(*fn, &t) && !t.is_void() && num_args(v) == 0);
  }
  if (definition) return false;
  const Entity* e = lookup(name);
  if (e != nullptr && e->kind == Entity::kBuffer && is_scalar_buffer(e->buffer)) {
    // `acc = value`: a store to the one element.
    Buffer buffer = e->buffer;
    Expr value = expr(v, buffer->dtype);
    out->push_back(guard(s.loc, [&] {
      return BufferStore::make(buffer, value, {make_const(DataType::Int(32), 0)});
    }));
    return true;
  }
  if (v.kind == AK::kCall && v.items[0]->kind == AK::kAttr &&
      v.items[0]->items[0]->kind == AK::kName) {
    const Entity* parent = lookup(v.items[0]->items[0]->text);
    if (parent != nullptr && parent->kind == Entity::kBuffer) {
      buffer_view(s, parent->buffer, out);
      return true;
    }
  }
  if (!tirx_) return false;
  // With the tirx header, `x = value` with a new name is a one-element local buffer, and a
  // pointer value (or a name that is already a variable) a Bind.
  Expr value = expr(v);
  const auto* var = value.as<VarNode>();
  if ((var != nullptr && var->is_pointer()) || (e != nullptr && e->kind == Entity::kVar)) {
    Var bound = rebound_or(name, inferred_var(name, value, s.target->loc));
    out->push_back(guard(s.loc, [&] { return Bind::make(bound, value); }));
    define_var(name, s.target->loc, bound);
    return true;
  }
  scalar_buffer(name, s.target->loc, value.dtype(), value, s.loc, out);
  return true;
}

/// X = P.view(d0, d1, ...) or X = P.view("dtype"): a DeclBuffer over P's data.
void Lowerer::buffer_view(const StmtAst& s, const Buffer& parent, std::vector<Stmt>* out) {
  const Ast& call = *s.value;
  const std::string& method = call.items[0]->text;
  const std::string parent_name = call.items[0]->items[0]->text;
  const std::string fname = parent_name + "." + method;
  if (method == "local" || method == "permute" || method == "partition") {
    fail(call.loc, fname + "(...) needs buffer layouts, which primjit does not have; write " +
                       "X = T.decl_buffer(shape, dtype, data=" + parent_name + ".data, ...)");
  }
  if (method != "view") {
    fail(call.items[0]->op_loc,
         "unknown buffer method '" + method + "'; expected " + parent_name + ".view(...)");
  }
  if (num_args(call) == 0) fail(call.loc, fname + " needs a shape or a dtype");
  if (!call.keywords.empty()) {
    fail(call.keywords.front().loc, fname + " takes no keyword arguments (layouts are TVM-only)");
  }
  DataType dtype = parent->dtype;
  std::vector<Expr> shape;
  if (num_args(call) == 1 && arg(call, 0).kind == AK::kString) {
    // A reinterpreting view: the last dimension scales by the ratio of the element sizes in
    // memory (a bool takes a byte). Strides and elem_offset count elements of the parent's
    // dtype, so only a compact parent with offset 0 can change dtype.
    dtype = dtype_arg(&arg(call, 0));
    shape = parent->shape;
    const auto* offset = parent->elem_offset.as<IntImm>();
    if (shape.empty() || !parent->strides.empty() || offset == nullptr || offset->value != 0) {
      fail(call.loc, fname + ": only a compact buffer of at least one dimension with offset 0 " +
                         "can change dtype; '" + parent_name + "' is not one");
    }
    auto storage_bits = [](DataType d) -> int64_t {
      return int64_t{d.is_bool() ? 8 : d.bits()} * d.lanes();
    };
    const int64_t from = storage_bits(parent->dtype);
    const int64_t to = storage_bits(dtype);
    const auto* k = shape.back().as<IntImm>();
    // The dimension is at most 2^63 and from at most 64 * 1024 bits: the product fits in 128.
    const __int128 scaled = k == nullptr ? -1 : static_cast<__int128>(k->value) * from;
    if (k == nullptr || scaled % to != 0 || scaled / to > std::numeric_limits<int32_t>::max()) {
      fail(call.loc, fname + ": the last dimension of '" + parent_name +
                         "' must be a constant that the dtype change divides");
    }
    shape.back() = make_const(shape.back().dtype(), static_cast<int64_t>(scaled / to));
  } else {
    for (size_t i = 0; i < num_args(call); ++i)
      shape.push_back(expr(arg(call, i), DataType::Int(32)));
  }
  const std::string& name = s.target->text;
  Buffer buffer = guard(call.loc, [&] {
    return Buffer::make(parent->data, dtype, shape, parent->strides, parent->elem_offset, name,
                        parent->data_alignment, parent->offset_factor);
  });
  out->push_back(guard(s.loc, [&] { return DeclBuffer::make(buffer); }));
  define_buffer(name, s.target->loc, buffer);
}

// --- targets --------------------------------------------------------------------------------

Target Lowerer::host_target(const Ast& h) {
  if (h.kind == AK::kString) return guard(h.loc, [&] { return Target::make(h.text); });
  if (h.kind == AK::kDict) return target_dict(h, nullptr);
  if (t_call(h) == "target") return target(h);
  fail(h.loc, "host= expects a target kind string such as \"llvm\", a dict or T.target(...)");
}

/// TVM's config dict: kind, arch and host are primjit's target; the keys TVM fills in with their
/// defaults (tag "", keys, max_num_threads, thread_warp_size, and mtriple, which TVM derives from
/// the machine) are dropped; anything else is an error naming the key.
Target Lowerer::target_dict(const Ast& d, const Ast* host_kw) {
  const Ast* kind_ast = nullptr;
  for (size_t i = 0; i < d.items.size(); i += 2) {
    const Ast& key = *d.items[i];
    if (key.kind != AK::kString) fail(key.loc, "target dict keys must be strings");
    if (key.text == "kind") kind_ast = d.items[i + 1].get();
  }
  if (kind_ast == nullptr) fail(d.loc, "the target dict needs a \"kind\"");
  const std::string kind = string_arg(kind_ast, "the target kind");
  std::string arch;
  Target host;
  std::set<std::string> seen;
  for (size_t i = 0; i < d.items.size(); i += 2) {
    const Ast& key = *d.items[i];
    const Ast& value = *d.items[i + 1];
    if (!seen.insert(key.text).second) fail(key.loc, "target key \"" + key.text + "\" given twice");
    auto list_is = [&](std::initializer_list<const char*> want) {
      if (value.kind != AK::kList || value.items.size() != want.size()) return false;
      size_t j = 0;
      for (const char* w : want) {
        if (value.items[j]->kind != AK::kString || value.items[j]->text != w) return false;
        ++j;
      }
      return true;
    };
    bool ok = true;
    if (key.text == "kind") {
      continue;
    } else if (key.text == "arch") {
      arch = string_arg(&value, "arch");
    } else if (key.text == "host") {
      if (host_kw != nullptr) fail(key.loc, "the host is given twice (in the dict and host=)");
      host = host_target(value);
    } else if (key.text == "tag") {
      ok = value.kind == AK::kString && value.text.empty();
    } else if (key.text == "keys") {
      ok = kind == "llvm" ? list_is({"cpu"}) : kind == "cuda" && list_is({"cuda", "gpu"});
    } else if (key.text == "mtriple") {
      ok = kind == "llvm" && value.kind == AK::kString;
    } else if (key.text == "max_num_threads") {
      ok = kind == "cuda" && int_literal(value) == 1024;
    } else if (key.text == "thread_warp_size") {
      ok = kind == "cuda" && int_literal(value) == 32;
    } else {
      fail(key.loc, "unsupported target key \"" + key.text +
                        "\"; primjit's targets hold only \"kind\", \"arch\" and \"host\"");
    }
    if (!ok) {
      fail(value.loc, "unsupported value for target key \"" + key.text + "\" of a " + kind +
                          " target; only TVM's default is accepted (and dropped)");
    }
  }
  if (host_kw != nullptr) host = host_target(*host_kw);
  return guard(d.loc, [&] { return Target::make(kind, arch, host); });
}

// --- symbolic dimensions --------------------------------------------------------------------

Expr Lowerer::dim_expr(const Ast& a) {
  if (a.kind != AK::kString) return expr(a, DataType::Int(32));
  // TVM quotes a shape or stride variable where it is first bound: "n" is a new int32 variable
  // (or the one already named n), and a later `n = T.int32()` names the same variable.
  const std::string& name = a.text;
  bool identifier = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0]));
  for (char c : name)
    identifier = identifier && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!identifier) return quoted_dim(a);
  if (const Entity* e = lookup(name)) {
    if (e->kind != Entity::kVar) fail(a.loc, "'" + name + "' is not a variable");
    return e->var;
  }
  Var var = guard(a.loc, [&] { return Var::make(name, DataType::Int(32)); });
  define_var(name, a.loc, var);
  implicit_vars_.insert(name);
  return var;
}

/// A quoted dimension expression ("n + 1", "T.max(n, 1)"): read as an expression in which every
/// name not defined yet is a new int32 variable, as TVM reads it.
Expr Lowerer::quoted_dim(const Ast& a) {
  try {
    Source source(a.text, "<dimension>");
    AstPtr tree = parse_expression(source, tokenize(source));
    std::vector<const Ast*> stack = {tree.get()};
    while (!stack.empty()) {
      const Ast* node = stack.back();
      stack.pop_back();
      if (node->kind == AK::kName && node->text != "T" && lookup(node->text) == nullptr) {
        define_var(node->text, a.loc, Var::make(node->text, DataType::Int(32)));
        implicit_vars_.insert(node->text);
      }
      for (const AstPtr& item : node->items) stack.push_back(item.get());
      for (const Keyword& kw : node->keywords) stack.push_back(kw.value.get());
    }
    return expr(*tree, DataType::Int(32));
  } catch (const ParseError& e) {
    fail(a.loc, "in the quoted dimension \"" + a.text + "\": " + e.message());
  }
}

std::vector<Expr> Lowerer::dim_tuple(const Ast& a) {
  if (a.kind != AK::kTuple && a.kind != AK::kList) return {dim_expr(a)};
  std::vector<Expr> out;
  for (const AstPtr& item : a.items) out.push_back(dim_expr(*item));
  return out;
}

}  // namespace primjit::text_internal
