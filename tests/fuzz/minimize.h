// Shrinks a failing program while it keeps failing: statements are removed, and expressions are
// replaced by an operand of the same dtype or by 0 or 1, one at a time, for as long as any
// change keeps the failure (and the function well formed).
#pragma once

#include <functional>

#include "primjit/ir/function.h"

namespace primjit::fuzz {

/// The smallest program found that still `fails`, trying at most `max_attempts` candidates
/// for at most `max_seconds`.
PrimFunc minimize(PrimFunc func, const std::function<bool(const PrimFunc&)>& fails,
                  int max_attempts = 3000, double max_seconds = 20);

}  // namespace primjit::fuzz
