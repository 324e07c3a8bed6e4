#include "jit/llvm/orc_engine.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "primjit/error.h"
#include "tests/unit/test_util.h"

namespace primjit::jit {
namespace {

constexpr const char* kAdd = R"(
define i32 @add(i32 %a, i32 %b) {
entry:
  %sum = add i32 %a, %b
  ret i32 %sum
}
)";

// sum of 0..n-1 as a loop; O2 turns it into closed form (no loop left).
constexpr const char* kSumLoop = R"(
define i64 @sum_below(i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %acc = phi i64 [ 0, %entry ], [ %acc.next, %loop ]
  %acc.next = add i64 %acc, %i
  %next = add i64 %i, 1
  %done = icmp sge i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  ret i64 %acc.next
}
)";

TEST(OrcEngine, CompilesAndCallsAddAtO2) {
  OrcEngine engine(OrcOptions{.opt_level = 2});
  engine.add_ir_text(kAdd, "add_module");
  auto* add = reinterpret_cast<int (*)(int, int)>(engine.lookup("add"));
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add(40, 2), 42);
  EXPECT_EQ(add(-5, 3), -2);
  HostTarget host = detect_host_target();
  EXPECT_FALSE(host.triple.empty());
  EXPECT_EQ(engine.target_triple(), host.triple);
  EXPECT_EQ(engine.cpu_name(), host.cpu);
}

TEST(OrcEngine, OptimizationLevelIsApplied) {
  OrcEngine o0(OrcOptions{.opt_level = 0, .keep_optimized_ir = true});
  OrcEngine o2(OrcOptions{.opt_level = 2, .keep_optimized_ir = true});
  auto k0 = o0.add_ir_text(kSumLoop, "loop0");
  auto k2 = o2.add_ir_text(kSumLoop, "loop2");
  // The loop survives at O0; at O2 induction-variable simplification removes it.
  EXPECT_NE(o0.optimized_ir(k0).find("phi"), std::string::npos);
  EXPECT_EQ(o2.optimized_ir(k2).find("phi"), std::string::npos) << o2.optimized_ir(k2);
  auto* f0 = reinterpret_cast<int64_t (*)(int64_t)>(o0.lookup("sum_below"));
  auto* f2 = reinterpret_cast<int64_t (*)(int64_t)>(o2.lookup("sum_below"));
  EXPECT_EQ(f0(100), 4950);
  EXPECT_EQ(f2(100), 4950);
}

TEST(OrcEngine, RemovedModuleSymbolsAreGone) {
  OrcEngine engine(OrcOptions{.opt_level = 1});
  auto key = engine.add_ir_text(kAdd, "add_module");
  ASSERT_NE(engine.lookup("add"), nullptr);
  engine.remove(key);
  EXPECT_ERROR_CONTAINS(engine.lookup("add"), "symbol 'add' is not defined in the JIT session");
  EXPECT_ERROR_CONTAINS(engine.remove(key), "is not loaded (already removed?)");
  // The name can be defined again after removal.
  engine.add_ir_text(kAdd, "add_again");
  EXPECT_EQ(reinterpret_cast<int (*)(int, int)>(engine.lookup("add"))(1, 2), 3);
}

extern "C" int64_t primjit_test_host_triple(int64_t x) { return 3 * x; }

TEST(OrcEngine, JitCodeCallsRegisteredHostFunction) {
  OrcEngine engine(OrcOptions{.opt_level = 2});
  engine.define_symbol("host_triple", reinterpret_cast<void*>(&primjit_test_host_triple));
  engine.add_ir_text(R"(
declare i64 @host_triple(i64)
define i64 @calls_host(i64 %x) {
  %r = call i64 @host_triple(i64 %x)
  %s = add i64 %r, 1
  ret i64 %s
}
)",
                     "calls_host");
  auto* f = reinterpret_cast<int64_t (*)(int64_t)>(engine.lookup("calls_host"));
  EXPECT_EQ(f(5), 16);
}

TEST(OrcEngine, BadIrIsAUserErrorWithTheParserMessage) {
  OrcEngine engine;
  try {
    engine.add_ir_text("define i32 @f( {", "broken");
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("cannot parse LLVM IR"), std::string::npos) << text;
    EXPECT_NE(text.find("broken"), std::string::npos) << text;
  }
}

TEST(OrcEngine, MissingSymbolIsAUserError) {
  OrcEngine engine;
  try {
    engine.lookup("nowhere");
    FAIL() << "expected primjit::Error";
  } catch (const Error& error) {
    EXPECT_NE(std::string(error.what()).find("'nowhere' is not defined"), std::string::npos);
  }
}

TEST(OrcEngine, RejectsBadOptimizationLevel) {
  EXPECT_ERROR_CONTAINS(OrcEngine(OrcOptions{.opt_level = 7}),
                        "LLVM optimization level must be 0, 1, 2 or 3, not 7");
}

TEST(OrcEngine, ThreadsCompileIntoOneSessionConcurrently) {
  OrcEngine engine(OrcOptions{.opt_level = 2});
  constexpr int kThreads = 4;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&engine, t] {
      std::string name = "times" + std::to_string(t);
      std::string ir = "define i64 @" + name + "(i64 %x) {\n  %r = mul i64 %x, " +
                       std::to_string(t + 2) + "\n  ret i64 %r\n}\n";
      engine.add_ir_text(ir, name);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < kThreads; ++t) {
    auto* f = reinterpret_cast<int64_t (*)(int64_t)>(engine.lookup("times" + std::to_string(t)));
    EXPECT_EQ(f(10), 10 * (t + 2));
  }
}

}  // namespace
}  // namespace primjit::jit
