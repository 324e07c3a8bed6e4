// The syntax parser (see syntax_parser.h).
#include "ir/text/syntax_parser.h"

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>

#include "primjit/ir/expr.h"

namespace primjit::text_internal {
namespace {

bool is_keyword(const std::string& s) {
  static const char* kWords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  for (const char* w : kWords) {
    if (s == w) return true;
  }
  return false;
}

class SyntaxParser {
 public:
  SyntaxParser(const Source& src, std::vector<Token> tokens)
      : src_(src), tokens_(std::move(tokens)) {}

  FileAst file() {
    FileAst out;
    out.tirx = tirx_header();
    skip_newlines();
    while (is_name("from") || is_name("import")) import_line();
    while (peek().kind == Tok::kName && is_op("=", 1)) out.type_vars.push_back(type_var_line());
    if (!is_op("@")) {
      fail_here("expected a decorated definition: @I.ir_module class or @T.prim_func def");
    }
    std::vector<AstPtr> decorators = decorator_list();
    if (is_name("class")) {
      out.is_module = true;
      out.class_loc = peek().loc;
      out.class_decorators = std::move(decorators);
      next();
      out.class_name = expect_name("a class name");
      if (accept_op("(")) expect_op(")");
      expect_op(":");
      expect(Tok::kNewline, "a new line after 'class ...:'");
      if (peek().kind != Tok::kIndent) {
        src_.fail(tokens_[pos_ - 1].loc, "expected an indented block after 'class'");
      }
      next();
      while (peek().kind != Tok::kDedent && peek().kind != Tok::kEnd) {
        if (is_name("pass")) {
          next();
          expect(Tok::kNewline, "a new line");
          continue;
        }
        if (!is_op("@")) fail_here("expected a @T.prim_func function in the module class");
        std::vector<AstPtr> fdecorators = decorator_list();
        out.funcs.push_back(funcdef(std::move(fdecorators)));
      }
      if (peek().kind == Tok::kDedent) next();
    } else if (is_name("def")) {
      out.funcs.push_back(funcdef(std::move(decorators)));
    } else {
      fail_here("expected 'class' or 'def' after the decorator");
    }
    skip_newlines();
    if (peek().kind != Tok::kEnd) {
      fail_here("expected the end of the text: one @I.ir_module class or one @T.prim_func");
    }
    return out;
  }

  AstPtr expression_only() {
    skip_newlines();
    AstPtr e = expr();
    skip_newlines();
    if (peek().kind != Tok::kEnd) fail_here("expected one expression");
    return e;
  }

 private:
  // --- token helpers --------------------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, tokens_.size() - 1);
    return tokens_[i];
  }
  const Token& next() {
    const Token& t = tokens_[pos_];
    if (pos_ + 1 < tokens_.size()) ++pos_;
    return t;
  }
  bool is_op(const char* op, size_t ahead = 0) const {
    return peek(ahead).kind == Tok::kOp && peek(ahead).text == op;
  }
  bool is_name(const char* name) const { return peek().kind == Tok::kName && peek().text == name; }
  bool accept_op(const char* op) {
    if (!is_op(op)) return false;
    next();
    return true;
  }
  bool accept_name(const char* name) {
    if (!is_name(name)) return false;
    next();
    return true;
  }
  [[noreturn]] void fail_here(const std::string& message) const { src_.fail(peek().loc, message); }
  std::string describe(const Token& t) const {
    switch (t.kind) {
      case Tok::kName:
        return "'" + t.text + "'";
      case Tok::kInt:
      case Tok::kFloat:
        return "number '" + t.text + "'";
      case Tok::kString:
        return "a string";
      case Tok::kOp:
        return "'" + t.text + "'";
      case Tok::kNewline:
        return "the end of the line";
      case Tok::kIndent:
        return "an indented block";
      case Tok::kDedent:
        return "the end of the block";
      case Tok::kEnd:
        return "the end of the text";
    }
    return "?";
  }
  void expect_op(const char* op) {
    if (!accept_op(op)) fail_here(std::string("expected '") + op + "', got " + describe(peek()));
  }
  void expect(Tok kind, const char* what) {
    if (peek().kind != kind)
      fail_here(std::string("expected ") + what + ", got " + describe(peek()));
    next();
  }
  std::string expect_name(const char* what) {
    if (peek().kind != Tok::kName || is_keyword(peek().text)) {
      fail_here(std::string("expected ") + what + ", got " + describe(peek()));
    }
    return next().text;
  }
  void skip_newlines() {
    while (peek().kind == Tok::kNewline) next();
  }

