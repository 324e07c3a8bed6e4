// MergeSharedMemoryAllocations, checked independently of the pass's own analysis: for every
// merged buffer, the views of buffers that are live at a common statement must not share bytes,
// every view must lie inside the merged allocation and be aligned, and every constant access
// must land inside its own view's bytes. Liveness is recomputed here from the input.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "primjit/ir.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"
#include "tests/unit/test_util.h"

namespace primjit::passes {
namespace {

const DataType i32 = DataType::Int(32);
Expr c(int64_t v) { return make_const(v); }

IRModule run_merge(const IRModule& m, const std::string& pass = "MergeSharedMemoryAllocations") {
  IRModule out = run_passes(m, std::vector<std::string>{pass}, RunOptions{.verify_each = true});
  verify_well_formed(out);
  return out;
}

// ---- the independent reference: liveness by buffer name over the input ----------------------

struct Live {
  int64_t first = -1;
  int64_t last = -1;
};

// Points of a launch body: statements of its sequences, looking through nested thread_extents.
void points_of(const Stmt& s, std::vector<Stmt>* out) {
  if (const auto* seq = s.as<SeqStmt>()) {
    for (const Stmt& x : seq->seq) points_of(x, out);
    return;
  }
  if (const auto* attr_stmt = s.as<AttrStmt>();
      attr_stmt && attr_stmt->key == attr::kThreadExtent) {
    points_of(attr_stmt->body, out);
    return;
  }
  out->push_back(s);
}

// Names of the pointers a statement touches: buffer accesses and bare pointer variables.
std::set<std::string> touched_names(const Stmt& s) {
  std::set<std::string> names;
  if (s.as<AllocBuffer>() != nullptr) return names;
  post_order_visit(s, [&](const Ref<Object>& n) {
    if (const auto* load = n.as<BufferLoad>()) names.insert(load->buffer->data->name);
    if (const auto* store = n.as<BufferStore>()) names.insert(store->buffer->data->name);
    if (const auto* v = n.as<VarNode>(); v && v->is_pointer()) names.insert(v->name);
  });
  return names;
}

// For each outermost launch of `func`, in order: live range of each pointer (by name).
std::vector<std::map<std::string, Live>> input_liveness(const PrimFunc& func) {
  std::vector<std::map<std::string, Live>> launches;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    if (const auto* attr_stmt = s.as<AttrStmt>();
        attr_stmt && attr_stmt->key == attr::kThreadExtent) {
      std::vector<Stmt> points;
      points_of(attr_stmt->body, &points);
      std::map<std::string, Live> live;
      for (size_t i = 0; i < points.size(); ++i) {
        for (const std::string& name : touched_names(points[i])) {
          Live& l = live[name];
          if (l.first < 0) l.first = static_cast<int64_t>(i);
          l.last = static_cast<int64_t>(i);
        }
      }
      launches.push_back(live);
      return;
    }
    if (const auto* seq = s.as<SeqStmt>()) {
      for (const Stmt& x : seq->seq) find(x);
    } else if (const auto* attr_stmt = s.as<AttrStmt>()) {
      find(attr_stmt->body);
    } else if (const auto* loop = s.as<For>()) {
      find(loop->body);
    } else if (const auto* branch = s.as<IfThenElse>()) {
      find(branch->then_case);
      if (branch->else_case.defined()) find(branch->else_case);
    }
  };
  find(func->body);
  return launches;
}

struct Original {
  DataType dtype;
  int64_t extent = 0;
  int data_alignment = 64;
};

// Shared allocations of the input by name (names are unique in these tests).
std::map<std::string, Original> input_allocs(const PrimFunc& func) {
  std::map<std::string, Original> allocs;
  post_order_visit(func->body, [&](const Ref<Object>& n) {
    if (const auto* a = n.as<AllocBuffer>()) {
      std::optional<int64_t> extent = as_const_int(a->buffer->shape[0]);
      if (extent) {
        allocs[a->buffer->name] = {a->buffer->dtype, *extent, a->buffer->data_alignment};
      }
    }
  });
  return allocs;
}

// Checks every merged buffer of `out` against the input's liveness. Returns the number of
// merged buffers seen.
int check_merged(const PrimFunc& in, const PrimFunc& out) {
  std::vector<std::map<std::string, Live>> liveness = input_liveness(in);
  std::map<std::string, Original> originals = input_allocs(in);
  int merged_count = 0;
  size_t launch_index = 0;
  std::function<void(const Stmt&)> find = [&](const Stmt& s) {
    const auto* attr_stmt = s.as<AttrStmt>();
    if (attr_stmt != nullptr && attr_stmt->key == attr::kThreadExtent) {
      ASSERT_LT(launch_index, liveness.size());
      const std::map<std::string, Live>& live = liveness[launch_index++];
      std::vector<Stmt> points;
      points_of(attr_stmt->body, &points);
      // Merged allocations: uint8 shared buffers named buf_*; their views follow them.
      for (const Stmt& p : points) {
        const auto* merged = p.as<AllocBuffer>();
        if (merged == nullptr || merged->buffer->name.rfind("buf_", 0) != 0) continue;
        ++merged_count;
        const VarNode* data = merged->buffer->data.get();
        EXPECT_EQ(merged->buffer->dtype, DataType::UInt(8));
        std::optional<int64_t> total = as_const_int(merged->buffer->shape[0]);
        struct Range {
          std::string name;
          int64_t begin, end;
        };
        std::vector<Range> ranges;
        for (const Stmt& q : points) {
          const auto* view = q.as<DeclBuffer>();
          if (view == nullptr || view->buffer->data.get() != data) continue;
          const Buffer& b = view->buffer;
          ASSERT_TRUE(originals.count(b->name)) << b->name;
          const Original& o = originals.at(b->name);
          EXPECT_EQ(b->dtype, o.dtype) << b->name;
          std::optional<int64_t> view_extent = as_const_int(b->shape[0]);
          ASSERT_TRUE(view_extent.has_value()) << b->name;
          int64_t bytes = o.dtype.bytes();
          int64_t begin = (*view_extent - o.extent) * bytes;
          int64_t end = begin + o.extent * bytes;
          EXPECT_GE(begin, 0) << b->name;
          EXPECT_EQ(begin % bytes, 0) << b->name << " is not aligned to its element size";
          EXPECT_EQ(begin % std::max(o.data_alignment, 1), 0)
              << b->name << " is not aligned to " << o.data_alignment;
          if (total) {
            EXPECT_LE(end, *total) << b->name << " runs past the merged allocation";
          }
          ranges.push_back({b->name, begin, end});
        }
        EXPECT_GE(ranges.size(), 2u);
        for (size_t i = 0; i < ranges.size(); ++i) {
          for (size_t j = i + 1; j < ranges.size(); ++j) {
            const Range& a = ranges[i];
            const Range& b = ranges[j];
            auto la = live.find(a.name), lb = live.find(b.name);
            bool overlap_bytes = a.begin < b.end && b.begin < a.end;
            // A never-touched buffer is live nowhere.
            if (la == live.end() || lb == live.end()) continue;
            bool overlap_live =
                la->second.first <= lb->second.last && lb->second.first <= la->second.last;
            EXPECT_FALSE(overlap_live && overlap_bytes)
                << a.name << " [" << a.begin << ", " << a.end << ") live " << la->second.first
                << ".." << la->second.last << " shares bytes with " << b.name << " [" << b.begin
                << ", " << b.end << ") live " << lb->second.first << ".." << lb->second.last;
          }
        }
        // Constant accesses through a view land inside that view's own bytes.
        std::map<std::string, Range> by_name;
        for (const Range& r : ranges) by_name.emplace(r.name, r);
        auto check_access = [&](const Buffer& b, const std::vector<Expr>& indices) {
          if (b->data.get() != data) return;
          std::optional<int64_t> index = as_const_int(indices[0]);
          if (!index) return;
          const Range& r = by_name.at(b->name);
          int64_t at = *index * b->dtype.bytes();
          EXPECT_GE(at, r.begin) << b->name;
          EXPECT_LT(at, r.end) << b->name;
        };
        post_order_visit(attr_stmt->body, [&](const Ref<Object>& n) {
          if (const auto* load = n.as<BufferLoad>()) check_access(load->buffer, load->indices);
          if (const auto* store = n.as<BufferStore>()) check_access(store->buffer, store->indices);
        });
      }
      return;
    }
    if (const auto* seq = s.as<SeqStmt>()) {
      for (const Stmt& x : seq->seq) find(x);
    } else if (attr_stmt != nullptr) {
      find(attr_stmt->body);
    } else if (const auto* loop = s.as<For>()) {
      find(loop->body);
    } else if (const auto* branch = s.as<IfThenElse>()) {
      find(branch->then_case);
      if (branch->else_case.defined()) find(branch->else_case);
    }
  };
  find(out->body);
  return merged_count;
}

// Shared allocations still present (by scope) after the pass.
int count_allocs(const PrimFunc& f, const std::string& scope) {
  int n = 0;
  post_order_visit(f->body, [&](const Ref<Object>& o) {
    if (const auto* a = o.as<AllocBuffer>(); a && a->buffer->scope() == scope) ++n;
  });
  return n;
}

int64_t merged_bytes(const PrimFunc& f, const std::string& name) {
  int64_t bytes = -1;
  post_order_visit(f->body, [&](const Ref<Object>& o) {
    if (const auto* a = o.as<AllocBuffer>(); a && a->buffer->name == name) {
      bytes = as_const_int(a->buffer->shape[0]).value_or(-2);
    }
  });
  return bytes;
}

constexpr const char* kHeader = R"(# from tvm.script import ir as I
# from tvm.script import tir as T
@I.ir_module
class Module:
)";

