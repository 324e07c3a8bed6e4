// Buffer forms (see forms.h): T.Buffer (a parameter's annotation or a free buffer),
// T.match_buffer, T.alloc_buffer and T.decl_buffer, which share one argument list.
#include <algorithm>

#include "ir/text/forms.h"
#include "ir/text/lowerer.h"

namespace primjit::text_internal {
namespace {

enum class BufferForm { kParam, kMatch, kAlloc, kDecl, kFree, kShared, kLocal };

/// T.Buffer / T.match_buffer / T.alloc_buffer / T.decl_buffer. `data_given` reports whether
/// `data=` was present; `annotations` receives alloc annotations.
Buffer buffer_call(Lowerer& lower, const std::string& name, Loc name_loc, const Ast& call,
                   BufferForm form, const std::string& fname, bool* data_given = nullptr,
                   Annotations* annotations = nullptr) {
  size_t first = form == BufferForm::kMatch ? 1 : 0;
  Slots s = form == BufferForm::kMatch
                ? lower.bind(call, fname,
                             {"param", "shape", "dtype", "data", "strides", "elem_offset", "scope",
                              "align", "offset_factor", "layout"},
                             2, 3)
            : form == BufferForm::kAlloc || form == BufferForm::kDecl ||
                    form == BufferForm::kShared || form == BufferForm::kLocal
                ? lower.bind(call, fname,
                             {"shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                              "offset_factor", "annotations", "layout"},
                             1, 2)
                : lower.bind(call, fname,
                             {"shape", "dtype", "data", "strides", "elem_offset", "scope", "align",
                              "offset_factor", "layout"},
                             1, 2);
  // TVM prints `layout=None` for a buffer without a layout, primjit's only kind.
  if (const Ast* layout = s.args.back(); layout != nullptr && layout->kind != AK::kNone) {
    lower.fail(layout->loc, fname + ": only layout=None is supported (primjit has no layouts)");
  }
  std::vector<Expr> shape = lower.dim_tuple(*s[first]);
  DataType dtype = s[first + 1] != nullptr ? lower.dtype_arg(s[first + 1]) : DataType::Float(32);
  const Ast* data_ast = s[first + 2];
  std::vector<Expr> strides;
  if (s[first + 3] != nullptr) strides = lower.dim_tuple(*s[first + 3]);
  Expr elem_offset;
  if (s[first + 4] != nullptr) elem_offset = lower.expr(*s[first + 4], DataType::Int(32));
  std::optional<std::string> scope;
  if (s[first + 5] != nullptr) scope = lower.string_arg(s[first + 5], "scope");
  if (form == BufferForm::kShared || form == BufferForm::kLocal) {
    // T.alloc_shared / T.alloc_local: T.alloc_buffer with the scope fixed.
    if (scope) lower.fail(s[first + 5]->loc, fname + " takes no scope=; it is in the name");
    scope = form == BufferForm::kShared ? "shared" : "local";
    form = BufferForm::kAlloc;
  }
  int align = s[first + 6] != nullptr ? lower.int_arg(s[first + 6], "align") : 64;
  int offset_factor = s[first + 7] != nullptr ? lower.int_arg(s[first + 7], "offset_factor") : 1;
  if (form == BufferForm::kAlloc || form == BufferForm::kDecl) {
    if (const Ast* ann = s[first + 8]) {
      if (form == BufferForm::kDecl && data_ast != nullptr) {
        lower.fail(ann->loc,
                   "annotations= is only allowed when T.decl_buffer allocates (no data=)");
      }
      *annotations = lower.attr_dict(*ann);
    }
  }
  Var data;
  if (data_ast != nullptr) {
    Expr d = lower.expr(*data_ast);
    const auto* v = d.as<VarNode>();
    if (v == nullptr || !v->is_pointer()) {
      lower.fail(data_ast->loc,
                 "data= must be a pointer variable (T.handle(\"dtype\", \"scope\") or "
                 "another buffer's .data)");
    }
    if (scope && *scope != v->storage_scope) {
      lower.fail(s[first + 5]->loc, "scope \"" + *scope +
                                        "\" differs from the data pointer's scope \"" +
                                        v->storage_scope + "\"");
    }
    data = Var(v);
  } else {
    data = lower.guard(name_loc,
                       [&] { return Var::make_pointer(name, dtype, scope.value_or("global")); });
  }
  if (data_given != nullptr) *data_given = data_ast != nullptr;
  return lower.guard(call.loc, [&] {
    return Buffer::make(data, dtype, shape, strides, elem_offset, name, align, offset_factor);
  });
}

/// def f(A: T.Buffer((n,), "float32")): a handle parameter matched to a buffer.
void buffer_param(Lowerer& lower, const Param& p) {
  FunctionState& state = lower.function_state();
  Var handle = Var::make_handle(p.name);
  Buffer buffer = buffer_call(lower, p.name, p.loc, *p.annotation, BufferForm::kParam, "T.Buffer");
  state.params.push_back(handle);
  state.buffer_map.emplace_back(handle, buffer);
  lower.define_buffer(p.name, p.loc, buffer);
}

/// A = T.Buffer(...): a buffer over existing (or new) data that allocates nothing.
void free_buffer(Lowerer& lower, const StmtAst& s, bool /*top*/, std::vector<Stmt>* /*out*/) {
  const Ast& target = *s.target;
  Buffer buffer =
      buffer_call(lower, target.text, target.loc, *s.value, BufferForm::kFree, "T.Buffer");
  lower.define_buffer(target.text, target.loc, buffer);
}

/// A = T.match_buffer(param, shape, ...): the buffer a handle parameter points to.
void match_buffer(Lowerer& lower, const StmtAst& s, bool top, std::vector<Stmt>* /*out*/) {
  const Ast& target = *s.target;
  const Ast& v = *s.value;
  FunctionState& state = lower.function_state();
  if (!top) {
    lower.fail(v.loc, "T.match_buffer is only allowed at the top level of the function body");
  }
  Slots slots = lower.bind(v, "T.match_buffer",
                           {"param", "shape", "dtype", "data", "strides", "elem_offset", "scope",
                            "align", "offset_factor", "layout"},
                           2, 3);
  const Ast& param = *slots[0];
  if (param.kind != AK::kName)
    lower.fail(param.loc, "T.match_buffer needs a handle parameter name");
  const Entity* e = lower.lookup(param.text);
  if (e == nullptr) lower.fail(param.loc, "undefined name '" + param.text + "'");
  auto is_param = [&](const Var& p) { return e->kind == Entity::kVar && p.same_as(e->var); };
  if (std::none_of(state.params.begin(), state.params.end(), is_param)) {
    lower.fail(param.loc, "'" + param.text + "' is not a parameter of this function");
  }
  for (const auto& [p, b] : state.buffer_map) {
    if (p.same_as(e->var)) {
      lower.fail(param.loc, "parameter '" + param.text + "' already has a buffer");
    }
  }
  Var handle = e->var;
  Buffer buffer =
      buffer_call(lower, target.text, target.loc, v, BufferForm::kMatch, "T.match_buffer");
  state.buffer_map.emplace_back(handle, buffer);
  lower.define_buffer(target.text, target.loc, buffer);
}

/// A = T.alloc_buffer(...), and A = T.decl_buffer(...), which allocates unless given data=.
template <BufferForm kForm>
void alloc_buffer(Lowerer& lower, const StmtAst& s, bool /*top*/, std::vector<Stmt>* out) {
  const Ast& target = *s.target;
  bool data_given = false;
  Annotations annotations;
  Buffer buffer = buffer_call(lower, target.text, target.loc, *s.value, kForm,
                              "T." + s.value->items[0]->text, &data_given, &annotations);
  if (kForm == BufferForm::kDecl && data_given) {
    out->push_back(lower.guard(s.loc, [&] { return DeclBuffer::make(buffer); }));
  } else {
    out->push_back(lower.guard(s.loc, [&] { return AllocBuffer::make(buffer, annotations); }));
  }
  lower.define_buffer(target.text, target.loc, buffer);
}

constexpr Form kForms[] = {
    {.name = "Buffer", .assign = free_buffer, .param = buffer_param},
    {.name = "match_buffer", .assign = match_buffer},
    {.name = "alloc_buffer", .assign = alloc_buffer<BufferForm::kAlloc>},
    {.name = "decl_buffer", .assign = alloc_buffer<BufferForm::kDecl>},
    {.name = "alloc_shared", .assign = alloc_buffer<BufferForm::kShared>},
    {.name = "alloc_local", .assign = alloc_buffer<BufferForm::kLocal>},
};

}  // namespace

std::span<const Form> buffer_forms() { return kForms; }

}  // namespace primjit::text_internal