  // Only the header lines TVMScript itself writes are accepted.
  void import_line() {
    Loc loc = peek().loc;
    std::string text;
    while (peek().kind != Tok::kNewline && peek().kind != Tok::kEnd) {
      bool glue = text.empty() || peek().text == "." || text.back() == '.';
      text += glue ? "" : " ";
      text += next().text;
    }
    static const char* kAllowed[] = {"from tvm.script import ir as I",
                                     "from tvm.script import tir as T",
                                     "from tvm.script import tirx as T",
                                     "from tvm.tirx.layout import Axis",
                                     "from __future__ import annotations",
                                     "from typing import TypeVar",
                                     "import tvm"};
    bool ok = false;
    for (const char* allowed : kAllowed) ok = ok || text == allowed;
    if (!ok)
      src_.fail(
          loc,
          "unsupported import; only TVMScript's header lines may appear ('from "
          "tvm.script import tir as T' or 'tirx as T', 'from tvm.script import ir as I', "
          "'from tvm.tirx.layout import Axis', 'from typing import TypeVar', 'from __future__ "
          "import annotations')");
    skip_newlines();
  }

  /// `m = TypeVar("m")`: how TVM declares an int64 shape variable before the module when it
  /// cannot use PEP 695 type parameters.
  NameAst type_var_line() {
    NameAst out{.name = expect_name("a type variable name"), .loc = tokens_[pos_ - 1].loc};
    expect_op("=");
    if (!accept_name("TypeVar"))
      fail_here("expected TypeVar(\"" + out.name + "\") before the module");
    expect_op("(");
    if (peek().kind != Tok::kString || peek().text != out.name) {
      fail_here("expected TypeVar(\"" + out.name + "\"): the string must repeat the name");
    }
    next();
    expect_op(")");
    expect(Tok::kNewline, "a new line after TypeVar(...)");
    skip_newlines();
    return out;
  }

  /// Whether a header line before the first decorator, commented or not, imports the tirx
  /// dialect.
  bool tirx_header() const {
    std::string_view text = src_.text();
    size_t pos = 0;
    while (pos < text.size()) {
      size_t end = text.find('\n', pos);
      if (end == std::string_view::npos) end = text.size();
      std::string_view line = text.substr(pos, end - pos);
      pos = end + 1;
      while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.remove_suffix(1);
      if (!line.empty() && line.front() == '@') break;
      if (line.starts_with("#")) line.remove_prefix(1);
      while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
      if (line == "from tvm.script import tirx as T") return true;
    }
    return false;
  }

  std::vector<AstPtr> decorator_list() {
    std::vector<AstPtr> out;
    while (accept_op("@")) {
      out.push_back(expr());
      expect(Tok::kNewline, "a new line after the decorator");
      skip_newlines();
    }
    return out;
  }

  FuncAst funcdef(std::vector<AstPtr> decorators) {
    FuncAst f;
    f.loc = peek().loc;
    f.decorators = std::move(decorators);
    if (!accept_name("def")) fail_here("expected 'def' after the decorator");
    f.name_loc = peek().loc;
    f.name = expect_name("a function name");
    if (accept_op("[")) {  // PEP 695 type parameters: int64 shape variables
      while (!is_op("]")) {
        Loc loc = peek().loc;
        f.type_params.push_back({expect_name("a type parameter name"), loc});
        if (!accept_op(",")) break;
      }
      expect_op("]");
    }
    expect_op("(");
    while (!is_op(")")) {
      Param p;
      p.loc = peek().loc;
      if (is_op("*") || is_op("**")) fail_here("*args and **kwargs are not supported");
      p.name = expect_name("a parameter name");
      if (!is_op(":")) {
        src_.fail(p.loc, "parameter '" + p.name +
                             "' needs a type annotation (T.int32, "
                             "T.handle, T.Buffer(...))");
      }
      next();
      p.annotation = expr();
      if (is_op("=")) fail_here("default parameter values are not supported");
      f.params.push_back(std::move(p));
      if (!accept_op(",")) break;
    }
    expect_op(")");
    if (accept_op("->")) f.ret = expr();
    f.body = suite("def");
    return f;
  }

