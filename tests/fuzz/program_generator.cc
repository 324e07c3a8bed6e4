#include "tests/fuzz/program_generator.h"

#include <algorithm>
#include <climits>
#include <utility>

#include "primjit/ir/attr_keys.h"
#include "primjit/ir/functor.h"

namespace primjit::fuzz {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);
const DataType kF64 = DataType::Float(64);

// The op table's math predicates (isnan, isinf, isfinite): exact, a bool of the argument.
std::vector<Op> math_predicates() {
  std::vector<Op> out;
  for (const Op& op : Op::all()) {
    if (op->is_math() && op->type_rule == OpTypeRule::kBoolOfArg) out.push_back(op);
  }
  return out;
}

class Generator {
 public:
  Generator(uint64_t seed, const Features& features, bool symbolic)
      : rng_(seed),
        f_(features),
        symbolic_(symbolic),
        exact_math_(float_math_ops(true)),
        inexact_math_(float_math_ops(false)),
        predicates_(math_predicates()) {}

  PrimFunc build() {
    scopes_.assign(1, Scope());
    std::vector<Var> params;
    std::vector<std::pair<Var, Buffer>> buffer_map;
    auto add = [&](const Buffer& b) {
      Var h = Var::make_handle(b->name + "_handle");
      params.push_back(h);
      buffer_map.emplace_back(h, b);
    };
    for (const auto& [name, dtype] :
         {std::pair{"I", kI32}, {"J", kI32}, {"F", kF32}, {"G", kF32}}) {
      Buffer b = Buffer::make(name, dtype, {make_const(kExtent)});
      add(b);
      scopes_.back().buffers.push_back(b);
    }
    if (symbolic_) {
      d_ = Var::make("d", kI32);
      e_ = Var::make("e", kI32);
      sink_ = Buffer::make(kMathSink, kF32, {d_});
      sink64_ = Buffer::make(kMathSink64, kF64, {d_});
      a_ = Buffer::make("A", kF32, {d_});
      b_ = Buffer::make("B", kI32, {d_});
      c_ = Buffer::make("C", kF32, {e_, d_});
      for (const Buffer& b : {sink_, sink64_, a_, b_, c_}) add(b);
      scopes_.back().vars = {d_, e_};
    } else {
      sink_ = Buffer::make(kMathSink, kF32, {make_const(kExtent)});
      sink64_ = Buffer::make(kMathSink64, kF64, {make_const(kExtent)});
      for (const Buffer& b : {sink_, sink64_}) {
        add(b);
        scopes_.back().sinks.push_back(b);
      }
    }
    Var n = Var::make("n", kI32), x = Var::make("x", kF32);
    params.push_back(n);
    params.push_back(x);
    scopes_.back().vars.push_back(n);
    scopes_.back().vars.push_back(x);
    Stmt body = block(3, symbolic_ ? 2 + pick(4) : 4 + pick(5));
    return PrimFunc::make(
        params, buffer_map, body, DataType::Void(),
        {{attr::kGlobalSymbol, AttrValue("main")}, {attr::kTarget, AttrValue(Target::llvm())}});
  }

 private:
  struct Scope {
    std::vector<Var> vars;
    std::vector<Var> loop_vars;
    std::vector<Buffer> buffers;
    std::vector<Buffer> grids;  // 2-D buffers: views on a parameter's memory, C
    std::vector<Buffer> sinks;  // M and M64, where they may be stored to
    std::vector<Expr> exprs;    // scalar expressions made here, for repeats (CSE's work)
    // Indices known to lie in [0, extent), as (index, extent): loop variables of nests over a
    // shape variable (the extent is that variable).
    std::vector<std::pair<Expr, Expr>> indices;
  };
  static constexpr int kRows = 4;

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
  std::string fresh(const std::string& base) { return base + std::to_string(names_++); }

