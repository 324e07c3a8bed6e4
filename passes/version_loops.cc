// VersionLoops: loop nests over symbolic dimensions get a fast path for dimensions that are
// multiples of the tile or vector width, chosen once at run time before the nest.
//
// Like Halide's specialize(): a run-time condition picks a copy of the nest in which the
// condition is true, so Simplify (run after) folds tile guards and LLVM sees trip counts that
// are multiples of its vector width; the general copy keeps them.
//
// Requires: nothing. The JIT runs it right after FlattenBuffer for variants with symbolic or
//           bucketed dimensions (it is not in default_pipeline(): it doubles the code of the
//           nests it versions; a bucketed variant's asserted key facts let Simplify drop the
//           version the key rules out).
// Ensures:  each outermost loop nest (a For not inside another For) that contains no thread
//           launch and whose innermost or vectorized loops' bounds, or whose branch conditions
//           inside the nest, use integer scalar parameters or buffer shape variables (the
//           nest's "dimensions") becomes
//               if d1 % w1 == 0 and ...:  d1_w1 = d1 // w1 ...; <nest with d := d_w * w>
//               else:                     <nest unchanged>
//           where w is the option `factor` (VersionLoops{factor=N}, default 16) or the largest
//           power-of-two divisor at most 64 of a floor division or modulo of an expression using d
//           in the nest (a tile width), whichever is larger. The fast copy gives every variable and
//           buffer defined inside it a fresh object. Both copies compute the same values in the
//           same order (only integer index arithmetic is rewritten; d_w * w == d exactly when
//           d % w == 0), so results are bit-identical. Nests without such dimensions (constant
//           bounds, dimensions used only by outer loops or in indices) are left alone.
// Example (factor 16):
//   for i in range(m):                  if n % 16 == 0:
//       for j in range(n):       =>         n_16: T.int32 = n // 16
//           A[i, j] = 0.0                   for i in range(m):
//                                               for j in range(n_16 * 16): A[i, j] = 0.0
//                                       else: <the original nest>
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <vector>

#include "passes/fresh_definitions.h"
#include "passes/pass_list.h"
#include "passes/pass_options.h"
#include "primjit/error.h"
#include "primjit/ir/attr_keys.h"

namespace primjit::passes {
namespace {

constexpr int64_t kMaxTileWidth = 64;

// Device code: thread launches and device regions are compiled as kernels, not versioned.
bool is_launch(const std::string& key) {
  return key == attr::kThreadExtent || key == attr::kVirtualThread || key == attr::kDeviceScope;
}

bool is_power_of_two(int64_t v) { return v > 1 && (v & (v - 1)) == 0; }

// What one loop nest says about the dimensions: which ones decide its inner loops or
// branches, and the widest tile each is divided into.
class NestScan : public StmtExprVisitor {
 public:
  NestScan(const std::unordered_map<const VarNode*, size_t>& index, int64_t factor)
      : index_(index), factor_(factor) {}

  std::set<size_t> relevant;  // indices in dims
  bool launches = false;

  void visit(const For* op) override {
    if (op->for_kind == ForKind::kThreadBinding) launches = true;
    bool inner = op->for_kind == ForKind::kVectorized || !contains_loop(op->body);
    if (inner) {
      mark(op->min);
      mark(op->extent);
    }
    ++depth_;
    StmtExprVisitor::visit(op);
    --depth_;
  }
  void visit(const AttrStmt* op) override {
    if (is_launch(op->key)) launches = true;
    StmtExprVisitor::visit(op);
  }
  void visit(const IfThenElse* op) override {
    if (depth_ > 0) mark(op->condition);
    StmtExprVisitor::visit(op);
  }
  void visit(const Select* op) override {
    if (depth_ > 0) mark(op->condition);
    StmtExprVisitor::visit(op);
  }
  void visit(const FloorDiv* op) override {
    widen(op->a, op->b);
    StmtExprVisitor::visit(op);
  }
  void visit(const FloorMod* op) override {
    widen(op->a, op->b);
    StmtExprVisitor::visit(op);
  }

  // The width of each relevant dimension (the tile widths seen for it, at least factor).
  std::vector<std::pair<size_t, int64_t>> widths() const {
    std::vector<std::pair<size_t, int64_t>> out;
    for (size_t index : relevant) {
      auto it = tile_.find(index);
      out.emplace_back(index, std::max(factor_, it == tile_.end() ? int64_t{0} : it->second));
    }
    return out;
  }

