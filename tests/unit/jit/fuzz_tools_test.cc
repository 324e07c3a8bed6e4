// The fuzzer's own pieces: the program generator is deterministic and makes well-formed
// programs, whose inexact math results go only to the math sink; the minimizer shrinks a program
// to what keeps a failure.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "primjit/error.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/verify.h"
#include "tests/fuzz/minimize.h"
#include "tests/fuzz/program_generator.h"

namespace primjit::fuzz {
namespace {

int count_stores(const Stmt& body, const std::string& buffer) {
  int n = 0;
  post_order_visit(body, [&](const Ref<Object>& node) {
    if (const auto* store = node.as<BufferStore>(); store && store->buffer->name == buffer) ++n;
  });
  return n;
}

TEST(FuzzTools, ProgramsAreDeterministicAndWellFormed) {
  Features all;
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    PrimFunc a = generate_program(seed, all), b = generate_program(seed, all);
    EXPECT_TRUE(structural_equal(a, b)) << seed;
    EXPECT_NO_THROW(verify_well_formed(a)) << seed;
  }
  EXPECT_FALSE(structural_equal(generate_program(1, {}), generate_program(2, {})));
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    PrimFunc a = generate_symbolic_program(seed, all), b = generate_symbolic_program(seed, all);
    EXPECT_TRUE(structural_equal(a, b)) << seed;
    EXPECT_NO_THROW(verify_well_formed(a)) << seed;
  }
}

// What the llvm-vs-emu comparison relies on: an inexact math result (max_ulp > 0) is only ever
// the whole value of a store to a math sink (M, M64), which nothing loads, so its error reaches
// no other output; and over a few hundred programs every inexact op of the table is generated
// in float32 and float64, in scalar stores, in vector stores and in loops marked T.vectorized
// (the vector math paths).
TEST(FuzzTools, InexactMathGoesOnlyToTheMathSink) {
  std::set<std::string> seen;
  int vector_stores = 0, vectorized_loops = 0, symbolic_loops = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    for (bool symbolic : {false, true}) {
      PrimFunc f = symbolic ? generate_symbolic_program(seed, {}) : generate_program(seed, {});
      int sink_calls = 0, all_calls = 0;
      post_order_visit(f->body, [&](const Ref<Object>& node) {
        if (const auto* call = node.as<Call>(); call && call->op->max_ulp > 0) ++all_calls;
        if (const auto* load = node.as<BufferLoad>()) {
          EXPECT_FALSE(is_math_sink(load->buffer->name)) << "seed " << seed;
        }
        if (const auto* loop = node.as<For>(); loop && loop->for_kind == ForKind::kVectorized) {
          bool stores_sink = false;
          post_order_visit(loop->body, [&](const Ref<Object>& inner) {
            const auto* store = inner.as<BufferStore>();
            stores_sink = stores_sink || (store && is_math_sink(store->buffer->name));
          });
          vectorized_loops += stores_sink;
          symbolic_loops += stores_sink && symbolic;
        }
        const auto* store = node.as<BufferStore>();
        if (store == nullptr || !is_math_sink(store->buffer->name)) return;
        const auto* call = store->value.as<Call>();
        ASSERT_NE(call, nullptr) << "seed " << seed;
        ASSERT_GT(call->op->max_ulp, 0) << "seed " << seed;
        seen.insert(call->op->name + " " + call->dtype.element_of().str());
        vector_stores += store->value.dtype().lanes() > 1;
        ++sink_calls;
        for (const Expr& arg : call->args) {
          post_order_visit(arg, [&](const Ref<Object>& inner) {
            const auto* c = inner.as<Call>();
            EXPECT_FALSE(c && c->op->max_ulp > 0) << "seed " << seed << ": " << c->op->name;
          });
        }
      });
      EXPECT_EQ(sink_calls, all_calls) << "seed " << seed;
      if (sink_calls > 0) {
        EXPECT_GT(math_sink_tolerance(f), 0) << "seed " << seed;
      }
    }
  }
  for (const Op& op : float_math_ops(false)) {
    for (const char* dtype : {"float32", "float64"}) {
      EXPECT_TRUE(seen.count(op->name + " " + dtype)) << op->name << " " << dtype;
    }
  }
  EXPECT_GT(vector_stores, 10);
  EXPECT_GT(vectorized_loops, 10);
  EXPECT_GT(symbolic_loops, 10);
}

TEST(FuzzTools, MinimizerKeepsOnlyWhatTheFailureNeeds) {
  // A "failure": the program stores to G. The smallest such program is one store.
  uint64_t seed = 1;
  PrimFunc f;
  for (;; ++seed) {
    f = generate_program(seed, Features{});
    if (count_stores(f->body, "G") > 0 && count_stores(f->body, "I") > 0) break;
  }
  auto fails = [](const PrimFunc& g) { return count_stores(g->body, "G") > 0; };
  PrimFunc small = minimize(f, fails);
  EXPECT_TRUE(fails(small));
  EXPECT_EQ(count_stores(small->body, "G"), 1);
  EXPECT_EQ(count_stores(small->body, "I"), 0);
  EXPECT_NO_THROW(verify_well_formed(small));
}

}  // namespace
}  // namespace primjit::fuzz
