// The interpreter's entry points: compiled-function cache, sessions, calls and the binding of
// arguments to parameters (buffer parameters from DLTensors, packed calls).
#include "jit/emu/interpreter.h"

#include <cstring>
#include <sstream>

#include "jit/emu/compiler.h"
#include "jit/emu/machine.h"
#include "primjit/abi.h"
#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/ir/text.h"

namespace primjit::jit::emu {

std::string Arg::str() const {
  switch (kind_) {
    case Kind::kNone:
      return "None";
    case Kind::kTensor:
      return tensor_ ? describe(*tensor_) : "null tensor";
    case Kind::kInt:
      return std::to_string(int_);
    case Kind::kFloat: {
      std::ostringstream os;
      os << float_;
      return os.str();
    }
    case Kind::kBool:
      return int_ ? "True" : "False";
    case Kind::kPointer: {
      std::ostringstream os;
      os << pointer_;
      return os.str();
    }
  }
  return "?";
}

// --- Program and Session --------------------------------------------------------------------

Program::Program(IRModule module, Options options)
    : module(std::move(module)), options(std::move(options)) {
  PRIMJIT_USER_CHECK(this->module.defined()) << "emu::Interpreter: the module is undefined";
}

const CompiledFunction& Program::function(const std::string& name) const {
  std::lock_guard lock(mutex_);
  auto it = compiled_.find(name);
  if (it != compiled_.end()) return *it->second;
  PrimFunc func = module->lookup(name);
  auto compiled = compile_function(*this, name, func);
  return *compiled_.emplace(name, std::move(compiled)).first->second;
}

std::string Program::function_by_symbol(const std::string& symbol) const {
  for (const auto& [gvar, func] : module->functions) {
    if (func->global_symbol() == symbol) return gvar->name;
  }
  for (const auto& [gvar, func] : module->functions) {
    if (gvar->name == symbol) return gvar->name;
  }
  return "";
}

void Session::charge_steps(int64_t n, const Exec& ex) {
  const uint64_t max = program.options.max_steps;
  const uint64_t total = steps_.fetch_add(static_cast<uint64_t>(n), std::memory_order_relaxed) +
                         static_cast<uint64_t>(n);
  PRIMJIT_USER_CHECK(max == 0 || total <= max)
      << "the interpreter's step budget of " << max
      << " steps (emu::Options::max_steps; a step is a loop iteration or a thread of a launch) "
         "is used up"
      << ex.where() << "; raise Options::max_steps (0: no limit) if the program is meant to run "
      << "this long";
}

Allocation* Session::make_owned(std::string name, AllocKind kind, int64_t size) {
  auto alloc = Allocation::make_owned(std::move(name), "", size, 16, false, false);
  alloc->kind = kind;
  Allocation* raw = alloc.get();
  {
    std::lock_guard lock(mutex_);
    owned_.push_back(std::move(alloc));
  }
  registry.add(raw);
  return raw;
}

Allocation* Session::register_tensor(DLTensor* t, const std::string& name) {
  std::lock_guard lock(mutex_);
  auto it = tensors_.find(t);
  if (it != tensors_.end()) return it->second;
  auto add = [&](std::string name, AllocKind kind, void* base, int64_t size) {
    auto a =
        std::make_unique<Allocation>(std::move(name), "", kind, static_cast<uint8_t*>(base), size);
    Allocation* raw = a.get();
    owned_.push_back(std::move(a));
    registry.add(raw);
    return raw;
  };
  Allocation* header = add("DLTensor of " + name, AllocKind::kTensorHeader, t, sizeof(DLTensor));
  header->tensor = t;
  if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) {
    // No extent to read: the header only; the function's argument checks report the tensor
    // (as the compiled code does) before anything reads its data.
    tensors_.emplace(t, header);
    return header;
  }
  if (t->ndim > 0) {
    header->shape = add("shape of " + name, AllocKind::kShapeArray, t->shape, t->ndim * 8);
  }
  if (t->ndim > 0 && t->strides != nullptr) {
    header->strides = add("strides of " + name, AllocKind::kShapeArray, t->strides, t->ndim * 8);
  }
  // The data: every byte an element of the tensor may occupy, from the data pointer.
  int64_t extent = 1;
  bool empty = false, overflow = false;
  for (int d = 0; d < t->ndim; ++d) {
    if (t->shape[d] == 0) empty = true;
    int64_t span = 0;
    if (t->strides != nullptr) {
      overflow |= __builtin_mul_overflow(t->shape[d] - 1, t->strides[d], &span) ||
                  __builtin_add_overflow(extent, span, &extent);
    }
  }
  if (t->strides == nullptr) extent = num_elements(*t);
  const int64_t elem_bytes = std::max(1, (t->dtype.bits * t->dtype.lanes + 7) / 8);
  int64_t bytes = 0;
  overflow |=
      !empty && (__builtin_mul_overflow(extent, elem_bytes, &bytes) ||
                 __builtin_add_overflow(bytes, static_cast<int64_t>(t->byte_offset), &bytes));
  PRIMJIT_USER_CHECK(empty || !overflow)
      << "tensor " << name << " (" << describe(*t)
      << ") spans more bytes than an int64 can count; its shape or strides are not real";
  if (empty) bytes = static_cast<int64_t>(t->byte_offset);
  if (t->data != nullptr) {
    header->data = add(name, AllocKind::kData, t->data, bytes);
    header->data->tensor = t;
  }
  tensors_.emplace(t, header);
  return header;
}

