# The reference interpreter's tests (included from tests/CMakeLists.txt).
primjit_unit_test(primjit_emu_tests
  unit/emu/interpreter_test.cc
  unit/emu/checks_test.cc
  unit/emu/dtypes_test.cc
  unit/emu/differential_test.cc
  unit/emu/limits_test.cc)
target_link_libraries(primjit_emu_tests PRIVATE primjit_jit)
target_compile_definitions(primjit_emu_tests PRIVATE
  PRIMJIT_TEST_SOURCE_DIR="${PRIMJIT_TEST_DATA_ROOT}/tests")