  std::vector<Var> vars_of(DataType t) {
    std::vector<Var> out;
    for (const Scope& s : scopes_) {
      for (const Var& v : s.vars) {
        if (v.dtype() == t) out.push_back(v);
      }
    }
    return out;
  }
  std::vector<Buffer> buffers_of(DataType t, bool grids = false) {
    std::vector<Buffer> out;
    for (const Scope& s : scopes_) {
      for (const Buffer& b : grids ? s.grids : s.buffers) {
        if (b->dtype == t) out.push_back(b);
      }
    }
    return out;
  }
  std::vector<Buffer> sinks() {
    std::vector<Buffer> out;
    for (const Scope& s : scopes_) out.insert(out.end(), s.sinks.begin(), s.sinks.end());
    return out;
  }
  // An expression made earlier in a scope that is still open (its variables are visible).
  std::vector<Expr> repeats_of(DataType t) {
    std::vector<Expr> out;
    for (const Scope& s : scopes_) {
      for (const Expr& e : s.exprs) {
        if (e.dtype() == t) out.push_back(e);
      }
    }
    return out;
  }
  static bool fixed_1d(const Buffer& b) {
    return b->shape.size() == 1 && as_const_int(b->shape[0]) == kExtent;
  }
  template <typename T>
  const T& one_of(const std::vector<T>& items) {
    return items[static_cast<size_t>(pick(static_cast<int>(items.size())))];
  }

  Expr literal(DataType t) {
    if (t.is_float()) {
      // Ordinary values, and arguments where math functions overflow, underflow to subnormals
      // or reduce huge arguments.
      static const double kValues[] = {0.0, 1.0,   -2.5, 0.1,   3.0,    -0.0,  1e-3,
                                       7.5, 100.0, -1.0, 88.75, -103.5, 1e-40, 1e30};
      return FloatImm::make(t, kValues[pick(chance(15) ? 14 : 10)]);
    }
    static const int64_t kValues[] = {0, 1, -1, 2, 3, 7, 16, -5, 100, INT32_MAX, INT32_MIN};
    return IntImm::make(t, kValues[pick(chance(10) ? 11 : 9)]);
  }

  // A scalar int32 in [0, bound): anything, reduced by floormod with a positive constant.
  Expr bounded(int depth, int bound) {
    return FloorMod::make(expr(kI32, depth), make_const(bound));
  }

  // An index into a dimension of `extent`: an index known to be in range (a loop variable of a
  // nest over it: always in elementwise loops), else anything reduced modulo the extent (a
  // shape variable is at least 1 where its buffer is visible: inside a loop over it).
  Expr index_into(const Expr& extent, int depth) {
    std::vector<Expr> known;
    for (const Scope& s : scopes_) {
      for (const auto& [index, of] : s.indices) {
        if (of.same_as(extent)) known.push_back(index);
      }
    }
    if (!known.empty() && (elementwise_ || chance(60))) return one_of(known);
    return FloorMod::make(expr(kI32, depth), extent);
  }
  std::vector<Expr> indices_of(const Buffer& b, int depth) {
    std::vector<Expr> out;
    for (const Expr& extent : b->shape) out.push_back(index_into(extent, depth));
    return out;
  }

  Expr load(DataType t, int depth) {
    const DataType elem = t.element_of();
    if (t.lanes() == 1 && chance(20)) {
      std::vector<Buffer> grids = buffers_of(t, true);
      if (!grids.empty()) {
        const Buffer& g = one_of(grids);
        return BufferLoad::make(g, indices_of(g, depth));
      }
    }
    std::vector<Buffer> bufs = buffers_of(elem);
    if (t.lanes() > 1) std::erase_if(bufs, [](const Buffer& b) { return !fixed_1d(b); });
    if (bufs.empty()) {
      Expr lit = literal(elem);
      return t.lanes() > 1 ? Broadcast::make(lit, t.lanes()) : lit;
    }
    const Buffer& b = one_of(bufs);
    if (t.lanes() == 1) return BufferLoad::make(b, indices_of(b, depth));
    Expr base = bounded(depth, kExtent - kLanes + 1);
    return BufferLoad::make(b, {Ramp::make(base, make_const(1), kLanes)});
  }

  Expr divisor(DataType t, int depth) {
    Expr d = expr(t, depth);
    if (f_.any_divisor || t.is_float()) return d;
    Expr one = IntImm::make(t.element_of(), 1);
    return Max::make(d, t.lanes() == 1 ? one : Broadcast::make(one, t.lanes()));
  }

  // An exact math builtin (the same bits on every backend), anywhere in an expression.
  Expr math(DataType t, int depth) {
    const Op& op = one_of(exact_math_);
    std::vector<Expr> args;
    for (int k = 0; k < op->num_args; ++k) args.push_back(expr(t, depth));
    return Call::make(t, op, args);
  }