  /// The block after a ':' header: an indented block, or simple statements on the same line.
  std::vector<StmtPtr> suite(const char* keyword) {
    expect_op(":");
    std::vector<StmtPtr> out;
    if (peek().kind != Tok::kNewline) {
      simple_statements(&out);
      return out;
    }
    const Token& newline = next();
    if (peek().kind != Tok::kIndent) {
      src_.fail(newline.loc, std::string("expected an indented block after '") + keyword + "'");
    }
    next();
    if (++block_depth_ > kMaxNesting) fail_here("blocks are nested too deeply");
    while (peek().kind != Tok::kDedent && peek().kind != Tok::kEnd) statement(&out);
    --block_depth_;
    if (peek().kind == Tok::kDedent) next();
    return out;
  }

  void statement(std::vector<StmtPtr>* out) {
    const Token& t = peek();
    if (t.kind == Tok::kIndent) fail_here("unexpected indent");
    if (t.kind == Tok::kName) {
      const std::string& w = t.text;
      if (w == "if") {
        out->push_back(if_stmt());
        return;
      }
      if (w == "while") {
        auto s = make_stmt(SK::kWhile);
        next();
        s->value = expr();
        s->body = suite("while");
        if (is_name("else")) fail_here("'while ... else' is not supported");
        out->push_back(std::move(s));
        return;
      }
      if (w == "for") {
        out->push_back(for_stmt());
        return;
      }
      if (w == "with") {
        auto s = make_stmt(SK::kWith);
        next();
        s->value = expr();
        if (accept_name("as")) {
          Loc loc = peek().loc;
          auto name = std::make_unique<Ast>();
          name->kind = AK::kName;
          name->loc = loc;
          name->text = expect_name("a name after 'as'");
          s->target = std::move(name);
        }
        if (is_op(",")) fail_here("only one context manager per 'with' is supported");
        s->body = suite("with");
        out->push_back(std::move(s));
        return;
      }
      if (w == "elif" || w == "else") fail_here("'" + w + "' without a matching 'if'");
      if (w == "def" || w == "class") fail_here("nested '" + w + "' is not supported");
      if (w == "try" || w == "except" || w == "finally" || w == "async") {
        fail_here("'" + w + "' is not supported in the TVMScript subset");
      }
    }
    if (t.kind == Tok::kOp && t.text == "@") {
      fail_here("decorators are only allowed on the module's functions");
    }
    simple_statements(out);
  }

  void simple_statements(std::vector<StmtPtr>* out) {
    while (true) {
      out->push_back(simple_statement());
      if (!accept_op(";")) break;
      if (peek().kind == Tok::kNewline) break;
    }
    if (peek().kind != Tok::kNewline) {
      fail_here("expected the end of the statement, got " + describe(peek()));
    }
    next();
  }

  StmtPtr make_stmt(SK kind) {
    auto s = std::make_unique<StmtAst>();
    s->kind = kind;
    s->loc = peek().loc;
    return s;
  }

  StmtPtr if_stmt() {
    auto s = make_stmt(SK::kIf);
    next();  // 'if' or 'elif'
    s->value = expr();
    s->body = suite("if");
    if (is_name("elif")) {
      s->has_else = true;
      s->orelse.push_back(if_stmt());
    } else if (is_name("else")) {
      next();
      s->has_else = true;
      s->orelse = suite("else");
    }
    return s;
  }

  StmtPtr for_stmt() {
    auto s = make_stmt(SK::kFor);
    next();
    auto targets = std::make_unique<Ast>();
    targets->kind = AK::kTuple;
    targets->loc = peek().loc;
    bool paren = accept_op("(");
    do {
      if (is_name("in")) break;
      auto name = std::make_unique<Ast>();
      name->kind = AK::kName;
      name->loc = peek().loc;
      name->text = expect_name("a loop variable name");
      targets->items.push_back(std::move(name));
    } while (accept_op(","));
    if (paren) expect_op(")");
    if (targets->items.empty()) fail_here("expected a loop variable name");
    if (!accept_name("in")) fail_here("expected 'in', got " + describe(peek()));
    s->target = std::move(targets);
    s->value = expr();
    s->body = suite("for");
    if (is_name("else")) fail_here("'for ... else' is not supported");
    return s;
  }

