// Stage 2 of the text parser: recursive descent with Python's operator precedence, from tokens
// to the syntax tree (ast.h). Only syntax is checked here; what the names and T.* calls mean is
// lowering's business. Private to the text parser (ir/text/).
#pragma once

#include <vector>

#include "ir/text/ast.h"
#include "ir/text/lexer.h"

namespace primjit::text_internal {

/// The syntax tree of one file: one @I.ir_module class or one @T.prim_func. Throws ParseError.
FileAst parse_syntax(const Source& source, std::vector<Token> tokens);

/// One expression on its own (the text of a quoted dimension, "n + 1"). Throws ParseError.
AstPtr parse_expression(const Source& source, std::vector<Token> tokens);

}  // namespace primjit::text_internal