  // An inexact math builtin of exact arguments: only ever the whole value stored to a math
  // sink. The arguments are often a plain load or variable, so that the inputs' special values
  // (NaN, infinities, zeros, subnormals, huge values) reach the function unchanged; float64
  // arguments are float32 expressions, cast (exactly).
  Expr inexact_math(DataType t, int depth) {
    const Op& op = one_of(inexact_math_);
    const DataType f32 = kF32.with_lanes(t.lanes());
    std::vector<Expr> args;
    for (int k = 0; k < op->num_args; ++k) {
      Expr arg = chance(40) ? expr_fresh(f32, 0, false) : expr(f32, depth);
      args.push_back(t == f32 ? arg : Cast::make(t, arg));
    }
    return Call::make(t, op, args);
  }

  // An expression of dtype `t` (int32 or float32, scalar or kLanes lanes). `in_sum`: the
  // expression is an operand of a float Add/Sub, which must not be a Mul without float_mul_add.
  Expr expr(DataType t, int depth, bool in_sum = false) {
    // Scalars repeat earlier expressions now and then (CSE shares them); a float product is
    // not repeated into a sum, where it would contract without float_mul_add.
    if (t.lanes() == 1 && depth > 0) {
      std::vector<Expr> seen = repeats_of(t);
      if (!seen.empty() && chance(12)) {
        const Expr& e = one_of(seen);
        if (!(in_sum && !f_.float_mul_add && e.as<Mul>() != nullptr)) return e;
      }
      Expr e = expr_fresh(t, depth, in_sum);
      if (chance(30)) scopes_.back().exprs.push_back(e);
      return e;
    }
    return expr_fresh(t, depth, in_sum);
  }

  Expr expr_fresh(DataType t, int depth, bool in_sum) {
    const bool vec = t.lanes() > 1;
    DataType elem = t.element_of();
    if (depth <= 0 || chance(25)) {
      switch (pick(3)) {
        case 0: {
          std::vector<Var> vs = vars_of(elem);
          if (!vs.empty()) {
            Expr v = one_of(vs);
            return vec ? Broadcast::make(v, t.lanes()) : v;
          }
          break;
        }
        case 1:
          return load(t, depth - 1);
        default:
          break;
      }
      Expr lit = literal(elem);
      return vec ? Broadcast::make(lit, t.lanes()) : lit;
    }
    const bool fl = elem.is_float();
    switch (pick(13)) {
      case 0:
        return Add::make(expr(t, depth - 1, fl), expr(t, depth - 1, fl));
      case 1:
        return Sub::make(expr(t, depth - 1, fl), expr(t, depth - 1, fl));
      case 2:
        if (fl && in_sum && !f_.float_mul_add)
          return Div::make(expr(t, depth - 1), divisor(t, depth - 1));
        return Mul::make(expr(t, depth - 1), expr(t, depth - 1));
      case 3:
        return Div::make(expr(t, depth - 1), divisor(t, depth - 1));
      case 4:
        if (fl && !f_.any_divisor) return expr(t, depth - 1, in_sum);
        return pick(2) ? FloorDiv::make(expr(t, depth - 1), divisor(t, depth - 1))
                       : FloorMod::make(expr(t, depth - 1), divisor(t, depth - 1));
      case 5:
        if (fl) return expr(t, depth - 1, in_sum);
        return Mod::make(expr(t, depth - 1), divisor(t, depth - 1));
      case 6:
        if (fl && !f_.float_min_max) return math(t, depth - 1);
        return pick(2) ? Min::make(expr(t, depth - 1), expr(t, depth - 1))
                       : Max::make(expr(t, depth - 1), expr(t, depth - 1));
      case 7:
        return Select::make(cond(depth - 1, t.lanes()), expr(t, depth - 1, in_sum),
                            expr(t, depth - 1, in_sum));
      case 8:
        if (vec) return load(t, depth - 1);
        return Call::make(
            t, Op::get("if_then_else"),
            {cond(depth - 1, 1), expr(t, depth - 1, in_sum), expr(t, depth - 1, in_sum)});
      case 9: {  // casts: int <-> float, through int64 (wrapping back to int32)
        DataType from = fl ? kI32 : (f_.float_to_int && chance(50) ? kF32 : kI64);
        if (from == kI64) {
          Expr wide = Mul::make(Cast::make(kI64.with_lanes(t.lanes()), expr(t, depth - 1)),
                                Cast::make(kI64.with_lanes(t.lanes()), expr(t, depth - 1)));
          return Cast::make(t, wide);
        }
        return Cast::make(t, expr(from.with_lanes(t.lanes()), depth - 1));
      }
      case 10:
        if (fl) return math(t, depth - 1);
        return load(t, depth - 1);
      case 11:
        return load(t, depth - 1);
      default: {
        std::vector<Var> vs = vars_of(elem);
        if (vs.empty() || vec) return load(t, depth - 1);
        return one_of(vs);
      }
    }
  }

