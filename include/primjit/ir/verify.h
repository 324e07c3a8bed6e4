// VerifyWellFormed: the rules every IR must satisfy between passes.
//  - every variable is defined before use and used only while its definition is in scope
//    (flat Bind/AllocBuffer/DeclBuffer scoping, see stmt.h);
//  - a variable is defined once in the whole module; the one exception is a thread variable,
//    which may be launched again (sequentially) within the same function, but not in another;
//  - every buffer accessed is declared (buffer_map, AllocBuffer, DeclBuffer) and in scope;
//  - a thread variable keeps one tag per function.
// Each error names the variable or buffer and prints the offending statement.
#pragma once

#include <string>
#include <vector>

#include "primjit/ir/function.h"

namespace primjit {

/// All problems found, in program order; empty when well formed.
std::vector<std::string> well_formed_errors(const IRModule& module);
/// Throws primjit::Error listing the problems (the first few) when not well formed.
void verify_well_formed(const IRModule& module);
void verify_well_formed(const PrimFunc& func, const std::string& name = "main");

}  // namespace primjit
