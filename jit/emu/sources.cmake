# The reference interpreter's sources (target emu), relative to jit/.
set(PRIMJIT_EMU_SOURCES
  emu/builtins.cc
  emu/calls.cc
  emu/compile_expr.cc
  emu/compile_stmt.cc
  emu/differential.cc
  emu/fiber.cc
  emu/interpreter.cc
  emu/launch.cc
  emu/memory.cc
  emu/value.cc)

# The interpreter's inner loop runs every thread of every block of the kernels the test suites
# check (10^6 and more node evaluations per kernel), so Debug builds compile it with -O2 too, and
# sanitized builds leave out UBSan's vptr check, which would check the dynamic type of every
# compiled node at each of its evaluations. The rest of the instrumentation and the debug
# information are kept.
set(_emu_options)
if(CMAKE_BUILD_TYPE STREQUAL "Debug")
  list(APPEND _emu_options -O2)
endif()
if(PRIMJIT_SANITIZE STREQUAL "address")
  list(APPEND _emu_options -fno-sanitize=vptr)
endif()
if(_emu_options)
  set_source_files_properties(${PRIMJIT_EMU_SOURCES} PROPERTIES COMPILE_OPTIONS "${_emu_options}")
endif()