  StmtPtr simple_statement() {
    const Token& t = peek();
    if (t.kind == Tok::kName) {
      const std::string& w = t.text;
      if (w == "pass") {
        auto s = make_stmt(SK::kPass);
        next();
        return s;
      }
      if (w == "return") {
        auto s = make_stmt(SK::kReturn);
        next();
        if (peek().kind == Tok::kNewline || is_op(";")) {
          src_.fail(s->loc, "'return' needs a value (T.ret); a void function just ends");
        }
        s->value = expr();
        return s;
      }
      if (w == "assert") {
        auto s = make_stmt(SK::kAssert);
        next();
        s->value = expr();
        if (accept_op(",")) s->message = expr();
        return s;
      }
      if (w == "break" || w == "continue" || w == "del" || w == "global" || w == "nonlocal" ||
          w == "raise" || w == "import" || w == "from" || w == "yield" || w == "lambda") {
        fail_here("'" + w + "' is not supported in the TVMScript subset");
      }
    }
    Loc loc = t.loc;
    AstPtr first = expr_list();
    if (is_op(":")) {
      auto s = std::make_unique<StmtAst>();
      s->kind = SK::kAnnAssign;
      s->loc = loc;
      next();
      s->target = std::move(first);
      s->annotation = expr();
      if (accept_op("=")) s->value = expr();
      return s;
    }
    if (is_op("=")) {
      auto s = std::make_unique<StmtAst>();
      s->kind = SK::kAssign;
      s->loc = loc;
      next();
      s->target = std::move(first);
      s->value = expr_list();
      if (is_op("=")) fail_here("chained assignment is not supported");
      return s;
    }
    for (const char* aug : {"+=", "-=", "*=", "/=", "%=", ":="}) {
      if (is_op(aug)) fail_here(std::string("'") + aug + "' is not supported");
    }
    auto s = std::make_unique<StmtAst>();
    s->kind = SK::kExpr;
    s->loc = loc;
    s->value = std::move(first);
    return s;
  }

  // --- expressions ----------------------------------------------------------------------------
  AstPtr node(AK kind, Loc loc) {
    auto a = std::make_unique<Ast>();
    a->kind = kind;
    a->loc = loc;
    return a;
  }
  AstPtr finish(AstPtr a) {
    int depth = 0;
    for (const AstPtr& item : a->items) depth = std::max(depth, item->depth);
    for (const Keyword& kw : a->keywords) depth = std::max(depth, kw.value->depth);
    a->depth = depth + 1;
    if (a->depth > kMaxExprDepth) {  // the IR's limit, also for operator chains (a + b + c ...)
      src_.fail(a->loc, "expression nesting depth " + std::to_string(a->depth) +
                            " exceeds the limit of " + std::to_string(kMaxExprDepth) +
                            "; bind parts of the expression to variables");
    }
    return a;
  }

  struct DepthGuard {
    SyntaxParser* p;
    explicit DepthGuard(SyntaxParser* parser) : p(parser) {
      if (++p->expr_depth_ > kMaxNesting) p->fail_here("expression is nested too deeply");
    }
    ~DepthGuard() { --p->expr_depth_; }
  };

  /// `a, b` without brackets is a tuple (statement level).
  AstPtr expr_list() {
    Loc loc = peek().loc;
    AstPtr first = expr();
    if (!is_op(",")) return first;
    AstPtr tuple = node(AK::kTuple, loc);
    tuple->items.push_back(std::move(first));
    while (accept_op(",")) {
      if (is_op("=") || is_op(":") || peek().kind == Tok::kNewline) break;
      tuple->items.push_back(expr());
    }
    return finish(std::move(tuple));
  }

  AstPtr expr() {
    DepthGuard guard(this);
    AstPtr e = or_test();
    if (is_name("if")) {
      fail_here(
          "conditional expressions (a if c else b) are not supported; use T.Select or "
          "T.if_then_else");
    }
    if (is_op(":=")) fail_here("':=' is not supported");
    return e;
  }

  AstPtr bool_op(const char* word, AstPtr (SyntaxParser::*operand)()) {
    AstPtr left = (this->*operand)();
    while (is_name(word)) {
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBoolOp, left->loc);
      n->op_loc = op_loc;
      n->text = word;
      n->items.push_back(std::move(left));
      n->items.push_back((this->*operand)());
      left = finish(std::move(n));
    }
    return left;
  }
  AstPtr or_test() { return bool_op("or", &SyntaxParser::and_test); }
  AstPtr and_test() { return bool_op("and", &SyntaxParser::not_test); }
  AstPtr not_test() {
    if (is_name("not")) {
      DepthGuard guard(this);
      Loc loc = next().loc;
      AstPtr n = node(AK::kUnary, loc);
      n->op_loc = loc;
      n->text = "not";
      n->items.push_back(not_test());
      return finish(std::move(n));
    }
    return comparison();
  }

