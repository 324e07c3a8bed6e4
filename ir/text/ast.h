// The syntax tree the syntax parser builds and lowering reads: Python's expression and statement
// shapes, nothing TVMScript-specific yet. Private to the text parser (ir/text/).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/text/source.h"

namespace primjit::text_internal {

enum class AK {
  kName,
  kAttr,       // items[0].text
  kCall,       // items[0](items[1:], keywords)
  kSubscript,  // items[0][items[1:]]
  kBinary,     // items[0] text items[1]
  kUnary,      // text items[0]  ("-", "+", "~", "not")
  kBoolOp,     // items[0] and/or items[1]
  kCompare,    // items[0] ops[0] items[1] ops[1] items[2] ...
  kInt,
  kFloat,
  kString,
  kBool,
  kNone,
  kTuple,
  kList,
  kDict,   // items: key0, value0, key1, value1, ...
  kSlice,  // start:stop[:step] in a subscript; items: start, stop[, step]
};

struct Ast;
using AstPtr = std::unique_ptr<Ast>;

struct Keyword {
  std::string name;
  Loc loc;
  AstPtr value;
};

struct Ast {
  AK kind;
  Loc loc;     // start of the expression
  Loc op_loc;  // operator (binary, compare, bool op)
  std::string text;
  uint64_t int_value = 0;
  double float_value = 0;
  bool bool_value = false;
  int depth = 1;
  std::vector<AstPtr> items;
  std::vector<Keyword> keywords;
  std::vector<std::string> ops;
  std::vector<Loc> op_locs;
};

enum class SK { kExpr, kAssign, kAnnAssign, kFor, kWhile, kIf, kWith, kAssert, kReturn, kPass };

struct StmtAst;
using StmtPtr = std::unique_ptr<StmtAst>;

struct StmtAst {
  SK kind;
  Loc loc;
  AstPtr target;      // assignment target; for-loop targets (kTuple of names); with `as` name
  AstPtr annotation;  // annotated assignment
  AstPtr value;    // expression, assigned value (null for a bare `x: T.dtype`), loop iterable, ...
  AstPtr message;  // assert message
  std::vector<StmtPtr> body;
  std::vector<StmtPtr> orelse;
  bool has_else = false;
};

struct Param {
  std::string name;
  Loc loc;
  AstPtr annotation;
};

/// A name with where it is written.
struct NameAst {
  std::string name;
  Loc loc;
};

struct FuncAst {
  Loc loc;
  std::vector<AstPtr> decorators;
  std::string name;
  Loc name_loc;
  std::vector<NameAst> type_params;  // def f[m, n](...): int64 shape variables (PEP 695)
  std::vector<Param> params;
  AstPtr ret;
  std::vector<StmtPtr> body;
};

struct FileAst {
  bool is_module = false;
  /// The header names TVM's current dialect (`from tvm.script import tirx as T`, commented or
  /// not): `x: T.dtype = v` is then a one-element local buffer rather than a Bind.
  bool tirx = false;
  std::vector<NameAst> type_vars;  // m = TypeVar("m") before the module: int64 shape variables
  Loc class_loc;
  std::string class_name;
  std::vector<AstPtr> class_decorators;
  std::vector<FuncAst> funcs;
};

}  // namespace primjit::text_internal
