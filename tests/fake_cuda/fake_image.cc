#include "tests/fake_cuda/fake_image.h"

#include <elf.h>
#include <cstring>

namespace fake_cuda {
namespace {

bool is_elf(const std::string& image) {
  return image.size() >= sizeof(Elf64_Ehdr) && std::memcmp(image.data(), ELFMAG, SELFMAG) == 0 &&
         image[EI_CLASS] == ELFCLASS64;
}

// The section headers of a 64-bit ELF image with their names; empty when malformed.
struct Section {
  std::string name;
  uint64_t size = 0;
};

std::vector<Section> elf_sections(const std::string& image) {
  std::vector<Section> sections;
  Elf64_Ehdr header;
  std::memcpy(&header, image.data(), sizeof(header));
  const uint64_t table_end = header.e_shoff + uint64_t{header.e_shnum} * sizeof(Elf64_Shdr);
  if (header.e_shentsize != sizeof(Elf64_Shdr) || table_end > image.size() ||
      header.e_shstrndx >= header.e_shnum) {
    return sections;
  }
  auto section = [&](size_t i) {
    Elf64_Shdr s;
    std::memcpy(&s, image.data() + header.e_shoff + i * sizeof(Elf64_Shdr), sizeof(s));
    return s;
  };
  const Elf64_Shdr names = section(header.e_shstrndx);
  if (names.sh_offset + names.sh_size > image.size()) return sections;
  for (size_t i = 0; i < header.e_shnum; ++i) {
    const Elf64_Shdr s = section(i);
    if (s.sh_name >= names.sh_size) continue;
    const char* name = image.data() + names.sh_offset + s.sh_name;
    sections.push_back({std::string(name, strnlen(name, names.sh_size - s.sh_name)), s.sh_size});
  }
  return sections;
}

// The text of PTX entry `name`, from ".entry name(" to the next ".entry"; empty when absent.
std::string ptx_entry(const std::string& ptx, const std::string& name) {
  const std::string open = ".entry " + name + "(";
  size_t begin = ptx.find(open);
  if (begin == std::string::npos) return "";
  size_t end = ptx.find(".entry ", begin + open.size());
  return ptx.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

// Sum of the sizes of `.shared ... name[SIZE];` declarations (not `.extern .shared`) in `text`.
int64_t ptx_static_shared(const std::string& text) {
  int64_t total = 0;
  for (size_t at = text.find(".shared "); at != std::string::npos;
       at = text.find(".shared ", at + 1)) {
    size_t line_begin = text.rfind('\n', at);
    line_begin = line_begin == std::string::npos ? 0 : line_begin + 1;
    const std::string before = text.substr(line_begin, at - line_begin);
    if (before.find_first_not_of(" \t") != std::string::npos) continue;  // ld.shared etc.
    size_t line_end = text.find('\n', at);
    const std::string line = text.substr(at, line_end - at);
    size_t open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos || close == open + 1) continue;
    total += std::strtoll(line.c_str() + open + 1, nullptr, 10);
  }
  return total;
}

}  // namespace

bool parse_image(const void* data, Image* out) {
  const char* bytes = static_cast<const char*>(data);
  if (std::memcmp(bytes, ELFMAG, SELFMAG) == 0) {
    // An ELF image's size is in its header: the section table ends it.
    Elf64_Ehdr header;
    std::memcpy(&header, bytes, sizeof(header));
    uint64_t size = header.e_shoff + uint64_t{header.e_shnum} * header.e_shentsize;
    size = std::max<uint64_t>(size, header.e_phoff + uint64_t{header.e_phnum} * header.e_phentsize);
    out->bytes.assign(bytes, size);
    if (!is_elf(out->bytes)) return false;
    out->cubin = true;
    // CUDA keeps the SM version in bits 8..15 of e_flags (e.g. 0x5a00: sm_90).
    out->arch = static_cast<int>((header.e_flags >> 8) & 0xff);
    for (const Section& s : elf_sections(out->bytes)) {
      if (s.name.rfind(".text.", 0) == 0) out->entries.push_back(s.name.substr(6));
    }
    return !out->entries.empty();
  }
  out->bytes = bytes;  // NUL-terminated PTX
  out->cubin = false;
  size_t target = out->bytes.find(".target sm_");
  if (target == std::string::npos) return false;
  out->arch = std::atoi(out->bytes.c_str() + target + 11);
  for (size_t at = out->bytes.find(".entry "); at != std::string::npos;
       at = out->bytes.find(".entry ", at + 1)) {
    size_t name_end = out->bytes.find('(', at);
    if (name_end == std::string::npos) return false;
    out->entries.push_back(out->bytes.substr(at + 7, name_end - at - 7));
  }
  return !out->entries.empty();
}

int64_t static_shared_bytes(const Image& image, const std::string& entry) {
  if (!image.cubin) return ptx_static_shared(ptx_entry(image.bytes, entry));
  for (const Section& s : elf_sections(image.bytes)) {
    if (s.name != ".nv.shared." + entry) continue;
    // sm_90 images reserve 1 KiB of each block's shared memory for the system in this
    // section; the driver counts it apart from the kernel's static shared memory.
    const int64_t reserved = image.arch >= 90 ? 1024 : 0;
    return std::max<int64_t>(static_cast<int64_t>(s.size) - reserved, 0);
  }
  return 0;
}

}  // namespace fake_cuda
