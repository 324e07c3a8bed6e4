// ptxas's -v report, the SASS size of a CUBIN's kernels and PTX's innermost loops.
#include "jit/cuda/device_code_stats.h"

#include <algorithm>
#include <regex>
#include <sstream>

#include "primjit/error.h"

namespace primjit::jit {
namespace {

constexpr int64_t kSassBytes = 16;    // one sm_70+ instruction
constexpr uint64_t kSassNop = 0x918;  // opcode of NOP in the low 12 bits
constexpr uint64_t kOpcodeMask = 0xfff;

// Little-endian unsigned of `bytes` bytes at `at`, bounds-checked.
uint64_t read_le(const std::string& d, uint64_t at, int bytes) {
  PRIMJIT_USER_CHECK(at <= d.size() && static_cast<uint64_t>(bytes) <= d.size() - at)
      << "sass_instruction_counts: the CUBIN is truncated (" << bytes << " bytes at offset " << at
      << " of " << d.size() << "); pass the whole image NVRTC or nvcc -cubin produced";
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = v << 8 | static_cast<unsigned char>(d[at + i]);
  return v;
}

std::string trim(const std::string& s) {
  const size_t first = s.find_first_not_of(" \t\r");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r") - first + 1);
}

}  // namespace

std::map<std::string, KernelResources> parse_ptxas_info(const std::string& log) {
  static const std::regex kEntry(R"(Compiling entry function '([^']+)')");
  static const std::regex kFrame(
      R"(([0-9]+) bytes stack frame, ([0-9]+) bytes spill stores, ([0-9]+) bytes spill loads)");
  static const std::regex kUsed(R"(Used ([0-9]+) registers)");
  static const std::regex kBarriers(R"(used ([0-9]+) barriers)");
  static const std::regex kSmem(R"(([0-9]+) bytes smem)");
  static const std::regex kProperties(R"(Function properties for (\S+))");
  std::map<std::string, KernelResources> out;
  KernelResources* current = nullptr;  // the entry the next lines describe
  std::istringstream in(log);
  std::smatch m;
  for (std::string line; std::getline(in, line);) {
    if (std::regex_search(line, m, kEntry)) {
      current = &out[m[1]];
    } else if (std::regex_search(line, m, kProperties)) {
      // The frame line that follows belongs to this function (a device function's is skipped).
      auto it = out.find(m[1]);
      current = it == out.end() ? nullptr : &it->second;
    } else if (current != nullptr && std::regex_search(line, m, kFrame)) {
      current->stack_bytes = std::stoll(m[1]);
      current->spill_store_bytes = std::stoll(m[2]);
      current->spill_load_bytes = std::stoll(m[3]);
    } else if (current != nullptr && std::regex_search(line, m, kUsed)) {
      current->registers = std::stoi(m[1]);
      if (std::regex_search(line, m, kBarriers)) current->barriers = std::stoi(m[1]);
      if (std::regex_search(line, m, kSmem)) current->static_shared_bytes = std::stoll(m[1]);
    }
  }
  return out;
}

std::map<std::string, SassSize> sass_instruction_counts(const std::string& cubin) {
  PRIMJIT_USER_CHECK(cubin.size() >= 64 &&
                     cubin.compare(0, 4,
                                   "\x7f"
                                   "ELF") == 0 &&
                     cubin[4] == 2 && cubin[5] == 1)
      << "sass_instruction_counts: the image is not a little-endian ELF64 CUBIN (PTX text?); "
         "compile for a real architecture (sm_XX) without force_ptx";
  const uint64_t shoff = read_le(cubin, 0x28, 8);
  const uint64_t shentsize = read_le(cubin, 0x3a, 2);
  const uint64_t shnum = read_le(cubin, 0x3c, 2);
  const uint64_t shstrndx = read_le(cubin, 0x3e, 2);
  PRIMJIT_USER_CHECK(shentsize >= 64 && shstrndx < shnum)
      << "sass_instruction_counts: the CUBIN's section header table is malformed";
  auto header = [&](uint64_t i, uint64_t field, int bytes) {
    return read_le(cubin, shoff + i * shentsize + field, bytes);
  };
  const uint64_t names = header(shstrndx, 24, 8);  // sh_offset of the section name table
  std::map<std::string, SassSize> out;
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t name_at = names + header(i, 0, 4);
    PRIMJIT_USER_CHECK(name_at < cubin.size())
        << "sass_instruction_counts: section " << i << "'s name lies outside the CUBIN";
    const std::string name = cubin.c_str() + name_at;  // NUL-terminated in the table
    if (name.rfind(".text.", 0) != 0) continue;
    const uint64_t offset = header(i, 24, 8), size = header(i, 32, 8);
    SassSize s{.section_bytes = static_cast<int64_t>(size)};
    int64_t count = static_cast<int64_t>(size) / kSassBytes;
    while (count > 0 &&
           (read_le(cubin, offset + (count - 1) * kSassBytes, 8) & kOpcodeMask) == kSassNop) {
      --count;
    }
    s.instructions = count;
    out[name.substr(6)] = s;
  }
  return out;
}

std::map<std::string, std::vector<int64_t>> ptx_inner_loop_instructions(const std::string& ptx) {
  static const std::regex kEntry(R"(\.entry\s+([A-Za-z_$][\w$]*))");
  static const std::regex kLabel(R"(^([A-Za-z_$][\w$]*):$)");
  static const std::regex kBranch(R"(^(@!?%\w+\s+)?bra(\.uni)?\s+([A-Za-z_$][\w$]*);$)");
  std::map<std::string, std::vector<int64_t>> out;
  // Per entry: its lines, trimmed.
  std::vector<std::pair<std::string, std::vector<std::string>>> entries;
  std::istringstream in(ptx);
  std::smatch m;
  for (std::string raw; std::getline(in, raw);) {
    std::string line = trim(raw);
    if (std::regex_search(line, m, kEntry)) {
      entries.push_back({m[1], {}});
    } else if (!entries.empty()) {
      entries.back().second.push_back(line);
    }
  }
  for (const auto& [name, lines] : entries) {
    std::map<std::string, size_t> label_at;
    std::map<size_t, size_t> loops;  // label line -> last back branch line
    std::vector<bool> is_instruction(lines.size(), false);
    for (size_t i = 0; i < lines.size(); ++i) {
      const std::string& line = lines[i];
      if (std::regex_match(line, m, kLabel)) {
        label_at[m[1]] = i;
        continue;
      }
      is_instruction[i] =
          !line.empty() && line.back() == ';' && line[0] != '.' && line.rfind("//", 0) != 0;
      if (std::regex_match(line, m, kBranch)) {
        auto target = label_at.find(m[3]);
        if (target != label_at.end()) loops[target->second] = i;  // earlier label: a loop
      }
    }
    std::vector<int64_t>& counts = out[name];
    for (const auto& [begin, end] : loops) {
      const bool innermost = std::none_of(loops.begin(), loops.end(), [&](const auto& other) {
        return other.first != begin && begin <= other.first && other.second <= end;
      });
      if (!innermost) continue;
      counts.push_back(
          std::count(is_instruction.begin() + begin + 1, is_instruction.begin() + end + 1, true));
    }
  }
  return out;
}

}  // namespace primjit::jit
