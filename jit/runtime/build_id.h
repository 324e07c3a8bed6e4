// The identity of this build of primjit's code: compiled variants on disk carry it in their
// key, so a rebuilt library (a fixed pass, another code generator) never loads code that the
// previous build compiled, even when the version number did not change.
#pragma once

#include <string>

namespace primjit::jit {

/// The GNU build-id of the shared object holding primjit's runtime (hex), or, when it has
/// none, its file's size and modification time.
const std::string& library_build_id();

}  // namespace primjit::jit
