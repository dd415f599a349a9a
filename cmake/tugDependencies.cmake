# The libraries that libtug links, found the same way when tug is built (CMakeLists.txt) and when a
# project uses the installed package (tugConfig.cmake, which installs this file next to itself).

# tug::codecs: the compression libraries of the Parquet codecs (snappy, zlib, zstd, lz4; Debian's
# libsnappy-dev zlib1g-dev libzstd-dev liblz4-dev). libtug.a links them privately, so the exported
# tug::tug carries them as link-only dependencies that its users' link lines need. The libraries that
# are not found are listed in TUG_CODECS_MISSING (then tug::codecs is not defined).
macro(tug_find_codecs)
  set(TUG_CODECS_MISSING "")
  set(_tug_codec_libs "")
  foreach(_tug_lib snappy z zstd lz4)
    find_library(TUG_LIB_${_tug_lib} NAMES ${_tug_lib})
    if(TUG_LIB_${_tug_lib})
      list(APPEND _tug_codec_libs ${TUG_LIB_${_tug_lib}})
    else()
      list(APPEND TUG_CODECS_MISSING lib${_tug_lib})
    endif()
  endforeach()
  if(NOT TUG_CODECS_MISSING AND NOT TARGET tug::codecs)
    add_library(tug::codecs INTERFACE IMPORTED)
    set_target_properties(tug::codecs PROPERTIES INTERFACE_LINK_LIBRARIES "${_tug_codec_libs}")
  endif()
endmacro()

# find_package(CUDAToolkit <args>) with a workaround: CMake 3.25's FindCUDAToolkit fails on toolkits
# without the legacy nvToolsExt library (CUDA 13) when the project requires CMake >= 3.25; tug uses the
# header-only nvtx3, so hide the requirement from it.
macro(tug_find_cudatoolkit)
  set(_tug_min_version ${CMAKE_MINIMUM_REQUIRED_VERSION})
  set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
  find_package(CUDAToolkit ${ARGN})
  set(CMAKE_MINIMUM_REQUIRED_VERSION ${_tug_min_version})
endmacro()
