// Helpers shared by the tests of the text format (text_*_test.cc).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"

namespace primjit::test {

namespace fs = std::filesystem;

inline std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline std::vector<fs::path> corpus(const char* subdir) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(fs::path(PRIMJIT_TEST_DATA_DIR) / subdir)) {
    if (entry.path().extension() == ".tir") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// print -> parse gives a structurally equal module, and printing that is a fixed point.
inline void expect_round_trip(const IRModule& m) {
  std::string text = print(m);
  IRModule back;
  try {
    back = parse(text, "printed");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what() << "\n--- printed text ---\n" << text;
    return;
  }
  EXPECT_TRUE(structural_equal(back, m))
      << structural_diff(back, m).value_or("") << "\n--- printed text ---\n"
      << text;
  EXPECT_EQ(print(back), text);
}

inline IRModule parse_ok(const std::string& text) {
  try {
    return parse(text, "test.tir");
  } catch (const ParseError& e) {
    ADD_FAILURE() << e.what();
    return IRModule::make({});
  }
}

/// The function body of a single-function text, printed at the function level.
inline std::string body_of(const std::string& printed) {
  size_t def = printed.find("def ");
  size_t start = printed.find('\n', def) + 1;
  return printed.substr(start);
}

inline PrimFunc func_of(Stmt body, std::vector<Var> params = {},
                        std::vector<std::pair<Var, Buffer>> buffers = {}) {
  return PrimFunc::make(std::move(params), std::move(buffers), std::move(body), DataType::Void(),
                        {{attr::kGlobalSymbol, AttrValue("main")}});
}

inline std::string print_body(Stmt body, std::vector<Var> params = {},
                              std::vector<std::pair<Var, Buffer>> buffers = {}) {
  return body_of(print(func_of(std::move(body), std::move(params), std::move(buffers))));
}

inline const DataType kI32 = DataType::Int(32);
inline const DataType kI64 = DataType::Int(64);
inline const DataType kF32 = DataType::Float(32);

}  // namespace primjit::test
