// CommonSubexprElim: binds pure subexpressions computed more than once within a scope.
//
// Requires: VerifyWellFormed holds (flat Bind scoping, one definition per variable).
// Ensures:  in each scope (function body, For/While body, each If branch, launch body), a pure
//           subexpression computed at least twice, once unconditionally in that scope itself,
//           is computed once by a new `cse_vN: <its dtype> = value` placed before the first
//           statement that uses it, and every use reads the variable; uses that follow an equal
//           Bind of the same scope read that Bind's variable instead (no new Bind). Equal means
//           the same operations on the same operands, a Bind variable standing for its value.
//           Never shared: calls that are not pure (Call::effect()); a load across a possible
//           write to its memory (a store through any pointer that may alias its buffer's
//           (AliasAnalysis: views sharing a data pointer, a Bind of `X.data`, `T.address_of`),
//           a call with side effects, a loop or launch whose body holds one); Let expressions and
//           what is under `T.address_of`; Ramp, Broadcast and `T.likely` nodes and casts of a
//           variable or constant (their operands are). Nothing moves out of an If branch or an
//           `if_then_else` arm unless the scope computed it first; nothing is shared across a
//           launch (AttrStmt) or a thread-bound loop; an expression that can fault (a load, a
//           division by a non-constant, a call) is never evaluated before the program did.
//           New variables are numbered per function in program order. Output is deterministic.
// Example:
//   for i in range(4):                                 for i in range(4):
//       for j in range(16):                   =>           for j in range(16):
//           A[i * 16 + j] = B[i * 16 + j] + C[i * 16 + j]      cse_v1: T.int32 = i * 16 + j
//                                                              A[cse_v1] = B[cse_v1] + C[cse_v1]
//
// How. A first walk gives every non-leaf expression position an occurrence record, numbered in
// pre-order (a subtree is a contiguous range), with a value number: equal numbers mean equal
// values at those positions. A load's number includes a memory version, renewed at every
// possible write to its memory region and, on entry to a loop or launch, for what its body
// writes. Then each scope, outermost first, takes the live occurrences below it (not behind a
// launch), largest values first: a value with two or more uses, one of them unconditional in
// the scope, is bound. Its uses are marked replaced, which kills their subexpressions (so the
// `i * 16` inside a replaced `i * 16 + j` is not counted again), except in the first use, whose
// subexpressions become the new Bind's value. A second walk, in the same order, rebuilds the
// statements. Decisions read arrays in program order; the cost is linear in the expression
// nodes below each scope, whatever the length of a run of Binds (no rescan per Bind).
#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <unordered_map>
#include <vector>

#include "passes/alias_analysis.h"
#include "passes/pass_list.h"
#include "primjit/error.h"
#include "primjit/ir/functor.h"

namespace primjit::passes {
namespace {

constexpr int kUnknownDepth = INT_MAX / 2;  // a variable the walk has not seen defined

bool is_leaf(const Expr& e) {
  NodeKind k = e.kind();
  return k == NodeKind::kIntImm || k == NodeKind::kFloatImm || k == NodeKind::kStringImm ||
         k == NodeKind::kVar;
}

// Subexpressions that must keep their form: a Let body sees its variable, and the operand of
// address_of names a memory location rather than loading it.
bool has_opaque_children(const Expr& e) {
  if (e.kind() == NodeKind::kLet) return true;
  const auto* call = e.as<Call>();
  return call != nullptr && call->is_op("address_of");
}

// ---------------------------------------------------------------------------------------------
// Value numbers
// ---------------------------------------------------------------------------------------------

struct ValueInfo {
  int height = 0;          // 1 + the greatest height of the operands; leaves 0
  bool shareable = false;  // may be given a Bind
  bool may_fault = false;  // reads memory, divides by a variable, or calls out
};

// Interns keys (a sequence of words) to dense value numbers, in order of first appearance.
class ValueTable {
 public:
  int intern(const std::vector<int64_t>& key, const ValueInfo& info) {
    uint64_t h = hash(key);
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
      Slot& slot = slots_[i];
      if (slot.value < 0) {
        slot = {static_cast<uint32_t>(h), add(info)};
        PRIMJIT_ICHECK(arena_.size() + key.size() < UINT32_MAX) << "CommonSubexprElim: too large";
        spans_.back() = {static_cast<uint32_t>(arena_.size()), static_cast<uint32_t>(key.size())};
        arena_.insert(arena_.end(), key.begin(), key.end());
        ++count_;
        return slot.value;
      }
      const auto& [offset, size] = spans_[slot.value];
      if (slot.hash == static_cast<uint32_t>(h) && size == key.size() &&
          std::equal(key.begin(), key.end(), arena_.begin() + offset)) {
        return slot.value;
      }
    }
  }
  // A value equal to no other (a call with effects, a variable without a Bind).
  int fresh(const ValueInfo& info) { return add(info); }
  const ValueInfo& info(int vn) const { return infos_[vn]; }
  size_t size() const { return infos_.size(); }

