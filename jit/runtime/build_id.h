// The identity of this build of primjit's code: compiled variants on disk carry it in their
// key, so a rebuilt library (a fixed pass, another code generator) never loads code that the
// previous build compiled, even when the version number did not change.
#pragma once

#include <string>

namespace primjit::jit {

/// The GNU build-ids (hex) of the shared objects holding the code that makes a variant: the IR
/// library (simplifier, text), the passes and the runtime with its code generators, one per
/// object, in that order, separated by '+' (one id when they are linked into one object). An
/// object without a build-id is named by its file's size and modification time.
const std::string& library_build_id();

}  // namespace primjit::jit