  AstPtr comparison() {
    AstPtr first = bitor_expr();
    AstPtr cmp;
    while (true) {
      std::string op;
      const Token& t = peek();
      if (t.kind == Tok::kOp && (t.text == "<" || t.text == ">" || t.text == "==" ||
                                 t.text == "!=" || t.text == "<=" || t.text == ">=")) {
        op = t.text;
      } else if (t.kind == Tok::kName &&
                 (t.text == "in" || t.text == "is" || (t.text == "not" && peek(1).text == "in"))) {
        fail_here("'" + t.text + "' comparisons are not supported");
      } else {
        break;
      }
      Loc op_loc = next().loc;
      if (!cmp) {
        cmp = node(AK::kCompare, first->loc);
        cmp->items.push_back(std::move(first));
      }
      cmp->ops.push_back(op);
      cmp->op_locs.push_back(op_loc);
      cmp->items.push_back(bitor_expr());
    }
    if (!cmp) return first;
    cmp->op_loc = cmp->op_locs.front();
    return finish(std::move(cmp));
  }

  AstPtr binary_level(std::initializer_list<const char*> ops, AstPtr (SyntaxParser::*operand)()) {
    AstPtr left = (this->*operand)();
    while (true) {
      const char* matched = nullptr;
      for (const char* op : ops) {
        if (is_op(op)) matched = op;
      }
      if (matched == nullptr) return left;
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBinary, left->loc);
      n->op_loc = op_loc;
      n->text = matched;
      n->items.push_back(std::move(left));
      n->items.push_back((this->*operand)());
      left = finish(std::move(n));
    }
  }
  AstPtr bitor_expr() { return binary_level({"|"}, &SyntaxParser::bitxor_expr); }
  AstPtr bitxor_expr() { return binary_level({"^"}, &SyntaxParser::bitand_expr); }
  AstPtr bitand_expr() { return binary_level({"&"}, &SyntaxParser::shift_expr); }
  AstPtr shift_expr() { return binary_level({"<<", ">>"}, &SyntaxParser::arith_expr); }
  AstPtr arith_expr() { return binary_level({"+", "-"}, &SyntaxParser::term); }
  AstPtr term() { return binary_level({"*", "/", "//", "%", "@"}, &SyntaxParser::factor); }

  AstPtr factor() {
    if (is_op("-") || is_op("+") || is_op("~")) {
      DepthGuard guard(this);
      const Token& t = next();
      AstPtr n = node(AK::kUnary, t.loc);
      n->op_loc = t.loc;
      n->text = t.text;
      n->items.push_back(factor());
      return finish(std::move(n));
    }
    return power();
  }

  AstPtr power() {
    AstPtr base = primary();
    if (is_op("**")) {
      Loc op_loc = next().loc;
      AstPtr n = node(AK::kBinary, base->loc);
      n->op_loc = op_loc;
      n->text = "**";
      n->items.push_back(std::move(base));
      n->items.push_back(factor());
      return finish(std::move(n));
    }
    return base;
  }

  AstPtr primary() {
    AstPtr e = atom();
    while (true) {
      if (is_op(".")) {
        next();
        AstPtr n = node(AK::kAttr, e->loc);
        n->op_loc = peek().loc;
        if (peek().kind != Tok::kName) fail_here("expected an attribute name after '.'");
        n->text = next().text;
        n->items.push_back(std::move(e));
        e = finish(std::move(n));
      } else if (is_op("(")) {
        DepthGuard guard(this);
        next();
        AstPtr n = node(AK::kCall, e->loc);
        n->op_loc = e->loc;
        n->items.push_back(std::move(e));
        call_arguments(n.get());
        e = finish(std::move(n));
      } else if (is_op("[")) {
        DepthGuard guard(this);
        next();
        AstPtr n = node(AK::kSubscript, e->loc);
        n->items.push_back(std::move(e));
        if (is_op("]")) fail_here("expected an index");
        while (!is_op("]")) {
          if (is_op(":")) fail_here("a slice needs a start: write start:stop");
          AstPtr index = expr();
          if (is_op(":")) index = slice(std::move(index));
          n->items.push_back(std::move(index));
          if (!accept_op(",")) break;
        }
        expect_op("]");
        e = finish(std::move(n));
      } else {
        return e;
      }
    }
  }

  /// start:stop[:step] after its start, at the ':'.
  AstPtr slice(AstPtr start) {
    AstPtr n = node(AK::kSlice, start->loc);
    n->op_loc = peek().loc;
    n->items.push_back(std::move(start));
    expect_op(":");
    if (is_op("]") || is_op(",") || is_op(":")) fail_here("a slice needs a stop: write start:stop");
    n->items.push_back(expr());
    if (accept_op(":")) n->items.push_back(expr());
    return finish(std::move(n));
  }

  void call_arguments(Ast* call) {
    bool seen_keyword = false;
    while (!is_op(")")) {
      if (is_op("*") || is_op("**")) fail_here("argument unpacking is not supported");
      if (peek().kind == Tok::kName && is_op("=", 1)) {
        Keyword kw;
        kw.loc = peek().loc;
        kw.name = next().text;
        next();  // '='
        kw.value = expr();
        for (const Keyword& other : call->keywords) {
          if (other.name == kw.name)
            src_.fail(kw.loc, "keyword argument '" + kw.name + "' repeated");
        }
        call->keywords.push_back(std::move(kw));
        seen_keyword = true;
      } else {
        if (seen_keyword) fail_here("positional argument follows keyword argument");
        call->items.push_back(expr());
      }
      if (!accept_op(",")) break;
    }
    expect_op(")");
  }

  AstPtr atom() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kName: {
        if (t.text == "True" || t.text == "False") {
          AstPtr n = node(AK::kBool, t.loc);
          n->bool_value = t.text == "True";
          next();
          return n;
        }
        if (t.text == "None") {
          AstPtr n = node(AK::kNone, t.loc);
          next();
          return n;
        }
        if (t.text == "lambda") fail_here("lambda is not supported");
        if (is_keyword(t.text)) fail_here("invalid syntax: unexpected '" + t.text + "'");
        AstPtr n = node(AK::kName, t.loc);
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kInt: {
        AstPtr n = node(AK::kInt, t.loc);
        n->int_value = t.int_value;
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kFloat: {
        AstPtr n = node(AK::kFloat, t.loc);
        n->float_value = t.float_value;
        n->text = t.text;
        next();
        return n;
      }
      case Tok::kString: {
        AstPtr n = node(AK::kString, t.loc);
        while (peek().kind == Tok::kString) n->text += next().text;
        return n;
      }
      case Tok::kOp:
        break;
      default:
        fail_here("expected an expression, got " + describe(t));
    }
    Loc loc = t.loc;
    if (accept_op("(")) {
      DepthGuard guard(this);
      if (accept_op(")")) return node(AK::kTuple, loc);
      AstPtr first = expr();
      if (accept_op(")")) return first;  // parenthesized expression
      AstPtr tuple = node(AK::kTuple, loc);
      tuple->items.push_back(std::move(first));
      while (accept_op(",")) {
        if (is_op(")")) break;
        tuple->items.push_back(expr());
      }
      expect_op(")");
      return finish(std::move(tuple));
    }
    if (accept_op("[")) {
      DepthGuard guard(this);
      AstPtr list = node(AK::kList, loc);
      while (!is_op("]")) {
        list->items.push_back(expr());
        if (!accept_op(",")) break;
      }
      expect_op("]");
      return finish(std::move(list));
    }
    if (accept_op("{")) {
      DepthGuard guard(this);
      AstPtr dict = node(AK::kDict, loc);
      while (!is_op("}")) {
        dict->items.push_back(expr());
        expect_op(":");
        dict->items.push_back(expr());
        if (!accept_op(",")) break;
      }
      expect_op("}");
      return finish(std::move(dict));
    }
    fail_here("expected an expression, got " + describe(t));
  }

  const Source& src_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  int expr_depth_ = 0;
  int block_depth_ = 0;
};

}  // namespace

FileAst parse_syntax(const Source& source, std::vector<Token> tokens) {
  return SyntaxParser(source, std::move(tokens)).file();
}

AstPtr parse_expression(const Source& source, std::vector<Token> tokens) {
  return SyntaxParser(source, std::move(tokens)).expression_only();
}

}  // namespace primjit::text_internal
