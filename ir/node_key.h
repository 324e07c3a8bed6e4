// The node constructors' passkey (primjit::NodeKey), for the IR library's node factories only:
// every `new SomeNode(node_key(), ...)` lives in ir/expr.cc, ir/stmt.cc, ir/function.cc and
// ir/target.cc, right after the checks of that node's invariants. Not installed.
#pragma once

#include "primjit/ir/object.h"

namespace primjit {

inline NodeKey node_key() { return NodeKey(); }

}  // namespace primjit