  Expr cond(int depth, int lanes) {
    if (depth > 0 && chance(30)) {
      switch (pick(3)) {
        case 0:
          return And::make(cond(depth - 1, lanes), cond(depth - 1, lanes));
        case 1:
          return Or::make(cond(depth - 1, lanes), cond(depth - 1, lanes));
        default:
          return Not::make(cond(depth - 1, lanes));
      }
    }
    if (chance(10)) {  // isnan, isinf, isfinite of a float
      return Call::make(DataType::Bool(lanes), one_of(predicates_),
                        {expr(kF32.with_lanes(lanes), depth)});
    }
    DataType t = (chance(50) ? kI32 : kF32).with_lanes(lanes);
    Expr a = expr(t, depth), b = expr(t, depth);
    switch (pick(6)) {
      case 0:
        return EQ::make(a, b);
      case 1:
        return NE::make(a, b);
      case 2:
        return LT::make(a, b);
      case 3:
        return LE::make(a, b);
      case 4:
        return GT::make(a, b);
      default:
        return GE::make(a, b);
    }
  }

  // A store of an inexact math result to M or M64: a scalar, 4 lanes (vector math), or (fixed
  // shapes) a loop marked T.vectorized of 2 to 16 elements (left to LLVM's loop vectorizer).
  Stmt sink_store(int depth) {
    const Buffer m = one_of(sinks());
    const DataType elem = m->dtype;
    if (fixed_1d(m) && f_.vectors && !elementwise_ && chance(30)) {
      Expr base = bounded(depth, kExtent - kLanes + 1);
      return BufferStore::make(m, inexact_math(elem.with_lanes(kLanes), depth),
                               {Ramp::make(base, make_const(1), kLanes)});
    }
    if (fixed_1d(m) && !elementwise_ && chance(30)) {
      Var i = Var::make(fresh("i"), kI32);
      open_loop_scope(i, m->shape[0]);
      elementwise_ = true;
      Stmt body = BufferStore::make(m, inexact_math(elem, depth), {i});
      elementwise_ = false;
      scopes_.pop_back();
      return For::make(i, make_const(0), make_const(2 + pick(kExtent - 1)), ForKind::kVectorized,
                       body);
    }
    return BufferStore::make(m, inexact_math(elem, depth), indices_of(m, depth));
  }

  Stmt store(int depth) {
    if (f_.inexact_math && !sinks().empty() && chance(20)) return sink_store(depth);
    DataType elem = chance(50) ? kI32 : kF32;
    std::vector<Buffer> grids = buffers_of(elem, true);
    if (!grids.empty() && chance(20)) {
      const Buffer& g = one_of(grids);
      return BufferStore::make(g, expr(elem, depth), indices_of(g, depth));
    }
    std::vector<Buffer> bufs = buffers_of(elem);
    const Buffer& b = one_of(bufs);
    if (chance(10)) {  // a store overwritten by the next one (RemoveNoOp's work when no read)
      std::vector<Expr> index = indices_of(b, depth);
      return SeqStmt::make({BufferStore::make(b, expr(elem, depth), index),
                            BufferStore::make(b, expr(elem, depth), index)});
    }
    if (f_.vectors && fixed_1d(b) && chance(25)) {
      DataType vt = elem.with_lanes(kLanes);
      Expr base = bounded(depth, kExtent - kLanes + 1);
      return BufferStore::make(b, expr(vt, depth), {Ramp::make(base, make_const(1), kLanes)});
    }
    return BufferStore::make(b, expr(elem, depth), indices_of(b, depth));
  }

