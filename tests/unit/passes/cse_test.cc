// CommonSubexprElim against a reference interpreter: random functions (Binds, loads and stores
// through two buffers and an alias, loops that may run zero times, branches, asserts, while
// loops, launches, calls that write memory, divisions and loads that can trap) must compute
// the same memory after the pass, never trap where the input did not, stay well formed and be
// printed the same way twice. The goldens in tests/passes/common_subexpr_elim.tir show the
// rules one at a time.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <unordered_map>
#include <vector>

#include "primjit/ir.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"

namespace primjit::passes {
namespace {

const DataType i32 = DataType::Int(32);
Expr c(int64_t v) { return make_const(v); }

// --------------------------------------------------------------------------------------------
// Random functions
// --------------------------------------------------------------------------------------------

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  PrimFunc function() {
    n_ = Var::make("n", i32);
    Var a_handle = Var::make_handle("a"), b_handle = Var::make_handle("b");
    Var w_handle = Var::make_handle("w");
    a_ = Buffer::make("A", i32, {c(16)});
    b_ = Buffer::make("B", i32, {c(16)});
    w_ = Buffer::make("W", i32, {c(1)});
    scopes_.assign(1, Frame{{n_}, {a_, b_}, {}});
    Stmt body = block(0);
    return PrimFunc::make({a_handle, b_handle, w_handle, n_},
                          {{a_handle, a_}, {b_handle, b_}, {w_handle, w_}}, body);
  }

 private:
  struct Frame {
    std::vector<Var> vars;
    std::vector<Buffer> buffers;
    std::vector<Expr> pool;  // expressions built here, reused to make repeats likely
  };

  int pick(int bound) { return std::uniform_int_distribution<int>(0, bound - 1)(rng_); }
  bool chance(int percent) { return pick(100) < percent; }

  template <typename T>
  const T& any(std::vector<T> Frame::*field) {
    std::vector<const T*> all;
    for (const Frame& f : scopes_)
      for (const T& x : f.*field) all.push_back(&x);
    return *all[pick(static_cast<int>(all.size()))];
  }
  bool has_pool() const {
    for (const Frame& f : scopes_)
      if (!f.pool.empty()) return true;
    return false;
  }

  Expr in_bounds(const Expr& e) { return FloorMod::make(e, c(16)); }
  // A call with side effects: the interpreter adds 1 to B[v % 16] and returns 0.
  static Expr touch(const Expr& v) {
    return Call::make(i32, Op::get("call_extern"), {StringImm::make("touch"), v});
  }

  Expr expr(int depth) {
    if (has_pool() && chance(35)) return any(&Frame::pool);
    Expr e = fresh_expr(depth);
    if (!is_leaf(e)) scopes_.back().pool.push_back(e);
    return e;
  }
  static bool is_leaf(const Expr& e) { return e.as<VarNode>() || e.as<IntImm>(); }

  Expr fresh_expr(int depth) {
    if (depth <= 0 || chance(20))
      return chance(70) ? static_cast<const Expr&>(any(&Frame::vars)) : c(pick(7) - 2);
    switch (pick(11)) {
      case 0:
        return Add::make(expr(depth - 1), expr(depth - 1));
      case 1:
        return Sub::make(expr(depth - 1), expr(depth - 1));
      case 2:
        return Mul::make(expr(depth - 1), expr(depth - 1));
      case 3: {
        Expr divisor =
            chance(70) ? c(pick(2) ? 3 : -4) : static_cast<const Expr&>(any(&Frame::vars));
        return chance(50) ? FloorDiv::make(expr(depth - 1), divisor)
                          : FloorMod::make(expr(depth - 1), divisor);
      }
      case 4:
        return chance(50) ? Min::make(expr(depth - 1), expr(depth - 1))
                          : Max::make(expr(depth - 1), expr(depth - 1));
      case 5:
      case 6: {  // a load, sometimes with an index that may be out of bounds
        Expr index = chance(85) ? in_bounds(expr(depth - 1)) : expr(depth - 1);
        return BufferLoad::make(any(&Frame::buffers), {index});
      }
      case 7:
        return Select::make(cond(depth - 1), expr(depth - 1), expr(depth - 1));
      case 8: {  // a guarded load in an arm
        Expr index = expr(depth - 1);
        Expr guard = And::make(LE::make(c(0), index), LT::make(index, c(16)));
        return Call::make(i32, Op::get("if_then_else"),
                          {guard, BufferLoad::make(any(&Frame::buffers), {index}), c(0)});
      }
      case 9:
        if (chance(70)) return touch(expr(depth - 1));
        [[fallthrough]];
      default:
        return Cast::make(i32, Cast::make(DataType::Int(64), expr(depth - 1)));
    }
  }

