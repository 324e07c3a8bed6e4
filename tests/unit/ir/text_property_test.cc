// Property tests of the text format: 200 random well-formed functions survive print -> parse,
// and a mutation fuzz test over the corpus.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "tests/unit/ir/text_test_util.h"

namespace primjit::test {
namespace {

// =============================================================================================
// Property test: random well-formed functions survive print -> parse
// =============================================================================================

class RandomFunctionBuilder {
 public:
  explicit RandomFunctionBuilder(uint32_t seed) : rng_(seed) {}

  PrimFunc build() {
    scopes_.assign(1, Scope());
    std::vector<Var> params;
    std::vector<std::pair<Var, Buffer>> buffer_map;
    int nbuf = 1 + pick(2);
    for (int b = 0; b < nbuf; ++b) {
      DataType t = scalar_type();
      std::vector<Expr> shape;
      shape.reserve(2);  // g++ 12 (-Warray-bounds) misreads the growth from one element
      shape.push_back(make_const(8 + pick(8)));
      if (pick(3) == 0) shape.push_back(make_const(1 + pick(4)));
      Buffer buf = Buffer::make(name(), t, shape);
      Var h = Var::make_handle(name());
      params.push_back(h);
      buffer_map.emplace_back(h, buf);
      scopes_.back().buffers.push_back(buf);
    }
    int nscalar = pick(3);
    for (int s = 0; s < nscalar; ++s) {
      DataType t = scalar_type();
      Var v = Var::make(name(), t, t.is_int() && pick(4) == 0);
      params.push_back(v);
      scopes_.back().vars.push_back(v);
    }
    Stmt body = block(3);
    Attrs attrs;
    if (pick(2) == 0) attrs[attr::kGlobalSymbol] = AttrValue("main");
    if (pick(2) == 0) attrs[attr::kTarget] = AttrValue(Target::cuda("sm_90", Target::llvm()));
    if (pick(3) == 0) attrs["opt_level"] = AttrValue(int64_t{pick(4)});
    return PrimFunc::make(params, buffer_map, body, DataType::Void(), attrs);
  }

 private:
  struct Scope {
    std::vector<Var> vars;
    std::vector<Buffer> buffers;
  };

  int pick(int n) { return static_cast<int>(rng_() % static_cast<uint32_t>(n)); }

  std::string name() {
    static const char* kNames[] = {"i", "x", "tmp", "i_1", "a.b", "0bad", "for", "A", "buf", "T"};
    return kNames[pick(10)];
  }

  DataType scalar_type() {
    static const DataType kTypes[] = {DataType::Int(32), DataType::Int(64), DataType::Float(32)};
    return kTypes[pick(3)];
  }

  std::vector<Var> vars_of(DataType t) {
    std::vector<Var> out;
    for (const Scope& s : scopes_) {
      for (const Var& v : s.vars) {
        if (v.dtype() == t) out.push_back(v);
      }
    }
    return out;
  }
  std::vector<Buffer> buffers() {
    std::vector<Buffer> out;
    for (const Scope& s : scopes_) out.insert(out.end(), s.buffers.begin(), s.buffers.end());
    return out;
  }

  Expr literal(DataType t) {
    if (t.is_float()) {
      static const double kValues[] = {0.0, 1.0, -2.5, 0.1, 1e30, -0.0, 3.0e-8, 65504.0};
      return FloatImm::make(t, kValues[pick(8)] * (pick(2) ? 1 : 3.7));
    }
    int64_t v = pick(200) - 100;
    if (pick(10) == 0) v = t.bits() == 64 ? INT64_MIN + pick(3) : INT32_MAX - pick(3);
    return IntImm::make(t, v);
  }

  std::vector<Expr> indices_for(const Buffer& b, int depth) {
    std::vector<Expr> idx;
    for (size_t d = 0; d < b->ndim(); ++d) idx.push_back(expr(kI32, depth));
    return idx;
  }

