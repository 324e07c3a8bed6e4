// MergeSharedMemoryAllocations on generated kernels. Goals: O(n log n) or better in the number
// of allocations, and 4096 allocations merged within 10 ms.
//
//   BM_MergeAllocations/N  one launch of N shared.dyn buffers with mixed lifetimes, N = 1 ... 4096
//   BM_MergeAllLive/N      one launch of N buffers all live at one point (each written in turn,
//                          then read in turn): the pass's live list holds every buffer
//   BM_MergeLaunches/K     K sibling launches of 16 buffers each (mixed lifetimes), K = 1 ... 1024
//
// A generated launch declares its buffers (64 B to 16 KiB, multiples of the 64-byte alignment;
// float32, float16, int8 or float64), then touches each one twice: a write at its first point,
// a read at its last. A statement is one point; one point in eight is a loop holding three
// consecutive touches (a loop is one point for the pass). Mixed lifetimes, in touches: short
// (55 %: up to 3), medium (30 %: up to N/16) or long (15 %: up to 2N). From its own description
// of the launch, independently of the pass, the benchmark computes the optimal size: the largest
// sum of the bytes of the buffers live at one point, a lower bound for any layout.
//
// Before timing, the output is checked once per input: well formed; in each launch one shared.dyn
// allocation of constant size and one view of it per buffer (same dtype, 64-byte aligned offset,
// inside the merged bytes); no two buffers live at a common point share a byte; optimal <= merged
// <= sum of the buffers' bytes. A violation fails the run (exit 1).
//
// Counters: per_alloc (time per allocation), merged/sum and merged/optimal (bytes, all launches).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <queue>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/bench_main.h"
#include "primjit/builder.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"

namespace primjit::bench {
namespace {

namespace pb = primjit::builder;

constexpr int64_t kThreads = 8;  // threadIdx.x extent: every buffer has at least 8 elements

// splitmix64: a small deterministic generator, the same on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  int64_t below(int64_t n) { return static_cast<int64_t>(next() % static_cast<uint64_t>(n)); }