 private:
  struct Slot {
    uint32_t hash = 0;  // low bits of the key's hash (the table never exceeds 2^32 slots)
    int value = -1;     // -1: empty
  };
  struct Span {
    uint32_t offset = 0;
    uint32_t size = 0;
  };

  static uint64_t hash(const std::vector<int64_t>& key) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ key.size();
    for (int64_t w : key) {
      h ^= static_cast<uint64_t>(w) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
      h *= 0xff51afd7ed558ccdull;
    }
    return h ^ (h >> 33);
  }
  int add(const ValueInfo& info) {
    infos_.push_back(info);
    spans_.push_back({});
    return static_cast<int>(infos_.size()) - 1;
  }
  void grow() {
    std::vector<Slot> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), Slot{});
    size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.value < 0) continue;
      size_t i = slot.hash & mask;
      while (slots_[i].value >= 0) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }

  std::vector<ValueInfo> infos_;
  std::vector<Span> spans_;  // key of each interned value in arena_
  std::vector<int64_t> arena_;
  std::vector<Slot> slots_;  // open addressing
  size_t count_ = 0;
};

// A map from nodes to small values in one flat array (the walk looks up every variable it meets;
// node-based maps cost an allocation per entry). Lookups only: it is never iterated.
template <typename V>
class NodeMap {
 public:
  V& operator[](const void* key) {
    if (2 * (count_ + 1) > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].first == key) return slots_[i].second;
      if (slots_[i].first == nullptr) {
        ++count_;
        slots_[i].first = key;
        return slots_[i].second;
      }
    }
  }

 private:
  static size_t hash(const void* key) {
    uint64_t h = reinterpret_cast<uintptr_t>(key) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 29);
  }
  void grow() {
    std::vector<std::pair<const void*, V>> old = std::move(slots_);
    slots_.assign(std::max<size_t>(64, old.size() * 2), {nullptr, V{}});
    size_t mask = slots_.size() - 1;
    for (auto& slot : old) {
      if (slot.first == nullptr) continue;
      size_t i = hash(slot.first) & mask;
      while (slots_[i].first != nullptr) i = (i + 1) & mask;
      slots_[i] = std::move(slot);
    }
  }

  std::vector<std::pair<const void*, V>> slots_;
  size_t count_ = 0;
};

// ---------------------------------------------------------------------------------------------
// What the first walk records
// ---------------------------------------------------------------------------------------------

enum class OccState : uint8_t { kLive, kDead, kReplaced };

struct Occurrence {
  const ExprNode* expr = nullptr;
  int value = 0;         // value number
  int end = 0;           // one past the last occurrence of the subtree
  int scope = 0;         // innermost scope
  int def_depth = 0;     // deepest scope defining a variable or buffer it uses
  uint64_t stamp = 0;    // newest memory version among its loads (0: none)
  int target = -1;       // when replaced: the binding read instead
  int existing = -1;     // the whole value of an existing Bind: that binding
  bool guarded = false;  // in an arm of if_then_else
  bool cheap = false;    // a cast of a variable or constant
  OccState state = OccState::kLive;
};

enum class ScopeKind : uint8_t { kFunction, kLoop, kBranch, kIsolated };

struct StmtSpan {
  int occ_end = 0;  // one past its last occurrence (they start where the previous one's end)
  uint64_t start_stamp = 0;  // memory versions newer than this were made by the statement
};

struct Scope {
  int depth = 0;
  int branch_depth = -1;   // depth of the nearest enclosing If branch (itself included)
  int isolated_root = -1;  // nearest enclosing launch or thread-bound loop (itself included)
  int occ_begin = 0;
  int occ_end = 0;
  std::vector<StmtSpan> stmts;
  std::vector<int> placed;  // new bindings placed before one of the statements
};

struct Binding {
  Var var;         // an existing Bind's variable; for a new one, made when it is emitted
  int stmt = 0;    // new: placed before this statement of its scope
  int rep = -1;    // new: the occurrence whose expression is the value
  int height = 0;  // new: emission order among Bindings placed before the same statement
};

class Numbering {
 public:
  ValueTable values;
  std::vector<Occurrence> occs;
  std::vector<Scope> scopes;
  std::vector<Binding> bindings;

  explicit Numbering(const PrimFunc& func) : alias_(func->body) {}

  void run(const PrimFunc& func) {
    open_scope(ScopeKind::kFunction);
    for (const Var& p : func->params) define_var(p.get());
    for (const auto& [param, buffer] : func->buffer_map) define_buffer(buffer, true);
    walk_scope_body(func->body);
    scopes[0].occ_end = static_cast<int>(occs.size());
  }