  Expr expr(DataType t, int depth) {
    if (depth <= 0 || pick(4) == 0) {
      std::vector<Var> vs = vars_of(t);
      int choice = pick(3);
      if (choice == 0 && !vs.empty()) return vs[pick(static_cast<int>(vs.size()))];
      if (choice == 1) {
        for (const Buffer& b : buffers()) {
          if (b->dtype == t && pick(2) == 0) return BufferLoad::make(b, indices_for(b, 0));
        }
      }
      return literal(t);
    }
    switch (pick(12)) {
      case 0:
        return Add::make(expr(t, depth - 1), expr(t, depth - 1));
      case 1:
        return Sub::make(expr(t, depth - 1), expr(t, depth - 1));
      case 2:
        return Mul::make(expr(t, depth - 1), expr(t, depth - 1));
      case 3:
        return Div::make(expr(t, depth - 1), expr(t, depth - 1));
      case 4:
        return Mod::make(expr(t, depth - 1), expr(t, depth - 1));
      case 5:
        return FloorDiv::make(expr(t, depth - 1), expr(t, depth - 1));
      case 6:
        return FloorMod::make(expr(t, depth - 1), expr(t, depth - 1));
      case 7:
        return pick(2) ? Min::make(expr(t, depth - 1), expr(t, depth - 1))
                       : Max::make(expr(t, depth - 1), expr(t, depth - 1));
      case 8:
        return Select::make(cond(depth - 1), expr(t, depth - 1), expr(t, depth - 1));
      case 9:
        return Cast::make(t, expr(scalar_type(), depth - 1));
      case 10: {
        if (!allow_let_) return literal(t);
        Var v = Var::make(name(), scalar_type());
        Expr value = expr(v.dtype(), depth - 1);
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Expr body = expr(t, depth - 1);
        scopes_.pop_back();
        return Let::make(v, value, body);
      }
      default:
        if (t.is_float() && pick(2) == 0)
          return Call::make(t, Op::get("exp"), {expr(t, depth - 1)});
        return Call::make(t, Op::get("if_then_else"),
                          {cond(depth - 1), expr(t, depth - 1), expr(t, depth - 1)});
    }
  }

