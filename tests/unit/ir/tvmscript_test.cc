// TVMScript interop (tests/tvmscript/README.md): every `<category>.tvm.tir` (TVM's printed form)
// parses to the same IR as its `<category>.primjit.tir`, and the forms TVM prints that primjit
// cannot represent are rejected with a message that names them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "primjit/ir/structural.h"
#include "primjit/ir/text.h"

namespace primjit {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(PRIMJIT_TEST_DATA_DIR) / ".." / "tvmscript";

// Categories whose TVM form is not read yet; their `.tvm.tir` must still be rejected, so that
// supporting one means moving it out of this list.
const std::set<std::string> kNotYetRead = {};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> categories() {
  std::vector<std::string> out;
  const std::string suffix = ".tvm.tir";
  for (const auto& entry : fs::directory_iterator(kCorpus)) {
    std::string name = entry.path().filename().string();
    if (name.size() > suffix.size() && name.ends_with(suffix)) {
      out.push_back(name.substr(0, name.size() - suffix.size()));
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(TvmScriptCorpus, EveryTvmFormParsesToThePrimjitForm) {
  std::vector<std::string> cats = categories();
  ASSERT_GE(cats.size(), 19u);
  for (const std::string& cat : cats) {
    SCOPED_TRACE(cat);
    const fs::path tvm = kCorpus / (cat + ".tvm.tir");
    const fs::path own = kCorpus / (cat + ".primjit.tir");
    ASSERT_TRUE(fs::exists(own));
    IRModule expected = parse(read_file(own), own.string());
    if (kNotYetRead.count(cat) != 0) {
      EXPECT_THROW(parse(read_file(tvm), tvm.string()), ParseError);
      continue;
    }
    IRModule got;
    try {
      got = parse(read_file(tvm), tvm.string());
    } catch (const ParseError& e) {
      ADD_FAILURE() << e.what();
      continue;
    }
    EXPECT_TRUE(structural_equal(got, expected)) << "TVM's form reads as\n"
                                                 << print(got) << "\nprimjit's form as\n"
                                                 << print(expected);
  }
}

// Printer goldens: `<category>.print.tir` is exactly what primjit prints for the category's IR
// (in the forms TVM reads: tirx header, T.let Binds, target dicts, alloc_shared/alloc_local,
// slices), and it reads back as the same IR.
TEST(TvmScriptCorpus, PrinterGoldens) {
  for (const std::string& cat : categories()) {
    SCOPED_TRACE(cat);
    const fs::path own = kCorpus / (cat + ".primjit.tir");
    const fs::path golden = kCorpus / (cat + ".print.tir");
    ASSERT_TRUE(fs::exists(golden));
    IRModule m = parse(read_file(own), own.string());
    EXPECT_EQ(print(m), read_file(golden));
    EXPECT_TRUE(structural_equal(parse(read_file(golden), golden.string()), m));
  }
}

// Printer forms no corpus category covers: float floor division/modulo as TVM's node
// constructors, and the emu target (an extension) in the dict form.
TEST(TvmScriptPrinter, FloatFloorDivisionAndEmuTarget) {
  const std::string text =
      "# from tvm.script import tirx as T\n\n@T.prim_func\n"
      "def main(A: T.Buffer((4,), \"float32\"), x: T.float32, y: T.float32):\n"
      "    T.func_attr({\"target\": T.target({\"host\": \"llvm\", \"kind\": \"emu\"})})\n"
      "    A[0] = T.FloorDiv(x, y) + T.FloorMod(x, T.float32(2.0))\n"
      "    A[1] = T.floordiv(x, y)\n";
  IRModule m = parse(text);
  std::string printed = print(m->functions[0].second, "main");
  EXPECT_EQ(printed, text.substr(0, text.size() - std::string("T.floordiv(x, y)\n").size()) +
                         "T.FloorDiv(x, y)\n");
  EXPECT_TRUE(structural_equal(parse(printed), m));
}

/// The message of the ParseError that parsing `text` throws ("" if it parses).
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

std::string with_body(const std::string& params, const std::string& body) {
  return "# from tvm.script import tirx as T\n\n@T.prim_func\ndef main(" + params + "):\n" + body;
}

TEST(TvmScriptErrors, TargetDictKeys) {
  auto func = [](const std::string& target) {
    return with_body(
        "A: T.Buffer((4,), \"float32\")",
        "    T.func_attr({\"target\": T.target(" + target + ")})\n    A[0] = T.float32(0.0)\n");
  };
  EXPECT_EQ(parse_error(func(R"({"kind": "llvm", "mtriple": "x86_64-pc-linux-gnu", "tag": ""})")),
            "");
  EXPECT_EQ(parse_error(func(R"({"arch": "sm_90", "kind": "cuda"}, host="llvm")")), "");
  EXPECT_NE(parse_error(func(R"({"kind": "llvm", "mcpu": "skylake"})"))
                .find("unsupported target key \"mcpu\""),
            std::string::npos);
  EXPECT_NE(parse_error(func(R"({"kind": "cuda", "arch": "sm_80", "max_num_threads": 512})"))
                .find("target key \"max_num_threads\""),
            std::string::npos);
  EXPECT_NE(parse_error(func(R"({"kind": "llvm", "keys": ["gpu"]})")).find("target key \"keys\""),
            std::string::npos);
  EXPECT_NE(parse_error(func(R"({"arch": "sm_80"})")).find("needs a \"kind\""), std::string::npos);
}

TEST(TvmScriptErrors, DtypeViewsNeedACompactParentAndCountBytes) {
  // A 0-d parent has no last dimension to scale (this crashed), strides and offsets count the
  // parent's elements, and a bool takes a byte: 64 float32 are 256 bools, not 2048.
  EXPECT_NE(parse_error(with_body("A: T.Buffer((), \"float32\")", "    B = A.view(\"float16\")\n"))
                .find("only a compact buffer of at least one dimension"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body("A: T.Buffer((4, 4), \"float32\", strides=(8, 1))",
                                  "    B = A.view(\"float16\")\n"))
                .find("only a compact buffer"),
            std::string::npos);
  IRModule m = parse(with_body("A: T.Buffer((64,), \"float32\")",
                               "    B = A.view(\"bool\")\n    B[0] = T.bool(True)\n"));
  EXPECT_NE(print(m->functions[0].second, "main").find("T.decl_buffer((256,), \"bool\""),
            std::string::npos);
}

TEST(TvmScriptErrors, TvmSpelledBuiltins) {
  const std::string params = "A: T.Buffer((64,), \"float32\")";
  const std::string head = "    S = T.alloc_shared((64,))\n";
  EXPECT_EQ(parse_error(with_body(params, head + "    T.s_tir.cp_async_raw(\"float32\", S.data, 0, "
                                                 "A.data, 0, 16)\n")),
            "");
  EXPECT_NE(parse_error(with_body(params, head + "    T.s_tir.cp_async_raw(S.data, 0, A.data, 0, "
                                                 "16)\n"))
                .find("takes a dtype string first"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(params, head + "    T.s_tir.cp_async_raw(\"float32\", S.data, 0, "
                                                 "A.data, 0)\n"))
                .find("takes 6 arguments, got 5"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(params, "    T.ptx.cp.async_.commit(0)\n"))
                .find("unknown T. call 'T.ptx.cp.async_.commit'"),
            std::string::npos);
}

TEST(TvmScriptErrors, SliceLanesMustBeConstant) {
  std::string params = "A: T.Buffer((64,), \"float32\"), n: T.int32";
  EXPECT_NE(parse_error(with_body(params, "    A[0:n] = T.Broadcast(T.float32(0.0), 4)\n"))
                .find("lane count of a slice"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(params, "    A[0:7:2] = T.Broadcast(T.float32(0.0), 4)\n"))
                .find("lane count of a slice"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(params, "    A[0:4:n] = T.Broadcast(T.float32(0.0), 4)\n"))
                .find("slice step"),
            std::string::npos);
}

TEST(TvmScriptErrors, LayoutViewsAreRejectedByName) {
  std::string params = "A: T.Buffer((8, 8), \"float32\")";
  std::string err = parse_error(with_body(params, "    B = A.permute(1, 0)\n    B[0, 0] = 1.0\n"));
  EXPECT_NE(err.find("A.permute(...) needs buffer layouts"), std::string::npos) << err;
  err = parse_error(with_body(params, "    B = A.partition(num_tiles=(2, 2))\n"));
  EXPECT_NE(err.find("A.partition(...)"), std::string::npos) << err;
  err = parse_error(with_body(params, "    B = A.local(4)\n"));
  EXPECT_NE(err.find("A.local(...)"), std::string::npos) << err;
  err = parse_error(with_body(params, "    B = A.view(\"float64\")\n    B[0, 0] = 1.0\n"));
  EXPECT_EQ(err, "");
}

TEST(TvmScriptErrors, StorageSyncOnlyBlockBarrier) {
  std::string params = "A: T.Buffer((4,), \"float32\")";
  EXPECT_NE(parse_error(with_body(params, "    T.tvm_storage_sync(\"shared\", T.bool(True), -1)\n"))
                .find("is_load=False"),
            std::string::npos);
  EXPECT_NE(parse_error(with_body(params, "    T.tvm_storage_sync(\"shared\", False, 4)\n"))
                .find("num_blocks=-1"),
            std::string::npos);
  EXPECT_EQ(parse_error(with_body(params, "    T.tvm_storage_sync(\"shared\", 0)\n")), "");
}

TEST(TvmScriptErrors, ThreadExtentNeedsATagName) {
  std::string params = "A: T.Buffer((4,), \"float32\")";
  std::string err = parse_error(with_body(
      params, "    tx = T.int32()\n    T.attr(tx, \"thread_extent\", 4)\n    A[tx] = 1.0\n"));
  EXPECT_NE(err.find("drops the thread tag"), std::string::npos) << err;
  EXPECT_EQ(parse_error(with_body(params,
                                  "    threadIdx_x_1 = T.int32()\n    T.attr(threadIdx_x_1, "
                                  "\"thread_extent\", 4)\n    A[threadIdx_x_1] = 1.0\n")),
            "");
}

TEST(TvmScriptErrors, AllocSugarTakesNoScope) {
  std::string err = parse_error(with_body("A: T.Buffer((4,), \"float32\")",
                                          "    S = T.alloc_shared((4,), scope=\"local\")\n"));
  EXPECT_NE(err.find("T.alloc_shared takes no scope="), std::string::npos) << err;
}

TEST(TvmScriptErrors, TypeVarsRepeatTheirName) {
  std::string func =
      "@T.prim_func\ndef main(A: T.Buffer((m,), \"float16\")):\n    A[0] = T.float16(0.0)\n";
  EXPECT_EQ(parse_error("m = TypeVar(\"m\")\n" + func), "");
  EXPECT_NE(parse_error("m = TypeVar(\"n\")\n" + func).find("must repeat the name"),
            std::string::npos);
  EXPECT_NE(parse_error("m = 3\n" + func).find("expected TypeVar(\"m\")"), std::string::npos);
}

// Quoted compound dimensions define their new names as int32 variables, as TVM reads them.
TEST(TvmScriptDialect, QuotedCompoundDimensions) {
  const std::string tvm =
      "@T.prim_func\ndef main(A: T.Buffer((\"n + 1\", \"T.max(n, 1)\"), \"float32\", "
      "layout=None)):\n    n = T.int32()\n    A[0, 0] = T.float32(0.0)\n";
  const std::string own =
      "@T.prim_func\ndef main(a: T.handle):\n    n = T.int32()\n"
      "    A = T.match_buffer(a, (n + 1, T.max(n, 1)), \"float32\")\n"
      "    A[0, 0] = T.float32(0.0)\n";
  EXPECT_TRUE(structural_equal(parse(tvm), parse(own))) << print(parse(tvm));
  std::string err = parse_error(
      "@T.prim_func\ndef main(A: T.Buffer((\"n +\",), \"float32\")):\n    A[0] = 1.0\n");
  EXPECT_NE(err.find("in the quoted dimension \"n +\""), std::string::npos) << err;
  err = parse_error(
      "@T.prim_func\ndef main(A: T.Buffer((4,), \"float32\", layout=\"tiled\")):\n"
      "    A[0] = 1.0\n");
  EXPECT_NE(err.find("only layout=None"), std::string::npos) << err;
}

TEST(TvmScriptErrors, AssertTupleMessage) {
  std::string params = "n: T.int32";
  EXPECT_EQ(parse_error(with_body(params, "    assert n > 0, (\"ValueError\", [\"a\", \"b\"])\n")),
            "");
  EXPECT_NE(parse_error(with_body(params, "    assert n > 0, (\"RuntimeError\", [n])\n"))
                .find("tuple assert message"),
            std::string::npos);
}

// The dialect decides what `x: T.int32 = v` means: a Bind without the tirx header, a
// one-element local buffer with it. `T.let[...]` is a Bind in both.
TEST(TvmScriptDialect, AnnotatedAssignmentFollowsTheHeader) {
  const std::string body =
      "@T.prim_func\ndef main(A: T.Buffer((4,), \"int32\"), n: T.int32):\n"
      "    x: T.int32 = n + 1\n    A[0] = x\n";
  const std::string as_bind =
      "@T.prim_func\ndef main(A: T.Buffer((4,), \"int32\"), n: T.int32):\n"
      "    x = T.Bind(n + 1)\n    A[0] = x\n";
  const std::string as_buffer =
      "@T.prim_func\ndef main(A: T.Buffer((4,), \"int32\"), n: T.int32):\n"
      "    x = T.alloc_buffer((1,), \"int32\", scope=\"local\")\n    x[0] = n + 1\n"
      "    A[0] = x[0]\n";
  const std::string let =
      "@T.prim_func\ndef main(A: T.Buffer((4,), \"int32\"), n: T.int32):\n"
      "    x: T.let[T.int32] = n + 1\n    A[0] = x\n";
  EXPECT_TRUE(structural_equal(parse(body), parse(as_bind)));
  EXPECT_TRUE(
      structural_equal(parse("# from tvm.script import tir as T\n" + body), parse(as_bind)));
  EXPECT_TRUE(
      structural_equal(parse("# from tvm.script import tirx as T\n" + body), parse(as_buffer)));
  EXPECT_TRUE(
      structural_equal(parse("from tvm.script import tirx as T\n" + body), parse(as_buffer)));
  EXPECT_TRUE(structural_equal(parse(let), parse(as_bind)));
  EXPECT_TRUE(
      structural_equal(parse("# from tvm.script import tirx as T\n" + let), parse(as_bind)));
}

}  // namespace
}  // namespace primjit
