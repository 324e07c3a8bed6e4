// VectorizeLoop: a `T.vectorized` loop of constant extent becomes vector statements (Ramp
// indices, Broadcast scalars), so that the code generators emit vector loads, stores and
// arithmetic directly instead of hoping that LLVM's loop vectorizer runs before its unroller
// scalarizes the loop. Loops this pass cannot prove safe stay loops, with their metadata, for
// LLVM's vectorizer. Host code only: device functions and thread launches are left to the
// device backends (CUDA vector types are separate work).
//
// Requires: flattened buffers (1-D accesses, after FlattenBuffer), well-formed IR.
// Ensures:  a `T.vectorized` loop outside a thread launch, in a function without a device
//           target, whose extent is a constant L in [2, 64] and whose loop variable is int32
//           or int64, is replaced by its body computed for all L iterations at once (lane k is
//           iteration min + k, computing exactly what it computed) when:
//           - the body is a sequence of Binds and 1-D BufferStores; expressions are literals,
//             variables, arithmetic, comparisons, logic, casts, Select, Let and 1-D loads, on
//             int, uint, bool, float32 or float64 (no float16, bfloat16 or float8); a pure
//             call whose arguments do not depend on the loop stays scalar, `if_then_else`
//             with branches that load nothing becomes a Select, a math op whose result has
//             its first argument's type (T.exp, T.fma, ...) becomes the vector call (each lane
//             within the op's ulp bound; left to LLVM, such a loop was unrolled into scalar
//             libm calls before its vectorizer ran); any other call, inner loop, branch or
//             assert leaves the loop unchanged;
//           - every store's index is base + k * stride with a constant stride != 0, and every
//             access (load or store) of a stored buffer is either lane-local (the same base
//             and stride as each store to it) or provably disjoint from every store to it
//             (same stride, constant base difference); no other accessed buffer may alias a
//             stored one (AliasAnalysis). So no lane reads what another lane writes, and
//             running statement by statement over all lanes equals running lane by lane.
//           Statements over more than 32 bytes of data (kVectorBytes) are emitted in chunks of
//           the largest lane count dividing L that fits, each chunk with fresh copies of the
//           variables the body defines.
//           Loop-invariant subexpressions stay scalar (Broadcast where combined with lanes);
//           index arithmetic that is affine in the loop variable folds into one Ramp; a Bind
//           of a Ramp is substituted, other vector Binds and Lets get vector variables.
// Example (float32: 8 lanes are 32 bytes):
//   for j in T.vectorized(8):           =>  acc[T.Ramp(ii * 8, 1, 8)] = acc[T.Ramp(ii * 8, 1, 8)]
//       acc[ii * 8 + j] = acc[ii * 8 + j]       + T.Broadcast(a, 8) * B[T.Ramp(k * 64, 1, 8)]
//           + a * B[k * 64 + j]
#include <cstdlib>
#include <unordered_map>

#include "passes/alias_analysis.h"
#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "primjit/arith.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/op.h"