 private:
  uint64_t state_;
};

// One shared buffer of a generated launch: its bytes, dtype and live range over the points.
struct Planned {
  std::string name;
  DataType dtype;
  int64_t bytes = 0;
  int64_t first = 0, last = 0;
};

struct Kernel {
  IRModule module;
  std::vector<std::vector<Planned>> launches;
};

// The buffers of one launch with their lifetimes, and the order of the touches: (buffer, is the
// first touch) per event, and how many consecutive events each point holds.
struct LaunchPlan {
  std::vector<Planned> buffers;
  std::vector<std::pair<int64_t, bool>> events;
  std::vector<int> point_sizes;
};

// How the lifetimes of a launch's buffers are drawn.
enum class Lifetimes {
  kMixed,    // short, medium and long lifetimes, as described at the top
  kAllLive,  // every buffer written in turn, then read in turn: all live at one point
};

LaunchPlan plan_launch(int64_t n, uint64_t seed, Lifetimes lifetimes) {
  Rng rng(seed);
  LaunchPlan plan;
  const DataType dtypes[] = {DataType::Float(32), DataType::Float(16), DataType::Int(8),
                             DataType::Float(64)};
  for (int64_t i = 0; i < n; ++i) {
    Planned b;
    b.name = "s" + std::to_string(i);
    b.dtype = dtypes[rng.below(4)];
    // Multiples of the 64-byte alignment, so that padding plays no part in the ratios: 64 B
    // to 2 KiB, and one buffer in ten 4 to 16 KiB.
    b.bytes = rng.below(10) == 0 ? 4096 * (1 + rng.below(4)) : 64 * (1 + rng.below(32));
    plan.buffers.push_back(b);
  }
  if (lifetimes == Lifetimes::kAllLive) {
    for (int64_t i = 0; i < n; ++i) plan.buffers[i].first = i;
    for (int64_t i = 0; i < n; ++i) plan.buffers[i].last = n + i;
    for (bool is_first : {true, false}) {
      for (int64_t i = 0; i < n; ++i) plan.events.emplace_back(i, is_first);
    }
    plan.point_sizes.assign(plan.events.size(), 1);
    return plan;
  }
  // Events: open the next buffer, unless an open one has reached the end of its lifetime (in
  // events) or every buffer is open already.
  using Deadline = std::pair<int64_t, int64_t>;  // (last event, buffer)
  std::priority_queue<Deadline, std::vector<Deadline>, std::greater<>> open;
  int64_t next = 0;
  for (int64_t step = 0; next < n || !open.empty(); ++step) {
    if (!open.empty() && (open.top().first <= step || next == n)) {
      plan.events.emplace_back(open.top().second, false);
      open.pop();
      continue;
    }
    int64_t kind = rng.below(100);
    int64_t length = kind < 55   ? 1 + rng.below(3)
                     : kind < 85 ? 1 + rng.below(std::max<int64_t>(1, n / 16))
                                 : 1 + rng.below(2 * n);
    plan.events.emplace_back(next, true);
    open.emplace(step + length, next);
    ++next;
  }
  // Points: one event each, or three in one loop.
  size_t placed = 0;
  int64_t point = 0;
  while (placed < plan.events.size()) {
    int size = rng.below(8) == 0 ? 3 : 1;
    size = static_cast<int>(std::min<size_t>(size, plan.events.size() - placed));
    for (int e = 0; e < size; ++e) {
      auto [buffer, is_first] = plan.events[placed + e];
      (is_first ? plan.buffers[buffer].first : plan.buffers[buffer].last) = point;
    }
    plan.point_sizes.push_back(size);
    placed += size;
    ++point;
  }
  return plan;
}

// `launches` sibling launches of `n` shared.dyn buffers each, written with the C++ builder.
Kernel generate(int64_t n, int64_t launches, Lifetimes lifetimes) {
  pb::FunctionBuilder f("merge_bench");
  pb::BufferRef X = f.arg_buffer("X", {kThreads}, pb::f32);
  f.target(Target::cuda());
  Kernel kernel;
  for (int64_t k = 0; k < launches; ++k) {
    LaunchPlan plan = plan_launch(n, 1000003 * static_cast<uint64_t>(n) + k, lifetimes);
    f.launch_thread("blockIdx.x", 1, [&](pb::Var) {
      pb::Var tx = f.launch_thread("threadIdx.x", static_cast<int>(kThreads));
      std::vector<pb::BufferRef> refs;
      for (const Planned& b : plan.buffers) {
        refs.push_back(f.alloc_buffer(b.name, {static_cast<int>(b.bytes / b.dtype.bytes())},
                                      b.dtype, "shared.dyn"));
      }
      auto touch = [&](int64_t buffer, bool is_first) {
        const pb::BufferRef& s = refs[buffer];
        if (is_first) {
          s[tx] = pb::cast(s.dtype(), X[tx]);
        } else {
          X[tx] = pb::cast(pb::f32, s[tx]);
        }
      };
      size_t event = 0;
      for (int size : plan.point_sizes) {
        if (size == 1) {
          touch(plan.events[event].first, plan.events[event].second);
        } else {
          f.for_("j", 2, [&](pb::Var) {
            for (int e = 0; e < size; ++e) {
              touch(plan.events[event + e].first, plan.events[event + e].second);
            }
          });
        }
        event += size;
      }
    });
    kernel.launches.push_back(std::move(plan.buffers));
  }
  kernel.module = IRModule::from_function("merge_bench", f.finish());
  return kernel;
}

// The optimal size of one launch: the largest sum of the bytes live at one point.
int64_t optimal_bytes(const std::vector<Planned>& buffers) {
  std::map<int64_t, int64_t> delta;  // point -> change of the live bytes
  for (const Planned& b : buffers) {
    delta[b.first] += b.bytes;
    delta[b.last + 1] -= b.bytes;
  }
  int64_t live = 0, best = 0;
  for (const auto& [point, change] : delta) best = std::max(best, live += change);
  return best;
}

// The shared.dyn allocations and buffer declarations of each outermost launch of the output.
class LaunchCollector : public StmtExprVisitor {
 public:
  struct Launch {
    std::vector<Buffer> allocs;
    std::vector<Buffer> decls;
  };
  std::vector<Launch> launches;
  int outside = 0;  // shared.dyn allocations outside any launch

