// Umbrella header: everything a primjit user needs.
#pragma once

#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/ir.h"
#include "primjit/log.h"
#include "primjit/toolchain.h"
#include "primjit/version.h"
