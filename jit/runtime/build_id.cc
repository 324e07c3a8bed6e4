#include "jit/runtime/build_id.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <set>
#include <string_view>
#include <vector>

#include "primjit/ir/text.h"
#include "primjit/passes.h"

namespace primjit::jit {
namespace {

struct Search {
  uintptr_t address = 0;  // an address inside this library
  std::string id;
};

// The build-id note of the loaded object that contains `search->address`.
int find_build_id(dl_phdr_info* info, size_t, void* data) {
  auto* search = static_cast<Search*>(data);
  bool contains = false;
  for (int i = 0; i < info->dlpi_phnum && !contains; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    uintptr_t start = info->dlpi_addr + ph.p_vaddr;
    contains =
        ph.p_type == PT_LOAD && search->address >= start && search->address < start + ph.p_memsz;
  }
  if (!contains) return 0;
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_NOTE) continue;
    const char* p = reinterpret_cast<const char*>(info->dlpi_addr + ph.p_vaddr);
    const char* end = p + ph.p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
      const auto* note = reinterpret_cast<const ElfW(Nhdr)*>(p);
      const char* name = p + sizeof(ElfW(Nhdr));
      const char* desc = name + ((note->n_namesz + 3) & ~3u);
      if (note->n_type == NT_GNU_BUILD_ID && note->n_namesz == 4 &&
          std::memcmp(name, "GNU", 4) == 0 && desc + note->n_descsz <= end) {
        for (uint32_t k = 0; k < note->n_descsz; ++k) {
          char hex[3];
          std::snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned char>(desc[k]));
          search->id += hex;
        }
        return 1;
      }
      p = desc + ((note->n_descsz + 3) & ~3u);
    }
  }
  return 1;  // the object, without a build-id
}

// The build-id of the loaded object that contains `address`.
std::string build_id_of(uintptr_t address) {
  Search search{address, ""};
  dl_iterate_phdr(find_build_id, &search);
  if (!search.id.empty()) return search.id;
  Dl_info info{};
  struct stat st {};
  if (dladdr(reinterpret_cast<void*>(address), &info) != 0 && info.dli_fname != nullptr &&
      ::stat(info.dli_fname, &st) == 0) {
    return "file " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  }
  return "unknown";
}

// A function of each library whose code decides what a variant compiles to. A fixed pass in
// libprimjit_passes must not leave the disk cache serving code compiled before the fix.
std::string compute_build_id() {
  using Parse = IRModule (*)(std::string_view, std::string_view);
  using Pipeline = std::vector<std::string> (*)(const passes::PipelineOptions&);
  const uintptr_t functions[] = {
      reinterpret_cast<uintptr_t>(static_cast<Parse>(&parse)),                        // ir
      reinterpret_cast<uintptr_t>(static_cast<Pipeline>(&passes::default_pipeline)),  // passes
      reinterpret_cast<uintptr_t>(&library_build_id),                                 // runtime
  };
  std::string ids;
  std::set<std::string> seen;
  for (uintptr_t f : functions) {
    std::string id = build_id_of(f);
    if (!seen.insert(id).second) continue;  // linked into an object already named
    ids += (ids.empty() ? "" : "+") + id;
  }
  return ids;
}

}  // namespace

const std::string& library_build_id() {
  static const std::string id = compute_build_id();
  return id;
}

}  // namespace primjit::jit
