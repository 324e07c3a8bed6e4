// The shared main() of the command-line tools: errors become one line on stderr and an exit
// code (1 for a user error, 2 for a bug), never an uncaught exception.
#pragma once

#include <exception>
#include <iostream>

#include "primjit/error.h"
#include "primjit/ir/text.h"

namespace primjit::tools {

/// The environment variables primjit reads, for every tool's --help (the README's table says
/// the same; a test checks that both name every variable the sources read).
inline constexpr const char* kEnvironmentHelp =
    "environment:\n"
    "  PRIMJIT_LOG=off|warning|info|debug  diagnostics on stderr (default warning); info: each\n"
    "                         compile with its reason and stage times, each cache hit\n"
    "  PRIMJIT_DUMP=ir,llvm,llvm-opt,asm,cuda,ptx|all  write what compiling makes: the IR after\n"
    "                         each pass, LLVM IR before/after LLVM's optimizer, host assembly,\n"
    "                         CUDA C, PTX\n"
    "  PRIMJIT_DUMP_DIR=DIR   where dumps go (default: a new private directory, logged)\n"
    "  PRIMJIT_DUMP_IR=DIR    the same as PRIMJIT_DUMP=ir PRIMJIT_DUMP_DIR=DIR\n"
    "  PRIMJIT_VERIFY_EACH=1  verify the IR after every pass\n"
    "  PRIMJIT_CACHE=0        no disk cache of compiled variants\n"
    "  PRIMJIT_CACHE_DIR=DIR  its directory (default $XDG_CACHE_HOME/primjit, else\n"
    "                         $HOME/.cache/primjit)\n"
    "  PRIMJIT_CACHE_MAX_BYTES=SIZE  its size cap, e.g. 512M (default 1G)\n"
    "  PRIMJIT_CACHE_REMOTE=redis://host:port[/db]  a shared remote cache tier\n"
    "  PRIMJIT_CACHE_KEY_FILE=FILE  the team key that signs and checks remote entries\n"
    "  CUDA_HOME=DIR          the CUDA toolkit's headers for NVRTC (default: the build's)\n"
    "  CUDA_LAUNCH_BLOCKING=1 wait for each kernel launch: faults are reported at their launch\n"
    "  PRIMJIT_CUDA_DRIVER_LIBRARY=FILE  the CUDA driver library to load instead of\n"
    "                         libcuda.so.1 (tests use a fake driver this way)\n"
    "  TMPDIR=DIR             where the default dump directory is made (default /tmp)\n";

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
