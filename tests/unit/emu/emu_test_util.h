// Helpers shared by the interpreter's tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "jit/emu/differential.h"
#include "jit/emu/interpreter.h"
#include "primjit/ir/text.h"
#include "primjit/ir/verify.h"
#include "primjit/passes.h"
#include "tests/unit/test_util.h"

namespace primjit::jit::emu::test {

inline IRModule parse_module(const std::string& text) {
  IRModule m = parse(text);
  verify_well_formed(m);
  return m;
}

/// The default pipeline up to and including `last` (every pass when empty).
inline std::vector<std::string> pipeline_until(const std::string& last) {
  std::vector<std::string> out;
  for (const std::string& p : passes::default_pipeline()) {
    out.push_back(p);
    if (p == last) break;
  }
  return out;
}

inline IRModule lower(const IRModule& m, const std::string& last) {
  passes::RunOptions options;
  options.verify_each = true;
  return passes::run_passes(m, pipeline_until(last), options);
}

/// True when MakePackedAPI gave function `name` the packed signature (calling_conv 1).
inline bool is_packed(const IRModule& m, const std::string& name) {
  PrimFunc f = m->find(name);
  if (!f.defined()) return false;
  const AttrValue* cc = f->attr(attr::kCallingConv);
  return cc != nullptr && cc->is_int() && cc->as_int() == 1 && f->params.size() == 4;
}

/// A module at the stages the interpreter runs: as written, after LowerDeviceKernelLaunch, and
/// after MakePackedAPI. `entry` is a host entry point (a public function with a host target),
/// so MakePackedAPI must give it the packed signature; a failure is reported here.
struct Stage {
  std::string name;
  IRModule module;
};
inline std::vector<Stage> stages(const IRModule& m, const std::string& entry) {
  std::vector<Stage> out = {{"unlowered", m},
                            {"after LowerDeviceKernelLaunch", lower(m, "LowerDeviceKernelLaunch")}};
  IRModule packed = lower(m, "MakePackedAPI");
  EXPECT_TRUE(is_packed(packed, entry))
      << "MakePackedAPI did not give '" << entry << "' the packed signature";
  out.push_back({"after MakePackedAPI", packed});
  return out;
}

inline std::vector<float> floats(const HostTensor& t) {
  std::vector<float> out;
  for (int64_t i = 0; i < t.size(); ++i) out.push_back(static_cast<float>(t.get(i)));
  return out;
}

inline std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace primjit::jit::emu::test
