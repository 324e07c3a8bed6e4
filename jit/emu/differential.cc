// Differential pass checking in the reference interpreter.
#include "jit/emu/differential.h"

#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>

#include "ir/hash_mix.h"
#include "jit/emu/value.h"
#include "primjit/error.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {

// --- HostTensor -----------------------------------------------------------------------------

HostTensor::HostTensor(DataType dtype, std::vector<int64_t> shape, int device_type)
    : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t d : shape_) {
    PRIMJIT_USER_CHECK(d >= 0) << "HostTensor: negative dimension " << d;
    size_ *= d;
  }
  size_ *= dtype.lanes();
  const int64_t lane_bytes = std::max(1, dtype.bits() / 8);
  bytes_.assign(static_cast<size_t>(std::max<int64_t>(1, size_ * lane_bytes)), 0);
  tensor_.device = DLDevice{static_cast<DLDeviceType>(device_type), 0};
  init_tensor();
}

HostTensor::HostTensor(const HostTensor& other)
    : dtype_(other.dtype_),
      shape_(other.shape_),
      strides_(other.strides_),
      elem_offset_(other.elem_offset_),
      size_(other.size_),
      bytes_(other.bytes_) {
  tensor_.device = other.tensor_.device;
  init_tensor();
}

HostTensor& HostTensor::operator=(const HostTensor& other) {
  if (this == &other) return *this;
  dtype_ = other.dtype_;
  shape_ = other.shape_;
  strides_ = other.strides_;
  elem_offset_ = other.elem_offset_;
  size_ = other.size_;
  bytes_ = other.bytes_;
  tensor_.device = other.tensor_.device;
  init_tensor();
  return *this;
}

void HostTensor::init_tensor() {
  tensor_.data = bytes_.data();
  tensor_.ndim = static_cast<int>(shape_.size());
  tensor_.dtype =
      DLDataType{static_cast<uint8_t>(dtype_.dlpack_code()), static_cast<uint8_t>(dtype_.bits()),
                 static_cast<uint16_t>(dtype_.lanes())};
  tensor_.shape = shape_.data();
  tensor_.strides = strides_.empty() ? nullptr : strides_.data();
  const int64_t lane_bytes = std::max(1, dtype_.bits() / 8);
  tensor_.byte_offset = static_cast<uint64_t>(elem_offset_ * lane_bytes * dtype_.lanes());
}

void HostTensor::set_layout(std::vector<int64_t> strides, int64_t elem_offset) {
  PRIMJIT_ICHECK(strides.size() == shape_.size() && elem_offset >= 0);
  int64_t elements = elem_offset + 1;  // one past the last element
  bool empty = false;
  for (size_t d = 0; d < shape_.size(); ++d) {
    PRIMJIT_ICHECK(strides[d] >= 0);
    empty = empty || shape_[d] == 0;
    elements += shape_[d] > 0 ? (shape_[d] - 1) * strides[d] : 0;
  }
  strides_ = std::move(strides);
  elem_offset_ = elem_offset;
  size_ = (empty ? elem_offset : elements) * dtype_.lanes();
  const int64_t lane_bytes = std::max(1, dtype_.bits() / 8);
  bytes_.assign(static_cast<size_t>(std::max<int64_t>(1, size_ * lane_bytes)), 0);
  init_tensor();
}

double HostTensor::get(int64_t i) const {
  TypeInfo t(dtype_);
  const int64_t lane_bytes = std::max(1, dtype_.bits() / 8);
  return to_double(t, decode(t, bytes_.data() + i * lane_bytes));
}

void HostTensor::set(int64_t i, double v) {
  TypeInfo t(dtype_);
  const int64_t lane_bytes = std::max(1, dtype_.bits() / 8);
  Scalar s = t.is_floating() ? from_double(t, v) : from_integer(t, static_cast<int64_t>(v), false);
  encode(t, s, bytes_.data() + i * lane_bytes);
}

void HostTensor::fill_random(uint64_t seed) {
  uint64_t state = seed * hashing::kGoldenRatio + 0x632BE59BD9B4E019ull;
  auto next = [&] { return hashing::mix64(state += hashing::kGoldenRatio); };  // splitmix64
  for (int64_t i = 0; i < size_; ++i) {
    const uint64_t r = next();
    if (dtype_.is_floating()) {
      set(i, static_cast<double>(r >> 11) * 0x1.0p-53);
    } else if (dtype_.is_bool()) {
      set(i, static_cast<double>(r & 1));
    } else {
      set(i, static_cast<double>(r % 10));
    }
  }
}

