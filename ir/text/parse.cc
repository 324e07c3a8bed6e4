// The text parser: TVMScript subset -> IR (see text.h and the README, "IR text format").
//
// Three stages, one directory:
//  1. lexer.h: tokens with Python's line structure (indentation, comments, brackets continue
//     lines).
//  2. syntax_parser.h: recursive descent with Python's operator precedence to a syntax tree
//     (ast.h). Only syntax is checked here.
//  3. lowerer.h: walks the tree with a scope stack of names and builds the IR with the checked
//     make() functions; what each T.* call means is one entry of the form table (forms.h).
//     Anything the subset lacks is an error.
// Every failure is a ParseError at a line and column; errors from make() are converted at the
// expression or statement that caused them. Nothing else escapes parse(). Given a SourceMap, the
// lowerer records where each statement begins and where a name is used after its block ended,
// for the verifier's diagnostics (primjit/ir/source_map.h).
#include <exception>
#include <string>
#include <vector>

#include "ir/text/lexer.h"
#include "ir/text/lowerer.h"
#include "ir/text/syntax_parser.h"
#include "primjit/ir/source_map.h"
#include "primjit/ir/text.h"

namespace primjit {
namespace {

IRModule parse_text(std::string_view text, std::string_view file_name, SourceMap* source_map) {
  text_internal::Source source(text, std::string(file_name));
  try {
    std::vector<text_internal::Token> tokens = text_internal::tokenize(source);
    text_internal::FileAst file = text_internal::parse_syntax(source, std::move(tokens));
    return text_internal::Lowerer(source, source_map).lower(file);
  } catch (const ParseError&) {
    throw;
  } catch (const std::exception& e) {
    // Never let anything else escape; this is a bug in the parser if it happens.
    source.fail(text_internal::Loc{1, 1}, std::string("internal error while parsing: ") + e.what());
  }
}

}  // namespace

IRModule parse(std::string_view text, std::string_view file_name) {
  return parse_text(text, file_name, nullptr);
}

IRModule parse(std::string_view text, std::string_view file_name, SourceMap& source_map) {
  source_map.reset(std::string(file_name), text);
  return parse_text(text, file_name, &source_map);
}

}  // namespace primjit
