#include "primjit/ir/expr.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "ir/node_key.h"
#include "primjit/abi.h"
#include "primjit/error.h"
#include "primjit/ir/stmt.h"

namespace primjit {
namespace {

void check_defined(const Expr& e, const char* node, const char* field) {
  PRIMJIT_USER_CHECK(e.defined()) << node << ": operand '" << field << "' is undefined";
}

void check_same_dtype(const char* node, const Expr& a, const Expr& b) {
  check_defined(a, node, "a");
  check_defined(b, node, "b");
  PRIMJIT_USER_CHECK(a.dtype() == b.dtype())
      << node << ": operands must have the same dtype, got " << a.dtype() << " and " << b.dtype()
      << " (insert a Cast)";
}

void check_numeric(const char* node, DataType t) {
  PRIMJIT_USER_CHECK(t.is_integer() || t.is_floating())
      << node << ": needs integer or floating operands, got " << t;
}

void check_integer_scalar(const char* what, const Expr& e) {
  PRIMJIT_USER_CHECK(e.defined()) << what << " is undefined";
  PRIMJIT_USER_CHECK(e.dtype().is_integer() && e.dtype().is_scalar())
      << what << " must be a scalar integer, got " << e.dtype();
}

bool fits(DataType t, int64_t v) {
  if (t.is_bool()) return v == 0 || v == 1;
  if (t.bits() >= 64) return true;  // uint64 values are stored in their two's complement form
  if (t.is_int()) {
    int64_t lo = -(int64_t{1} << (t.bits() - 1));
    int64_t hi = (int64_t{1} << (t.bits() - 1)) - 1;
    return v >= lo && v <= hi;
  }
  return v >= 0 && v <= (int64_t{1} << t.bits()) - 1;
}

template <typename Node>
Expr make_arith(const char* name, Expr a, Expr b) {
  check_same_dtype(name, a, b);
  check_numeric(name, a.dtype());
  DataType t = a.dtype();
  return Expr(new Node(node_key(), t, std::move(a), std::move(b)));
}

template <typename Node>
Expr make_compare(const char* name, Expr a, Expr b) {
  check_same_dtype(name, a, b);
  PRIMJIT_USER_CHECK(!a.dtype().is_void()) << name << ": operands have no value (void)";
  DataType t = DataType::Bool(a.dtype().lanes());
  return Expr(new Node(node_key(), t, std::move(a), std::move(b)));
}

template <typename Node>
Expr make_logical(const char* name, Expr a, Expr b) {
  check_same_dtype(name, a, b);
  PRIMJIT_USER_CHECK(a.dtype().is_bool()) << name << ": needs bool operands, got " << a.dtype();
  DataType t = a.dtype();
  return Expr(new Node(node_key(), t, std::move(a), std::move(b)));
}

// The builtin op table (ops.def), in table order, and by name.
struct OpTable {
  std::vector<Op> ops;
  std::map<std::string, Op, std::less<>> by_name;
};

const OpTable& op_table() {
  static const OpTable table = [] {
    OpTable t;
#define PRIMJIT_OP(name, num_args, effect, type_rule, kind, max_ulp, libm)          \
  t.ops.emplace_back(new OpNode(node_key(), #name, num_args, CallEffect::effect,    \
                                OpTypeRule::type_rule, OpKind::kind, max_ulp, libm, \
                                static_cast<int>(t.ops.size())));
#include "primjit/ir/ops.def"
#undef PRIMJIT_OP
    for (const Op& op : t.ops) {
      PRIMJIT_ICHECK(t.by_name.emplace(op->name, op).second) << "op '" << op->name << "' twice";
    }
    return t;
  }();
  return table;
}

// T.format(fmt, values...): a message with placeholders (primjit/abi.h), e.g. for asserts.
void check_format(DataType dtype, const std::vector<Expr>& args) {
  PRIMJIT_USER_CHECK(dtype.is_handle()) << "T.format: the result dtype is handle, got " << dtype;
  const auto* fmt = args.empty() ? nullptr : args[0].as<StringImm>();
  PRIMJIT_USER_CHECK(fmt != nullptr) << "T.format: the first argument must be a string literal";
  int expected = format_value_count(fmt->value);
  PRIMJIT_USER_CHECK(expected >= 0)
      << "T.format: malformed format \"" << fmt->value
      << "\"; placeholders are {}, {dtype}, {type}, {device} and {str}, and {{ }} are literal "
         "braces";
  PRIMJIT_USER_CHECK(static_cast<size_t>(expected) + 1 == args.size())
      << "T.format: \"" << fmt->value << "\" takes " << expected << " value"
      << (expected == 1 ? "" : "s") << ", got " << args.size() - 1;
  for (size_t i = 1; i < args.size(); ++i) {
    DataType t = args[i].dtype();
    PRIMJIT_USER_CHECK((t.is_scalar() && (t.is_int_or_bool() || t.is_floating())) ||
                       args[i].as<StringImm>() != nullptr)
        << "T.format: value " << i << " must be a scalar number or bool, or a string literal, got "
        << t;
  }
}

}  // namespace

void detail::expr_too_deep(NodeKind kind, int depth) {
  PRIMJIT_USER_ERROR() << "expression nesting depth " << depth << " exceeds the limit of "
                       << kMaxExprDepth << " (primjit::kMaxExprDepth) at node kind "
                       << node_kind_name(kind)
                       << "; bind parts of the expression to variables (T.Bind, T.Let) so that "
                          "no expression is nested more than "
                       << kMaxExprDepth << " deep";
}

// --- handles ----------------------------------------------------------------------------------

Var Var::make(std::string name, DataType dtype, bool is_size_var) {
  PRIMJIT_USER_CHECK(!dtype.is_void()) << "variable '" << name << "' cannot have dtype void";
  PRIMJIT_USER_CHECK(!is_size_var || (dtype.is_integer() && dtype.is_scalar()))
      << "size variable '" << name << "' must be a scalar integer, got " << dtype;
  return Var(new VarNode(node_key(), std::move(name), dtype, DataType::Void(), "", is_size_var));
}

Var Var::make_pointer(std::string name, DataType element, std::string storage_scope) {
  PRIMJIT_USER_CHECK(!storage_scope.empty())
      << "pointer variable '" << name << "' needs a storage scope (e.g. \"global\")";
  return Var(new VarNode(node_key(), std::move(name), DataType::Handle(), element,
                         std::move(storage_scope), false));
}

Var Var::make_handle(std::string name) {
  return Var(
      new VarNode(node_key(), std::move(name), DataType::Handle(), DataType::Void(), "", false));
}

Var Var::make_like(const VarNode& var) {
  return Var(new VarNode(node_key(), var.name, var.dtype, var.pointee, var.storage_scope,
                         var.is_size_var));
}

Buffer Buffer::make(Var data, DataType dtype, std::vector<Expr> shape, std::vector<Expr> strides,
                    Expr elem_offset, std::string name, int data_alignment, int offset_factor) {
  PRIMJIT_USER_CHECK(data.defined()) << "buffer '" << name << "' has no data variable";
  PRIMJIT_USER_CHECK(data->is_pointer())
      << "buffer '" << name << "': data variable '" << data->name
      << "' must be a pointer (T.handle with an element type and storage scope), got "
      << data.dtype();
  PRIMJIT_USER_CHECK(!dtype.is_void()) << "buffer '" << name << "' cannot have dtype void";
  for (size_t i = 0; i < shape.size(); ++i) {
    check_integer_scalar(("buffer '" + name + "': shape[" + std::to_string(i) + "]").c_str(),
                         shape[i]);
  }
  PRIMJIT_USER_CHECK(strides.empty() || strides.size() == shape.size())
      << "buffer '" << name << "' has " << shape.size() << " dimensions but " << strides.size()
      << " strides";
  for (size_t i = 0; i < strides.size(); ++i) {
    check_integer_scalar(("buffer '" + name + "': strides[" + std::to_string(i) + "]").c_str(),
                         strides[i]);
  }
  if (!elem_offset.defined()) {
    elem_offset = make_const(0);
  }
  check_integer_scalar(("buffer '" + name + "': elem_offset").c_str(), elem_offset);
  PRIMJIT_USER_CHECK(offset_factor >= 1)
      << "buffer '" << name << "': offset_factor must be >= 1, got " << offset_factor;
  if (data_alignment <= 0) data_alignment = 64;
  PRIMJIT_USER_CHECK((data_alignment & (data_alignment - 1)) == 0)
      << "buffer '" << name << "': data_alignment must be a power of two, got " << data_alignment;
  return Buffer(new BufferNode(node_key(), std::move(data), dtype, std::move(shape),
                               std::move(strides), std::move(elem_offset), std::move(name),
                               data_alignment, offset_factor));
}

Buffer Buffer::make(std::string name, DataType dtype, std::vector<Expr> shape,
                    std::string storage_scope) {
  Var data = Var::make_pointer(name, dtype, std::move(storage_scope));
  return make(std::move(data), dtype, std::move(shape), {}, Expr(), std::move(name));
}

Op Op::find(std::string_view name) {
  auto it = op_table().by_name.find(name);
  return it == op_table().by_name.end() ? Op() : it->second;
}

const std::vector<Op>& Op::all() { return op_table().ops; }

Op Op::get(std::string_view name) {
  Op op = find(name);
  PRIMJIT_USER_CHECK(op.defined()) << "unknown builtin op '" << name << "'";
  return op;
}

std::vector<std::string> registered_op_names() {
  std::vector<std::string> names;
  for (const auto& [name, op] : op_table().by_name) names.push_back(name);
  return names;
}

GlobalVar GlobalVar::make(std::string name) {
  PRIMJIT_USER_CHECK(!name.empty()) << "a function name cannot be empty";
  return GlobalVar(new GlobalVarNode(node_key(), std::move(name)));
}

// --- nodes ------------------------------------------------------------------------------------

Expr IntImm::make(DataType dtype, int64_t value) {
  PRIMJIT_USER_CHECK(dtype.is_int_or_bool() && dtype.is_scalar())
      << "integer literal " << value << " needs a scalar int, uint or bool dtype, got " << dtype;
  PRIMJIT_USER_CHECK(fits(dtype, value)) << "literal " << value << " does not fit in " << dtype;
  return Expr(new IntImm(node_key(), dtype, value));
}

Expr FloatImm::make(DataType dtype, double value) {
  PRIMJIT_USER_CHECK(dtype.is_floating() && dtype.is_scalar())
      << "floating literal " << value << " needs a scalar floating dtype, got " << dtype;
  return Expr(new FloatImm(node_key(), dtype, value));
}

Expr StringImm::make(std::string value) {
  return Expr(new StringImm(node_key(), std::move(value)));
}

Expr Add::make(Expr a, Expr b) { return make_arith<Add>("Add", std::move(a), std::move(b)); }
Expr Sub::make(Expr a, Expr b) { return make_arith<Sub>("Sub", std::move(a), std::move(b)); }
Expr Mul::make(Expr a, Expr b) { return make_arith<Mul>("Mul", std::move(a), std::move(b)); }
Expr Div::make(Expr a, Expr b) { return make_arith<Div>("Div", std::move(a), std::move(b)); }
Expr Mod::make(Expr a, Expr b) { return make_arith<Mod>("Mod", std::move(a), std::move(b)); }
Expr FloorDiv::make(Expr a, Expr b) {
  return make_arith<FloorDiv>("FloorDiv", std::move(a), std::move(b));
}
Expr FloorMod::make(Expr a, Expr b) {
  return make_arith<FloorMod>("FloorMod", std::move(a), std::move(b));
}
Expr Min::make(Expr a, Expr b) { return make_arith<Min>("Min", std::move(a), std::move(b)); }
Expr Max::make(Expr a, Expr b) { return make_arith<Max>("Max", std::move(a), std::move(b)); }
Expr EQ::make(Expr a, Expr b) { return make_compare<EQ>("EQ", std::move(a), std::move(b)); }
Expr NE::make(Expr a, Expr b) { return make_compare<NE>("NE", std::move(a), std::move(b)); }
Expr LT::make(Expr a, Expr b) { return make_compare<LT>("LT", std::move(a), std::move(b)); }
Expr LE::make(Expr a, Expr b) { return make_compare<LE>("LE", std::move(a), std::move(b)); }
Expr GT::make(Expr a, Expr b) { return make_compare<GT>("GT", std::move(a), std::move(b)); }
Expr GE::make(Expr a, Expr b) { return make_compare<GE>("GE", std::move(a), std::move(b)); }
Expr And::make(Expr a, Expr b) { return make_logical<And>("And", std::move(a), std::move(b)); }
Expr Or::make(Expr a, Expr b) { return make_logical<Or>("Or", std::move(a), std::move(b)); }

Expr Not::make(Expr a) {
  check_defined(a, "Not", "a");
  PRIMJIT_USER_CHECK(a.dtype().is_bool()) << "Not: needs a bool operand, got " << a.dtype();
  DataType t = a.dtype();
  return Expr(new Not(node_key(), t, std::move(a)));
}

Expr Select::make(Expr condition, Expr true_value, Expr false_value) {
  check_defined(condition, "Select", "condition");
  check_same_dtype("Select", true_value, false_value);
  PRIMJIT_USER_CHECK(
      condition.dtype().is_bool() &&
      (condition.dtype().lanes() == 1 || condition.dtype().lanes() == true_value.dtype().lanes()))
      << "Select: condition must be bool with 1 or " << true_value.dtype().lanes() << " lanes, got "
      << condition.dtype();
  DataType t = true_value.dtype();
  return Expr(new Select(node_key(), t, std::move(condition), std::move(true_value),
                         std::move(false_value)));
}

Expr Cast::make(DataType dtype, Expr value) {
  check_defined(value, "Cast", "value");
  PRIMJIT_USER_CHECK(dtype.lanes() == value.dtype().lanes())
      << "Cast: cannot change the lane count from " << value.dtype() << " to " << dtype;
  PRIMJIT_USER_CHECK(!dtype.is_void() && !value.dtype().is_void())
      << "Cast: void has no value to convert";
  return Expr(new Cast(node_key(), dtype, std::move(value)));
}

Expr Let::make(Var var, Expr value, Expr body) {
  PRIMJIT_USER_CHECK(var.defined()) << "Let: variable is undefined";
  check_defined(value, "Let", "value");
  check_defined(body, "Let", "body");
  PRIMJIT_USER_CHECK(var.dtype() == value.dtype())
      << "Let: variable '" << var->name << "' has dtype " << var.dtype() << " but the value has "
      << value.dtype();
  DataType t = body.dtype();
  return Expr(new Let(node_key(), t, std::move(var), std::move(value), std::move(body)));
}

namespace {

// Lanes accessed by a list of indices: at most one index may be a vector.
int access_lanes(const char* node, const Buffer& buffer, const std::vector<Expr>& indices) {
  PRIMJIT_USER_CHECK(buffer.defined()) << node << ": buffer is undefined";
  PRIMJIT_USER_CHECK(indices.size() == buffer->ndim())
      << node << " of buffer '" << buffer->name << "' needs " << buffer->ndim()
      << " indices (one per dimension), got " << indices.size();
  int lanes = 1;
  for (const Expr& index : indices) {
    PRIMJIT_USER_CHECK(index.defined()) << node << " of '" << buffer->name << "': undefined index";
    PRIMJIT_USER_CHECK(index.dtype().is_integer())
        << node << " of '" << buffer->name << "': indices must be integers, got " << index.dtype();
    if (index.dtype().lanes() > 1) {
      PRIMJIT_USER_CHECK(lanes == 1)
          << node << " of '" << buffer->name << "': only one index may be a vector";
      lanes = index.dtype().lanes();
    }
  }
  return lanes;
}

}  // namespace

Expr BufferLoad::make(Buffer buffer, std::vector<Expr> indices) {
  int lanes = access_lanes("BufferLoad", buffer, indices);
  const int total = buffer->dtype.lanes() * lanes;
  if (total > kMaxLanes) check_lanes(total, ("BufferLoad of '" + buffer->name + "'").c_str());
  DataType t = buffer->dtype.with_lanes(total);
  return Expr(new BufferLoad(node_key(), t, std::move(buffer), std::move(indices)));
}

Expr Ramp::make(Expr base, Expr stride, int lanes) {
  check_same_dtype("Ramp", base, stride);
  PRIMJIT_USER_CHECK(base.dtype().is_integer() && base.dtype().is_scalar())
      << "Ramp: base and stride must be scalar integers, got " << base.dtype();
  PRIMJIT_USER_CHECK(lanes >= 2) << "Ramp: needs at least 2 lanes, got " << lanes;
  check_lanes(lanes, "Ramp");
  DataType t = base.dtype().with_lanes(lanes);
  return Expr(new Ramp(node_key(), t, std::move(base), std::move(stride), lanes));
}

Expr Broadcast::make(Expr value, int lanes) {
  check_defined(value, "Broadcast", "value");
  PRIMJIT_USER_CHECK(value.dtype().is_scalar())
      << "Broadcast: value must be a scalar, got " << value.dtype();
  PRIMJIT_USER_CHECK(lanes >= 2) << "Broadcast: needs at least 2 lanes, got " << lanes;
  check_lanes(lanes, "Broadcast");
  DataType t = value.dtype().with_lanes(lanes);
  return Expr(new Broadcast(node_key(), t, std::move(value), lanes));
}

Expr Call::make(DataType dtype, Op op, std::vector<Expr> args) {
  PRIMJIT_USER_CHECK(op.defined()) << "Call: op is undefined";
  PRIMJIT_USER_CHECK(op->num_args < 0 || static_cast<int>(args.size()) == op->num_args)
      << "T." << op->name << " takes " << op->num_args << " argument"
      << (op->num_args == 1 ? "" : "s") << ", got " << args.size();
  for (const Expr& arg : args) {
    PRIMJIT_USER_CHECK(arg.defined()) << "T." << op->name << ": undefined argument";
  }
  if (op->op_kind == OpKind::kMessage) check_format(dtype, args);
  return Expr(new Call(node_key(), dtype, std::move(op), GlobalVar(), std::move(args)));
}

Expr Call::make(DataType dtype, GlobalVar callee, std::vector<Expr> args) {
  PRIMJIT_USER_CHECK(callee.defined()) << "Call: callee is undefined";
  for (const Expr& arg : args) {
    PRIMJIT_USER_CHECK(arg.defined()) << "call of " << callee->name << ": undefined argument";
  }
  return Expr(new Call(node_key(), dtype, Op(), std::move(callee), std::move(args)));
}

bool Call::is_op(const char* name) const { return op.defined() && op->name == name; }

CallEffect Call::effect() const {
  // Calls to other functions may do anything.
  return op.defined() ? op->effect : CallEffect::kOpaque;
}

Expr make_const(int64_t value) { return IntImm::make(DataType::Int(32), value); }

Expr make_const(DataType dtype, double value) {
  if (dtype.is_floating()) return FloatImm::make(dtype, value);
  return IntImm::make(dtype, static_cast<int64_t>(value));
}

std::optional<int64_t> as_const_int(const Expr& e) {
  if (const auto* imm = e.as<IntImm>()) return imm->value;
  return std::nullopt;
}

}  // namespace primjit