std::string HostTensor::index_text(int64_t i) const {
  if (!strides_.empty() || elem_offset_ != 0) {  // a position in the storage, gaps included
    return "storage value " + std::to_string(i);
  }
  std::vector<int64_t> idx(shape_.size());
  int64_t rest = i / dtype_.lanes();
  for (size_t d = shape_.size(); d-- > 0;) {
    idx[d] = shape_[d] ? rest % shape_[d] : 0;
    rest = shape_[d] ? rest / shape_[d] : 0;
  }
  std::ostringstream os;
  os << "[";
  for (size_t d = 0; d < idx.size(); ++d) os << (d ? ", " : "") << idx[d];
  os << "]";
  if (dtype_.lanes() > 1) os << " lane " << i % dtype_.lanes();
  return os.str();
}

double comparison_tolerance(DataType dtype) {
  switch (dtype.code()) {
    case DataType::Code::kFloat:
      return dtype.bits() == 64 ? 1e-12 : dtype.bits() == 32 ? 1e-5 : 1e-2;
    case DataType::Code::kBFloat:
      return 6e-2;
    // float8: one unit in the last place is 2^-3 (e4m3) or 2^-2 (e5m2) relative at worst.
    case DataType::Code::kFloat8E4M3FN:
      return 0.13;
    case DataType::Code::kFloat8E5M2:
      return 0.26;
    default:
      return 0;
  }
}

// --- the report -----------------------------------------------------------------------------

const FunctionOutcome* DifferentialReport::first_change() const {
  const FunctionOutcome* first = nullptr;
  for (const FunctionOutcome& f : functions) {
    if (f.status == FunctionOutcome::Status::kChanged &&
        (first == nullptr || f.pass_index < first->pass_index)) {
      first = &f;
    }
  }
  return first;
}

int DifferentialReport::num_checked() const {
  int n = 0;
  for (const FunctionOutcome& f : functions) n += f.status != FunctionOutcome::Status::kSkipped;
  return n;
}

int DifferentialReport::num_skipped() const {
  return static_cast<int>(functions.size()) - num_checked();
}

std::string DifferentialReport::str() const {
  std::ostringstream os;
  for (const FunctionOutcome& f : functions) {
    os << f.function << ": ";
    switch (f.status) {
      case FunctionOutcome::Status::kUnchanged:
        os << "unchanged through " << passes.size() << " passes (ran " << f.runs << " times)";
        break;
      case FunctionOutcome::Status::kChanged:
        os << "changed by pass '" << f.pass << "': " << f.detail;
        break;
      case FunctionOutcome::Status::kSkipped:
        os << "skipped" << (f.pass.empty() ? "" : " after pass '" + f.pass + "'") << ": "
           << f.detail;
        break;
    }
    os << "\n";
  }
  if (!pipeline_error.empty()) os << "pipeline stopped: " << pipeline_error << "\n";
  return os.str();
}