namespace primjit::passes {
namespace {

constexpr int64_t kMaxVectorLanes = 64;
// Data per vector statement: wider loops are split into chunks of this many bytes (256 bits:
// an AVX2 register, two NEON ones). LLVM legalizes wider vectors by splitting too, except that
// masks (<32 x i1> of a float max) go through packed bytes, three times slower than 8-lane
// chunks in bench_host_codegen's marked max.
constexpr int kVectorBytes = 32;

// Element dtypes whose vector operations every host backend computes lane by lane exactly as
// the scalar ones.
bool supported_dtype(DataType t) {
  if (t.is_int() || t.is_uint() || t.is_bool()) return true;
  return t.is_float() && (t.bits() == 32 || t.bits() == 64);
}

// One buffer access of the vectorized body: its index for all lanes (a Ramp when affine in the
// loop variable, another vector for a gather, a scalar when loop-invariant).
struct Access {
  Buffer buffer;
  Expr index;
  bool is_store = false;
};

bool loads_memory(const Expr& e) {
  struct Finder : StmtExprVisitor {
    bool found = false;
    void visit(const BufferLoad*) override { found = true; }
    void visit(const Call* op) override {
      if (!op->op.defined() || !op->op->is_pure()) found = true;
      StmtExprVisitor::visit(op);
    }
  } f;
  f.visit_expr(e);
  return f.found;
}

// Vectorizes the body of one loop. An expression comes back unchanged when it does not depend
// on the loop (a scalar), or as a vector of `lanes_` lanes; failed() says the body holds
// something this pass does not vectorize.
class BodyVectorizer {
 public:
  // Lane k is the iteration `min` + k of `loop` (min is the loop's, or a chunk's start).
  BodyVectorizer(const For& loop, const Expr& min, int lanes) : lanes_(lanes) {
    DataType it = loop.loop_var.dtype();
    values_[loop.loop_var.get()] = Ramp::make(min, IntImm::make(it, 1), lanes);
  }

  bool failed() const { return failed_; }
  const std::vector<Access>& accesses() const { return accesses_; }

  // The statement for all lanes; undefined when nothing is left of it (a substituted Bind).
  Stmt stmt(const Stmt& s) {
    if (failed_) return s;
    if (const auto* seq = s.as<SeqStmt>()) {
      std::vector<Stmt> out;
      for (const Stmt& part : seq->seq) {
        Stmt v = stmt(part);
        if (v.defined()) out.push_back(v);
      }
      return SeqStmt::make(std::move(out));
    }
    if (const auto* bind = s.as<Bind>()) {
      Expr value = expr(bind->value);
      if (failed_) return s;
      if (value.dtype().is_scalar()) return Bind::make(bind->var, value);
      std::optional<Var> vec = bound_value(bind->var, value);
      return vec ? Bind::make(*vec, value) : Stmt();  // a substituted Ramp: nothing to bind
    }
    if (const auto* store = s.as<BufferStore>()) return buffer_store(store);
    return fail(s);
  }

  Expr expr(const Expr& e) {
    if (failed_) return e;
    switch (e.kind()) {
      case NodeKind::kIntImm:
      case NodeKind::kFloatImm:
        return e;
      case NodeKind::kVar: {
        auto it = values_.find(e.as<VarNode>());
        return it == values_.end() ? e : it->second;
      }
#define PRIMJIT_VEC_BINARY(Kind, Struct)    \
  case NodeKind::Kind: {                    \
    const auto* op = e.as<Struct>();        \
    return binary<Struct>(e, op->a, op->b); \
  }
        PRIMJIT_VEC_BINARY(kAdd, Add)
        PRIMJIT_VEC_BINARY(kSub, Sub)
        PRIMJIT_VEC_BINARY(kMul, Mul)
        PRIMJIT_VEC_BINARY(kDiv, Div)
        PRIMJIT_VEC_BINARY(kMod, Mod)
        PRIMJIT_VEC_BINARY(kFloorDiv, FloorDiv)
        PRIMJIT_VEC_BINARY(kFloorMod, FloorMod)
        PRIMJIT_VEC_BINARY(kMin, Min)
        PRIMJIT_VEC_BINARY(kMax, Max)
        PRIMJIT_VEC_BINARY(kEQ, EQ)
        PRIMJIT_VEC_BINARY(kNE, NE)
        PRIMJIT_VEC_BINARY(kLT, LT)
        PRIMJIT_VEC_BINARY(kLE, LE)
        PRIMJIT_VEC_BINARY(kGT, GT)
        PRIMJIT_VEC_BINARY(kGE, GE)
        PRIMJIT_VEC_BINARY(kAnd, And)
        PRIMJIT_VEC_BINARY(kOr, Or)
#undef PRIMJIT_VEC_BINARY
      case NodeKind::kNot: {
        Expr a = expr(e.as<Not>()->a);
        return a.same_as(e.as<Not>()->a) ? e : Not::make(a);
      }
      case NodeKind::kCast: {
        const auto* op = e.as<Cast>();
        Expr a = expr(op->value);
        if (!check(op->dtype) || a.same_as(op->value)) return e;
        if (Expr ramp = widened_ramp(op->dtype, a); ramp.defined()) return ramp;
        return Cast::make(op->dtype.with_lanes(a.dtype().lanes()), a);
      }
      case NodeKind::kSelect: {
        const auto* op = e.as<Select>();
        return select(e, op->condition, op->true_value, op->false_value);
      }
      case NodeKind::kLet: {
        const auto* op = e.as<Let>();
        Expr value = expr(op->value);
        if (failed_) return e;
        if (value.dtype().is_scalar()) {
          Expr body = expr(op->body);
          if (value.same_as(op->value) && body.same_as(op->body)) return e;
          return Let::make(op->var, value, body);
        }
        std::optional<Var> vec = bound_value(op->var, value);
        Expr body = expr(op->body);
        return vec ? Let::make(*vec, value, body) : body;
      }
      case NodeKind::kBufferLoad:
        return buffer_load(e);
      case NodeKind::kCall:
        return call(e);
      default:  // strings, Ramps and Broadcasts already in the body
        failed_ = true;
        return e;
    }
  }

