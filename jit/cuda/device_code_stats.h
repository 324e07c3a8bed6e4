// What ptxas made of a kernel, read without a GPU or a disassembler (bench_device_codegen):
// the resources ptxas reports with -v, the SASS instruction count of each kernel in a CUBIN and
// the instruction count of each kernel's innermost PTX loops.
//
//   image = nvrtc_compile(source, {.extra_options = {"--ptxas-options=-v"}});
//   auto resources = parse_ptxas_info(image.log);   // registers, spills, static shared memory
//   auto sass = sass_instruction_counts(image.data); // per kernel, for sm_90 CUBINs
//
// SASS of sm_70 and newer has fixed 16-byte instructions, so a kernel's count is the size of
// its `.text.<kernel>` ELF section / 16, less the NOPs ptxas pads the section with (the
// architectures' NOP opcode, 0x918 in the low 12 bits, was checked for sm_90). Without a
// disassembler the inner loop cannot be found in SASS: the loop counts are PTX's.
//
// The interface is free of CUDA headers.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace primjit::jit {

/// One kernel's line of ptxas's -v report.
struct KernelResources {
  int registers = 0;
  int64_t stack_bytes = 0;
  int64_t spill_store_bytes = 0;
  int64_t spill_load_bytes = 0;
  int64_t static_shared_bytes = 0;  // "N bytes smem": __shared__ arrays
  int barriers = 0;
};

/// The report of `ptxas -v` (NVRTC's log with --ptxas-options=-v, or nvcc's stderr with
/// -Xptxas -v), by entry function name. Device functions' properties are skipped.
std::map<std::string, KernelResources> parse_ptxas_info(const std::string& log);

struct SassSize {
  int64_t section_bytes = 0;  // the .text section, padding included
  int64_t instructions = 0;   // without the trailing NOP padding
};

/// The SASS size of every kernel (every `.text.<name>` section) of a CUBIN (ELF64). Throws
/// primjit::Error when `cubin` is not a well-formed little-endian ELF64 image.
std::map<std::string, SassSize> sass_instruction_counts(const std::string& cubin);

/// Instruction counts of the innermost loops of each `.entry` of a PTX text: a loop runs from
/// a label to the last branch back to it; an innermost loop contains no other. Instructions are
/// the statements between the label and the back branch, that branch included (directives,
/// declarations and labels are not). Entries without loops map to an empty vector.
std::map<std::string, std::vector<int64_t>> ptx_inner_loop_instructions(const std::string& ptx);

}  // namespace primjit::jit