TEST(MergeSharedMemory, NoReuseWhenLiveTogether) {
  IRModule in = parse(std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((128,), "float32")):
        with T.launch_thread("threadIdx.x", 128) as tx:
            A = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A[tx] = X[tx]
            B[tx] = A[tx]
            X[tx] = B[tx]
)");
  IRModule out = run_merge(in);
  PrimFunc f = out->lookup("main");
  EXPECT_EQ(check_merged(in->lookup("main"), f), 1);
  EXPECT_EQ(merged_bytes(f, "buf_dyn_shmem"), 1024);
  EXPECT_EQ(count_allocs(f, "shared.dyn"), 1);
}

TEST(MergeSharedMemory, ReuseAfterDeath) {
  IRModule in = parse(std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((128,), "float32")):
        with T.launch_thread("threadIdx.x", 128) as tx:
            A = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A[tx] = X[tx]
            X[tx] = A[tx]
            B[tx] = X[tx]
            X[tx] = B[tx]
)");
  IRModule out = run_merge(in);
  PrimFunc f = out->lookup("main");
  EXPECT_EQ(check_merged(in->lookup("main"), f), 1);
  EXPECT_EQ(merged_bytes(f, "buf_dyn_shmem"), 512);
}

TEST(MergeSharedMemory, MixedDtypesAreAligned) {
  IRModule in = parse(std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((128,), "float64")):
        with T.launch_thread("threadIdx.x", 1) as tx:
            A = T.alloc_buffer((1,), "int8", scope="shared.dyn", align=1)
            B = T.alloc_buffer((3,), "int16", scope="shared.dyn", align=1)
            C = T.alloc_buffer((2,), "float64", scope="shared.dyn", align=1)
            E = T.alloc_buffer((5,), "int8", scope="shared.dyn", align=1)
            D = T.alloc_buffer((1,), "float64", scope="shared.dyn")
            A[0] = T.int8(1)
            B[0] = T.int16(1)
            C[0] = X[0]
            E[4] = T.int8(2)
            D[0] = X[1]
            X[2] = C[1] + D[0] + T.Cast("float64", A[0]) + T.Cast("float64", B[2] + T.Cast("int16", E[4]))
)");
  IRModule out = run_merge(in);
  EXPECT_EQ(check_merged(in->lookup("main"), out->lookup("main")), 1);
}