namespace {

// --- inputs ---------------------------------------------------------------------------------

struct Inputs {
  std::vector<HostTensor> tensors;
  std::vector<int> tensor_of_param;  // -1 for scalars
  std::vector<Arg> scalars;          // per param (unused for tensors)
  std::vector<std::string> names;    // per param
};

std::optional<int64_t> eval_int(const Expr& e, const std::map<const VarNode*, int64_t>& vars) {
  if (auto c = as_const_int(e)) return c;
  if (const auto* v = e.as<VarNode>()) {
    auto it = vars.find(v);
    return it == vars.end() ? std::nullopt : std::optional<int64_t>(it->second);
  }
  if (const auto* c = e.as<Cast>()) return eval_int(c->value, vars);
  auto binary = [&](const auto* op, auto f) -> std::optional<int64_t> {
    auto a = eval_int(op->a, vars), b = eval_int(op->b, vars);
    if (!a || !b) return std::nullopt;
    return f(*a, *b);
  };
  auto floordiv = [](int64_t a, int64_t b) {
    return b == 0 ? 0 : a / b - ((a % b != 0) && ((a < 0) != (b < 0)));
  };
  if (const auto* op = e.as<Add>()) return binary(op, [](int64_t a, int64_t b) { return a + b; });
  if (const auto* op = e.as<Sub>()) return binary(op, [](int64_t a, int64_t b) { return a - b; });
  if (const auto* op = e.as<Mul>()) return binary(op, [](int64_t a, int64_t b) { return a * b; });
  if (const auto* op = e.as<FloorDiv>()) return binary(op, floordiv);
  if (const auto* op = e.as<FloorMod>()) {
    return binary(op, [&](int64_t a, int64_t b) { return b == 0 ? 0 : a - floordiv(a, b) * b; });
  }
  if (const auto* op = e.as<Div>()) {
    return binary(op, [](int64_t a, int64_t b) { return b == 0 ? 0 : a / b; });
  }
  if (const auto* op = e.as<Min>())
    return binary(op, [](int64_t a, int64_t b) { return std::min(a, b); });
  if (const auto* op = e.as<Max>())
    return binary(op, [](int64_t a, int64_t b) { return std::max(a, b); });
  return std::nullopt;
}

// What buffers and the scalar parameters that are no dimension hold: random values, or all
// zeros / all ones, which make tests of memory against parameters (`if A[0] == n`) go the
// other way than random values do.
enum class Pattern { kRandom, kZeros, kOnes };

// The strides and element offset a parameter buffer declares, as values: a variable not bound
// yet gets a padded stride (gaps between rows and between elements, which a wrong index would
// read or write) or an offset of 3; returns why they cannot be laid out, or "".
std::string declared_layout(const Buffer& b, const std::vector<int64_t>& shape,
                            std::map<const VarNode*, int64_t>* vars, HostTensor* t) {
  const bool offset = b->elem_offset.defined() && as_const_int(b->elem_offset) != 0;
  if (b->strides.empty() && !offset) return "";
  auto unbound = [&](const Expr& e) {
    const auto* v = e.as<VarNode>();
    return v != nullptr && !vars->count(v) ? v : nullptr;
  };
  std::vector<int64_t> strides(shape.size());
  int64_t span = 1;  // elements the later dimensions cover
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t stride = span;
    if (!b->strides.empty()) {
      if (const VarNode* v = unbound(b->strides[d])) {
        (*vars)[v] = span + (d + 1 == shape.size() ? 1 : 3);
      }
      std::optional<int64_t> value = eval_int(b->strides[d], *vars);
      if (!value) {
        return "the strides of buffer parameter '" + b->name + "' have no value for `" +
               print(b->strides[d]) + "`";
      }
      if (*value < 0) return "buffer parameter '" + b->name + "' gets a negative stride";
      stride = *value;
    }
    strides[d] = stride;
    span = std::max(span, stride * std::max<int64_t>(1, shape[d]));
  }
  int64_t elem_offset = 0;
  if (offset) {
    if (const VarNode* v = unbound(b->elem_offset)) (*vars)[v] = 3;
    std::optional<int64_t> value = eval_int(b->elem_offset, *vars);
    if (!value || *value < 0) {
      return "buffer parameter '" + b->name + "' gets no non-negative element offset";
    }
    elem_offset = *value;
  }
  t->set_layout(std::move(strides), elem_offset);
  return "";
}

// Builds the inputs of `func`; returns why it cannot, or "".
std::string make_inputs(const PrimFunc& func, const DifferentialOptions& options,
                        int64_t default_dim, uint64_t seed, Pattern pattern, Inputs* out) {
  std::map<const VarNode*, int64_t> vars;
  auto value_of = [&](const VarNode* v) {
    auto it = options.dims.find(v->name);
    return it != options.dims.end() ? it->second : default_dim;
  };
  for (const auto& [param, b] : func->buffer_map) {
    for (const Expr& e : b->shape) {
      if (const auto* v = e.as<VarNode>(); v && !vars.count(v)) vars[v] = value_of(v);
    }
  }
  const int64_t uniform = pattern == Pattern::kOnes ? 1 : 0;
  for (const Var& p : func->params) {
    if (!func->buffer_of(p).defined() && p.dtype().is_int_or_bool() && !p.dtype().is_bool() &&
        !vars.count(p.get())) {
      bool named = options.dims.count(p->name) != 0;
      vars[p.get()] = pattern == Pattern::kRandom || named ? value_of(p.get()) : uniform;
    }
  }
  Target target = func->target();
  const int device = target.defined() && target->kind == "cuda" ? kDLCUDA : kDLCPU;
  for (size_t i = 0; i < func->params.size(); ++i) {
    const Var& p = func->params[i];
    Buffer b = func->buffer_of(p);
    out->names.push_back(b.defined() ? b->name : p->name);
    if (b.defined()) {
      std::vector<int64_t> shape;
      for (const Expr& e : b->shape) {
        std::optional<int64_t> d = eval_int(e, vars);
        if (!d)
          return "the shape of buffer parameter '" + b->name + "' has no value for `" + print(e) +
                 "`";
        if (*d < 0) return "buffer parameter '" + b->name + "' gets a negative dimension";
        shape.push_back(*d);
      }
      out->tensor_of_param.push_back(static_cast<int>(out->tensors.size()));
      out->tensors.emplace_back(b->dtype, shape, device);
      if (std::string why = declared_layout(b, shape, &vars, &out->tensors.back()); !why.empty()) {
        return why;
      }
      if (pattern == Pattern::kRandom) {
        out->tensors.back().fill_random(seed + 7919 * i);
      } else {
        HostTensor& t = out->tensors.back();
        for (int64_t k = 0; k < t.size(); ++k) t.set(k, static_cast<double>(uniform));
      }
      out->scalars.emplace_back();
      continue;
    }
    out->tensor_of_param.push_back(-1);
    DataType t = p.dtype();
    if (t.lanes() != 1) return "parameter '" + p->name + "' is a vector";
    if (t.is_bool()) {
      out->scalars.emplace_back(true);
    } else if (t.is_integer()) {
      out->scalars.emplace_back(vars.at(p.get()));
    } else if (t.is_floating()) {
      out->scalars.emplace_back(pattern == Pattern::kRandom ? 0.5 : static_cast<double>(uniform));
    } else {
      return "parameter '" + p->name +
             "' is a pointer without a buffer, so no input can be made for it";
    }
  }
  return "";
}

