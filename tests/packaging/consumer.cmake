# The ctest test packaging.consumer: what a C++ user does with tug. Installs the build into a temporary
# prefix (`cmake --install`), builds examples/consumer against it with find_package(tug) and
# tug::tug, runs it (a Parquet round trip with zstd, checked) and the installed `tug` program.
# Run as: cmake -D TUG_SOURCE_DIR=... -D TUG_BUILD_DIR=... -D WORK_DIR=... -D GENERATOR=...
#               -D CXX_COMPILER=... [-D LAUNCHER=ccache] -P consumer.cmake
foreach(v TUG_SOURCE_DIR TUG_BUILD_DIR WORK_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "consumer.cmake: -D ${v}=... is missing")
  endif()
endforeach()

function(step)
  string(REPLACE ";" " " _cmd "${ARGN}")
  message(STATUS "consumer: ${_cmd}")
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  message("${out}")
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "consumer: failed (${rc}): ${_cmd}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
step(${CMAKE_COMMAND} --install ${TUG_BUILD_DIR} --prefix ${prefix})
foreach(f include/tug/api/lazy_frame.hpp lib/libtug.a lib/cmake/tug/tugConfig.cmake
          lib/cmake/tug/tugConfigVersion.cmake lib/cmake/tug/tugTargets.cmake bin/tug)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "consumer: the install has no ${f}")
  endif()
endforeach()

set(args -S ${TUG_SOURCE_DIR}/examples/consumer -B ${WORK_DIR}/build -G ${GENERATOR} -DCMAKE_BUILD_TYPE=Release
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF)
if(LAUNCHER)
  list(APPEND args -DCMAKE_CXX_COMPILER_LAUNCHER=${LAUNCHER})
endif()
step(${CMAKE_COMMAND} ${args})
# the package found must be the one just installed
file(STRINGS ${WORK_DIR}/build/CMakeCache.txt tug_dir REGEX "^tug_DIR:")
if(NOT tug_dir STREQUAL "tug_DIR:PATH=${prefix}/lib/cmake/tug")
  message(FATAL_ERROR "consumer: found another tug package: ${tug_dir}")
endif()
step(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
step(${WORK_DIR}/build/tug_consumer ${WORK_DIR})
if(NOT step_output MATCHES "\nok\n")
  message(FATAL_ERROR "consumer: tug_consumer did not print ok")
endif()
# the installed program runs from the prefix (the CUDA runtime is linked statically)
step(${prefix}/bin/tug count ${WORK_DIR}/tug_consumer.parquet)
if(NOT step_output MATCHES "1000")
  message(FATAL_ERROR "consumer: `tug count` did not count the 1000 rows")
endif()
file(REMOVE_RECURSE ${WORK_DIR})