// --- Exec -----------------------------------------------------------------------------------

std::string Exec::thread_text() const {
  if (block == nullptr) return "";
  return "block " + block->coords() + ", thread " + block->thread_coords(thread);
}

std::string Exec::where() const {
  std::string text;
  if (stmt != nullptr) text += " in `" + stmt_text(stmt->stmt) + "`";
  text += " (function '" + (frame && frame->func ? frame->func->name : std::string("?")) + "'";
  if (block != nullptr) text += ", " + thread_text();
  return text + ")";
}

// --- calls ----------------------------------------------------------------------------------

namespace {

std::string param_text(const CompiledFunction& f, size_t i) {
  const Var& p = f.func->params[i];
  Buffer b = f.func->buffer_of(p);
  return "parameter '" + (b.defined() ? b->name : p->name) + "' (argument #" + std::to_string(i) +
         ") of '" + f.name + "'";
}

// Binds a buffer parameter from the DLTensor `t`: checks ndim and dtype, defines the bare
// variables of its shape, strides and offset; `deferred` collects the checks that need every
// parameter bound first.
void bind_tensor(Exec& ex, const CompiledFunction& f, size_t param, const CBuffer& cb,
                 const DLTensor* t, Allocation* data_alloc, std::vector<char>* bound,
                 std::vector<std::function<void()>>* deferred) {
  const Buffer& b = cb.buffer;
  const std::string what = param_text(f, param);
  PRIMJIT_USER_CHECK(t->ndim == static_cast<int>(b->ndim()))
      << what << " expects a " << b->ndim() << "-d tensor, got " << describe(*t);
  DataType dtype;
  PRIMJIT_USER_CHECK(DataType::from_dlpack(t->dtype.code, t->dtype.bits, t->dtype.lanes, &dtype) &&
                     dtype == b->dtype)
      << what << " expects dtype " << b->dtype << ", got " << describe(*t);
  auto bind_var = [&](const Expr& e, int64_t value) {
    const auto* v = e.as<VarNode>();
    if (v == nullptr) return false;
    const int s = f.slots.at(v);
    if ((*bound)[static_cast<size_t>(s)]) return false;
    ex.slot(s) = from_integer(TypeInfo(v->dtype), value, false);
    (*bound)[static_cast<size_t>(s)] = 1;
    return true;
  };
  for (size_t d = 0; d < b->ndim(); ++d) {
    bind_var(b->shape[d], t->shape[d]);
    deferred->push_back([&ex, &cb, t, d, what] {
      const int64_t expected = cb.shape[d]->eval(ex).i;
      PRIMJIT_USER_CHECK(expected == t->shape[d])
          << what << " expects shape[" << d << "] = " << expected
          << (as_const_int(cb.buffer->shape[d]) ? "" : " (" + print(cb.buffer->shape[d]) + ")")
          << ", got " << describe(*t);
    });
  }
  if (b->strides.empty()) {
    PRIMJIT_USER_CHECK(is_compact(*t))
        << what << " expects a compact (row-major) tensor, got " << describe(*t) << " with strides";
  } else {
    std::vector<int64_t> strides(b->ndim());
    int64_t s = 1;
    for (size_t d = b->ndim(); d-- > 0;) {
      strides[d] = t->strides != nullptr ? t->strides[d] : s;
      s *= t->shape[d];
    }
    for (size_t d = 0; d < b->ndim(); ++d) {
      bind_var(b->strides[d], strides[d]);
      deferred->push_back([&ex, &cb, strides, d, what] {
        const int64_t expected = cb.strides[d]->eval(ex).i;
        PRIMJIT_USER_CHECK(expected == strides[d])
            << what << " expects stride " << expected << " in dimension " << d << ", got "
            << strides[d];
      });
    }
  }
  uint64_t data = reinterpret_cast<uint64_t>(t->data);
  const int64_t elem_bytes = cb.elem_bytes;
  if (!cb.elem_offset) {
    data += t->byte_offset;  // the buffer starts at the tensor's first element
  } else {
    PRIMJIT_USER_CHECK(t->byte_offset % static_cast<uint64_t>(elem_bytes) == 0)
        << what << ": byte_offset " << t->byte_offset << " is not a multiple of the element size";
    const int64_t offset = static_cast<int64_t>(t->byte_offset) / elem_bytes;
    bind_var(b->elem_offset, offset);
    deferred->push_back([&ex, &cb, offset, what] {
      PRIMJIT_USER_CHECK(cb.elem_offset->eval(ex).i == offset)
          << what << " expects elem_offset " << cb.elem_offset->eval(ex).i << ", the tensor has "
          << offset;
    });
  }
  const int s = cb.data_slot;
  ex.slot(s) = Scalar::of_pointer(data, data_alloc);
  (*bound)[static_cast<size_t>(s)] = 1;
}

}  // namespace