// --- runs -----------------------------------------------------------------------------------

struct RunResult {
  enum class Status { kOk, kFailed, kUnsupported } status = Status::kOk;
  std::string error;
  std::vector<HostTensor> tensors;
  std::optional<Arg> ret;
};

RunResult run_once(const BackendRunner& run, const std::string& name, const Inputs& inputs) {
  RunResult r;
  r.tensors = inputs.tensors;  // fresh copies
  std::vector<Arg> args;
  for (size_t i = 0; i < inputs.tensor_of_param.size(); ++i) {
    const int t = inputs.tensor_of_param[i];
    args.push_back(t >= 0 ? Arg(r.tensors[static_cast<size_t>(t)].dl()) : inputs.scalars[i]);
  }
  try {
    r.ret = run(name, args);
  } catch (const UnsupportedError& e) {
    r.status = RunResult::Status::kUnsupported;
    r.error = e.what();
  } catch (const Error& e) {
    r.status = RunResult::Status::kFailed;
    r.error = e.what();
  }
  return r;
}

BackendRunner runner_of(const Interpreter& interp) {
  return [&interp](const std::string& name, std::span<const Arg> args) {
    return interp.run(name, args);
  };
}

bool same_value(DataType t, double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  if (a == b) return true;
  const double tol = comparison_tolerance(t);
  if (tol == 0 || std::isinf(a) || std::isinf(b)) return false;
  return std::fabs(a - b) <= tol * std::max({1.0, std::fabs(a), std::fabs(b)});
}

