#include "primjit/ir/attrs.h"

#include "primjit/ir/expr.h"

namespace primjit {

AttrValue::AttrValue(const Expr& v) : value_(Ref<Object>(v.get())) {}

Expr AttrValue::as_expr() const {
  return Expr(static_cast<const ExprNode*>(std::get<Ref<Object>>(value_).get()));
}

}  // namespace primjit