  Stmt bind(int depth) {
    DataType t = chance(50) ? kI32 : kF32;
    Var v = Var::make(fresh(t.is_float() ? "f" : "k"), t);
    Stmt s = Bind::make(v, expr(t, depth));
    scopes_.back().vars.push_back(v);
    return s;
  }

  Stmt stmt(int depth) {
    if (symbolic_ && dims_open_ == 0 && depth > 0 && chance(45)) return dim_nest(depth);
    int kind = pick(10);
    if (depth <= 0 && kind >= 6) kind = 0;
    switch (kind) {
      case 0:
      case 1:
      case 2:
        return store(depth);
      case 3:
      case 4:
        return bind(depth);
      case 5: {
        if (!f_.views) return store(depth);
        const Buffer target = one_of(scopes_.front().buffers);
        Var p = Var::make_pointer(fresh("p"), target->dtype, "global");
        if (chance(40)) {  // a 2-D view: FlattenBuffer's work
          Buffer grid =
              Buffer::make(p, target->dtype, {make_const(kRows), make_const(kExtent / kRows)}, {},
                           Expr(), fresh("W"), 64, 1);
          scopes_.back().grids.push_back(grid);
          return SeqStmt::make({Bind::make(p, target->data), DeclBuffer::make(grid)});
        }
        Buffer view =
            Buffer::make(p, target->dtype, {make_const(kExtent)}, {}, Expr(), fresh("V"), 64, 1);
        scopes_.back().buffers.push_back(view);
        return SeqStmt::make({Bind::make(p, target->data), DeclBuffer::make(view)});
      }
      case 6:
      case 7: {
        Expr c = cond(depth - 1, 1);
        std::vector<Var> loops;
        for (const Scope& s : scopes_)
          loops.insert(loops.end(), s.loop_vars.begin(), s.loop_vars.end());
        if (!loops.empty() && chance(40)) {  // a guard on a loop variable (provable or not)
          Expr index =
              Add::make(Mul::make(one_of(loops), make_const(1 + pick(4))), make_const(pick(3)));
          // Against a constant, or (symbolic shapes) a dimension: a branch VersionLoops reads.
          Expr bound = make_const(1 + pick(12));
          if (symbolic_ && chance(50)) bound = chance(70) ? d_ : e_;
          c = LT::make(index, bound);
        }
        Stmt then_case = block(depth - 1, 1 + pick(3));
        Stmt else_case = chance(50) ? block(depth - 1, 1 + pick(2)) : Stmt();
        return IfThenElse::make(c, then_case, else_case);
      }
      default: {
        if (f_.reductions && chance(25)) {
          return reduction(depth, make_const(1 + pick(80)), [&](const Var& i, DataType t) {
            Expr index = FloorMod::make(
                Add::make(Mul::make(i, make_const(1 + pick(3))), make_const(pick(kExtent))),
                make_const(kExtent));
            std::vector<Buffer> bufs = buffers_of(t);
            std::erase_if(bufs, [](const Buffer& b) { return !fixed_1d(b); });
            return BufferLoad::make(one_of(bufs), {index});
          });
        }
        Var i = Var::make(fresh("i"), kI32);
        scopes_.emplace_back();
        scopes_.back().vars.push_back(i);
        scopes_.back().loop_vars.push_back(i);
        Stmt body = block_in_scope(depth - 1, 1 + pick(3));
        scopes_.pop_back();
        return For::make(i, make_const(0), make_const(1 + pick(4)), ForKind::kSerial, body);
      }
    }
  }

