# Runs Doxygen with DOXYFILE, writing into OUTPUT, and fails when Doxygen is missing, fails, or
# warns (a doc comment that does not parse, a broken reference), listing the warnings.
# Usage: cmake -DDOXYGEN=... -DDOXYFILE=... -DOUTPUT=... -P run_doxygen.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT DOXYGEN)
  message(FATAL_ERROR "doxygen was not found: install it (bash tools/deps.sh does) and "
                      "configure again")
endif()
file(REMOVE_RECURSE ${OUTPUT})
file(MAKE_DIRECTORY ${OUTPUT})
# The configured Doxyfile names its own output folder; OUTPUT overrides it through stdin.
file(READ ${DOXYFILE} config)
string(REGEX REPLACE "\nOUTPUT_DIRECTORY[^\n]*" "\nOUTPUT_DIRECTORY = ${OUTPUT}" config "${config}")
string(REGEX REPLACE "\nWARN_LOGFILE[^\n]*" "\nWARN_LOGFILE = ${OUTPUT}/warnings.log" config
       "${config}")
file(WRITE ${OUTPUT}/Doxyfile "${config}")
execute_process(COMMAND ${DOXYGEN} ${OUTPUT}/Doxyfile RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "doxygen failed (${rc}):\n${out}\n${err}")
endif()
file(READ ${OUTPUT}/warnings.log warnings)
if(NOT warnings STREQUAL "")
  message(FATAL_ERROR "doxygen warns about the public headers' doc comments; fix them:\n"
                      "${warnings}")
endif()
# The reference documents the API, not just the file list.
foreach(page index.html classprimjit_1_1Kernel.html structprimjit_1_1KernelOptions.html
             classprimjit_1_1builder_1_1FunctionBuilder.html)
  if(NOT EXISTS ${OUTPUT}/html/${page})
    message(FATAL_ERROR "the API reference lacks ${page}")
  endif()
endforeach()
file(READ ${OUTPUT}/html/structprimjit_1_1KernelOptions.html page)
string(FIND "${page}" "recompile_limit" found)
if(found EQUAL -1)
  message(FATAL_ERROR "the API reference's KernelOptions page does not document recompile_limit")
endif()
message(STATUS "API reference: ${OUTPUT}/html/index.html, no warnings")
