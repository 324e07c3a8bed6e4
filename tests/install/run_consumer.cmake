# Installs primjit from BUILD_DIR into a scratch prefix, then configures, builds and runs an
# outside project that uses find_package(primjit) and links primjit::primjit.
# Usage: cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DGENERATOR=... -P run_consumer.cmake
foreach(var BUILD_DIR SOURCE_DIR WORK_DIR GENERATOR)
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
          include/primjit/ir/node_kinds.def bin/primjit-opt)
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
