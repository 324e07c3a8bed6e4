#include "tests/fuzz/program_generator.h"

#include <climits>
#include <utility>

#include "primjit/ir/attr_keys.h"

namespace primjit::fuzz {
namespace {

const DataType kI32 = DataType::Int(32);
const DataType kI64 = DataType::Int(64);
const DataType kF32 = DataType::Float(32);

class Generator {
 public:
  Generator(uint64_t seed, const Features& features) : rng_(seed), f_(features) {}

  PrimFunc build() {
    scopes_.assign(1, Scope());
    std::vector<Var> params;
    std::vector<std::pair<Var, Buffer>> buffer_map;
    for (const auto& [name, dtype] :
         {std::pair{"I", kI32}, {"J", kI32}, {"F", kF32}, {"G", kF32}}) {
      Buffer b = Buffer::make(name, dtype, {make_const(kExtent)});
      Var h = Var::make_handle(std::string(name) + "_handle");
      params.push_back(h);
      buffer_map.emplace_back(h, b);
      scopes_.back().buffers.push_back(b);
    }
    Var n = Var::make("n", kI32), x = Var::make("x", kF32);
    params.push_back(n);
    params.push_back(x);
    scopes_.back().vars = {n, x};
    Stmt body = block(3, 4 + pick(5));
    return PrimFunc::make(
        params, buffer_map, body, DataType::Void(),
        {{attr::kGlobalSymbol, AttrValue("main")}, {attr::kTarget, AttrValue(Target::llvm())}});
  }

 private:
  struct Scope {
    std::vector<Var> vars;
    std::vector<Var> loop_vars;
    std::vector<Buffer> buffers;
    std::vector<Buffer> grids;  // 2-D views (kRows x kExtent / kRows) on a parameter's memory
    std::vector<Expr> exprs;    // scalar expressions made here, for repeats (CSE's work)
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
  // Indices of a 2-D view: a row and a column, each reduced into range.
  std::vector<Expr> grid_indices(int depth) {
    return {bounded(depth, kRows), bounded(depth, kExtent / kRows)};
  }
  template <typename T>
  const T& one_of(const std::vector<T>& items) {
    return items[static_cast<size_t>(pick(static_cast<int>(items.size())))];
  }

  Expr literal(DataType t) {
    if (t.is_float()) {
      static const double kValues[] = {0.0, 1.0, -2.5, 0.1, 3.0, -0.0, 1e-3, 7.5, 100.0, -1.0};
      return FloatImm::make(t, kValues[pick(10)]);
    }
    static const int64_t kValues[] = {0, 1, -1, 2, 3, 7, 16, -5, 100, INT32_MAX, INT32_MIN};
    return IntImm::make(t, kValues[pick(chance(10) ? 11 : 9)]);
  }

  // A scalar int32 in [0, bound): anything, reduced by floormod with a positive constant.
  Expr bounded(int depth, int bound) {
    Expr e = expr(kI32, depth);
    return FloorMod::make(e, make_const(bound));
  }

  Expr load(DataType t, int depth) {
    std::vector<Buffer> bufs = buffers_of(t.element_of());
    if (bufs.empty()) return literal(t.element_of());
    if (t.lanes() == 1 && chance(20)) {
      std::vector<Buffer> grids = buffers_of(t, true);
      if (!grids.empty()) return BufferLoad::make(one_of(grids), grid_indices(depth));
    }
    const Buffer& b = one_of(bufs);
    if (t.lanes() == 1) return BufferLoad::make(b, {bounded(depth, kExtent)});
    Expr base = bounded(depth, kExtent - kLanes + 1);
    return BufferLoad::make(b, {Ramp::make(base, make_const(1), kLanes)});
  }

  Expr divisor(DataType t, int depth) {
    Expr d = expr(t, depth);
    if (f_.any_divisor || t.is_float()) return d;
    Expr one = IntImm::make(t.element_of(), 1);
    return Max::make(d, t.lanes() == 1 ? one : Broadcast::make(one, t.lanes()));
  }