 private:
  // --- scopes and definitions ----------------------------------------------------------------
  int open_scope(ScopeKind kind) {
    Scope s;
    if (!scopes.empty()) {
      const Scope& parent = scopes[current_];
      s.depth = parent.depth + 1;
      s.branch_depth = parent.branch_depth;
      s.isolated_root = parent.isolated_root;
    }
    int id = static_cast<int>(scopes.size());
    if (kind == ScopeKind::kBranch) s.branch_depth = s.depth;
    if (kind == ScopeKind::kIsolated) s.isolated_root = id;
    s.occ_begin = static_cast<int>(occs.size());
    scopes.push_back(std::move(s));
    return id;
  }
  template <typename F>
  void in_new_scope(ScopeKind kind, F&& body) {
    int parent = current_;
    current_ = open_scope(kind);
    body();
    scopes[current_].occ_end = static_cast<int>(occs.size());
    current_ = parent;
  }
  int depth() const { return scopes[current_].depth; }

  // A variable's value number (its Bind's value, else its own) and defining scope depth.
  struct VarInfo {
    int value = -1;
    int depth = kUnknownDepth;
  };
  VarInfo& var_info(const VarNode* v) {
    VarInfo& info = vars_[v];
    if (info.value < 0) info.value = values.fresh(ValueInfo{});
    return info;
  }
  void define_var(const VarNode* v) { var_info(v).depth = depth(); }

  void define_buffer(const Buffer& buffer, bool with_fields) {
    buffer_depth_[buffer.get()] = depth();
    auto define = [&](const Expr& e) {
      const auto* v = e.as<VarNode>();
      if (v != nullptr && var_info(v).depth == kUnknownDepth) define_var(v);
    };
    define(buffer->data);
    if (!with_fields) return;
    for (const Expr& e : buffer->shape) define(e);
    for (const Expr& e : buffer->strides) define(e);
    if (buffer->elem_offset.defined()) define(buffer->elem_offset);
  }

  // --- memory versions -----------------------------------------------------------------------
  // Versions are kept per memory region; a pointer that may point anywhere writes (and its
  // loads see) every region.
  void write(const VarNode* data) {
    const VarNode* region = alias_.region(data);
    if (region == nullptr) return write_everything();
    last_write_[region] = ++clock_;
    any_write_ = clock_;
  }
  void write_everything() { any_write_ = global_write_ = ++clock_; }
  uint64_t version_of(const VarNode* data) const {
    const VarNode* region = alias_.region(data);
    if (region == nullptr) return any_write_;
    auto it = last_write_.find(region);
    return std::max(it == last_write_.end() ? 0 : it->second, global_write_);
  }
  // Before a loop body or condition: what any iteration writes may already have been written.
  void write_loop_carried(const Stmt& body, const Expr* condition = nullptr) {
    bool effect = condition != nullptr && has_side_effects(*condition);
    std::vector<const VarNode*> written;
    post_order_visit(body, [&](const Ref<Object>& node) {
      if (const auto* store = node.as<BufferStore>()) written.push_back(store->buffer->data.get());
      if (const auto* call = node.as<Call>()) effect |= call->has_side_effects();
    });
    for (const VarNode* data : written) write(data);
    if (effect) write_everything();
  }

  // --- statements ----------------------------------------------------------------------------
  void walk_scope_body(const Stmt& s) {
    if (const auto* seq = s.as<SeqStmt>()) {
      for (const Stmt& child : seq->seq) walk_scope_body(child);
      return;
    }
    StmtSpan span;
    span.start_stamp = clock_;
    walk_stmt(s);
    span.occ_end = static_cast<int>(occs.size());
    scopes[current_].stmts.push_back(span);
  }

  // Expressions of one statement, in the order the rewrite visits them. A call with side
  // effects among them makes every load of the statement a new version (the order of the
  // call and the loads is not pinned down), and what follows sees its writes: when the walk
  // meets one, it starts the statement's expressions again after a write to everything.
  void walk_direct(std::initializer_list<const Expr*> exprs) { walk_direct_range(exprs); }
  void walk_direct(const std::vector<const Expr*>& exprs) { walk_direct_range(exprs); }
  template <typename Range>
  void walk_direct_range(const Range& exprs) {
    size_t begin = occs.size();
    saw_side_effect_ = false;
    for (const Expr* e : exprs) {
      if (e->defined()) walk_expr(*e, false);
    }
    if (!saw_side_effect_) return;
    occs.resize(begin);
    write_everything();
    for (const Expr* e : exprs) {
      if (e->defined()) walk_expr(*e, false);
    }
    write_everything();
  }