std::string number(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

// What differs between two successful runs, or "".
std::string compare(const Inputs& inputs, const RunResult& before, const RunResult& after,
                    const std::string& before_label = "before",
                    const std::string& after_label = "after") {
  for (size_t i = 0; i < inputs.tensor_of_param.size(); ++i) {
    const int t = inputs.tensor_of_param[i];
    if (t < 0) continue;
    const HostTensor& a = before.tensors[static_cast<size_t>(t)];
    const HostTensor& b = after.tensors[static_cast<size_t>(t)];
    for (int64_t k = 0; k < a.size(); ++k) {
      if (!same_value(a.dtype(), a.get(k), b.get(k))) {
        return "buffer '" + inputs.names[i] + "' (argument #" + std::to_string(i) + ") element " +
               a.index_text(k) + ": " + before_label + " " + number(a.get(k)) + ", " + after_label +
               " " + number(b.get(k));
      }
    }
  }
  const bool has_a = before.ret.has_value(), has_b = after.ret.has_value();
  if (has_a != has_b) {
    return std::string("the return value ") + (has_a ? "disappeared" : "appeared") +
           (has_a ? " (was " + before.ret->str() + ")" : " (" + after.ret->str() + ")");
  }
  if (has_a) {
    const Arg& x = *before.ret;
    const Arg& y = *after.ret;
    auto value = [](const Arg& v) {
      return v.kind() == Arg::Kind::kFloat ? v.as_float() : static_cast<double>(v.as_int());
    };
    const bool floating = x.kind() == Arg::Kind::kFloat || y.kind() == Arg::Kind::kFloat;
    const bool same = floating ? same_value(DataType::Float(32), value(x), value(y))
                               : (x.kind() == Arg::Kind::kPointer ? x.as_pointer() == y.as_pointer()
                                                                  : x.as_int() == y.as_int());
    if (!same) {
      return "the return value: " + before_label + " " + x.str() + ", " + after_label + " " +
             y.str();
    }
  }
  return "";
}

// Why a function is no entry point for users, or "".
std::string not_callable(const PrimFunc& func) {
  if (func->is_kernel()) {
    return "a kernel (calling_conv 2); it runs when its caller launches it";
  }
  Target t = func->target();
  if (t.defined() && t->is_device() && !t->host.defined()) {
    return "a device function (target " + t.str() + " without host); it runs when launched";
  }
  return "";
}

struct Step {
  std::string name;
  std::function<IRModule(const IRModule&)> run;
};

// `module` with `options.default_target` on the functions that have no target.
IRModule with_default_target(IRModule module, const DifferentialOptions& options) {
  if (!options.default_target.defined()) return module;
  for (const auto& [gvar, func] : module->functions) {
    if (!func->target().defined()) {
      module =
          module.with_function(gvar->name, func.with_attr(attr::kTarget, options.default_target));
    }
  }
  return module;
}

// One set of inputs of a function, with the result of its last run.
struct Entry {
  size_t outcome;
  Inputs inputs;
  RunResult last;
  int64_t dim = 0;  // the default dimension the inputs were made with
};

// Makes the inputs of every function to check, runs each once through `reference` and adds its
// outcome to `report` (skipped, with the reason, where no input runs); returns the inputs that
// ran, with their results.
std::vector<Entry> first_runs(const IRModule& module, const DifferentialOptions& options,
                              const BackendRunner& reference, DifferentialReport* report) {
  std::vector<Entry> entries;
  for (const auto& [gvar, func] : module->functions) {
    const std::string& name = gvar->name;
    if (!options.functions.empty() && std::find(options.functions.begin(), options.functions.end(),
                                                name) == options.functions.end()) {
      continue;
    }
    FunctionOutcome outcome;
    outcome.function = name;
    auto skip = [&](std::string why) {
      outcome.status = FunctionOutcome::Status::kSkipped;
      outcome.detail = std::move(why);
      report->functions.push_back(std::move(outcome));
    };
    if (std::string why = not_callable(func); !why.empty()) {
      skip(why);
      continue;
    }
    // The first default dimension with which the input runs; else the first failure.
    std::optional<Entry> found;
    std::string why;
    for (int64_t dim :
         options.default_dims.empty() ? std::vector<int64_t>{1} : options.default_dims) {
      Inputs inputs;
      std::string cannot = make_inputs(func, options, dim, options.seed, Pattern::kRandom, &inputs);
      if (!cannot.empty()) {
        if (why.empty()) why = cannot;
        break;
      }
      RunResult r = run_once(reference, name, inputs);
      ++outcome.runs;
      if (r.status == RunResult::Status::kOk) {
        found = Entry{0, std::move(inputs), std::move(r), dim};
        break;
      }
      if (why.empty()) why = "the input module fails on the generated inputs: " + r.error;
      if (r.status == RunResult::Status::kUnsupported) break;
    }
    if (!found) {
      skip(why);
      continue;
    }
    outcome.runs = 1;
    report->functions.push_back(std::move(outcome));
    found->outcome = report->functions.size() - 1;
    // The same function on uniform inputs too, where the input module runs on them.
    for (Pattern pattern : {Pattern::kZeros, Pattern::kOnes}) {
      if (!options.uniform_inputs) break;
      Inputs inputs;
      if (!make_inputs(func, options, found->dim, options.seed, pattern, &inputs).empty()) continue;
      RunResult r = run_once(reference, name, inputs);
      if (r.status != RunResult::Status::kOk) continue;
      ++report->functions.back().runs;
      entries.push_back(Entry{found->outcome, std::move(inputs), std::move(r), found->dim});
    }
    entries.push_back(std::move(*found));
  }
  return entries;
}

DifferentialReport check(IRModule module, const std::vector<Step>& steps,
                         const DifferentialOptions& options) {
  DifferentialReport report;
  for (const Step& s : steps) report.passes.push_back(s.name);
  module = with_default_target(module, options);
  Interpreter input_interp(module, options.interpreter);
  std::vector<Entry> entries = first_runs(module, options, runner_of(input_interp), &report);

  IRModule current = module;
  for (size_t k = 0; k < steps.size(); ++k) {
    IRModule next;
    try {
      next = steps[k].run(current);
    } catch (const Error& e) {
      report.pipeline_error = "pass '" + steps[k].name + "' failed: " + e.what();
      for (Entry& entry : entries) {
        FunctionOutcome& o = report.functions[entry.outcome];
        if (o.status != FunctionOutcome::Status::kUnchanged) continue;
        o.status = FunctionOutcome::Status::kSkipped;
        o.pass = steps[k].name;
        o.pass_index = static_cast<int>(k);
        o.detail = report.pipeline_error;
      }
      return report;
    }
    // A module equal to the previous one behaves the same: nothing to run.
    if (next.same_as(current) || structural_equal(next, current)) continue;
    current = next;
    Interpreter interp(current, options.interpreter);
    for (Entry& entry : entries) {
      FunctionOutcome& o = report.functions[entry.outcome];
      if (o.status != FunctionOutcome::Status::kUnchanged) continue;
      auto mark = [&](FunctionOutcome::Status status, std::string detail) {
        o.status = status;
        o.pass = steps[k].name;
        o.pass_index = static_cast<int>(k);
        o.detail = std::move(detail);
      };
      if (!current->contains(o.function)) {
        mark(FunctionOutcome::Status::kSkipped, "the pass removed the function");
        continue;
      }
      RunResult r = run_once(runner_of(interp), o.function, entry.inputs);
      ++o.runs;
      if (r.status == RunResult::Status::kUnsupported) {
        mark(FunctionOutcome::Status::kSkipped,
             "the interpreter cannot run the result: " + r.error);
        continue;
      }
      if (r.status == RunResult::Status::kFailed) {
        mark(FunctionOutcome::Status::kChanged, "the function now fails: " + r.error);
        continue;
      }
      std::string diff = compare(entry.inputs, entry.last, r);
      if (!diff.empty()) {
        mark(FunctionOutcome::Status::kChanged, diff);
        continue;
      }
      entry.last = std::move(r);
    }
  }
  return report;
}

}  // namespace

