// MergeSharedMemoryAllocations: the shared-memory buffers of each kernel launch share one
// merged uint8 allocation, reusing the bytes of buffers that are dead.
//
// Requires: FlattenBuffer (only 1-D, compact buffers are merged; others are left alone).
// Ensures:  within each outermost thread_extent AttrStmt (a kernel launch; nested launches
//           belong to it), when two or more `shared.dyn` AllocBuffers (also `shared` ones with
//           MergeSharedMemoryAllocations{static=1}, in a separate `buf_shmem`) can be merged:
//           - the launch body starts with `buf_dyn_shmem = T.alloc_buffer((bytes,), "uint8")`
//             followed by one DeclBuffer view per merged buffer, in first-touch order (ties by
//             name): same name and dtype, data = the merged pointer, shape (offset + extent,);
//           - the old AllocBuffers are removed; accesses use the view with the element offset
//             folded into the index: `A[i]` becomes `A_view[offset / sizeof(A) + i]`
//             (elem_offset stays 0: codegen does not read it). DeclBuffer aliases,
//             tvm_access_ptr (offset in annotation-dtype units) and ptx_cp_async (offset in
//             pointee units) are rewritten the same way;
//           - liveness: the launch body is linearized into points (statements of its
//             sequences, looking through nested thread_extents; a For/While/If is one point);
//             a buffer is live from its first to its last touching point. Buffers live at a
//             common point never share bytes;
//           - constant sizes: best fit over freed blocks (smallest fitting block, split,
//             coalesced on free); a buffer is aligned to lcm(data_alignment, every element
//             size it is accessed with). Symbolic sizes get their own region after the
//             constant ones. "volatile" annotations carry over to the merged allocation.
//           A launch with at most one mergeable buffer, and allocations outside launches, are
//           unchanged.
//           Reuse is per statement: like TVM, it relies on a barrier (ThreadSync, which treats
//           all shared.dyn accesses as one buffer) between the last use of a buffer and the
//           first use of another in the same bytes.
// Example (A is dead before B is first touched, so B reuses A's bytes):
//   with T.launch_thread("threadIdx.x", 128) as tx:
//       A = T.alloc_buffer((128,), "float32", scope="shared.dyn")
//       B = T.alloc_buffer((128,), "float32", scope="shared.dyn")
//       A[tx] = T.float32(0)
//       B[tx] = T.float32(1)
//   =>
//   with T.launch_thread("threadIdx.x", 128) as tx:
//       buf_dyn_shmem = T.alloc_buffer((512,), "uint8", scope="shared.dyn")
//       A = T.decl_buffer((128,), "float32", data=buf_dyn_shmem.data)
//       B = T.decl_buffer((128,), "float32", data=buf_dyn_shmem.data)
//       A[tx] = T.float32(0)
//       B[tx] = T.float32(1)
// (Were both live together, B would be declared with shape (256,) and accessed as B[tx + 128].)
#include <algorithm>
#include <array>
#include <climits>
#include <map>
#include <numeric>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "passes/pass_list.h"
#include "passes/pass_options.h"
#include "primjit/arith.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

bool is_thread_extent(const Stmt& s) {
  const auto* attr_stmt = s.as<AttrStmt>();
  return attr_stmt != nullptr && attr_stmt->key == attr::kThreadExtent;
}

Expr broadcast_to(const Expr& e, int lanes) {
  return lanes > 1 && e.dtype().lanes() == 1 ? Broadcast::make(e, lanes) : e;
}
Expr to_dtype(const Expr& e, DataType t) {
  if (e.dtype() == t) return e;
  if (std::optional<int64_t> c = as_const_int(e)) return IntImm::make(t, *c);
  return Cast::make(t, e);
}
// a + b with constant folding; `b` is a scalar converted to a's element type.
Expr add_offset(const Expr& a, const Expr& b) {
  Expr off = to_dtype(b, a.dtype().element_of());
  std::optional<int64_t> cb = as_const_int(off);
  if (cb && *cb == 0) return a;
  std::optional<int64_t> ca = as_const_int(a);
  if (ca && cb) return IntImm::make(a.dtype(), *ca + *cb);
  return Add::make(a, broadcast_to(off, a.dtype().lanes()));
}
// offset_bytes / bytes, exact by construction (offsets are multiples of the alignment).
Expr div_exact(const Expr& offset_bytes, int64_t bytes) {
  if (std::optional<int64_t> c = as_const_int(offset_bytes)) {
    return IntImm::make(offset_bytes.dtype(), *c / bytes);
  }
  if (bytes == 1) return offset_bytes;
  return arith::simplify(FloorDiv::make(offset_bytes, IntImm::make(offset_bytes.dtype(), bytes)));
}
Expr round_up(const Expr& e, int64_t align) {
  if (std::optional<int64_t> c = as_const_int(e)) {
    return IntImm::make(e.dtype(), (*c + align - 1) / align * align);
  }
  Expr a = IntImm::make(e.dtype(), align);
  return arith::simplify(
      Mul::make(FloorDiv::make(Add::make(e, IntImm::make(e.dtype(), align - 1)), a), a));
}