  void walk_stmt(const Stmt& s) {
    switch (s.kind()) {
      case NodeKind::kBind: {
        const auto* op = s.as<Bind>();
        int root = static_cast<int>(occs.size());
        walk_direct({&op->value});
        bool recorded = !is_leaf(op->value);
        int value = recorded ? occs[root].value : leaf_value(op->value);
        vars_[op->var.get()] = VarInfo{value, depth()};  // after leaf_value: it may grow vars_
        bindings.push_back(Binding{op->var});
        if (recorded) occs[root].existing = static_cast<int>(bindings.size()) - 1;
        return;
      }
      case NodeKind::kAttrStmt: {
        const auto* op = s.as<AttrStmt>();
        walk_direct({&op->value});
        write_loop_carried(op->body);  // a launch runs its body once per thread
        in_new_scope(ScopeKind::kIsolated, [&] {
          if (const IterVarNode* iv = op->iter_var()) define_var(iv->var.get());
          walk_scope_body(op->body);
        });
        return;
      }
      case NodeKind::kAssertStmt: {
        const auto* op = s.as<AssertStmt>();
        walk_direct({&op->condition, &op->message});
        return;
      }
      case NodeKind::kBufferStore: {
        const auto* op = s.as<BufferStore>();
        std::vector<const Expr*> exprs = {&op->value};
        for (const Expr& index : op->indices) exprs.push_back(&index);
        walk_direct(exprs);
        write(op->buffer->data.get());
        return;
      }
      case NodeKind::kAllocBuffer:
        define_buffer(s.as<AllocBuffer>()->buffer, false);
        return;
      case NodeKind::kDeclBuffer:
        buffer_depth_[s.as<DeclBuffer>()->buffer.get()] = depth();
        return;
      case NodeKind::kFor: {
        const auto* op = s.as<For>();
        walk_direct({&op->min, &op->extent});
        bool isolated = op->for_kind == ForKind::kThreadBinding;
        write_loop_carried(op->body);
        in_new_scope(isolated ? ScopeKind::kIsolated : ScopeKind::kLoop, [&] {
          define_var(op->loop_var.get());
          walk_scope_body(op->body);
        });
        return;
      }
      case NodeKind::kWhile: {
        const auto* op = s.as<While>();
        // The condition runs before every iteration: it lives in a scope of its own, beside
        // the body, where no Bind can be placed.
        write_loop_carried(op->body, &op->condition);
        in_new_scope(ScopeKind::kLoop, [&] { walk_direct({&op->condition}); });
        in_new_scope(ScopeKind::kLoop, [&] { walk_scope_body(op->body); });
        return;
      }
      case NodeKind::kIfThenElse: {
        const auto* op = s.as<IfThenElse>();
        walk_direct({&op->condition});
        in_new_scope(ScopeKind::kBranch, [&] { walk_scope_body(op->then_case); });
        if (op->else_case.defined()) {
          in_new_scope(ScopeKind::kBranch, [&] { walk_scope_body(op->else_case); });
        }
        return;
      }
      case NodeKind::kEvaluate:
        walk_direct({&s.as<Evaluate>()->value});
        return;
      default:
        PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(s.kind());
    }
  }

  // --- expressions ---------------------------------------------------------------------------
  struct Summary {
    int value = 0;
    int def_depth = 0;
    uint64_t stamp = 0;
  };

  // The first word of a key: node kind and dtype.
  static int64_t kind_word(const Expr& e) {
    DataType t = e.dtype();
    return (static_cast<int64_t>(e.kind()) << 40) | (static_cast<int64_t>(t.code()) << 32) |
           (static_cast<int64_t>(t.bits()) << 16) | t.lanes();
  }

  int leaf_value(const Expr& e) {
    key_.clear();
    key_.push_back(kind_word(e));
    switch (e.kind()) {
      case NodeKind::kIntImm:
        key_.push_back(e.as<IntImm>()->value);
        break;
      case NodeKind::kFloatImm: {
        double v = e.as<FloatImm>()->value;
        int64_t bits;
        std::memcpy(&bits, &v, sizeof(bits));
        key_.push_back(bits);
        break;
      }
      case NodeKind::kStringImm: {
        auto [it, added] = strings_.try_emplace(e.as<StringImm>()->value, strings_.size());
        key_.push_back(static_cast<int64_t>(it->second));
        break;
      }
      default:  // a variable
        return var_info(e.as<VarNode>()).value;
    }
    return values.intern(key_, ValueInfo{});
  }