  void visit(const AttrStmt* op) override {
    bool outermost = op->key == attr::kThreadExtent && depth_ == 0;
    if (outermost) launches.emplace_back();
    depth_ += op->key == attr::kThreadExtent;
    StmtExprVisitor::visit(op);
    depth_ -= op->key == attr::kThreadExtent;
  }
  void visit(const AllocBuffer* op) override {
    if (op->buffer->scope() == "shared.dyn") {
      if (depth_ == 0) {
        ++outside;
      } else {
        launches.back().allocs.push_back(op->buffer);
      }
    }
    StmtExprVisitor::visit(op);
  }
  void visit(const DeclBuffer* op) override {
    if (depth_ > 0) launches.back().decls.push_back(op->buffer);
    StmtExprVisitor::visit(op);
  }

 private:
  int depth_ = 0;
};

std::optional<int64_t> const_extent(const Buffer& b) {
  return b->ndim() == 1 ? as_const_int(b->shape[0]) : std::nullopt;
}

struct Verdict {
  std::string error;  // empty when the output is right
  int64_t merged = 0, sum = 0, optimal = 0;
};

// Checks the pass's output for `kernel`; sums the merged, buffer and optimal bytes.
Verdict check(const Kernel& kernel, const IRModule& out) {
  Verdict v;
  std::vector<std::string> errors = well_formed_errors(out);
  if (!errors.empty()) return {"the output is not well formed: " + errors[0]};
  LaunchCollector collected;
  collected.visit_function(out->lookup("merge_bench"));
  if (collected.outside != 0 || collected.launches.size() != kernel.launches.size()) {
    return {"expected " + std::to_string(kernel.launches.size()) + " launches, found " +
            std::to_string(collected.launches.size()) + " and " +
            std::to_string(collected.outside) + " shared.dyn allocations outside any launch"};
  }
  for (size_t k = 0; k < kernel.launches.size(); ++k) {
    const std::vector<Planned>& buffers = kernel.launches[k];
    const LaunchCollector::Launch& launch = collected.launches[k];
    std::string where = "launch " + std::to_string(k) + ": ";
    if (launch.allocs.size() != 1) {
      return {where + std::to_string(launch.allocs.size()) + " shared.dyn allocations, not 1"};
    }
    const Buffer& merged = launch.allocs[0];
    std::optional<int64_t> extent = const_extent(merged);
    if (!extent) return {where + "the merged allocation has no constant 1-d size"};
    int64_t merged_bytes = *extent * merged->dtype.bytes();
    int64_t sum = 0;
    for (const Planned& b : buffers) sum += b.bytes;
    int64_t optimal = optimal_bytes(buffers);
    if (merged_bytes < optimal || merged_bytes > sum) {
      return {where + "merged " + std::to_string(merged_bytes) + " bytes, outside [optimal " +
              std::to_string(optimal) + ", sum " + std::to_string(sum) + "]"};
    }
    v.merged += merged_bytes;
    v.sum += sum;
    v.optimal += optimal;
    if (buffers.size() == 1) continue;  // left unchanged by the pass
    // Where each buffer went: its view's extent is its offset plus its own extent (elements).
    std::map<std::string, const BufferNode*> views;
    for (const Buffer& d : launch.decls) {
      if (d->data.same_as(merged->data)) views[d->name] = d.get();
    }
    std::vector<int64_t> offsets;
    for (const Planned& b : buffers) {
      auto it = views.find(b.name);
      if (it == views.end()) return {where + "no view of " + b.name + " on the merged buffer"};
      std::optional<int64_t> view_extent = const_extent(Buffer(it->second));
      int64_t elem = b.dtype.bytes();
      if (it->second->dtype != b.dtype || !view_extent) {
        return {where + "the view of " + b.name + " has another dtype or no constant extent"};
      }
      int64_t offset = (*view_extent - b.bytes / elem) * elem;
      if (offset < 0 || offset % 64 != 0 || offset + b.bytes > merged_bytes) {
        return {where + b.name + " at byte " + std::to_string(offset) +
                " is misaligned or outside the merged buffer"};
      }
      offsets.push_back(offset);
    }
    for (size_t i = 0; i < buffers.size(); ++i) {
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        const Planned &a = buffers[i], &b = buffers[j];
        bool live_together = a.first <= b.last && b.first <= a.last;
        bool share_bytes = offsets[i] < offsets[j] + b.bytes && offsets[j] < offsets[i] + a.bytes;
        if (live_together && share_bytes) {
          return {where + a.name + " and " + b.name + " are live together but share bytes"};
        }
      }
    }
  }
  return v;
}