// An annotation value that says "true": a bool, a non-zero integer or a non-zero constant.
bool is_true(const AttrValue& v) {
  if (v.is_bool()) return v.as_bool();
  if (v.is_int()) return v.as_int() != 0;
  if (v.is_expr()) {
    std::optional<int64_t> c = as_const_int(v.as_expr());
    return c && *c != 0;
  }
  return false;
}

// The unit of a tvm_access_ptr offset, in bytes: the dtype of the type annotation, or the
// pointer's element type when the annotation is an opaque handle.
int64_t access_ptr_unit(const Expr& annotation, const VarNode* data) {
  DataType t = annotation.dtype().is_handle() ? data->pointee : annotation.dtype();
  return std::max(1, t.bytes());
}

// What a launch body does with shared pointers: allocations, aliases, the element sizes each
// pointer is accessed with, pointers with unsupported uses, and variables it defines.
class LaunchScanner : public StmtExprVisitor {
 public:
  explicit LaunchScanner(std::string scope) : scope_(std::move(scope)) {}

  std::vector<const AllocBuffer*> allocs;
  std::unordered_map<const VarNode*, std::vector<Buffer>> aliases;
  // The lcm of the element sizes each pointer is accessed with.
  std::unordered_map<const VarNode*, int64_t> elem_align;
  std::unordered_set<const VarNode*> bare_uses;
  std::unordered_set<const VarNode*> defined_vars;