  Expr cond(int depth) {
    Expr a = expr(depth), b = expr(depth);
    switch (pick(4)) {
      case 0:
        return LT::make(a, b);
      case 1:
        return LE::make(a, b);
      case 2:
        return NE::make(a, b);
      default:
        return Not::make(EQ::make(a, b));
    }
  }

  Stmt block(int nesting) {
    std::vector<Stmt> out;
    int count = 1 + pick(5);
    for (int k = 0; k < count; ++k) out.push_back(stmt(nesting));
    return SeqStmt::make(std::move(out));
  }

  template <typename F>
  Stmt scoped(F&& body) {
    scopes_.push_back(Frame{});
    Stmt s = body();
    scopes_.pop_back();
    return s;
  }

  Stmt stmt(int nesting) {
    int kinds = nesting < 3 ? 13 : 7;
    switch (pick(kinds)) {
      case 0:
      case 1:
      case 2: {
        Var x = Var::make("x", i32);
        Stmt s = Bind::make(x, expr(3));
        scopes_.back().vars.push_back(x);
        return s;
      }
      case 3:
      case 4: {
        const Buffer& target = any(&Frame::buffers);
        return BufferStore::make(target, expr(3), {in_bounds(expr(2))});
      }
      case 5:
        return Evaluate::make(touch(expr(2)));
      case 6:
        return chance(50) ? AssertStmt::make(cond(2), StringImm::make("fuzz"))
                          : DeclBuffer::make(alias());
      case 7:
      case 8: {
        Var i = Var::make("i", i32);
        Expr extent = chance(50) ? c(pick(4)) : FloorMod::make(n_, c(3));
        return For::make(i, c(0), extent, ForKind::kSerial, scoped([&] {
                           scopes_.back().vars.push_back(i);
                           return block(nesting + 1);
                         }));
      }
      case 9:
      case 10: {
        Expr condition = cond(2);
        Stmt then_case = scoped([&] { return block(nesting + 1); });
        Stmt else_case = chance(50) ? scoped([&] { return block(nesting + 1); }) : Stmt();
        return IfThenElse::make(condition, then_case, else_case);
      }
      case 11: {  // W[0] counts the iterations; nothing else writes W
        Expr w0 = BufferLoad::make(w_, {c(0)});
        Stmt loop =
            While::make(LT::make(w0, c(2)), scoped([&] {
                          return SeqStmt::make({BufferStore::make(w_, Add::make(w0, c(1)), {c(0)}),
                                                block(nesting + 1)});
                        }));
        return SeqStmt::make({BufferStore::make(w_, c(0), {c(0)}), loop});
      }
      default: {
        Var tx = Var::make("tx", i32);
        return AttrStmt::make(IterVar::make(tx, "threadIdx.x"), attr::kThreadExtent, c(2),
                              scoped([&] {
                                scopes_.back().vars.push_back(tx);
                                return block(nesting + 1);
                              }));
      }
    }
  }

  Buffer alias() {
    Buffer view = Buffer::make(b_->data, i32, {c(16)}, {}, Expr(), "B_view");
    scopes_.back().buffers.push_back(view);
    return view;
  }

  std::mt19937 rng_;
  Var n_;
  Buffer a_, b_, w_;
  std::vector<Frame> scopes_;
};

// --------------------------------------------------------------------------------------------
// The reference interpreter
// --------------------------------------------------------------------------------------------

struct Trap {};   // division by zero or overflow, a load out of bounds
struct Stop {};   // a failed assert: the function returns
struct Limit {};  // too many steps

class Machine {
 public:
  std::unordered_map<const VarNode*, std::vector<int32_t>> memory;  // by data variable