  Expr math(DataType t, int depth) {
    static const char* kExact[] = {"fabs", "floor", "ceil", "trunc", "round", "sqrt"};
    return Call::make(t, Op::get(kExact[pick(6)]), {expr(t, depth)});
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

  Stmt store(int depth) {
    DataType elem = chance(50) ? kI32 : kF32;
    std::vector<Buffer> grids = buffers_of(elem, true);
    if (!grids.empty() && chance(20)) {
      return BufferStore::make(one_of(grids), expr(elem, depth), grid_indices(depth));
    }
    std::vector<Buffer> bufs = buffers_of(elem);
    const Buffer& b = one_of(bufs);
    if (chance(10)) {  // a store overwritten by the next one (RemoveNoOp's work when no read)
      Expr index = bounded(depth, kExtent);
      return SeqStmt::make({BufferStore::make(b, expr(elem, depth), {index}),
                            BufferStore::make(b, expr(elem, depth), {index})});
    }
    if (f_.vectors && chance(25)) {
      DataType vt = elem.with_lanes(kLanes);
      Expr base = bounded(depth, kExtent - kLanes + 1);
      return BufferStore::make(b, expr(vt, depth), {Ramp::make(base, make_const(1), kLanes)});
    }
    return BufferStore::make(b, expr(elem, depth), {bounded(depth, kExtent)});
  }

  Stmt stmt(int depth) {
    int kind = pick(10);
    if (depth <= 0 && kind >= 6) kind = 0;
    switch (kind) {
      case 0:
      case 1:
      case 2:
        return store(depth);
      case 3:
      case 4: {
        DataType t = chance(50) ? kI32 : kF32;
        Var v = Var::make(fresh(t.is_float() ? "f" : "k"), t);
        Stmt bind = Bind::make(v, expr(t, depth));
        scopes_.back().vars.push_back(v);
        return bind;
      }
      case 5: {
        if (!f_.views) return store(depth);
        const Buffer& target = one_of(scopes_.front().buffers);
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
          c = LT::make(index, make_const(1 + pick(12)));
        }
        Stmt then_case = block(depth - 1, 1 + pick(3));
        Stmt else_case = chance(50) ? block(depth - 1, 1 + pick(2)) : Stmt();
        return IfThenElse::make(c, then_case, else_case);
      }
      default: {
        if (f_.reductions && chance(25)) return reduction(depth);
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

  // `acc[0] = acc[0] op X[(i * a + b) % kExtent]` in a T.vectorized loop of 1 to 80 iterations
  // (none, some or several groups of LowerVectorReductions' 32 lanes, and a tail), between an
  // initial load and a store of the result. The elements are loads, so that on the passes
  // check's inputs (floats in [0, 1)) float sums and products have no cancellation and another
  // order stays within its tolerance.
  Stmt reduction(int depth) {
    DataType t = chance(50) ? kI32 : kF32;
    Buffer acc = Buffer::make(fresh("acc"), t, {make_const(1)}, "local");
    Var i = Var::make(fresh("i"), kI32);
    Expr index =
        FloorMod::make(Add::make(Mul::make(i, make_const(1 + pick(3))), make_const(pick(kExtent))),
                       make_const(kExtent));
    Expr element = BufferLoad::make(one_of(buffers_of(t)), {index});
    Expr old = BufferLoad::make(acc, {make_const(0)});
    Expr a = old, b = element;
    if (chance(30)) std::swap(a, b);
    Expr value;
    switch (pick(4)) {
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
    Stmt loop = For::make(i, make_const(0), make_const(1 + pick(80)), ForKind::kVectorized,
                          BufferStore::make(acc, value, {make_const(0)}));
    Expr init = BufferLoad::make(one_of(buffers_of(t)), {bounded(depth, kExtent)});
    return SeqStmt::make(
        {AllocBuffer::make(acc), BufferStore::make(acc, init, {make_const(0)}), loop,
         BufferStore::make(one_of(buffers_of(t)), old, {bounded(depth, kExtent)})});
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
  std::vector<Scope> scopes_;
  int names_ = 0;
};

}  // namespace

PrimFunc generate_program(uint64_t seed, const Features& features) {
  return Generator(seed, features).build();
}

}  // namespace primjit::fuzz
