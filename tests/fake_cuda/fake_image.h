// What the fake driver reads from a module image: CUBIN (ELF) or PTX.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace fake_cuda {

struct Image {
  bool cubin = false;
  int arch = 0;  // sm_XX of a CUBIN, the .target of PTX
  std::string bytes;
  std::vector<std::string> entries;  // kernel names
};

/// Reads a CUBIN or NUL-terminated PTX image; false when it is neither (or has no kernel).
bool parse_image(const void* data, Image* out);

/// The static shared memory of kernel `entry` in bytes: a CUBIN's .nv.shared.<entry> section,
/// or the sum of the entry's `.shared` declarations in PTX.
int64_t static_shared_bytes(const Image& image, const std::string& entry);

}  // namespace fake_cuda
