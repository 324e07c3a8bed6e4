// What to dump while compiling, from the environment:
//   PRIMJIT_DUMP=ir,llvm,llvm-opt,asm,cuda,ptx   (any subset, comma separated; "all" for every one)
//   PRIMJIT_DUMP_DIR=DIR                          (default: a fresh private directory, logged)
//   PRIMJIT_DUMP_IR=DIR                           (alias of PRIMJIT_DUMP=ir PRIMJIT_DUMP_DIR=DIR)
// ir: the module before the first and after every pass (NN_<pass>.tir); llvm: the host code's
// LLVM IR before LLVM's optimizer (host.ll); llvm-opt: after it (host.opt.ll); asm: the machine
// code LLVM emits, as assembly (host.s); cuda: the CUDA C given to NVRTC (device.cu); ptx:
// NVRTC's PTX (device.ptx). A Jit writes each variant's files to DIR/<kernel>.vN/ (and, while
// dumping, compiles every variant: the persistent caches are neither read nor written);
// primjit-opt writes the ir dump to DIR itself.
#pragma once

#include <string>

namespace primjit {

struct DumpConfig {
  bool ir = false;
  bool llvm = false;
  bool llvm_opt = false;
  bool assembly = false;
  bool cuda = false;
  bool ptx = false;
  /// The directory (created when first needed); empty when nothing is dumped.
  std::string dir;

  bool any() const { return ir || llvm || llvm_opt || assembly || cuda || ptx; }
};

/// The documented values of PRIMJIT_DUMP, for messages and --help: "ir, llvm, ...".
const char* dump_kinds_text();

/// Parses a PRIMJIT_DUMP value into `config`'s flags; throws primjit::Error naming the bad
/// entry and listing the valid ones.
void parse_dump_kinds(const std::string& text, DumpConfig* config);

/// Reads PRIMJIT_DUMP, PRIMJIT_DUMP_DIR and PRIMJIT_DUMP_IR now (the environment may change
/// between compiles). When something is dumped and no directory is given, the directory is a
/// fresh one private to the user (mode 0700, an unpredictable name under $TMPDIR or /tmp),
/// made once per process and named in a warning-level log line.
DumpConfig dump_config_from_env();

/// Creates `dir` (and its parents, mode 0700) when missing; throws primjit::Error saying what
/// failed. `what` names the setting in the message, e.g. "PRIMJIT_DUMP_DIR".
void make_dump_dir(const std::string& dir, const char* what);

/// Writes `text` to `dir`/`name` (a new or regular file, mode 0600; never through a symbolic
/// link, never blocking on a FIFO); throws primjit::Error when it cannot.
void write_dump_file(const std::string& dir, const std::string& name, const std::string& text);

}  // namespace primjit