  // "ok", "stopped", "trapped" or "limit".
  std::string run(const PrimFunc& f, int32_t n) {
    env_.clear();
    env_[f->params.back().get()] = n;
    for (const auto& [param, buffer] : f->buffer_map) {
      if (buffer->name == "B") b_data_ = buffer->data.get();
      std::vector<int32_t>& data = memory[buffer->data.get()];
      data.resize(buffer->name == "W" ? 1 : 16);
      for (size_t k = 0; k < data.size(); ++k) data[k] = static_cast<int32_t>(k * 7 % 5) - 1;
    }
    try {
      exec(f->body);
    } catch (const Stop&) {
      return "stopped";
    } catch (const Trap&) {
      return "trapped";
    } catch (const Limit&) {
      return "limit";
    }
    return "ok";
  }

 private:
  static int64_t wrap(int64_t v) { return static_cast<int32_t>(static_cast<uint32_t>(v)); }

  int32_t& cell(const Buffer& buffer, const std::vector<Expr>& indices) {
    int64_t index = eval(indices[0]);
    std::vector<int32_t>& data = memory[buffer->data.get()];
    if (index < 0 || index >= static_cast<int64_t>(data.size())) throw Trap{};
    return data[index];
  }

  int64_t eval(const Expr& e) {
    if (++steps_ > 200000) throw Limit{};
    if (const auto* v = e.as<VarNode>()) return env_.at(v);
    if (const auto* k = e.as<IntImm>()) return k->value;
    if (const auto* op = e.as<Add>()) return wrap(eval(op->a) + eval(op->b));
    if (const auto* op = e.as<Sub>()) return wrap(eval(op->a) - eval(op->b));
    if (const auto* op = e.as<Mul>()) return wrap(eval(op->a) * eval(op->b));
    if (const auto* op = e.as<Min>()) return std::min(eval(op->a), eval(op->b));
    if (const auto* op = e.as<Max>()) return std::max(eval(op->a), eval(op->b));
    if (e.as<FloorDiv>() || e.as<FloorMod>()) {
      const auto* div = e.as<FloorDiv>();
      const auto* mod = e.as<FloorMod>();
      int64_t a = eval(div ? div->a : mod->a), b = eval(div ? div->b : mod->b);
      if (b == 0 || (b == -1 && a == INT32_MIN)) throw Trap{};
      int64_t q = a / b;
      if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
      return div ? wrap(q) : wrap(a - q * b);
    }
    if (const auto* op = e.as<LT>()) return eval(op->a) < eval(op->b);
    if (const auto* op = e.as<LE>()) return eval(op->a) <= eval(op->b);
    if (const auto* op = e.as<EQ>()) return eval(op->a) == eval(op->b);
    if (const auto* op = e.as<NE>()) return eval(op->a) != eval(op->b);
    if (const auto* op = e.as<And>()) {
      int64_t a = eval(op->a), b = eval(op->b);
      return a && b;
    }
    if (const auto* op = e.as<Not>()) return !eval(op->a);
    if (const auto* op = e.as<Select>()) {
      int64_t cnd = eval(op->condition), t = eval(op->true_value), f = eval(op->false_value);
      return cnd ? t : f;
    }
    if (const auto* op = e.as<Cast>())
      return op->dtype.bits() == 32 ? wrap(eval(op->value)) : eval(op->value);
    if (const auto* op = e.as<BufferLoad>()) return cell(op->buffer, op->indices);
    if (const auto* call = e.as<Call>()) {
      if (call->is_op("if_then_else")) {
        return eval(call->args[0]) ? eval(call->args[1]) : eval(call->args[2]);
      }
      if (call->is_op("call_extern")) {  // touch(v): B[v % 16] += 1
        int64_t v = eval(call->args[1]);
        memory.at(b_data_)[((v % 16) + 16) % 16] += 1;
        return 0;
      }
    }
    ADD_FAILURE() << "interpreter: unexpected " << node_kind_name(e.kind());
    throw Trap{};
  }