  Expr cond(int depth) {
    if (depth <= 0 || pick(3) == 0) {
      DataType t = scalar_type();
      Expr a = expr(t, depth - 1);
      Expr b = expr(t, depth - 1);
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
    switch (pick(3)) {
      case 0:
        return And::make(cond(depth - 1), cond(depth - 1));
      case 1:
        return Or::make(cond(depth - 1), cond(depth - 1));
      default:
        return Not::make(cond(depth - 1));
    }
  }

  Stmt scoped(int depth) {
    scopes_.emplace_back();
    Stmt s = block(depth);
    scopes_.pop_back();
    return s;
  }

  Stmt block(int depth) {
    int n = 1 + pick(4);
    std::vector<Stmt> seq;
    for (int k = 0; k < n; ++k) seq.push_back(stmt(depth));
    return SeqStmt::make(seq);
  }

  Stmt stmt(int depth) {
    int choice = depth <= 0 ? pick(5) : pick(12);
    switch (choice) {
      case 0: {
        Var v = Var::make(name(), scalar_type());
        Stmt s = Bind::make(v, expr(v.dtype(), 2));
        scopes_.back().vars.push_back(v);
        return s;
      }
      case 1: {
        std::vector<Buffer> bs = buffers();
        const Buffer& b = bs[pick(static_cast<int>(bs.size()))];
        return BufferStore::make(b, expr(b->dtype, 3), indices_for(b, 1));
      }
      case 2: {
        static const char* kScopes[] = {"global", "local", "shared", "shared.dyn"};
        Buffer b =
            Buffer::make(name(), scalar_type(), {make_const(1 + pick(64))}, kScopes[pick(4)]);
        scopes_.back().buffers.push_back(b);
        return AllocBuffer::make(b);
      }
      case 3: {
        std::vector<Buffer> bs = buffers();
        const Buffer& base = bs[pick(static_cast<int>(bs.size()))];
        Buffer view = Buffer::make(base->data, scalar_type(), {make_const(4)}, {},
                                   pick(2) ? Expr() : make_const(pick(4)), name());
        scopes_.back().buffers.push_back(view);
        return DeclBuffer::make(view);
      }
      case 4:
        if (pick(2) == 0) return AssertStmt::make(cond(1), StringImm::make("check \"failed\""));
        return Evaluate::make(Call::make(kI32, Op::get("call_extern"),
                                         {StringImm::make("f"), expr(scalar_type(), 1)}));
      case 5:
      case 6: {
        DataType t = pick(3) == 0 ? kI64 : kI32;
        Var v = Var::make(name(), t);
        Expr min = pick(2) ? IntImm::make(t, 0) : IntImm::make(t, pick(5) - 2);
        Expr extent = pick(3) == 0 ? expr(t, 1) : IntImm::make(t, 1 + pick(8));
        static const ForKind kKinds[] = {ForKind::kSerial, ForKind::kParallel, ForKind::kVectorized,
                                         ForKind::kUnrolled, ForKind::kThreadBinding};
        ForKind kind = kKinds[pick(5)];
        std::string tag = kind == ForKind::kThreadBinding ? "threadIdx.x" : "";
        Annotations ann;
        if (pick(4) == 0) ann["pragma"] = AttrValue(int64_t{1});
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Stmt body = block(depth - 1);
        scopes_.pop_back();
        return For::make(v, min, extent, kind, body, tag, ann);
      }
      case 7: {
        Expr c = cond(2);
        Stmt then_case = scoped(depth - 1);
        Stmt else_case = pick(2) ? scoped(depth - 1) : Stmt();
        return IfThenElse::make(c, then_case, else_case);
      }
      case 8:
        return While::make(cond(1), scoped(depth - 1));
      case 9: {
        static const char* kTags[] = {"blockIdx.x", "threadIdx.x", "threadIdx.y"};
        Var v = Var::make(name(), kI32);
        scopes_.emplace_back();
        scopes_.back().vars.push_back(v);
        Stmt body = block(depth - 1);
        scopes_.pop_back();
        return AttrStmt::make(IterVar::make(v, kTags[pick(3)]), attr::kThreadExtent,
                              make_const(1 + pick(128)), body);
      }
      case 10: {
        std::vector<Buffer> bs = buffers();
        for (const Buffer& b : bs) {
          if (b->ndim() == 1 && pick(2) == 0) {
            // The index is used twice, so it must not bind variables (a Let would define its
            // variable twice, which is not well formed).
            allow_let_ = false;
            Expr idx = Ramp::make(expr(kI32, 1), make_const(1 + pick(2)), 4);
            allow_let_ = true;
            Expr value =
                pick(2) ? Broadcast::make(expr(b->dtype, 1), 4) : BufferLoad::make(b, {idx});
            return BufferStore::make(b, value, {idx});
          }
        }
        return Evaluate::make(make_const(0));
      }
      default:
        return block(depth - 1);
    }
  }

  std::mt19937 rng_;
  std::vector<Scope> scopes_;
  bool allow_let_ = true;
};

TEST(TextProperty, RandomFunctionsRoundTrip) {
  for (uint32_t seed = 1; seed <= 200; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    PrimFunc f = RandomFunctionBuilder(seed).build();
    IRModule m = IRModule::from_function(seed % 2 ? "main" : "f" + std::to_string(seed), f);
    expect_round_trip(m);
    if (HasFailure()) break;  // one failing seed is enough to debug
  }
}

TEST(TextProperty, RandomModuleWithSeveralFunctionsRoundTrips) {
  std::vector<std::pair<GlobalVar, PrimFunc>> functions;
  for (uint32_t seed = 1000; seed < 1008; ++seed) {
    functions.emplace_back(GlobalVar::make("fn" + std::to_string(seed)),
                           RandomFunctionBuilder(seed).build());
  }
  expect_round_trip(IRModule::make(functions));
}

// =============================================================================================
// Fuzz: mutated corpus files either parse (and then round-trip) or raise ParseError
// =============================================================================================

TEST(TextFuzz, MutatedCorpusNeverCrashes) {
  std::vector<fs::path> files = corpus("roundtrip");
  std::vector<fs::path> bad = corpus("malformed");
  files.insert(files.end(), bad.begin(), bad.end());
  std::mt19937 rng(12345);
  const std::string alphabet = " \n\t()[]{}:,.=+-*/%<>\"'#\\@0123456789aTx_";
  int parsed = 0, rejected = 0;
  // PRIMJIT_FUZZ_ROUNDS=N runs N mutants per file instead of 150 (for longer local runs).
  const char* env_rounds = std::getenv("PRIMJIT_FUZZ_ROUNDS");
  const int rounds = env_rounds != nullptr ? std::atoi(env_rounds) : 150;
  for (const fs::path& path : files) {
    const std::string original = read_file(path);
    for (int round = 0; round < rounds; ++round) {
      std::string text = original;
      int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !text.empty(); ++e) {
        size_t pos = rng() % text.size();
        switch (rng() % 5) {
          case 0:
            text.erase(pos, 1);
            break;
          case 1:
            text.insert(pos, 1, text[pos]);
            break;
          case 2:
            text[pos] = alphabet[rng() % alphabet.size()];
            break;
          case 3:
            text.insert(pos, 1, alphabet[rng() % alphabet.size()]);
            break;
          default: {
            size_t len = 1 + rng() % 12;
            text.erase(pos, len);
          }
        }
      }
      try {
        IRModule m = parse(text, "fuzz.tir");
        ++parsed;
        // Whatever parses is printable, and the printed text round-trips.
        std::string printed = print(m);
        IRModule back = parse(printed, "fuzz-printed.tir");
        EXPECT_TRUE(structural_equal(back, m)) << text << "\n---\n" << printed;
        EXPECT_EQ(print(back), printed) << text;
      } catch (const ParseError& e) {
        ++rejected;
        EXPECT_GE(e.line(), 1);
        EXPECT_GE(e.column(), 1);
        EXPECT_FALSE(e.message().empty());
      } catch (const std::exception& e) {
        ADD_FAILURE() << "non-ParseError exception: " << e.what() << "\n--- input ---\n" << text;
      }
      if (HasFailure()) return;
    }
  }
  EXPECT_GT(parsed, 0);
  EXPECT_GT(rejected, 0);
}

TEST(TextFuzz, DeepNestingIsAnErrorNotACrash) {
  std::string deep = "@T.prim_func\ndef f():\n    T.evaluate(" + std::string(5000, '(') + "1" +
                     std::string(5000, ')') + ")\n";
  EXPECT_THROW(parse(deep), ParseError);
  std::string chain = "@T.prim_func\ndef f(a: T.int32):\n    T.evaluate(a";
  for (int i = 0; i < 5000; ++i) chain += " + a";
  EXPECT_THROW(parse(chain + ")\n"), ParseError);
  std::string nots = "@T.prim_func\ndef f(a: T.bool):\n    T.evaluate(";
  for (int i = 0; i < 5000; ++i) nots += "not ";
  EXPECT_THROW(parse(nots + "a)\n"), ParseError);
  std::string blocks = "@T.prim_func\ndef f():\n";
  for (int i = 1; i < 400; ++i)
    blocks += std::string(static_cast<size_t>(4 * i), ' ') + "if True:\n";
  blocks += std::string(1600, ' ') + "pass\n";
  EXPECT_THROW(parse(blocks), ParseError);
  for (const char* text : {"", "\n\n", "@", "@T.prim_func", "@T.prim_func\ndef", "\"", "'''", "(",
                           ")", "\\", "@T.prim_func\ndef f():\n\tpass\n", "\x01", "\xff"}) {
    EXPECT_THROW(parse(text), ParseError) << text;
  }
}

}  // namespace
}  // namespace primjit::test