void bind_params(Exec& ex, const CompiledFunction& f, std::span<const Scalar> args) {
  const auto& params = f.func->params;
  PRIMJIT_USER_CHECK(args.size() == params.size())
      << "function '" << f.name << "' takes " << params.size() << " arguments, got " << args.size();
  std::vector<char> bound(static_cast<size_t>(f.num_slots), 0);
  for (size_t i = 0; i < params.size(); ++i) {
    PRIMJIT_USER_CHECK(f.param_slots[i] >= 0)
        << param_text(f, i) << " is a vector; the interpreter takes scalar parameters only";
    ex.slot(f.param_slots[i]) = args[i];
    bound[static_cast<size_t>(f.param_slots[i])] = 1;
  }
  std::vector<std::function<void()>> deferred;
  for (const auto& [i, cb] : f.param_buffers) {
    const Scalar& handle = args[static_cast<size_t>(i)];
    Allocation* a = allocation_of(ex, handle);
    if (a != nullptr && a->kind == AllocKind::kTensorHeader &&
        reinterpret_cast<uint64_t>(a->base) == handle.u) {
      bind_tensor(ex, f, static_cast<size_t>(i), *cb, a->tensor, a->data, &bound, &deferred);
      continue;
    }
    // A plain data pointer (a call between functions): only constant shapes can be used.
    PRIMJIT_USER_CHECK(handle.u != 0) << param_text(f, static_cast<size_t>(i)) << " is null";
    ex.slot(cb->data_slot) = handle;
    bound[static_cast<size_t>(cb->data_slot)] = 1;
    for (const Expr& e : cb->buffer->shape) {
      const auto* v = e.as<VarNode>();
      PRIMJIT_USER_CHECK(v == nullptr || bound[static_cast<size_t>(f.slots.at(v))])
          << param_text(f, static_cast<size_t>(i)) << " receives a data pointer, not a DLTensor, "
          << "so its shape variable '" << v->name << "' has no value; pass a tensor";
    }
  }
  for (const auto& check : deferred) check();
}

