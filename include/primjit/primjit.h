// Umbrella header: everything a primjit user needs (IR, builder, text format, passes, JIT,
// benchmarking).
#pragma once

#include "primjit/arith.h"
#include "primjit/benchmark.h"
#include "primjit/builder.h"
#include "primjit/dlpack.h"
#include "primjit/error.h"
#include "primjit/float_formats.h"
#include "primjit/ir.h"
#include "primjit/ir/source_map.h"
#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/jit.h"
#include "primjit/log.h"
#include "primjit/passes.h"
#include "primjit/tensor.h"
#include "primjit/toolchain.h"
#include "primjit/version.h"