  Summary walk_expr(const Expr& e, bool guarded) {
    if (const auto* v = e.as<VarNode>()) {
      const VarInfo& info = var_info(v);
      return Summary{info.value, info.depth, 0};
    }
    if (is_leaf(e)) return Summary{leaf_value(e), 0, 0};
    int id = static_cast<int>(occs.size());
    occs.emplace_back();
    Summary sum;
    ValueInfo info;
    size_t operands = operands_.size();  // this node's operands are pushed above here
    bool fresh = false;
    auto operand = [&](const Expr& child, bool child_guarded) {
      Summary c = walk_expr(child, guarded || child_guarded);
      operands_.push_back(c.value);
      sum.def_depth = std::max(sum.def_depth, c.def_depth);
      sum.stamp = std::max(sum.stamp, c.stamp);
      const ValueInfo& ci = values.info(c.value);
      info.height = std::max(info.height, ci.height + 1);
      info.may_fault = info.may_fault || ci.may_fault;
    };
    int64_t payload[2];
    int payload_size = 0;
    info.height = 1;
    info.shareable = !e.dtype().is_handle() && !e.dtype().is_void();
    if (has_opaque_children(e)) {
      fresh = true;
      sum.def_depth = kUnknownDepth;
      saw_side_effect_ = saw_side_effect_ || has_side_effects(e);
    } else if (const auto* load = e.as<BufferLoad>()) {
      auto it = buffer_depth_.find(load->buffer.get());
      sum.def_depth = it == buffer_depth_.end() ? kUnknownDepth : it->second;
      uint64_t version = version_of(load->buffer->data.get());
      sum.stamp = version;
      payload[payload_size++] =
          static_cast<int64_t>(reinterpret_cast<uintptr_t>(load->buffer.get()));
      payload[payload_size++] = static_cast<int64_t>(version);
      info.may_fault = true;
      for (const Expr& index : load->indices) operand(index, false);
    } else if (const auto* call = e.as<Call>()) {
      // Op shadows Ref::get(); operator-> gives the node.
      const Object* callee = call->op.defined()
                                 ? static_cast<const Object*>(call->op.operator->())
                                 : static_cast<const Object*>(call->callee.operator->());
      payload[payload_size++] = static_cast<int64_t>(reinterpret_cast<uintptr_t>(callee));
      fresh = call->effect() != CallEffect::kPure;
      saw_side_effect_ = saw_side_effect_ || call->has_side_effects();
      info.may_fault = true;
      if (call->is_op("likely")) info.shareable = false;
      bool arms_guarded = call->is_op("if_then_else");
      for (size_t i = 0; i < call->args.size(); ++i) operand(call->args[i], arms_guarded && i > 0);
    } else if (const auto* ramp = e.as<Ramp>()) {
      payload[payload_size++] = ramp->lanes;
      info.shareable = false;
      operand(ramp->base, false);
      operand(ramp->stride, false);
    } else if (const auto* bc = e.as<Broadcast>()) {
      payload[payload_size++] = bc->lanes;
      info.shareable = false;
      operand(bc->value, false);
    } else if (const auto* sel = e.as<Select>()) {
      operand(sel->condition, false);
      operand(sel->true_value, false);
      operand(sel->false_value, false);
    } else if (const auto* cast = e.as<Cast>()) {
      operand(cast->value, false);
      occs[id].cheap = is_leaf(cast->value);
    } else if (const auto* no = e.as<Not>()) {
      operand(no->a, false);
    } else {
      walk_binary(e, operand, &info);
    }
    if (fresh) info.shareable = false;
    key_.clear();
    key_.push_back(kind_word(e));
    key_.insert(key_.end(), payload, payload + payload_size);
    key_.insert(key_.end(), operands_.begin() + operands, operands_.end());
    operands_.resize(operands);
    sum.value = fresh ? values.fresh(info) : values.intern(key_, info);

    Occurrence& occ = occs[id];
    occ.expr = e.get();
    occ.value = sum.value;
    occ.end = static_cast<int>(occs.size());
    occ.scope = current_;
    occ.def_depth = sum.def_depth;
    occ.stamp = sum.stamp;
    occ.guarded = guarded;
    return sum;
  }

  template <typename F>
  static void walk_binary(const Expr& e, F& operand, ValueInfo* info) {
    const Expr* a = nullptr;
    const Expr* b = nullptr;
    switch (e.kind()) {
#define PRIMJIT_CSE_BINARY(Name) \
  case NodeKind::k##Name:        \
    a = &e.as<Name>()->a;        \
    b = &e.as<Name>()->b;        \
    break;
      PRIMJIT_CSE_BINARY(Add)
      PRIMJIT_CSE_BINARY(Sub)
      PRIMJIT_CSE_BINARY(Mul)
      PRIMJIT_CSE_BINARY(Div)
      PRIMJIT_CSE_BINARY(Mod)
      PRIMJIT_CSE_BINARY(FloorDiv)
      PRIMJIT_CSE_BINARY(FloorMod)
      PRIMJIT_CSE_BINARY(Min)
      PRIMJIT_CSE_BINARY(Max)
      PRIMJIT_CSE_BINARY(EQ)
      PRIMJIT_CSE_BINARY(NE)
      PRIMJIT_CSE_BINARY(LT)
      PRIMJIT_CSE_BINARY(LE)
      PRIMJIT_CSE_BINARY(GT)
      PRIMJIT_CSE_BINARY(GE)
      PRIMJIT_CSE_BINARY(And)
      PRIMJIT_CSE_BINARY(Or)
#undef PRIMJIT_CSE_BINARY
      default:
        PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(e.kind());
    }
    operand(*a, false);
    operand(*b, false);
    // Integer division by anything but a constant other than 0 and -1 may trap.
    NodeKind k = e.kind();
    bool divides = k == NodeKind::kDiv || k == NodeKind::kMod || k == NodeKind::kFloorDiv ||
                   k == NodeKind::kFloorMod;
    if (divides && e.dtype().is_int_or_bool()) {
      std::optional<int64_t> c = as_const_int(*b);
      if (!c || *c == 0 || *c == -1) info->may_fault = true;
    }
  }

