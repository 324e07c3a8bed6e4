// FlattenBuffer: multi-dimensional buffers and their accesses become one-dimensional.
//
// Requires: nothing.
// Ensures:  every buffer accessed by BufferLoad/BufferStore is 1-D, compact and not bool.
//           - AllocBuffer/DeclBuffer of an N-d buffer declare a 1-D buffer over the same data;
//           - a parameter buffer keeps its shape in the signature; the body starts with a flat
//             DeclBuffer alias over its data, and accesses go through the alias;
//           - indices are row-major (i0 * s1 + i1) * s2 + i2, or the sum of index * stride
//             when the buffer has explicit strides; a buffer's elem_offset is kept;
//           - bool buffers are stored as int8: loads are cast to bool, stored values to int8.
// Example:
//   def f(A: T.Buffer((4, 8), "float32")):      def f(A: T.Buffer((4, 8), "float32")):
//       for i, j in T.grid(4, 8):           =>      A_1 = T.decl_buffer((32,), data=A.data)
//           A[i, j] = T.float32(0)                  for i, j in T.grid(4, 8):
//                                                       A_1[i * 8 + j] = T.float32(0)
#include <unordered_map>

#include "passes/pass_list.h"
#include "primjit/arith.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

bool needs_flattening(const Buffer& b) {
  return b->ndim() != 1 || !b->strides.empty() || b->dtype.element_of().is_bool();
}

DataType storage_dtype(DataType t) {
  return t.element_of().is_bool() ? DataType::Int(8, t.lanes()) : t;
}

// `e` converted to `t` (constants rebuilt, anything else cast).
Expr to_dtype(const Expr& e, DataType t) {
  if (e.dtype() == t) return e;
  if (std::optional<int64_t> c = as_const_int(e)) return IntImm::make(t, *c);
  return Cast::make(t, e);
}

// Index arithmetic that folds constants and broadcasts a scalar against a vector.
Expr broadcast_to(const Expr& e, int lanes) {
  return lanes > 1 && e.dtype().lanes() == 1 ? Broadcast::make(e, lanes) : e;
}
Expr add(const Expr& a, const Expr& b) {
  std::optional<int64_t> ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca + *cb);
  if (ca && *ca == 0) return b;
  if (cb && *cb == 0) return a;
  int lanes = std::max(a.dtype().lanes(), b.dtype().lanes());
  return Add::make(broadcast_to(a, lanes), broadcast_to(b, lanes));
}
Expr mul(const Expr& a, const Expr& b) {
  std::optional<int64_t> ca = as_const_int(a), cb = as_const_int(b);
  if (ca && cb) return IntImm::make(a.dtype(), *ca * *cb);
  if (cb && *cb == 1) return a;
  if (ca && *ca == 1) return b;
  int lanes = std::max(a.dtype().lanes(), b.dtype().lanes());
  return Mul::make(broadcast_to(a, lanes), broadcast_to(b, lanes));
}

// The index dtype of a buffer: its shape's (int64 if dimensions disagree).
DataType index_dtype(const Buffer& b) {
  DataType t = b->shape.empty() ? DataType::Int(32) : b->shape.front().dtype();
  for (const Expr& e : b->shape) {
    if (e.dtype() != t) return DataType::Int(64);
  }
  return t;
}

// The compact row-major strides of `shape` in dtype `t`: shape[k+1] * ... * shape[n-1].
std::vector<Expr> compact_strides(const std::vector<Expr>& shape, DataType t) {
  std::vector<Expr> strides(shape.size());
  Expr stride = IntImm::make(t, 1);
  for (size_t k = shape.size(); k-- > 0;) {
    strides[k] = stride;
    stride = mul(to_dtype(shape[k], t), stride);
  }
  return strides;
}

// True when `b` has explicit strides that are provably the compact row-major ones: it then
// flattens exactly like the same buffer without strides.
bool has_compact_strides(const Buffer& b) {
  if (b->strides.size() != b->ndim()) return false;
  DataType t = index_dtype(b);
  std::vector<Expr> compact = compact_strides(b->shape, t);
  arith::Analyzer analyzer;
  for (size_t k = 0; k < compact.size(); ++k) {
    Expr stride = to_dtype(b->strides[k], t);
    if (!analyzer.can_prove_equal(stride, compact[k])) return false;
  }
  return true;
}

// `compact`: the buffer has no strides or has_compact_strides.
Expr flat_extent(const Buffer& b, bool compact) {
  DataType t = index_dtype(b);
  if (compact) {
    Expr extent = IntImm::make(t, 1);
    for (const Expr& e : b->shape) extent = mul(extent, to_dtype(e, t));
    return extent;
  }
  // One past the largest element offset: 1 + sum((shape[i] - 1) * strides[i]).
  Expr extent = IntImm::make(t, 1);
  for (size_t i = 0; i < b->ndim(); ++i) {
    Expr last = to_dtype(b->shape[i], t);
    last = as_const_int(last) ? IntImm::make(t, *as_const_int(last) - 1)
                              : Sub::make(last, IntImm::make(t, 1));
    extent = add(extent, mul(last, to_dtype(b->strides[i], t)));
  }
  return extent;
}

