// Moved to jit/common/launch_limits.h. Kept only until CUDA code generation includes the new
// path (its file is being split on another branch); tools/check-layering.sh allows this one
// use. Include jit/common/launch_limits.h.
#pragma once

#include "jit/common/launch_limits.h"