TEST(MergeSharedMemory, TwoSiblingLaunchesGetTheirOwnBuffers) {
  IRModule in = parse(std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((128,), "float32"), Y: T.Buffer((128,), "float32")):
        with T.launch_thread("threadIdx.x", 128) as tx0:
            A = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            B = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            A[tx0] = X[tx0]
            B[tx0] = A[tx0]
            X[tx0] = B[tx0]
        with T.launch_thread("threadIdx.x", 128) as tx1:
            C = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            D = T.alloc_buffer((128,), "float32", scope="shared.dyn")
            C[tx1] = Y[tx1]
            D[tx1] = C[tx1]
            Y[tx1] = D[tx1]
)");
  IRModule out = run_merge(in);
  PrimFunc f = out->lookup("main");
  EXPECT_EQ(check_merged(in->lookup("main"), f), 2);
  EXPECT_EQ(count_allocs(f, "shared.dyn"), 2);
}

TEST(MergeSharedMemory, LoopIsOnePointAndStaticOption) {
  std::string text = std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((1024,), "float16"), Y: T.Buffer((128,), "float32")):
        with T.launch_thread("blockIdx.x", 4) as bx:
            with T.launch_thread("threadIdx.x", 128) as tx:
                A = T.alloc_buffer((128,), "float16", scope="shared")
                B = T.alloc_buffer((128,), "float16", scope="shared")
                C = T.alloc_buffer((128,), "float32", scope="shared")
                for k in range(8):
                    A[tx] = X[k * 128 + tx]
                    B[tx] = A[127 - tx]
                Y[tx] = T.Cast("float32", B[tx])
                C[tx] = Y[tx]
                Y[tx] = C[127 - tx]
)";
  IRModule in = parse(text);
  // Without static=1 nothing changes.
  IRModule same = run_merge(in);
  EXPECT_TRUE(same->lookup("main").same_as(in->lookup("main")));
  IRModule out = run_merge(in, "MergeSharedMemoryAllocations{static=1}");
  PrimFunc f = out->lookup("main");
  EXPECT_EQ(check_merged(in->lookup("main"), f), 1);
  EXPECT_EQ(merged_bytes(f, "buf_shmem"), 512);
}