  void visit(const AllocBuffer* op) override {
    if (op->buffer->scope() == scope_) allocs.push_back(op);
    visit_fields(op->buffer);
  }
  void visit(const DeclBuffer* op) override {
    aliases[op->buffer->data.get()].push_back(op->buffer);
    visit_fields(op->buffer);
  }
  void visit(const Bind* op) override {
    defined_vars.insert(op->var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const For* op) override {
    defined_vars.insert(op->loop_var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const AttrStmt* op) override {
    if (const IterVarNode* iv = op->iter_var()) defined_vars.insert(iv->var.get());
    // An attribute on a pointer or a buffer pins that pointer: it is not merged.
    if (const auto* v = op->node.as<VarNode>()) bare_uses.insert(v);
    if (const auto* b = op->node.as<BufferNode>()) bare_uses.insert(b->data.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const Let* op) override {
    defined_vars.insert(op->var.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const BufferLoad* op) override {
    accessed(op->buffer->data.get(), op->buffer->dtype.bytes());
    StmtExprVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    accessed(op->buffer->data.get(), op->buffer->dtype.bytes());
    StmtExprVisitor::visit(op);
  }
  void visit(const Call* op) override {
    std::set<size_t> pointer_args;
    if (op->is_op("tvm_access_ptr") && op->args.size() == 5) {
      if (const auto* v = op->args[1].as<VarNode>()) {
        accessed(v, access_ptr_unit(op->args[0], v));
        pointer_args.insert(1);
      }
    } else if (op->is_op("ptx_cp_async") && op->args.size() >= 4) {
      for (size_t k : {size_t{0}, size_t{2}}) {
        if (const auto* v = op->args[k].as<VarNode>()) {
          accessed(v, std::max(1, v->pointee.bytes()));
          pointer_args.insert(k);
        }
      }
    }
    for (size_t k = 0; k < op->args.size(); ++k) {
      if (pointer_args.count(k) == 0) visit_expr(op->args[k]);
    }
  }
  void visit(const VarNode* op) override { bare_uses.insert(op); }

 private:
  void accessed(const VarNode* v, int64_t bytes) {
    int64_t& a = elem_align.try_emplace(v, 1).first->second;
    if (bytes > 0 && a % bytes != 0) a = std::lcm(a, bytes);
  }
  void visit_fields(const Buffer& b) {
    for (const Expr& e : b->shape) visit_expr(e);
    for (const Expr& e : b->strides) visit_expr(e);
    visit_expr(b->elem_offset);
  }
  std::string scope_;
};

// Live ranges over the points of a launch: for each candidate pointer the first and last point
// that touches it (accesses, aliases, calls, bare uses), and the point that allocates it.
class LivenessCollector : public StmtExprVisitor {
 public:
  using Range = std::pair<int64_t, int64_t>;
  explicit LivenessCollector(const std::unordered_set<const VarNode*>& candidates)
      : candidates_(candidates) {
    touched.reserve(candidates.size());
    allocated.reserve(candidates.size());
  }
  std::unordered_map<const VarNode*, Range> touched, allocated;

  void visit_point(const Stmt& s, int64_t at) {
    at_ = at;
    visit_stmt(s);
  }
  void visit(const AllocBuffer* op) override {
    allocated.try_emplace(op->buffer->data.get(), at_, at_);
  }
  void visit(const BufferLoad* op) override {
    note(op->buffer->data.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const BufferStore* op) override {
    note(op->buffer->data.get());
    StmtExprVisitor::visit(op);
  }
  void visit(const VarNode* op) override { note(op); }

 private:
  void note(const VarNode* v) {
    if (candidates_.count(v) == 0) return;
    touched.try_emplace(v, at_, at_).first->second.second = at_;
  }
  const std::unordered_set<const VarNode*>& candidates_;
  int64_t at_ = 0;
};

// The points of a launch body: statements of its sequences, looking through nested launches.
void linearize(const Stmt& s, std::vector<Stmt>* points) {
  if (const auto* seq = s.as<SeqStmt>()) {
    for (const Stmt& c : seq->seq) linearize(c, points);
  } else if (is_thread_extent(s)) {
    linearize(s.as<AttrStmt>()->body, points);
  } else {
    points->push_back(s);
  }
}

struct Placement {
  Buffer buffer;      // the original allocation
  Expr size_bytes;    // int32 or int64
  int64_t align = 1;  // bytes
  int64_t first = 0;  // live range over the points, inclusive
  int64_t last = 0;
  Expr offset;  // bytes from the start of the merged buffer
};

// The bytes a constant-size buffer occupies in the plan; an empty buffer still takes one
// byte so that every placement is a non-empty block.
int64_t planned_size(const Placement& p) {
  return std::max<int64_t>(1, *as_const_int(p.size_bytes));
}

// Free space of the plan: blocks by offset (for coalescing) and by (size, offset) (for best
// fit), both coalesced. The block that ends at the plan's end can grow.
class FreeBlocks {
 public:
  void add(int64_t off, int64_t size) {
    auto [pos, inserted] = by_offset_.emplace(off, size);
    PRIMJIT_ICHECK(inserted) << "double free in the shared memory plan";
    auto next = std::next(pos);
    if (next != by_offset_.end() && pos->first + pos->second == next->first) {
      by_size_.erase({next->second, next->first});
      pos->second += next->second;
      by_offset_.erase(next);
    }
    if (pos != by_offset_.begin()) {
      auto prev = std::prev(pos);
      if (prev->first + prev->second == pos->first) {
        by_size_.erase({prev->second, prev->first});
        prev->second += pos->second;
        by_offset_.erase(pos);
        pos = prev;
      }
    }
    by_size_.emplace(pos->second, pos->first);
  }
  void remove(int64_t off) {
    auto it = by_offset_.find(off);
    by_size_.erase({it->second, it->first});
    by_offset_.erase(it);
  }
  // The smallest block (lowest offset among equals) where `size` bytes fit at an `align`ed
  // start: {offset, block size, aligned start}, or none.
  std::optional<std::array<int64_t, 3>> best_fit(int64_t size, int64_t align) const {
    for (auto it = by_size_.lower_bound({size, INT64_MIN}); it != by_size_.end(); ++it) {
      auto [bsize, off] = *it;
      int64_t start = (off + align - 1) / align * align;
      // Only alignment can make a block that is large enough miss; blocks of size + align - 1
      // bytes always fit, so the scan is short.
      if (start + size <= off + bsize) return std::array<int64_t, 3>{off, bsize, start};
    }
    return std::nullopt;
  }
  // The block that ends at `end`, if any: {offset, size}.
  std::optional<std::pair<int64_t, int64_t>> ending_at(int64_t end) const {
    if (by_offset_.empty()) return std::nullopt;
    auto last = std::prev(by_offset_.end());
    if (last->first + last->second != end) return std::nullopt;
    return *last;
  }

 private:
  std::map<int64_t, int64_t> by_offset_;           // offset -> size
  std::set<std::pair<int64_t, int64_t>> by_size_;  // (size, offset)
};

// Lays out `items` (sorted by first touch): best fit for constant sizes, then one region per
// symbolic size. Returns the total size in bytes. O(n log n): live buffers wait in a heap on
// their last point, free blocks are ordered by size.
Expr plan(std::vector<Placement>* items, DataType index_type) {
  FreeBlocks free_blocks;
  int64_t end = 0;
  // Live buffers, the one that dies first on top (ties: in placement order).
  using Dying = std::pair<int64_t, size_t>;  // last point, index
  std::priority_queue<Dying, std::vector<Dying>, std::greater<Dying>> live;
  for (size_t idx = 0; idx < items->size(); ++idx) {
    Placement& p = (*items)[idx];
    if (!as_const_int(p.size_bytes)) continue;
    // Frees of buffers dead before this point, then the allocation.
    while (!live.empty() && live.top().first < p.first) {
      const Placement& q = (*items)[live.top().second];
      free_blocks.add(*as_const_int(q.offset), planned_size(q));
      live.pop();
    }
    int64_t size = planned_size(p);
    // Best fit: the smallest free block that holds the aligned buffer; else the free block at
    // the end, which grows; else the end itself.
    int64_t start = 0;
    if (auto fit = free_blocks.best_fit(size, p.align)) {
      auto [off, bsize, aligned] = *fit;
      start = aligned;
      free_blocks.remove(off);
      if (start > off) free_blocks.add(off, start - off);
      if (start + size < off + bsize) free_blocks.add(start + size, off + bsize - start - size);
    } else if (auto tail = free_blocks.ending_at(end)) {
      auto [off, bsize] = *tail;
      start = (off + p.align - 1) / p.align * p.align;
      free_blocks.remove(off);
      if (start > off) free_blocks.add(off, start - off);
      end = std::max(end, start + size);
    } else {
      start = (end + p.align - 1) / p.align * p.align;
      if (start > end) free_blocks.add(end, start - end);
      end = start + size;
    }
    p.offset = IntImm::make(index_type, start);
    live.emplace(p.last, idx);
  }
  Expr total = IntImm::make(index_type, end);
  for (Placement& p : *items) {
    if (as_const_int(p.size_bytes)) continue;
    p.offset = round_up(total, p.align);
    total = arith::simplify(Add::make(p.offset, to_dtype(p.size_bytes, index_type)));
  }
  return total;
}

class Merger : public StmtExprMutator {
 public:
  Merger(std::string scope, std::string merged_name)
      : scope_(std::move(scope)), merged_name_(std::move(merged_name)) {}

  Stmt mutate(const AttrStmt* op) override {
    if (op->key != attr::kThreadExtent || in_launch_) return StmtExprMutator::mutate(op);
    in_launch_ = true;
    Stmt body = merge_launch(op->body);
    in_launch_ = false;
    if (body.same_as(op->body)) return Stmt(op);
    return AttrStmt::make(op->node, op->key, op->value, body);
  }

  Stmt mutate(const AllocBuffer* op) override {
    if (views_.count(op->buffer.get()) > 0) return removed_;
    return StmtExprMutator::mutate(op);
  }

  Stmt mutate(const DeclBuffer* op) override {
    auto it = offsets_.find(op->buffer->data.get());
    if (it == offsets_.end()) return StmtExprMutator::mutate(op);
    Buffer view = make_view(op->buffer, it->second);
    return DeclBuffer::make(view);
  }

  Stmt mutate(const SeqStmt* op) override {
    return mutate_seq(
        op, [this](const Stmt&, const Stmt& mutated) { return mutated.same_as(removed_); });
  }

  Expr mutate(const BufferLoad* op) override {
    auto it = views_.find(op->buffer.get());
    if (it == views_.end()) return StmtExprMutator::mutate(op);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    return BufferLoad::make(it->second.view, {add_offset(indices[0], it->second.elem_offset)});
  }

  Stmt mutate(const BufferStore* op) override {
    auto it = views_.find(op->buffer.get());
    if (it == views_.end()) return StmtExprMutator::mutate(op);
    std::vector<Expr> indices = op->indices;
    mutate_exprs(op->indices, &indices);
    Expr value = mutate_expr(op->value);
    return BufferStore::make(it->second.view, value,
                             {add_offset(indices[0], it->second.elem_offset)});
  }

  Expr mutate(const Call* op) override {
    Expr e = StmtExprMutator::mutate(op);
    const auto* call = e.as<Call>();
    if (call == nullptr) return e;
    std::vector<Expr> args = call->args;
    bool changed = false;
    auto rewrite = [&](size_t ptr, size_t off, int64_t bytes) {
      const auto* v = args[ptr].as<VarNode>();
      auto it = v == nullptr ? offsets_.end() : offsets_.find(v);
      if (it == offsets_.end()) return;
      args[ptr] = merged_var_;
      args[off] = add_offset(args[off], div_exact(it->second, bytes));
      changed = true;
    };
    if (call->is_op("tvm_access_ptr") && args.size() == 5) {
      if (const auto* v = args[1].as<VarNode>()) rewrite(1, 2, access_ptr_unit(args[0], v));
    } else if (call->is_op("ptx_cp_async") && args.size() >= 4) {
      // The merged pointer is uint8: offsets become bytes.
      for (size_t k : {size_t{0}, size_t{2}}) {
        const auto* v = args[k].as<VarNode>();
        if (v == nullptr || offsets_.count(v) == 0) continue;
        int64_t bytes = std::max(1, v->pointee.bytes());
        args[k + 1] =
            arith::simplify(Mul::make(args[k + 1], IntImm::make(args[k + 1].dtype(), bytes)));
        rewrite(k, k + 1, 1);
      }
    }
    if (!changed) return e;
    return Call::make(call->dtype, call->op, std::move(args));
  }

 private:
  struct View {
    Buffer view;
    Expr elem_offset;
  };

  // A 1-D view over the merged pointer whose extent covers offset + the buffer's extent.
  Buffer make_view(const Buffer& b, const Expr& offset_bytes) {
    Expr elem_offset = div_exact(offset_bytes, b->dtype.bytes());
    Expr extent = b->shape[0];
    Expr shape = add_offset(extent, elem_offset);  // constants fold here
    if (!as_const_int(shape)) shape = arith::simplify(shape);
    Buffer view = Buffer::make(merged_var_, b->dtype, {shape}, {}, b->elem_offset, b->name,
                               b->data_alignment, b->offset_factor);
    views_[b.get()] = View{view, elem_offset};
    return view;
  }

  Stmt merge_launch(const Stmt& body) {
    LaunchScanner scan(scope_);
    scan.visit_stmt(body);
    // Mergeable: 1-D compact, sizes defined outside the launch, only supported pointer uses.
    std::vector<Placement> items;
    std::unordered_set<const VarNode*> candidates;
    candidates.reserve(scan.allocs.size());
    DataType index_type = DataType::Int(32);
    for (const AllocBuffer* alloc : scan.allocs) {
      const Buffer& b = alloc->buffer;
      const VarNode* data = b->data.get();
      bool ok = b->ndim() == 1 && b->strides.empty() && b->dtype.bytes() > 0 &&
                as_const_int(b->elem_offset) == 0 && scan.bare_uses.count(data) == 0;
      if (ok) {
        post_order_visit(b->shape[0], [&](const Ref<Object>& n) {
          if (const auto* v = n.as<VarNode>(); v && scan.defined_vars.count(v)) ok = false;
        });
      }
      int64_t align = b->data_alignment > 0 ? b->data_alignment : 64;
      align = std::lcm(align, int64_t{b->dtype.bytes()});
      if (auto aliases = scan.aliases.find(data); aliases != scan.aliases.end()) {
        for (const Buffer& alias : aliases->second) {
          ok = ok && alias->ndim() == 1 && alias->strides.empty() && alias->dtype.bytes() > 0;
          if (ok) align = std::lcm(align, int64_t{alias->dtype.bytes()});
        }
      }
      if (auto e = scan.elem_align.find(data); e != scan.elem_align.end()) {
        align = std::lcm(align, e->second);
      }
      if (!ok) continue;
      Expr extent = b->shape[0];
      if (extent.dtype() == DataType::Int(64)) index_type = DataType::Int(64);
      Expr size = as_const_int(extent)
                      ? IntImm::make(extent.dtype(), *as_const_int(extent) * b->dtype.bytes())
                      : Mul::make(extent, IntImm::make(extent.dtype(), b->dtype.bytes()));
      items.push_back(Placement{b, size, align});
      candidates.insert(data);
    }
    if (items.size() <= 1) return body;

    // Liveness over the points: from the first to the last touching point; a buffer never
    // touched is live at the point that allocates it.
    std::vector<Stmt> points;
    linearize(body, &points);
    LivenessCollector liveness(candidates);
    for (size_t i = 0; i < points.size(); ++i) {
      liveness.visit_point(points[i], static_cast<int64_t>(i));
    }
    const auto& touched = liveness.touched;
    const auto& allocated = liveness.allocated;
    for (Placement& p : items) {
      auto it = touched.find(p.buffer->data.get());
      if (it == touched.end()) it = allocated.find(p.buffer->data.get());
      PRIMJIT_ICHECK(it != allocated.end()) << "allocation of '" << p.buffer->name << "' not found";
      p.first = it->second.first;
      p.last = it->second.second;
    }
    std::stable_sort(items.begin(), items.end(), [](const Placement& a, const Placement& b) {
      if (a.first != b.first) return a.first < b.first;
      return a.buffer->name < b.buffer->name;
    });
    for (Placement& p : items) p.size_bytes = to_dtype(p.size_bytes, index_type);
    Expr total = plan(&items, index_type);

    // Rewrite.
    int64_t max_align = 64;
    bool is_volatile = false;
    for (Placement& p : items) max_align = std::max(max_align, p.align);
    for (const AllocBuffer* alloc : scan.allocs) {
      if (candidates.count(alloc->buffer->data.get()) == 0) continue;
      auto it = alloc->annotations.find(attr::kVolatile);
      if (it != alloc->annotations.end() && is_true(it->second)) is_volatile = true;
    }
    merged_var_ = Var::make_pointer(merged_name_, DataType::UInt(8), scope_);
    Buffer merged = Buffer::make(merged_var_, DataType::UInt(8), {total}, {}, Expr(), merged_name_,
                                 static_cast<int>(max_align));
    Annotations annotations;
    if (is_volatile) annotations.emplace(attr::kVolatile, true);
    std::vector<Stmt> seq = {AllocBuffer::make(merged, annotations)};
    offsets_.clear();
    views_.clear();
    offsets_.reserve(items.size());
    views_.reserve(items.size());
    for (const Placement& p : items) offsets_[p.buffer->data.get()] = p.offset;
    for (const Placement& p : items) seq.push_back(DeclBuffer::make(make_view(p.buffer, p.offset)));
    seq.push_back(mutate_stmt(body));
    offsets_.clear();
    views_.clear();
    return SeqStmt::make(std::move(seq));
  }

  std::string scope_;
  std::string merged_name_;
  bool in_launch_ = false;
  Var merged_var_;
  // Per launch: byte offset of each merged pointer, view of each rewritten buffer.
  std::unordered_map<const VarNode*, Expr> offsets_;
  std::unordered_map<const BufferNode*, View> views_;
  const Stmt removed_ = Evaluate::make(make_const(0));
};

struct MergeOptions {
  bool merge_static = false;
};

}  // namespace

Pass make_merge_shared_memory_allocations_pass() {
  PassOptions<MergeOptions> options;
  options.add_bool("static", &MergeOptions::merge_static,
                   "also merge static shared buffers, into their own buf_shmem");
  return typed_pass<MergeOptions>(
      "MergeSharedMemoryAllocations",
      "one merged shared.dyn buffer per kernel launch, reusing dead buffers' bytes",
      std::move(options), [](const IRModule& module, const MergeOptions& options) {
        IRModule out = module;
        for (const auto& [gvar, func] : module->functions) {
          Stmt body = Merger("shared.dyn", "buf_dyn_shmem").mutate_stmt(func->body);
          if (options.merge_static) body = Merger("shared", "buf_shmem").mutate_stmt(body);
          if (!body.same_as(func->body)) out = out.with_function(gvar->name, func.with_body(body));
        }
        return out;
      });
}

}  // namespace primjit::passes
