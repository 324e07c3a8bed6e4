#include "jit/cuda/source_printer.h"

#include <algorithm>
#include <iterator>

#include "primjit/error.h"

namespace primjit::jit {
namespace {

// C++20 keywords and alternative tokens.
constexpr const char* kKeywords[] = {
    "alignas",       "alignof",     "and",
    "and_eq",        "asm",         "auto",
    "bitand",        "bitor",       "bool",
    "break",         "case",        "catch",
    "char",          "char8_t",     "char16_t",
    "char32_t",      "class",       "compl",
    "concept",       "const",       "consteval",
    "constexpr",     "constinit",   "const_cast",
    "continue",      "co_await",    "co_return",
    "co_yield",      "decltype",    "default",
    "delete",        "do",          "double",
    "dynamic_cast",  "else",        "enum",
    "explicit",      "export",      "extern",
    "false",         "float",       "for",
    "friend",        "goto",        "if",
    "inline",        "int",         "long",
    "mutable",       "namespace",   "new",
    "noexcept",      "not",         "not_eq",
    "nullptr",       "operator",    "or",
    "or_eq",         "private",     "protected",
    "public",        "register",    "reinterpret_cast",
    "requires",      "return",      "short",
    "signed",        "sizeof",      "static",
    "static_assert", "static_cast", "struct",
    "switch",        "template",    "this",
    "thread_local",  "throw",       "true",
    "try",           "typedef",     "typeid",
    "typename",      "union",       "unsigned",
    "using",         "virtual",     "void",
    "volatile",      "wchar_t",     "while",
    "xor",           "xor_eq",
};

// Names a kernel body can see besides the keywords: CUDA built-in variables, the types and
// functions primjit's generated code uses, and common macros. A local variable with one of these
// names would hide it.
constexpr const char* kCudaNames[] = {
    "threadIdx", "blockIdx", "blockDim",    "gridDim",      "warpSize", "dim3",    "uint3",
    "half",      "half2",    "nv_bfloat16", "nv_bfloat162", "int8_t",   "int16_t", "int32_t",
    "int64_t",   "uint8_t",  "uint16_t",    "uint32_t",     "uint64_t", "uint",    "uchar",
    "ushort",    "ulong",    "min",         "max",          "abs",      "memcpy",  "printf",
    "assert",    "isnan",    "isinf",       "isfinite",     "signbit",  "NULL",    "main",
    "std",       "cuda",     "asm",
};

// Built-in CUDA vector type names: float4, make_float4, ...
constexpr const char* kVectorBases[] = {"char",     "uchar",     "short", "ushort",
                                        "int",      "uint",      "long",  "ulong",
                                        "longlong", "ulonglong", "float", "double"};

bool is_keyword(std::string_view name) {
  return std::find(std::begin(kKeywords), std::end(kKeywords), name) != std::end(kKeywords);
}

bool is_ident_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

}  // namespace

void SourceWriter::line(std::string_view text) {
  if (!text.empty()) text_.append(static_cast<size_t>(depth_) * 2, ' ');
  text_.append(text);
  text_.push_back('\n');
}

void SourceWriter::raw_line(std::string_view text) {
  text_.append(text);
  text_.push_back('\n');
}

void SourceWriter::open(std::string_view header) {
  line(header.empty() ? std::string("{") : std::string(header) + " {");
  ++depth_;
}

void SourceWriter::close(std::string_view trailer) {
  dedent();
  line("}" + std::string(trailer));
}

void SourceWriter::dedent() {
  PRIMJIT_ICHECK(depth_ > 0) << "SourceWriter: unbalanced close()";
  --depth_;
}

NameTable::NameTable() {
  for (const char* k : kKeywords) taken_.insert(k);
  for (const char* n : kCudaNames) taken_.insert(n);
  for (const char* base : kVectorBases) {
    for (int lanes = 1; lanes <= 4; ++lanes) {
      std::string type = std::string(base) + std::to_string(lanes);
      taken_.insert(type);
      taken_.insert("make_" + type);
    }
  }
}

std::string NameTable::sanitize(std::string_view hint) {
  std::string name;
  name.reserve(hint.size() + 1);
  for (char c : hint) name.push_back(is_ident_char(c) ? c : '_');
  // Identifiers starting with '_' (and any containing "__") may be reserved by the
  // implementation; a leading digit is not an identifier at all.
  if (name.empty() || name[0] == '_' || (name[0] >= '0' && name[0] <= '9')) name = "v" + name;
  for (size_t pos; (pos = name.find("__")) != std::string::npos;) name.erase(pos, 1);
  return name;
}

bool NameTable::is_valid_identifier(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9')) return false;
  if (!std::all_of(name.begin(), name.end(), is_ident_char)) return false;
  return !is_keyword(name);
}

std::string NameTable::unique(std::string_view hint) {
  std::string base = sanitize(hint);
  std::string name = base;
  for (int suffix = 1; taken_.count(name) != 0; ++suffix) {
    name = base + "_" + std::to_string(suffix);
  }
  taken_.insert(name);
  return name;
}

}  // namespace primjit::jit