Buffer flat_buffer(const Buffer& b, bool compact) {
  return Buffer::make(b->data, storage_dtype(b->dtype), {flat_extent(b, compact)}, {},
                      b->elem_offset, b->name, b->data_alignment, b->offset_factor);
}

// The flat index: sum(index[k] * stride[k]), with the compact row-major strides when the buffer
// has none (or has exactly those), so `A[i, j, k]` of shape (n, m, 8) becomes
// `i * (m * 8) + j * 8 + k` whichever way the layout was spelled.
Expr flat_index(const Buffer& b, bool compact, const std::vector<Expr>& indices) {
  if (indices.empty()) return make_const(0);
  DataType t = indices.front().dtype().element_of();
  auto as_index = [&](const Expr& e) { return e.dtype().element_of() == t ? e : to_dtype(e, t); };
  std::vector<Expr> strides;
  if (compact) {
    strides = compact_strides(b->shape, t);
  } else {
    for (const Expr& stride : b->strides) strides.push_back(as_index(stride));
  }
  Expr index = IntImm::make(t, 0);
  for (size_t k = 0; k < indices.size(); ++k) {
    index = add(index, mul(as_index(indices[k]), strides[k]));
  }
  return index;
}

class Flattener : public StmtExprMutator {
 public:
  PrimFunc run(const PrimFunc& func) {
    std::vector<Stmt> aliases;
    for (const auto& [param, buffer] : func->buffer_map) {
      if (!needs_flattening(buffer) || flat_.count(buffer.get()) > 0) continue;
      aliases.push_back(DeclBuffer::make(add_entry(buffer, buffer)));
    }
    Stmt body = mutate_stmt(func->body);
    if (aliases.empty()) return func.with_body(body);
    aliases.push_back(body);
    return func.with_body(SeqStmt::make(std::move(aliases)));
  }

  Stmt mutate(const AllocBuffer* op) override {
    if (!needs_flattening(op->buffer)) return StmtExprMutator::mutate(op);
    return AllocBuffer::make(flatten_def(op->buffer), op->annotations);
  }

  Stmt mutate(const DeclBuffer* op) override {
    if (!needs_flattening(op->buffer)) return StmtExprMutator::mutate(op);
    return DeclBuffer::make(flatten_def(op->buffer));
  }

  Expr mutate(const BufferLoad* op) override {
    auto it = flat_.find(op->buffer.get());
    if (it == flat_.end()) return StmtExprMutator::mutate(op);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    Expr load = BufferLoad::make(it->second.flat,
                                 {flat_index(it->second.original, it->second.compact, indices)});
    return op->buffer->dtype.element_of().is_bool() ? Cast::make(op->dtype, load) : load;
  }

  Stmt mutate(const BufferStore* op) override {
    auto it = flat_.find(op->buffer.get());
    if (it == flat_.end()) return StmtExprMutator::mutate(op);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    Expr value = mutate_expr(op->value);
    if (op->buffer->dtype.element_of().is_bool()) {
      value = Cast::make(storage_dtype(value.dtype()), value);
    }
    return BufferStore::make(it->second.flat, value,
                             {flat_index(it->second.original, it->second.compact, indices)});
  }

  Stmt mutate(const AttrStmt* op) override {
    Stmt s = StmtExprMutator::mutate(op);
    const auto* attr = s.as<AttrStmt>();
    if (const auto* buffer = attr->node.as<BufferNode>()) {
      auto it = flat_.find(buffer);
      if (it != flat_.end()) {
        return AttrStmt::make(it->second.flat, attr->key, attr->value, attr->body);
      }
    }
    return s;
  }

 private:
  struct Entry {
    Buffer original;
    Buffer flat;
    bool compact;  // no strides, or the compact row-major ones
  };

  // Records how accesses to `buffer` (its definition with rewritten shapes: `layout`) flatten;
  // returns the flat buffer.
  Buffer add_entry(const Buffer& buffer, const Buffer& layout) {
    bool compact = layout->strides.empty() || has_compact_strides(layout);
    Buffer flat = flat_buffer(layout, compact);
    flat_.emplace(buffer.get(), Entry{layout, flat, compact});
    return flat;
  }

  Buffer flatten_def(const Buffer& buffer) {
    // Shapes may mention rewritten variables.
    return add_entry(buffer, mutate_buffer_def(buffer));
  }

  std::unordered_map<const BufferNode*, Entry> flat_;
};

}  // namespace

Pass make_flatten_buffer_pass() {
  return function_pass("FlattenBuffer",
                       "multi-dimensional buffers and accesses to 1-D; bool stored as int8",
                       [](const PrimFunc& func) { return Flattener().run(func); });
}

}  // namespace primjit::passes