  int current_ = 0;
  std::vector<int64_t> key_;
  std::vector<int> operands_;  // value numbers of the operands of the nodes being walked
  bool saw_side_effect_ = false;
  NodeMap<VarInfo> vars_;
  std::unordered_map<const BufferNode*, int> buffer_depth_;
  std::unordered_map<std::string, size_t> strings_;
  AliasAnalysis alias_;
  std::unordered_map<const VarNode*, uint64_t> last_write_;  // by region
  uint64_t global_write_ = 0;                                // the last write to everything
  uint64_t any_write_ = 0;                                   // the last write to anything
  uint64_t clock_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Decisions, scope by scope, outermost first
// ---------------------------------------------------------------------------------------------

class Planner {
 public:
  explicit Planner(Numbering& n) : n_(n), head_(n.values.size(), -1), tail_(n.values.size(), -1) {}

  // Returns true when anything is to be rewritten.
  bool run() {
    for (size_t s = 0; s < n_.scopes.size(); ++s) plan_scope(static_cast<int>(s));
    for (Scope& scope : n_.scopes) {
      std::sort(scope.placed.begin(), scope.placed.end(), [&](int a, int b) {
        const Binding& x = n_.bindings[a];
        const Binding& y = n_.bindings[b];
        if (x.stmt != y.stmt) return x.stmt < y.stmt;
        if (x.height != y.height) return x.height < y.height;  // operands first
        return x.rep < y.rep;
      });
    }
    return changed_;
  }

 private:
  enum class Place : uint8_t {
    kDirect,   // in the scope's own statements, evaluated whenever the statement runs
    kLoop,     // inside a loop body or while condition below the scope
    kGuarded,  // inside an If branch or an if_then_else arm below or in the scope
  };
  struct Candidate {
    int occ;
    int stmt;
    Place place;
  };

  void plan_scope(int s) {
    const Scope& scope = n_.scopes[s];
    if (scope.stmts.empty()) return;
    int depth = scope.depth;
    cands_.clear();
    size_t stmt = 0;
    int max_height = 0;
    for (int o = scope.occ_begin; o < scope.occ_end;) {
      const Occurrence& occ = n_.occs[o];
      int iso = n_.scopes[occ.scope].isolated_root;
      if (iso >= 0 && n_.scopes[iso].depth > depth) {  // behind a launch: not ours
        o = std::max(o + 1, n_.scopes[iso].occ_end);
        continue;
      }
      if (occ.state != OccState::kLive) {
        o = occ.end;  // replaced by an outer scope: its operands are dead or a Bind's value
        continue;
      }
      const ValueInfo& info = n_.values.info(occ.value);
      if (info.shareable && !occ.cheap) {
        while (scope.stmts[stmt].occ_end <= o) ++stmt;
        Place place = Place::kLoop;
        if (occ.guarded || n_.scopes[occ.scope].branch_depth > depth) {
          place = Place::kGuarded;
        } else if (occ.scope == s) {
          place = Place::kDirect;
        }
        cands_.push_back({o, static_cast<int>(stmt), place});
        max_height = std::max(max_height, info.height);
      }
      ++o;
    }
    if (cands_.size() < 2) return;
    sort_by_height(max_height);
    // Largest values first: replacing one kills the uses of its operands inside it.
    for (size_t begin = 0; begin < order_.size();) {
      int height = height_of(order_[begin]);
      size_t end = begin;
      while (end < order_.size() && height_of(order_[end]) == height) ++end;
      plan_height(s, begin, end, height);
      begin = end;
    }
  }

  int height_of(int cand) const { return n_.values.info(n_.occs[cands_[cand].occ].value).height; }

  // order_: candidate indices by decreasing height, program order within a height.
  void sort_by_height(int max_height) {
    order_.resize(cands_.size());
    if (static_cast<size_t>(max_height) <= 2 * cands_.size() + 64) {  // counting sort
      count_.assign(max_height + 2, 0);
      for (size_t c = 0; c < cands_.size(); ++c) ++count_[max_height - height_of(c) + 1];
      for (size_t h = 1; h < count_.size(); ++h) count_[h] += count_[h - 1];
      for (size_t c = 0; c < cands_.size(); ++c) order_[count_[max_height - height_of(c)]++] = c;
    } else {
      for (size_t c = 0; c < cands_.size(); ++c) order_[c] = static_cast<int>(c);
      std::stable_sort(order_.begin(), order_.end(),
                       [&](int a, int b) { return height_of(a) > height_of(b); });
    }
  }

