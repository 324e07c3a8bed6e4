#include "primjit/version.h"

namespace primjit {

const char* version() { return PRIMJIT_VERSION_STRING; }

}  // namespace primjit