Scalar call_function(Exec& caller, const CompiledFunction& f, std::span<const Scalar> args,
                     const LaunchConfig* launch) {
  Frame frame;
  frame.func = &f;
  frame.slots.resize(static_cast<size_t>(f.num_slots));
  frame.vslots.resize(static_cast<size_t>(f.num_vslots));
  frame.launch = launch;
  Exec ex(caller.session, &frame, caller.allocs);
  ex.block = caller.block;
  ex.thread = caller.thread;
  ex.thread_index = caller.thread_index;
  bind_params(ex, f, args);
  f.body->exec(ex);
  return frame.ret;
}

// --- Interpreter ----------------------------------------------------------------------------

namespace {

Arg result_of(const PJValue& v) {
  switch (v.type_index) {
    case kPJInt:
      return Arg(v.v_int64);
    case kPJBool:
      return Arg(v.v_int64 != 0);
    case kPJFloat:
      return Arg(v.v_float64);
    case kPJNone:
      return Arg();
    default:
      return Arg::pointer(v.v_ptr);
  }
}

// A user argument as the value of parameter `param` (type `t`).
Scalar user_value(Session& session, const CompiledFunction& f, size_t i, const Arg& a) {
  const Var& p = f.func->params[i];
  const bool is_buffer = f.func->buffer_of(p).defined();
  const std::string what = param_text(f, i);
  TypeInfo t(p.dtype());
  switch (a.kind()) {
    case Arg::Kind::kTensor: {
      PRIMJIT_USER_CHECK(a.tensor() != nullptr) << what << " received a null tensor";
      PRIMJIT_USER_CHECK(t.repr == Repr::kHandle)
          << what << " is a scalar of type " << p.dtype() << ", got a tensor";
      Allocation* header = session.register_tensor(
          a.tensor(),
          "tensor argument '" + (is_buffer ? f.func->buffer_of(p)->name : p->name) + "'");
      if (!is_buffer && p->is_pointer()) {  // a typed pointer parameter takes the data
        return Scalar::of_pointer(
            reinterpret_cast<uint64_t>(a.tensor()->data) + a.tensor()->byte_offset, header->data);
      }
      return Scalar::of_pointer(reinterpret_cast<uint64_t>(a.tensor()), header);
    }
    case Arg::Kind::kPointer: {
      PRIMJIT_USER_CHECK(t.repr == Repr::kHandle && !is_buffer)
          << what << (is_buffer ? " is a buffer and needs a tensor" : " is not a pointer")
          << ", got a pointer";
      const uint64_t address = reinterpret_cast<uint64_t>(a.as_pointer());
      return Scalar::of_pointer(address, session.resolve(address));
    }
    case Arg::Kind::kInt:
    case Arg::Kind::kBool:
      PRIMJIT_USER_CHECK(t.is_integral() || t.is_floating())
          << what << " needs " << (is_buffer ? "a tensor" : "a pointer") << ", got " << a.str();
      return from_integer(t, a.as_int(), false);
    case Arg::Kind::kFloat:
      PRIMJIT_USER_CHECK(t.is_floating())
          << what << " has type " << p.dtype() << ", got the floating value " << a.str();
      return from_double(t, a.as_float());
    case Arg::Kind::kNone:
      break;
  }
  PRIMJIT_USER_ERROR() << what << " received no value";
}

}  // namespace