  void plan_height(int s, size_t begin, size_t end, int height) {
    // Group the live candidates by value, keeping program order inside each group.
    touched_.clear();
    next_.assign(end - begin, -1);
    for (size_t i = begin; i < end; ++i) {
      const Occurrence& occ = n_.occs[cands_[order_[i]].occ];
      if (occ.state != OccState::kLive) continue;  // killed by a larger value of this scope
      int local = static_cast<int>(i - begin);
      int vn = occ.value;
      if (head_[vn] < 0) {
        head_[vn] = local;
        touched_.push_back(vn);
      } else {
        next_[tail_[vn]] = local;
      }
      tail_[vn] = local;
    }
    for (int vn : touched_) {
      group_.clear();
      bool direct = false;
      for (int local = head_[vn]; local >= 0; local = next_[local]) {
        const Candidate& c = cands_[order_[begin + local]];
        if (group_.empty() && !can_lead(s, c, vn)) continue;
        group_.push_back(c);
        direct = direct || c.place == Place::kDirect;
      }
      head_[vn] = -1;
      tail_[vn] = -1;
      if (group_.size() >= 2 && direct) bind_group(s, height);
    }
  }

  // The first use of a group is where its value is computed: it must be evaluated there
  // anyway (or be harmless to evaluate early) and everything it reads must be visible.
  bool can_lead(int s, const Candidate& c, int vn) const {
    const Scope& scope = n_.scopes[s];
    const Occurrence& occ = n_.occs[c.occ];
    if (c.place == Place::kGuarded) return false;
    if (c.place == Place::kLoop && n_.values.info(vn).may_fault) return false;
    return occ.def_depth <= scope.depth && occ.stamp <= scope.stmts[c.stmt].start_stamp;
  }

  void bind_group(int s, int height) {
    changed_ = true;
    const Candidate& lead = group_.front();
    Occurrence& first = n_.occs[lead.occ];
    if (first.existing >= 0 && lead.place == Place::kDirect) {  // an existing Bind of this scope
      for (size_t i = 1; i < group_.size(); ++i) replace(group_[i].occ, first.existing);
      return;
    }
    Binding b;
    b.stmt = lead.stmt;
    b.rep = lead.occ;
    b.height = height;
    n_.bindings.push_back(b);
    int id = static_cast<int>(n_.bindings.size()) - 1;
    n_.scopes[s].placed.push_back(id);
    for (const Candidate& c : group_) replace(c.occ, id);
  }

  void replace(int o, int binding) {
    Occurrence& occ = n_.occs[o];
    occ.state = OccState::kReplaced;
    occ.target = binding;
    if (n_.bindings[binding].rep == o) return;  // its operands become the new Bind's value
    for (int d = o + 1; d < occ.end;) {
      Occurrence& sub = n_.occs[d];
      if (sub.state != OccState::kLive) {
        d = sub.end;
      } else {
        sub.state = OccState::kDead;
        ++d;
      }
    }
  }

  Numbering& n_;
  bool changed_ = false;
  std::vector<Candidate> cands_;
  std::vector<int> order_;
  std::vector<int> count_;
  std::vector<int> head_, tail_, next_;  // per value: first/last candidate; per candidate: next
  std::vector<int> touched_;
  std::vector<Candidate> group_;
};

// ---------------------------------------------------------------------------------------------
// The second walk: same order as Numbering, emitting Binds and reading replaced values
// ---------------------------------------------------------------------------------------------

class Rewriter : public StmtExprMutator {
 public:
  explicit Rewriter(Numbering& n) : n_(n) {}

  Stmt run(const Stmt& body) {
    next_scope_ = 1;
    return rewrite_scope(body, 0);
  }

  Expr mutate_expr(const Expr& e) override {
    if (is_leaf(e)) return e;
    int id = next_occ_++;
    const Occurrence& occ = n_.occs[id];
    PRIMJIT_ICHECK(occ.expr == e.get()) << "CommonSubexprElim: walks out of step";
    if (occ.state == OccState::kReplaced) {
      next_occ_ = occ.end;
      const Binding& b = n_.bindings[occ.target];
      PRIMJIT_ICHECK(b.var.defined()) << "CommonSubexprElim: variable used before its Bind";
      return b.var;
    }
    if (has_opaque_children(e)) return e;
    Expr result = StmtExprMutator::mutate_expr(e);
    PRIMJIT_ICHECK(next_occ_ == occ.end) << "CommonSubexprElim: walks out of step";
    return result;
  }

 private:
  struct Cursor {
    int scope;
    size_t stmt = 0;    // statements of the scope seen so far
    size_t placed = 0;  // its new Binds emitted so far
  };

  Stmt rewrite_scope(const Stmt& body, int scope) {
    Cursor cursor{scope};
    return rewrite_in_scope(body, cursor);
  }