 private:
  Stmt fail(const Stmt& s) {
    failed_ = true;
    return s;
  }

  bool check(DataType t) {
    if (!supported_dtype(t.element_of())) failed_ = true;
    return !failed_;
  }

  Expr broadcast(const Expr& e) { return e.dtype().is_vector() ? e : Broadcast::make(e, lanes_); }

  // What `var` stands for from now on: a Ramp is substituted (nullopt), any other vector gets
  // a new vector variable that the caller binds to `value`.
  std::optional<Var> bound_value(const Var& var, const Expr& value) {
    if (value.as<Ramp>() != nullptr) {
      values_[var.get()] = value;
      return std::nullopt;
    }
    Var vec = Var::make(var->name, value.dtype());
    values_[var.get()] = vec;
    return vec;
  }

  template <typename Node>
  Expr binary(const Expr& e, const Expr& ea, const Expr& eb) {
    if (!check(ea.dtype())) return e;
    Expr a = expr(ea);
    Expr b = expr(eb);
    if (failed_) return e;
    if (a.dtype().is_scalar() && b.dtype().is_scalar()) {
      return a.same_as(ea) && b.same_as(eb) ? e : Node::make(a, b);
    }
    if constexpr (std::is_same_v<Node, Add> || std::is_same_v<Node, Sub> ||
                  std::is_same_v<Node, Mul>) {
      if (Expr ramp = affine<Node>(a, b); ramp.defined()) return ramp;
    }
    return Node::make(broadcast(a), broadcast(b));
  }

  // Ramp arithmetic that stays a Ramp (exact under wraparound: ring identities). Undefined
  // when the operands are not a Ramp with a scalar or another Ramp.
  template <typename Node>
  Expr affine(const Expr& a, const Expr& b) {
    const auto* ra = a.as<Ramp>();
    const auto* rb = b.as<Ramp>();
    if ((ra == nullptr && a.dtype().is_vector()) || (rb == nullptr && b.dtype().is_vector())) {
      return Expr();
    }
    Expr zero = IntImm::make(a.dtype().element_of(), 0);
    Expr base_a = ra ? ra->base : a, stride_a = ra ? ra->stride : zero;
    Expr base_b = rb ? rb->base : b, stride_b = rb ? rb->stride : zero;
    if constexpr (std::is_same_v<Node, Mul>) {
      if (ra && rb) return Expr();
      if (ra) return make_ramp(Mul::make(base_a, b), Mul::make(stride_a, b));
      return make_ramp(Mul::make(a, base_b), Mul::make(a, stride_b));
    } else {
      return make_ramp(Node::make(base_a, base_b), Node::make(stride_a, stride_b));
    }
  }