 private:
  static bool contains_loop(const Stmt& s) {
    bool found = false;
    post_order_visit(s, [&](const Ref<Object>& n) {
      found = found || (n.defined() && n->kind() == NodeKind::kFor);
    });
    return found;
  }
  // Calls f with the index of each dimension `e` uses.
  template <typename F>
  void each_dim(const Expr& e, F f) {
    post_order_visit(e, [&](const Ref<Object>& n) {
      if (!n.defined() || n->kind() != NodeKind::kVar) return;
      auto it = index_.find(static_cast<const VarNode*>(n.get()));
      if (it != index_.end()) f(it->second);
    });
  }
  void mark(const Expr& e) {
    each_dim(e, [&](size_t k) { relevant.insert(k); });
  }
  void widen(const Expr& a, const Expr& b) {
    std::optional<int64_t> w = as_const_int(b);
    if (!w || !is_power_of_two(*w) || *w > kMaxTileWidth) return;
    each_dim(a, [&](size_t k) { tile_[k] = std::max(tile_[k], *w); });
  }

  const std::unordered_map<const VarNode*, size_t>& index_;
  int64_t factor_;
  int depth_ = 0;
  std::map<size_t, int64_t> tile_;
};

class Versioner : public StmtExprMutator {
 public:
  Versioner(std::vector<Var> dims, int64_t factor) : dims_(std::move(dims)), factor_(factor) {
    for (size_t k = 0; k < dims_.size(); ++k) index_.emplace(dims_[k].get(), k);
  }

  Stmt mutate(const For* op) override {
    Stmt nest(op);
    NestScan scan(index_, factor_);
    scan.visit_stmt(nest);
    if (scan.launches || scan.relevant.empty()) return nest;
    std::vector<Stmt> fast;
    VarMap map;
    Expr condition;
    for (const auto& [index, width] : scan.widths()) {
      const Var& dim = dims_[index];
      Expr w = IntImm::make(dim.dtype(), width);
      Expr check = EQ::make(FloorMod::make(dim, w), IntImm::make(dim.dtype(), 0));
      condition = condition.defined() ? And::make(condition, check) : check;
      Var quotient = Var::make(dim->name + "_" + std::to_string(width), dim.dtype());
      fast.push_back(Bind::make(quotient, FloorDiv::make(dim, w)));
      map.emplace(dim.get(), Mul::make(quotient, w));
    }
    fast.push_back(copy_with_fresh_definitions(nest, map));
    return IfThenElse::make(condition, SeqStmt::make(std::move(fast)), nest);
  }
  // Thread launches are left alone, with the loops inside them.
  Stmt mutate(const AttrStmt* op) override {
    if (is_launch(op->key)) return Stmt(op);
    return StmtExprMutator::mutate(op);
  }
  // Expressions hold no loop nests.
  Expr mutate_expr(const Expr& e) override { return e; }

 private:
  std::vector<Var> dims_;
  std::unordered_map<const VarNode*, size_t> index_;
  int64_t factor_;
};

// The integer scalar parameters and buffer shape variables of `func`, in signature order.
std::vector<Var> dimensions(const PrimFunc& func) {
  std::vector<Var> dims;
  auto add = [&](const Expr& e) {
    const auto* v = e.as<VarNode>();
    if (v == nullptr || !v->dtype.is_integer() || !v->dtype.is_scalar()) return;
    if (std::none_of(dims.begin(), dims.end(), [&](const Var& d) { return d.get() == v; })) {
      dims.emplace_back(v);
    }
  };
  for (const Var& param : func->params) {
    if (!param.dtype().is_handle()) {
      add(param);
      continue;
    }
    Buffer buffer = func->buffer_of(param);
    if (!buffer.defined()) continue;
    for (const Expr& e : buffer->shape) add(e);
  }
  return dims;
}

struct VersionLoopsOptions {
  int64_t factor = 16;
};

}  // namespace

Pass make_version_loops_pass() {
  PassOptions<VersionLoopsOptions> options;
  options.add_int("factor", &VersionLoopsOptions::factor,
                  "the smallest multiple a fast path assumes of a dimension (a power of two)", 2);
  return typed_pass<VersionLoopsOptions>(
      "VersionLoops",
      "loop nests over symbolic dimensions get a fast path for multiples of the tile or vector "
      "width, chosen at run time",
      std::move(options), [](const IRModule& module, const VersionLoopsOptions& options) {
        PRIMJIT_USER_CHECK(is_power_of_two(options.factor) && options.factor <= kMaxTileWidth)
            << "VersionLoops: factor must be a power of two from 2 to " << kMaxTileWidth << ", got "
            << options.factor;
        IRModule out = module;
        for (const auto& [gvar, func] : module->functions) {
          std::vector<Var> dims = dimensions(func);
          if (dims.empty()) continue;
          Stmt body = Versioner(std::move(dims), options.factor).mutate_stmt(func->body);
          if (!body.same_as(func->body)) {
            out = out.with_function(gvar->name, func.with_body(body));
          }
        }
        return out;
      });
}

}  // namespace primjit::passes