TEST(MergeSharedMemory, BadArgumentIsAnError) {
  IRModule in = parse(std::string(kHeader) + R"(    @T.prim_func
    def main(X: T.Buffer((128,), "float32")):
        X[0] = T.float32(0)
)");
  EXPECT_ERROR_CONTAINS(run_merge(in, "MergeSharedMemoryAllocations{bogus=1}"),
                        "pass MergeSharedMemoryAllocations has no option 'bogus'; accepted "
                        "options:\n  static=bool (default false)");
  EXPECT_ERROR_CONTAINS(run_merge(in, "MergeSharedMemoryAllocations{static=yes}"),
                        "pass MergeSharedMemoryAllocations: option 'static' must be a bool, "
                        "got 'yes'");
}

// ---- randomized kernels ----------------------------------------------------------------------

// N shared.dyn buffers with random dtypes, sizes (1..4096 bytes) and alignments; each touched
// at random statement positions. A position touching several buffers is a one-iteration loop
// (one point); otherwise a single store.
PrimFunc random_kernel(std::mt19937& rng, int n) {
  const DataType dtypes[] = {DataType::Int(8),      DataType::Int(16), DataType::Float(16),
                             DataType::Float(32),   DataType::Int(64), DataType::Float(64),
                             DataType::Float(32, 4)};
  const int aligns[] = {1, 4, 16, 64, 128};
  auto uniform = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int positions = uniform(1, 3 * n);
  std::vector<Buffer> buffers;
  std::vector<std::vector<int>> touches_at(positions);
  std::vector<Stmt> seq;
  for (int k = 0; k < n; ++k) {
    DataType t = dtypes[uniform(0, 6)];
    int64_t bytes = uniform(1, 4096);
    int64_t extent = std::max<int64_t>(1, bytes / t.bytes());
    int align = aligns[uniform(0, 4)];
    Var data = Var::make_pointer("S" + std::to_string(k), t, "shared.dyn");
    Buffer b = Buffer::make(data, t, {c(extent)}, {}, Expr(), "S" + std::to_string(k), align);
    buffers.push_back(b);
    seq.push_back(AllocBuffer::make(b));
    int first = uniform(0, positions - 1);
    int last = uniform(first, std::min(positions - 1, first + uniform(0, positions)));
    touches_at[first].push_back(k);
    if (last != first) touches_at[last].push_back(k);
    for (int extra = uniform(0, 2); extra > 0; --extra) {
      int p = uniform(first, last);
      if (std::find(touches_at[p].begin(), touches_at[p].end(), k) == touches_at[p].end()) {
        touches_at[p].push_back(k);
      }
    }
  }
  // Allocations in random order before the statements.
  std::shuffle(seq.begin(), seq.end(), rng);
  for (int p = 0; p < positions; ++p) {
    std::vector<Stmt> stores;
    for (int k : touches_at[p]) {
      const Buffer& b = buffers[k];
      int64_t extent = *as_const_int(b->shape[0]);
      stores.push_back(BufferStore::make(b, BufferLoad::make(b, {c(extent - 1)}), {c(0)}));
    }
    if (stores.empty()) continue;
    if (stores.size() == 1) {
      seq.push_back(stores[0]);
    } else {
      Var j = Var::make("j", i32);  // a fresh loop variable per loop
      seq.push_back(For::make(j, c(0), c(1), ForKind::kSerial, SeqStmt::make(stores)));
    }
  }
  Var tx = Var::make("tx", i32);
  Stmt launch = AttrStmt::make(IterVar::make(tx, "threadIdx.x"), attr::kThreadExtent, c(32),
                               SeqStmt::make(seq));
  if (uniform(0, 1) == 1) {
    // threadIdx nested in blockIdx: still one kernel, merged at the outermost launch.
    Var bx = Var::make("bx", i32);
    launch = AttrStmt::make(IterVar::make(bx, "blockIdx.x"), attr::kThreadExtent, c(4), launch);
  }
  return PrimFunc::make({}, {}, launch);
}

TEST(MergeSharedMemory, RandomKernelsNeverShareLiveBytes) {
  int merged = 0;
  for (uint32_t seed = 1; seed <= 300; ++seed) {
    std::mt19937 rng(seed);
    int n = std::uniform_int_distribution<int>(2, 40)(rng);
    PrimFunc in = random_kernel(rng, n);
    IRModule out = run_merge(IRModule::from_function("main", in));
    SCOPED_TRACE("seed " + std::to_string(seed) + ", " + std::to_string(n) + " buffers");
    merged += check_merged(in, out->lookup("main"));
    EXPECT_EQ(count_allocs(out->lookup("main"), "shared.dyn"), 1);
    // Deterministic: the same input gives the same output.
    IRModule again = run_merge(IRModule::from_function("main", in));
    EXPECT_EQ(print(again), print(out));
  }
  EXPECT_EQ(merged, 300);
}

}  // namespace
}  // namespace primjit::passes