  // An integer Cast of a Ramp with constant base and stride (`T.int64(j)` of the loop variable)
  // is a Ramp in the new dtype when every lane's value fits both dtypes, so no lane wrapped in
  // the old one or changes in the conversion. Undefined otherwise.
  Expr widened_ramp(DataType to, const Expr& a) {
    const auto* ramp = a.as<Ramp>();
    if (ramp == nullptr || !to.is_integer()) return Expr();
    std::optional<int64_t> base = as_const_int(ramp->base);
    std::optional<int64_t> stride = as_const_int(ramp->stride);
    if (!base || !stride || std::abs(*base) > (int64_t{1} << 56) ||
        std::abs(*stride) > (int64_t{1} << 48)) {
      return Expr();  // (no int64 overflow in the ends below)
    }
    auto fits = [](DataType t, int64_t v) {
      if (t.bits() >= 64) return !t.is_uint() || v >= 0;
      const int64_t lo = t.is_int() ? -(int64_t{1} << (t.bits() - 1)) : 0;
      const int64_t hi = (int64_t{1} << (t.is_int() ? t.bits() - 1 : t.bits())) - 1;
      return v >= lo && v <= hi;
    };
    // The lanes are monotone: both ends fitting means every lane fits.
    for (int64_t end : {*base, *base + *stride * (lanes_ - 1)}) {
      if (!fits(ramp->base.dtype(), end) || !fits(to, end)) return Expr();
    }
    return Ramp::make(IntImm::make(to, *base), IntImm::make(to, *stride), lanes_);
  }

  Expr make_ramp(const Expr& base, const Expr& stride) {
    return Ramp::make(arith::simplify(base), arith::simplify(stride), lanes_);
  }

  Expr select(const Expr& e, const Expr& ec, const Expr& et, const Expr& ef) {
    if (!check(et.dtype())) return e;
    Expr c = expr(ec);
    Expr t = expr(et);
    Expr f = expr(ef);
    if (failed_) return e;
    if (c.dtype().is_scalar() && t.dtype().is_scalar() && f.dtype().is_scalar()) {
      return c.same_as(ec) && t.same_as(et) && f.same_as(ef) ? e : Select::make(c, t, f);
    }
    return Select::make(broadcast(c), broadcast(t), broadcast(f));
  }

  Expr call(const Expr& e) {
    const auto* op = e.as<Call>();
    if (!op->op.defined() || !op->op->is_pure()) {
      failed_ = true;
      return e;
    }
    std::vector<Expr> args;
    bool vector = false;
    for (const Expr& a : op->args) {
      args.push_back(expr(a));
      vector = vector || args.back().dtype().is_vector();
    }
    if (failed_ || !vector) return e;  // loop-invariant: computed once, as a scalar
    if (op->is_op("likely")) return args[0];
    // Math on floats is lane-wise: the vector call computes each lane within the op's bound
    // (the code generators' vector math, docs/semantics.md), as the scalar call does.
    if (op->op->is_math() && op->op->type_rule == OpTypeRule::kFirstArg) {
      for (Expr& a : args) a = broadcast(a);
      return Call::make(e.dtype().with_lanes(lanes_), op->op, std::move(args));
    }
    // Select evaluates both branches: only where they cannot fault or read memory.
    if (op->is_op("if_then_else") && !loads_memory(op->args[1]) && !loads_memory(op->args[2])) {
      return Select::make(broadcast(args[0]), broadcast(args[1]), broadcast(args[2]));
    }
    failed_ = true;
    return e;
  }