DifferentialReport check_pipeline(const IRModule& module, const std::vector<passes::Pass>& passes,
                                  const DifferentialOptions& options) {
  std::vector<Step> steps;
  for (const passes::Pass& p : passes) {
    steps.push_back(Step{p.name, [p](const IRModule& m) { return passes::run_passes(m, {p}); }});
  }
  return check(module, steps, options);
}

DifferentialReport check_pipeline(const IRModule& module,
                                  const std::vector<std::string>& invocations,
                                  const DifferentialOptions& options) {
  std::vector<Step> steps;
  for (const std::string& p : invocations) {
    steps.push_back(Step{
        p, [p](const IRModule& m) { return passes::run_passes(m, std::vector<std::string>{p}); }});
  }
  return check(module, steps, options);
}

DifferentialReport check_backend(const IRModule& module, const Backend& reference,
                                 const Backend& candidate, const DifferentialOptions& options) {
  DifferentialReport report;
  report.passes.push_back(candidate.name);
  const IRModule input = with_default_target(module, options);
  for (Entry& entry : first_runs(input, options, reference.run, &report)) {
    FunctionOutcome& o = report.functions[entry.outcome];
    if (o.status != FunctionOutcome::Status::kUnchanged) continue;
    auto mark = [&](FunctionOutcome::Status status, std::string detail) {
      o.status = status;
      o.pass = candidate.name;
      o.pass_index = 0;
      o.detail = std::move(detail);
    };
    RunResult r = run_once(candidate.run, o.function, entry.inputs);
    ++o.runs;
    if (r.status == RunResult::Status::kUnsupported) {
      mark(FunctionOutcome::Status::kSkipped, candidate.name + " cannot run it: " + r.error);
    } else if (r.status == RunResult::Status::kFailed) {
      mark(FunctionOutcome::Status::kChanged,
           "fails on " + candidate.name + " where " + reference.name + " runs: " + r.error);
    } else if (std::string diff =
                   compare(entry.inputs, entry.last, r, reference.name, candidate.name);
               !diff.empty()) {
      mark(FunctionOutcome::Status::kChanged, diff);
    }
  }
  return report;
}

}  // namespace primjit::jit::emu