Interpreter::Interpreter(IRModule module, Options options)
    : program_(std::make_unique<Program>(std::move(module), std::move(options))) {}

Interpreter::~Interpreter() = default;

const IRModule& Interpreter::module() const { return program_->module; }

std::optional<Arg> Interpreter::run(const std::string& name, std::span<const Arg> args) const {
  const CompiledFunction& f = program_->function(name);
  Session session(*program_);
  Frame host_frame;
  host_frame.func = &f;
  Exec host(session, &host_frame, &session.host_allocs);
  if (f.calling_conv == 1) {
    // Pack the plain arguments as compiled callers do: tensors as DLTensor*, numbers tagged.
    Allocation* array =
        session.make_owned("packed arguments", AllocKind::kPackedValues,
                           static_cast<int64_t>(std::max<size_t>(1, args.size()) * 16));
    auto* values = reinterpret_cast<PJValue*>(array->base);
    for (size_t i = 0; i < args.size(); ++i) {
      PJValue& v = values[i];
      v.zero_padding = 0;
      switch (args[i].kind()) {
        case Arg::Kind::kTensor:
          PRIMJIT_USER_CHECK(args[i].tensor() != nullptr)
              << "argument #" << i << " of '" << name << "' is a null tensor";
          session.register_tensor(args[i].tensor(), "tensor argument #" + std::to_string(i));
          v.type_index = kPJDLTensorPtr;
          v.v_ptr = args[i].tensor();
          break;
        case Arg::Kind::kInt:
          v.type_index = kPJInt;
          v.v_int64 = args[i].as_int();
          break;
        case Arg::Kind::kBool:
          v.type_index = kPJBool;
          v.v_int64 = args[i].as_int();
          break;
        case Arg::Kind::kFloat:
          v.type_index = kPJFloat;
          v.v_float64 = args[i].as_float();
          break;
        case Arg::Kind::kPointer:
          v.type_index = args[i].as_pointer() ? kPJOpaquePtr : kPJNone;
          v.v_ptr = args[i].as_pointer();
          break;
        case Arg::Kind::kNone:
          v.type_index = kPJNone;
          v.v_int64 = 0;
          break;
      }
    }
    Allocation* result = session.make_owned("packed result", AllocKind::kPackedValues, 16);
    Scalar call_args[4] = {Scalar::of_pointer(0, nullptr),
                           Scalar::of_pointer(reinterpret_cast<uint64_t>(array->base), array),
                           Scalar::of_int(static_cast<int64_t>(args.size())),
                           Scalar::of_pointer(reinterpret_cast<uint64_t>(result->base), result)};
    PRIMJIT_USER_CHECK(f.func->params.size() == 4)
        << "function '" << name << "' has calling_conv 1 but " << f.func->params.size()
        << " parameters; a packed function takes (self, args, num_args, result)";
    Scalar rc = call_function(host, f, call_args, nullptr);
    PRIMJIT_USER_CHECK(rc.i == 0) << "function '" << name << "' returned error code " << rc.i;
    const auto* out = reinterpret_cast<const PJValue*>(result->base);
    if (out->type_index == kPJNone) return std::nullopt;
    return result_of(*out);
  }
  PRIMJIT_USER_CHECK(args.size() == f.func->params.size())
      << "function '" << name << "' takes " << f.func->params.size() << " arguments, got "
      << args.size();
  std::vector<Scalar> values;
  for (size_t i = 0; i < args.size(); ++i) values.push_back(user_value(session, f, i, args[i]));
  Scalar ret = call_function(host, f, values, nullptr);
  if (f.func->ret_type.is_void()) return std::nullopt;
  return to_arg(TypeInfo(f.func->ret_type), ret);
}

}  // namespace primjit::jit::emu