  void exec(const Stmt& s) {
    if (++steps_ > 200000) throw Limit{};
    if (const auto* seq = s.as<SeqStmt>()) {
      for (const Stmt& child : seq->seq) exec(child);
    } else if (const auto* bind = s.as<Bind>()) {
      env_[bind->var.get()] = eval(bind->value);
    } else if (const auto* store = s.as<BufferStore>()) {
      int64_t value = eval(store->value);
      cell(store->buffer, store->indices) = static_cast<int32_t>(value);
    } else if (const auto* eval_stmt = s.as<Evaluate>()) {
      eval(eval_stmt->value);
    } else if (const auto* assert_stmt = s.as<AssertStmt>()) {
      if (!eval(assert_stmt->condition)) throw Stop{};
    } else if (s.as<DeclBuffer>()) {
    } else if (const auto* loop = s.as<For>()) {
      int64_t min = eval(loop->min), extent = eval(loop->extent);
      for (int64_t i = min; i < min + extent; ++i) {
        env_[loop->loop_var.get()] = i;
        exec(loop->body);
      }
    } else if (const auto* branch = s.as<IfThenElse>()) {
      if (eval(branch->condition)) {
        exec(branch->then_case);
      } else if (branch->else_case.defined()) {
        exec(branch->else_case);
      }
    } else if (const auto* w = s.as<While>()) {
      while (eval(w->condition)) exec(w->body);
    } else if (const auto* attr = s.as<AttrStmt>()) {
      int64_t extent = eval(attr->value);
      for (int64_t t = 0; t < extent; ++t) {
        env_[attr->iter_var()->var.get()] = t;
        exec(attr->body);
      }
    } else {
      ADD_FAILURE() << "interpreter: unexpected " << node_kind_name(s.kind());
    }
  }

  std::unordered_map<const VarNode*, int64_t> env_;
  const VarNode* b_data_ = nullptr;
  int64_t steps_ = 0;
};

std::vector<std::vector<int32_t>> final_memory(const Machine& m, const PrimFunc& f) {
  std::vector<std::vector<int32_t>> out;
  for (const auto& [param, buffer] : f->buffer_map) out.push_back(m.memory.at(buffer->data.get()));
  return out;
}

TEST(CommonSubexprElim, RandomFunctionsComputeTheSameMemory) {
  const Pass& cse = get_pass("CommonSubexprElim");
  int compared = 0, changed = 0;
  for (uint32_t seed = 1; seed <= 1500; ++seed) {
    PrimFunc f = Generator(seed).function();
    IRModule input = IRModule::from_function("main", f);
    ASSERT_TRUE(well_formed_errors(input).empty()) << "generator bug, seed " << seed;
    IRModule output = cse.run(input, {});
    ASSERT_TRUE(well_formed_errors(output).empty())
        << "seed " << seed << ":\n"
        << print(output) << well_formed_errors(output)[0];
    ASSERT_EQ(print(output), print(cse.run(input, {}))) << "not deterministic, seed " << seed;
    PrimFunc g = output->lookup("main");
    changed += g.same_as(f) ? 0 : 1;
    for (int32_t n : {-3, 0, 1, 2, 5}) {
      Machine before, after;
      std::string outcome = before.run(f, n);
      if (outcome == "trapped" || outcome == "limit") continue;
      ASSERT_EQ(after.run(g, n), outcome) << "seed " << seed << " n=" << n << "\n"
                                          << print(input) << "\n"
                                          << print(output);
      ASSERT_EQ(final_memory(before, f), final_memory(after, g))
          << "seed " << seed << " n=" << n << "\n"
          << print(input) << "\n"
          << print(output);
      ++compared;
    }
  }
  EXPECT_GT(compared, 3000);
  EXPECT_GT(changed, 500);  // the generator does produce repeats
}

TEST(CommonSubexprElim, UnchangedFunctionIsTheSameNode) {
  PrimFunc f = Generator(7).function();
  Var n = f->params.back();
  Buffer a = f->buffer_map[0].second;
  PrimFunc plain = f.with_body(BufferStore::make(a, Add::make(n, c(1)), {c(0)}));
  IRModule input = IRModule::from_function("main", plain);
  EXPECT_TRUE(get_pass("CommonSubexprElim").run(input, {}).same_as(input));
}

}  // namespace
}  // namespace primjit::passes