  // `acc[0] = acc[0] op X` in a T.vectorized loop (for max and min, sometimes a serial one) of
  // `extent` iterations (none, some or several groups of LowerVectorReductions' 32 lanes, and a
  // tail), between an initial load and a store of the result; `element(i, dtype)` is the load X.
  // LowerVectorReductions reassociates the reduction (docs/semantics.md), which the passes check
  // compares within a tolerance: float sums and products reduce X clamped to [-1, 1] (NaN gives 1),
  // so that no partial result overflows in any order (|init * x1 * ... | <= |init|, |init + sum| <=
  // |init| + extent), as a value stored before the loop (1e30, 88.75, ...) would make it; max, min
  // and int arithmetic do not depend on the order.
  template <typename Element>
  Stmt reduction(int depth, const Expr& extent, Element element) {
    DataType t = chance(50) ? kI32 : kF32;
    Buffer acc = Buffer::make(fresh("acc"), t, {make_const(1)}, "local");
    Var i = Var::make(fresh("i"), kI32);
    Expr old = BufferLoad::make(acc, {make_const(0)});
    const int op = pick(4);
    Expr x = element(i, t);
    if (t.is_float() && op < 2) {
      x = Max::make(Min::make(x, FloatImm::make(t, 1.0)), FloatImm::make(t, -1.0));
    }
    Expr a = old, b = x;
    if (chance(30)) std::swap(a, b);
    Expr value;
    switch (op) {
      case 0:
        value = Add::make(a, b);
        break;
      case 1:
        value = Mul::make(a, b);
        break;
      case 2:
        value = Max::make(a, b);
        break;
      default:
        value = Min::make(a, b);
        break;
    }
    // Max and min reductions are lowered unmarked too (their result has no order): half of
    // them are serial loops.
    const ForKind kind = op >= 2 && chance(50) ? ForKind::kSerial : ForKind::kVectorized;
    Stmt loop =
        For::make(i, make_const(0), extent, kind, BufferStore::make(acc, value, {make_const(0)}));
    std::vector<Buffer> fixed = buffers_of(t);
    std::erase_if(fixed, [](const Buffer& x) { return !fixed_1d(x); });
    Expr init = BufferLoad::make(one_of(fixed), {bounded(depth, kExtent)});
    return SeqStmt::make({AllocBuffer::make(acc), BufferStore::make(acc, init, {make_const(0)}),
                          loop, BufferStore::make(one_of(fixed), old, {bounded(depth, kExtent)})});
  }

  // --- symbolic shapes ---------------------------------------------------------------------

  // A scope for the body of a loop over `extent` with variable `i`: A, B and M (and C when both
  // dimensions are open) are visible from here on.
  void open_loop_scope(const Var& i, const Expr& extent) {
    scopes_.emplace_back();
    Scope& s = scopes_.back();
    s.vars.push_back(i);
    s.loop_vars.push_back(i);
    s.indices.emplace_back(i, extent);
    open_dims(extent);
  }
  void open_dims(const Expr& extent) {
    Scope& s = scopes_.back();
    if (!symbolic_) return;
    if (extent.same_as(d_)) {
      s.buffers.push_back(a_);
      s.buffers.push_back(b_);
      if (f_.inexact_math) s.sinks = {sink_, sink64_};
      d_open_ = true;
    }
    if (extent.same_as(e_)) e_open_ = true;
    if (d_open_ && e_open_ && extent.same_as(d_)) s.grids.push_back(c_);
  }

  // The body of an elementwise loop over d (T.vectorized): stores to A, B and M at the loop's
  // index only, loads of them at that index only, no stores to anything else; so iterations are
  // independent, whatever order the vector code runs them in.
  Stmt elementwise_block(int depth) {
    elementwise_ = true;
    std::vector<Stmt> stmts;
    for (int k = 1 + pick(3); k > 0; --k) {
      if (chance(25)) {
        stmts.push_back(bind(depth));
      } else if (f_.inexact_math && chance(50)) {
        stmts.push_back(sink_store(depth));
      } else {
        const Buffer& b = chance(50) ? a_ : b_;
        stmts.push_back(BufferStore::make(b, expr(b->dtype, depth), indices_of(b, depth)));
      }
    }
    elementwise_ = false;
    return stmts.size() == 1 ? stmts[0] : SeqStmt::make(stmts);
  }

  // A loop over d: serial (or T.unroll, which keeps the order) with any body, or, when
  // `independent`, T.vectorized (or T.parallel) with an elementwise one.
  Stmt dim_loop(const Expr& extent, bool independent, int depth) {
    Var i = Var::make(fresh("i"), kI32);
    open_loop_scope(i, extent);
    Stmt body = independent ? elementwise_block(depth - 1) : block_in_scope(depth - 1, 1 + pick(3));
    scopes_.pop_back();
    ForKind kind = independent ? (chance(20) ? ForKind::kParallel : ForKind::kVectorized)
                               : (chance(15) ? ForKind::kUnrolled : ForKind::kSerial);
    return For::make(i, make_const(0), extent, kind, body);
  }