  // The index of a 1-D access, recorded; a vector index must be a Ramp with a constant stride
  // for stores (checked with the other accesses in legal()).
  std::optional<Expr> index_of(const Buffer& buffer, const std::vector<Expr>& indices,
                               bool is_store) {
    if (indices.size() != 1 || buffer->dtype.is_vector() || !check(buffer->dtype)) {
      failed_ = true;
      return std::nullopt;
    }
    Expr index = expr(indices[0]);
    if (failed_) return std::nullopt;
    // Vector indices only in int32 or int64: conflicts() and legal() read strides and base
    // differences as signed values, which an unsigned or narrow index wraps (a uint8 index
    // times 64 sends lanes 0 and 4 to one element; a negative uint32 difference looks far).
    const DataType it = index.dtype();
    if (it.is_vector() && !(it.is_int() && (it.bits() == 32 || it.bits() == 64))) {
      failed_ = true;
      return std::nullopt;
    }
    accesses_.push_back({buffer, index, is_store});
    return index;
  }

  Expr buffer_load(const Expr& e) {
    const auto* op = e.as<BufferLoad>();
    std::optional<Expr> index = index_of(op->buffer, op->indices, false);
    if (!index || index->same_as(op->indices[0])) return e;
    return BufferLoad::make(op->buffer, {*index});
  }

  Stmt buffer_store(const BufferStore* op) {
    Stmt s(op);
    Expr value = expr(op->value);
    std::optional<Expr> index = index_of(op->buffer, op->indices, true);
    if (!index || index->as<Ramp>() == nullptr) return fail(s);
    return BufferStore::make(op->buffer, broadcast(value), {*index});
  }

  int lanes_;
  bool failed_ = false;
  // The loop variable and the variables bound in the body to what they are now.
  std::unordered_map<const VarNode*, Expr> values_;
  std::vector<Access> accesses_;
};

// Whether every vector expression of `s` has an element dtype the backends handle exactly.
bool vectors_supported(const Stmt& s) {
  struct Checker : StmtExprVisitor {
    bool ok = true;
    void visit_expr(const Expr& e) override {
      if (e.dtype().is_vector() && !supported_dtype(e.dtype().element_of())) ok = false;
      if (ok) StmtExprVisitor::visit_expr(e);
    }
  } checker;
  checker.visit_stmt(s);
  return checker.ok;
}

// The constant value of `e`, simplified, if it is one.
std::optional<int64_t> constant(const Expr& e) { return as_const_int(arith::simplify(e)); }

// Whether `x` touches an element that the store `s` writes for another lane, or the same
// element in a way that vector order would change.
bool conflicts(const Access& s, const Access& x, int lanes) {
  const auto* rs = s.index.as<Ramp>();
  const auto* rx = x.index.as<Ramp>();
  if (rx == nullptr) return true;  // a scalar index, or a gather: any lane's element
  std::optional<int64_t> stride = as_const_int(rs->stride);
  if (!stride || *stride == 0 || as_const_int(rx->stride) != stride) return true;
  std::optional<int64_t> delta = constant(Sub::make(rx->base, rs->base));
  if (!delta) return true;
  if (*delta == 0) return false;  // lane-local: lane k always touches base + k * stride
  // Elements base + k * stride and base + delta + j * stride meet when delta = (k - j) * stride.
  return *delta % *stride == 0 && std::abs(*delta / *stride) < lanes;
}

// No lane reads or writes what another lane writes; no stored buffer is reached another way.
bool legal(const std::vector<Access>& accesses, const AliasAnalysis& alias, int lanes) {
  for (const Access& s : accesses) {
    if (!s.is_store) continue;
    std::optional<int64_t> stride = as_const_int(s.index.as<Ramp>()->stride);
    // Distinct lanes write distinct elements (no wraparound for these small strides).
    if (!stride || *stride == 0 || std::abs(*stride) > (int64_t{1} << 24)) return false;
    const VarNode* data = s.buffer->data.get();
    for (const Access& x : accesses) {
      const VarNode* other = x.buffer->data.get();
      if (other != data) {
        if (alias.may_alias(data, other)) return false;
        continue;
      }
      if (!x.buffer.same_as(s.buffer) || conflicts(s, x, lanes)) return false;
    }
  }
  return true;
}

class LoopVectorizer : public StmtExprMutator {
 public:
  explicit LoopVectorizer(const AliasAnalysis& alias) : alias_(alias) {}

