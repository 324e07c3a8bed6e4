# Installs primjit from BUILD_DIR into a scratch prefix, then configures, builds and runs an
# outside project that uses find_package(primjit) and links primjit::primjit.
# Then does the same with the README's own example and CMake snippet, extracted from the README,
# and with the example programs installed in share/primjit/examples. None of them sets a C++
# standard: the package must require C++20 by itself (g++ 12 defaults to C++17).
# Usage: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -DREADME=...
#        -P run_consumer.cmake
cmake_minimum_required(VERSION 3.25)
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR README)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_consumer.cmake needs -D${var}=...")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "command failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(last_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
foreach(f lib/cmake/primjit/primjitConfig.cmake lib/cmake/primjit/primjitConfigVersion.cmake
          include/primjit/primjit.h include/primjit/version.h include/primjit/builder.h
          include/primjit/ir/node_kinds.def bin/primjit-opt bin/primjit-run bin/primjit-cache
          share/primjit/examples/CMakeLists.txt share/primjit/examples/jit_demo.cc
          share/primjit/examples/kernels.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "install is missing ${f}")
  endif()
endforeach()

# The installed primjit-opt runs from the prefix and finds its libraries there.
run(${prefix}/bin/primjit-opt --list-passes)
string(FIND "${last_output}" "VerifyWellFormed" position)
if(position EQUAL -1)
  message(FATAL_ERROR "installed primjit-opt --list-passes lacks VerifyWellFormed:\n${last_output}")
endif()

run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
message(STATUS "consumer output:\n${last_output}")
foreach(expected "primjit 0." "caught primjit::Error: n must be positive, got -3"
                 "add(40, 2) = 42" "built scale with 1 params"
                 "jit: data[4] = 20 after 2 calls, 1 compile (first call)" "consumer ok")
  string(FIND "${last_output}" "${expected}" position)
  if(position EQUAL -1)
    message(FATAL_ERROR "consumer output lacks '${expected}'")
  endif()
endforeach()

# The fenced block of README.md that starts with `fence` and contains `marker`.
function(readme_block fence marker out)
  file(READ ${README} text)
  set(rest "${text}")
  while(TRUE)
    string(FIND "${rest}" "${fence}\n" start)
    if(start EQUAL -1)
      message(FATAL_ERROR "README.md has no ${fence} block containing '${marker}'")
    endif()
    string(LENGTH "${fence}\n" skip)
    math(EXPR start "${start} + ${skip}")
    string(SUBSTRING "${rest}" ${start} -1 rest)
    string(FIND "${rest}" "```" end)
    string(SUBSTRING "${rest}" 0 ${end} block)
    string(SUBSTRING "${rest}" ${end} -1 rest)
    string(SUBSTRING "${rest}" 3 -1 rest)
    string(FIND "${block}" "${marker}" found)
    if(NOT found EQUAL -1)
      set(${out} "${block}" PARENT_SCOPE)
      return()
    endif()
  endwhile()
endfunction()

readme_block("```cpp" "int main()" readme_main)
readme_block("```cmake" "find_package(primjit" readme_cmake)
file(WRITE ${WORK_DIR}/readme/main.cc "${readme_main}")
file(WRITE ${WORK_DIR}/readme/CMakeLists.txt "${readme_cmake}")
run(${CMAKE_COMMAND} -S ${WORK_DIR}/readme -B ${WORK_DIR}/readme/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/readme/build)
run(${WORK_DIR}/readme/build/app)
message(STATUS "README example output:\n${last_output}")
string(FIND "${last_output}" "2 calls, 1 compiles (first call)" position)
if(position EQUAL -1)
  message(FATAL_ERROR "the README example printed '${last_output}'")
endif()

# The installed examples build on their own and run.
run(${CMAKE_COMMAND} -S ${prefix}/share/primjit/examples -B ${WORK_DIR}/examples -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build ${WORK_DIR}/examples)
run(${WORK_DIR}/examples/builder_examples)
string(FIND "${last_output}" "def vector_add_cpu(" position)
if(position EQUAL -1)
  message(FATAL_ERROR "the installed builder_examples printed '${last_output}'")
endif()

# The installed tools report the library's version.
foreach(tool primjit-opt primjit-run primjit-cache)
  run(${prefix}/bin/${tool} --version)
  string(FIND "${last_output}" "${tool} ${EXPECTED_VERSION}\n" position)
  if(NOT position EQUAL 0)
    message(FATAL_ERROR "${tool} --version printed '${last_output}', expected '${tool} ${EXPECTED_VERSION}'")
  endif()
endforeach()