  Stmt dim_nest(int depth) {
    ++dims_open_;
    Stmt out;
    switch (pick(5)) {
      case 0:
        out = dim_loop(d_, false, depth);
        break;
      case 1:
        out = dim_loop(d_, true, depth);
        break;
      case 2: {  // rows of C: for r in range(e): for c in range(d)
        Var r = Var::make(fresh("r"), kI32);
        open_loop_scope(r, e_);
        Stmt inner = dim_loop(d_, chance(30), depth - 1);
        scopes_.pop_back();
        out = For::make(r, make_const(0), e_, ForKind::kSerial, inner);
        break;
      }
      case 3: {  // tiles of w: for o in range((d + w - 1) // w): for t in range(w): if in range
        const int w = 4 << pick(4);
        Var o = Var::make(fresh("o"), kI32), t = Var::make(fresh("t"), kI32);
        Expr index = Add::make(Mul::make(o, make_const(w)), t);
        const bool vectorized = chance(30);
        scopes_.emplace_back();
        scopes_.back().vars = {o, t};
        scopes_.back().loop_vars = {o, t};
        scopes_.back().indices.emplace_back(index, d_);
        open_dims(d_);
        Stmt body = vectorized ? elementwise_block(depth - 1) : block_in_scope(depth - 1, 2);
        scopes_.pop_back();
        Stmt guarded = IfThenElse::make(LT::make(index, d_), body, Stmt());
        Stmt inner = For::make(t, make_const(0), make_const(w),
                               vectorized ? ForKind::kVectorized : ForKind::kSerial, guarded);
        out = For::make(o, make_const(0),
                        FloorDiv::make(Add::make(d_, make_const(w - 1)), make_const(w)),
                        ForKind::kSerial, inner);
        break;
      }
      default: {  // a vectorized reduction of d elements of A or B
        if (!f_.reductions) {
          out = dim_loop(d_, false, depth);
          break;
        }
        out = reduction(depth, d_, [&](const Var& i, DataType t) {
          Expr index = i;
          if (chance(50)) {
            index = FloorMod::make(
                Add::make(Mul::make(i, make_const(1 + pick(3))), make_const(pick(kExtent))), d_);
          }
          return BufferLoad::make(t.is_float() ? a_ : b_, {index});
        });
        break;
      }
    }
    d_open_ = e_open_ = false;
    --dims_open_;
    return out;
  }

  Stmt block_in_scope(int depth, int count) {
    std::vector<Stmt> stmts;
    for (int k = 0; k < count; ++k) stmts.push_back(stmt(depth));
    return stmts.size() == 1 ? stmts[0] : SeqStmt::make(stmts);
  }
  Stmt block(int depth, int count) {
    scopes_.emplace_back();
    Stmt s = block_in_scope(depth, count);
    scopes_.pop_back();
    return s;
  }

  std::mt19937_64 rng_;
  Features f_;
  bool symbolic_;
  std::vector<Op> exact_math_, inexact_math_, predicates_;
  std::vector<Scope> scopes_;
  int names_ = 0;
  Buffer sink_, sink64_;
  // Symbolic shapes: the dimensions, the buffers over them, the nest being generated.
  Var d_, e_;
  Buffer a_, b_, c_;
  int dims_open_ = 0;
  bool d_open_ = false, e_open_ = false;
  bool elementwise_ = false;
};

}  // namespace

std::vector<Op> float_math_ops(bool exact) {
  std::vector<Op> out;
  for (const Op& op : Op::all()) {
    if (op->is_math() && op->type_rule == OpTypeRule::kFirstArg && (op->max_ulp == 0) == exact) {
      out.push_back(op);
    }
  }
  return out;
}

PrimFunc generate_program(uint64_t seed, const Features& features) {
  return Generator(seed, features, false).build();
}

PrimFunc generate_symbolic_program(uint64_t seed, const Features& features) {
  return Generator(seed, features, true).build();
}

int math_sink_tolerance(const PrimFunc& func) {
  int ulp = 0;
  post_order_visit(func->body, [&](const Ref<Object>& node) {
    const auto* store = node.as<BufferStore>();
    if (store == nullptr || !is_math_sink(store->buffer->name)) return;
    post_order_visit(store->value, [&](const Ref<Object>& inner) {
      const auto* call = inner.as<Call>();
      if (call != nullptr && call->op->is_math()) ulp = std::max(ulp, call->op->max_ulp);
    });
  });
  return 2 * ulp;
}

}  // namespace primjit::fuzz
