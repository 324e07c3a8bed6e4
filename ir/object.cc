#include "primjit/ir/object.h"

namespace primjit {

const char* node_kind_name(NodeKind kind) {
  switch (kind) {
#define PRIMJIT_EXPR_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return #Kind;
#define PRIMJIT_STMT_NODE(Kind, Struct) \
  case NodeKind::k##Kind:               \
    return #Kind;
#define PRIMJIT_OTHER_NODE(Kind, Struct) \
  case NodeKind::k##Kind:                \
    return #Kind;
#include "primjit/ir/node_kinds.def"
  }
  return "?";
}

bool is_expr_kind(NodeKind kind) {
  switch (kind) {
#define PRIMJIT_EXPR_NODE(Kind, Struct) case NodeKind::k##Kind:
#include "primjit/ir/node_kinds.def"
    return true;
    default:
      return false;
  }
}

bool is_stmt_kind(NodeKind kind) {
  switch (kind) {
#define PRIMJIT_STMT_NODE(Kind, Struct) case NodeKind::k##Kind:
#include "primjit/ir/node_kinds.def"
    return true;
    default:
      return false;
  }
}

}  // namespace primjit