  Stmt rewrite_in_scope(const Stmt& s, Cursor& cursor) {
    if (const auto* seq = s.as<SeqStmt>()) {
      std::vector<Stmt> out;
      out.reserve(seq->seq.size());
      bool changed = false;
      for (const Stmt& child : seq->seq) {
        out.push_back(rewrite_in_scope(child, cursor));
        changed = changed || !out.back().same_as(child);
      }
      return changed ? SeqStmt::make(std::move(out)) : s;
    }
    std::vector<Stmt> binds;
    const std::vector<int>& placed = n_.scopes[cursor.scope].placed;
    while (cursor.placed < placed.size() &&
           n_.bindings[placed[cursor.placed]].stmt == static_cast<int>(cursor.stmt)) {
      binds.push_back(emit(n_.bindings[placed[cursor.placed++]]));
    }
    ++cursor.stmt;
    Stmt result = rewrite_stmt(s);
    if (binds.empty()) return result;
    binds.push_back(result);
    return SeqStmt::make(std::move(binds));
  }

  Stmt emit(Binding& b) {
    const Occurrence& rep = n_.occs[b.rep];
    Expr expr(rep.expr);
    int saved = next_occ_;
    next_occ_ = b.rep + 1;
    Expr value = StmtExprMutator::mutate_expr(expr);  // the operands; the node itself is kept
    PRIMJIT_ICHECK(next_occ_ == rep.end) << "CommonSubexprElim: walks out of step";
    next_occ_ = saved;
    b.var = Var::make("cse_v" + std::to_string(++counter_), value.dtype());
    return Bind::make(b.var, value);
  }

  Stmt nested(const Stmt& body) { return rewrite_scope(body, next_scope_++); }

  Stmt rewrite_stmt(const Stmt& s) {
    switch (s.kind()) {
      case NodeKind::kBind: {
        const auto* op = s.as<Bind>();
        Expr value = mutate_expr(op->value);
        return value.same_as(op->value) ? s : Bind::make(op->var, value);
      }
      case NodeKind::kAttrStmt: {
        const auto* op = s.as<AttrStmt>();
        Expr value = mutate_expr(op->value);
        Stmt body = nested(op->body);
        if (value.same_as(op->value) && body.same_as(op->body)) return s;
        return AttrStmt::make(op->node, op->key, value, body);
      }
      case NodeKind::kAssertStmt: {
        const auto* op = s.as<AssertStmt>();
        Expr cond = mutate_expr(op->condition);
        Expr message = mutate_expr(op->message);
        if (cond.same_as(op->condition) && message.same_as(op->message)) return s;
        return AssertStmt::make(cond, message);
      }
      case NodeKind::kBufferStore: {
        const auto* op = s.as<BufferStore>();
        Expr value = mutate_expr(op->value);
        std::vector<Expr> indices = op->indices;
        bool changed = mutate_exprs(op->indices, &indices);
        if (!changed && value.same_as(op->value)) return s;
        return BufferStore::make(op->buffer, value, std::move(indices));
      }
      case NodeKind::kAllocBuffer:
      case NodeKind::kDeclBuffer:
        return s;
      case NodeKind::kFor: {
        const auto* op = s.as<For>();
        Expr min = mutate_expr(op->min);
        Expr extent = mutate_expr(op->extent);
        Stmt body = nested(op->body);
        if (min.same_as(op->min) && extent.same_as(op->extent) && body.same_as(op->body)) {
          return s;
        }
        return For::make(op->loop_var, min, extent, op->for_kind, body, op->thread_tag,
                         op->annotations);
      }
      case NodeKind::kWhile: {
        const auto* op = s.as<While>();
        ++next_scope_;  // the condition's scope holds no statement
        Expr cond = mutate_expr(op->condition);
        Stmt body = nested(op->body);
        if (cond.same_as(op->condition) && body.same_as(op->body)) return s;
        return While::make(cond, body);
      }
      case NodeKind::kIfThenElse: {
        const auto* op = s.as<IfThenElse>();
        Expr cond = mutate_expr(op->condition);
        Stmt then_case = nested(op->then_case);
        Stmt else_case = op->else_case.defined() ? nested(op->else_case) : Stmt();
        if (cond.same_as(op->condition) && then_case.same_as(op->then_case) &&
            else_case.same_as(op->else_case)) {
          return s;
        }
        return IfThenElse::make(cond, then_case, else_case);
      }
      case NodeKind::kEvaluate: {
        const auto* op = s.as<Evaluate>();
        Expr value = mutate_expr(op->value);
        return value.same_as(op->value) ? s : Evaluate::make(value);
      }
      default:
        PRIMJIT_INTERNAL_ERROR() << "CommonSubexprElim: unexpected " << node_kind_name(s.kind());
    }
  }

  Numbering& n_;
  int next_occ_ = 0;
  int next_scope_ = 0;
  int counter_ = 0;
};

PrimFunc eliminate(const PrimFunc& func) {
  Numbering numbering(func);
  numbering.run(func);
  if (!Planner(numbering).run()) return func;
  return func.with_body(Rewriter(numbering).run(func->body));
}

}  // namespace

Pass make_common_subexpr_elim_pass() {
  return function_pass("CommonSubexprElim",
                       "bind pure subexpressions computed more than once within a scope",
                       eliminate);
}

}  // namespace primjit::passes
