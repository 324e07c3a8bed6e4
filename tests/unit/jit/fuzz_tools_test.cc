// The fuzzer's own pieces: the program generator is deterministic and makes well-formed
// programs; the minimizer shrinks a program to what keeps a failure.
#include <gtest/gtest.h>

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
