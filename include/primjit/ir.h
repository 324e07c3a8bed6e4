// The loop IR: nodes, functions, modules, traversal utilities, analysis and text format.
#pragma once

#include "primjit/ir/attr_keys.h"
#include "primjit/ir/attrs.h"
#include "primjit/ir/dtype.h"
#include "primjit/ir/expr.h"
#include "primjit/ir/function.h"
#include "primjit/ir/functor.h"
#include "primjit/ir/object.h"
#include "primjit/ir/stmt.h"
#include "primjit/ir/target.h"