  Expr mutate_expr(const Expr& expr) override { return expr; }

  Stmt mutate(const AttrStmt* op) override {
    if (op->key == "thread_extent") return Stmt(op);  // device code: the device backends'
    return StmtExprMutator::mutate(op);
  }

  Stmt mutate(const For* op) override {
    std::optional<int64_t> extent = as_const_int(op->extent);
    DataType it = op->loop_var.dtype();
    if (op->for_kind == ForKind::kVectorized && extent && *extent >= 2 &&
        *extent <= kMaxVectorLanes && it.is_int() && (it.bits() == 32 || it.bits() == 64)) {
      const int lanes = static_cast<int>(*extent);
      BodyVectorizer vectorizer(*op, op->min, lanes);
      Stmt body = vectorizer.stmt(op->body);
      if (!body.defined()) body = SeqStmt::make({});
      if (!vectorizer.failed() && legal(vectorizer.accesses(), alias_, lanes) &&
          vectors_supported(body)) {
        return split(*op, body, lanes);
      }
    }
    return StmtExprMutator::mutate(op);
  }

 private:
  // The vector statements in chunks of at most kVectorBytes of data: legal for all lanes at
  // once means no lane touches another's elements, so any grouping of lanes is legal too.
  static Stmt split(const For& loop, const Stmt& whole, int lanes) {
    const int chunk = chunk_lanes(whole, lanes);
    if (chunk == lanes) return whole;
    std::vector<Stmt> chunks;
    DataType it = loop.loop_var.dtype();
    for (int first = 0; first < lanes; first += chunk) {
      // Every chunk gets its own copies of the variables the body defines.
      Stmt body = first == 0 ? loop.body : copy_with_fresh_definitions(loop.body);
      Expr min =
          first == 0 ? loop.min : arith::simplify(Add::make(loop.min, IntImm::make(it, first)));
      BodyVectorizer vectorizer(loop, min, chunk);
      Stmt s = vectorizer.stmt(body);
      PRIMJIT_ICHECK(!vectorizer.failed())
          << "VectorizeLoop: a chunk failed where the loop did not";
      if (s.defined()) chunks.push_back(s);
    }
    return SeqStmt::make(std::move(chunks));
  }

  // The largest divisor of `lanes` (at least 2) whose widest data element (loaded, stored or
  // converted values; not indices) fits kVectorBytes; `lanes` when none does.
  static int chunk_lanes(const Stmt& whole, int lanes) {
    struct Widest : StmtExprVisitor {
      int bits = 8;
      void note(DataType t) {
        if (t.is_vector() && !t.is_bool()) bits = std::max(bits, t.bits());
      }
      void visit(const BufferLoad* op) override {
        note(op->dtype);
        StmtExprVisitor::visit(op);
      }
      void visit(const Cast* op) override {
        note(op->dtype);
        StmtExprVisitor::visit(op);
      }
      void visit(const BufferStore* op) override {
        note(op->value.dtype());
        StmtExprVisitor::visit(op);
      }
    } widest;
    widest.visit_stmt(whole);
    const int max_lanes = std::max(2, kVectorBytes * 8 / widest.bits);
    for (int chunk = std::min(lanes, max_lanes); chunk >= 2; --chunk) {
      if (lanes % chunk == 0) return chunk;
    }
    return lanes;
  }

 private:
  const AliasAnalysis& alias_;
};

}  // namespace

Pass make_vectorize_loop_pass() {
  return function_pass("VectorizeLoop",
                       "T.vectorized loops of constant extent to vector statements (host code)",
                       [](const PrimFunc& func) {
                         Target target = func->target();
                         if (target.defined() && target->is_device()) return func;
                         AliasAnalysis alias(func->body);
                         Stmt body = LoopVectorizer(alias).mutate_stmt(func->body);
                         return body.same_as(func->body) ? func : func.with_body(body);
                       });
}

}  // namespace primjit::passes