// `n` allocations in each of `launches` launches; the complexity's N is `complexity_n`.
void run_merge(benchmark::State& state, int64_t n, int64_t launches, Lifetimes lifetimes,
               int64_t complexity_n) {
  Kernel kernel = generate(n, launches, lifetimes);
  const passes::Pass& pass = passes::get_pass("MergeSharedMemoryAllocations");
  // Checked once per input, outside the timed loop (Google Benchmark calls this function
  // several times per input).
  static std::map<std::tuple<int64_t, int64_t, Lifetimes>, Verdict> verdicts;
  auto [it, first] = verdicts.try_emplace({n, launches, lifetimes});
  if (first) {
    it->second = check(kernel, pass.run(kernel.module, {}));
    // Printed at once: Google Benchmark 1.7.1 crashes fitting the complexity of a family whose
    // every run was skipped, and the reason must be on record before that.
    if (!it->second.error.empty()) {
      std::fprintf(stderr,
                   "bench_merge_shared_memory: CHECK FAILED for %lld allocations x %lld "
                   "launches%s: %s\n",
                   static_cast<long long>(n), static_cast<long long>(launches),
                   lifetimes == Lifetimes::kAllLive ? " (all live)" : "", it->second.error.c_str());
    }
  }
  const Verdict& verdict = it->second;
  if (!verdict.error.empty()) {
    fail();
    state.SkipWithError(("CHECK FAILED: " + verdict.error).c_str());
    return;
  }
  for (auto _ : state) {
    IRModule out = pass.run(kernel.module, {});
    benchmark::DoNotOptimize(out.get());
    // Freeing the output IR (about 2 ms at 4096 allocations) is not the pass's work: the next
    // pass of a pipeline consumes it.
    state.PauseTiming();
    out = IRModule();
    state.ResumeTiming();
  }
  state.SetComplexityN(complexity_n);
  state.counters["per_alloc"] = benchmark::Counter(
      static_cast<double>(n * launches),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["merged/sum"] = static_cast<double>(verdict.merged) / verdict.sum;
  state.counters["merged/optimal"] = static_cast<double>(verdict.merged) / verdict.optimal;
}

// One launch of N allocations with mixed lifetimes.
void BM_MergeAllocations(benchmark::State& state) {
  run_merge(state, state.range(0), 1, Lifetimes::kMixed, state.range(0));
}
// One launch of N allocations all live at one point: the pass's plan keeps every buffer in its
// live list (the worst case for that scan), and no bytes are reused.
void BM_MergeAllLive(benchmark::State& state) {
  run_merge(state, state.range(0), 1, Lifetimes::kAllLive, state.range(0));
}
// K sibling launches of 16 allocations each, mixed lifetimes.
void BM_MergeLaunches(benchmark::State& state) {
  run_merge(state, 16, state.range(0), Lifetimes::kMixed, state.range(0));
}

BENCHMARK(BM_MergeAllocations)
    ->RangeMultiplier(4)
    ->Range(1, 4096)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity();
BENCHMARK(BM_MergeAllLive)
    ->RangeMultiplier(4)
    ->Range(1, 4096)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity();
BENCHMARK(BM_MergeLaunches)
    ->RangeMultiplier(4)
    ->Range(1, 1024)
    ->Unit(benchmark::kMicrosecond)
    ->Complexity();

}  // namespace
}  // namespace primjit::bench

PRIMJIT_BENCHMARK_MAIN()
