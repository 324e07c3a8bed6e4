"""The primjit Python module: parse, compile lazily, call on NumPy arrays through DLPack."""
import unittest

import numpy as np

import primjit

SCALE = """
@T.prim_func
def scale(a: T.handle, b: T.handle, s: T.float32):
    n = T.int32()
    A = T.match_buffer(a, (n,), "float32")
    B = T.match_buffer(b, (n,), "float32")
    for i in T.parallel(n):
        B[i] = A[i] * s
"""

ROW_SUM = """
@T.prim_func
def row_sum(A: T.Buffer((3, 4), "int32"), S: T.Buffer((3,), "int32")):
    for i in range(3):
        S[i] = 0
        for j in range(4):
            S[i] = S[i] + A[i, j]
"""

RETURNS = """
@T.prim_func
def answer(x: T.int64) -> T.int64:
    return x * T.int64(6)
"""


class ParseTest(unittest.TestCase):
    def test_parse_prints_and_names_functions(self):
        mod = primjit.parse(SCALE)
        self.assertEqual(mod.functions, ["scale"])
        self.assertIn("def scale(", str(mod))
        self.assertIn("B[i] = A[i] * s", str(mod))
        self.assertEqual(repr(mod), "<primjit.Module: scale>")

    def test_parse_error_names_file_line_and_column(self):
        with self.assertRaises(primjit.Error) as caught:
            primjit.parse("@T.prim_func\ndef f(A: T.Buffer((4,), \"float32\")):\n    A[0] = B\n",
                          "kernel.tir")
        self.assertIn("kernel.tir:3:", str(caught.exception))
        self.assertTrue(issubclass(primjit.Error, RuntimeError))

    def test_version(self):
        self.assertRegex(primjit.__version__, r"^\d+\.\d+\.\d+$")


class CallTest(unittest.TestCase):
    def setUp(self):
        self.jit = primjit.Jit(disk_cache=False)

    def test_numpy_arrays_are_written_in_place(self):
        k = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm")
        self.assertEqual(k.target, "llvm")
        a = np.arange(10, dtype=np.float32)
        b = np.zeros(10, dtype=np.float32)
        self.assertIsNone(k(a, b, 2.5))
        np.testing.assert_array_equal(b, a * np.float32(2.5))
        k(a, b, 3.0)
        np.testing.assert_array_equal(b, a * np.float32(3.0))
        stats = k.stats()
        self.assertEqual((stats["calls"], stats["misses"], stats["hits"]), (2, 1, 1))
        self.assertEqual(stats["reasons"], ["first call"])

    def test_new_shape_compiles_new_variant_unless_dynamic(self):
        exact = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm")
        dynamic = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm", policy="dynamic")
        for n in (4, 8, 12):
            a = np.ones(n, dtype=np.float32)
            b = np.zeros(n, dtype=np.float32)
            exact(a, b, 1.0)
            dynamic(a, b, 2.0)
            np.testing.assert_array_equal(b, np.full(n, 2.0, dtype=np.float32))
        self.assertEqual(exact.stats()["misses"], 3)
        self.assertEqual(dynamic.stats()["misses"], 1)

    def test_two_dimensional_int_arrays_in_the_interpreter(self):
        k = self.jit.kernel(primjit.parse(ROW_SUM), "row_sum", target="emu")
        a = np.arange(12, dtype=np.int32).reshape(3, 4)
        s = np.full(3, -1, dtype=np.int32)
        k(a, s)
        np.testing.assert_array_equal(s, a.sum(axis=1))

    def test_scalar_return_value(self):
        k = self.jit.kernel(primjit.parse(RETURNS), "answer", target="llvm")
        self.assertEqual(k(7), 42)

    def test_dlpack_capsule_is_accepted(self):
        k = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm")
        a = np.arange(3, dtype=np.float32)
        b = np.zeros(3, dtype=np.float32)
        k(a.__dlpack__(), b.__dlpack__(), 2.0)
        np.testing.assert_array_equal(b, [0.0, 2.0, 4.0])

    def test_wrong_shape_raises_primjit_error_naming_the_argument(self):
        k = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm")
        with self.assertRaises(primjit.Error) as caught:
            k(np.zeros(4, dtype=np.float32), np.zeros(5, dtype=np.float32), 1.0)
        self.assertIn("'B'", str(caught.exception))
        with self.assertRaises(primjit.Error) as caught:
            k(np.zeros(4, dtype=np.float64), np.zeros(4, dtype=np.float64), 1.0)
        self.assertIn("float32", str(caught.exception))
        self.assertEqual(k.stats()["misses"], 0)

    def test_unsupported_argument_raises_type_error(self):
        k = self.jit.kernel(primjit.parse(SCALE), "scale", target="llvm")
        with self.assertRaises(TypeError) as caught:
            k([1.0, 2.0], np.zeros(2, dtype=np.float32), 1.0)
        self.assertIn("argument #0", str(caught.exception))
        self.assertIn("__dlpack__", str(caught.exception))

    def test_bad_options_raise_primjit_error(self):
        mod = primjit.parse(SCALE)
        with self.assertRaises(primjit.Error) as caught:
            self.jit.kernel(mod, "scale", target="metal")
        self.assertIn("target must be", str(caught.exception))
        with self.assertRaises(primjit.Error) as caught:
            self.jit.kernel(mod, "scale", policy="sometimes")
        self.assertIn("policy must be", str(caught.exception))
        with self.assertRaises(primjit.Error):
            self.jit.kernel(mod, "no_such_function", target="llvm")


if __name__ == "__main__":
    unittest.main()
