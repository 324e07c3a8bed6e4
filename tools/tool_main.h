// The shared main() of the command-line tools: errors become one line on stderr and an exit
// code (1 for a user error, 2 for a bug), never an uncaught exception.
#pragma once

#include <exception>
#include <iostream>

#include "primjit/error.h"
#include "primjit/ir/text.h"

namespace primjit::tools {

template <typename Main>
int run_tool(const char* name, int argc, char** argv, Main main_impl) {
  try {
    return main_impl(argc, argv);
  } catch (const ParseError& e) {
    std::cerr << e.what() << "\n";  // already "FILE:LINE:COL: error: ..."
    return 1;
  } catch (const Error& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << name << ": internal error: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace primjit::tools
