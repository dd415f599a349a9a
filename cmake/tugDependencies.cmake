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

# tug::nvcomp: NVIDIA nvCOMP, with which the GPU Parquet reader decompresses pages on the device (the PyPI wheel
# nvidia-libnvcomp-cu13 that scripts/setup.sh installs into .venv; docs/dependencies.md). Searched under
# TUG_NVCOMP_ROOT (a CMake or environment variable), then the directories given as arguments, then the system.
# Sets TUG_NVCOMP_FOUND; without it the host decompresses the pages. tug::nvcomp is its headers only: the
# library is opened at run time (src/runtime/cuda_libraries.cpp) by its name TUG_NVCOMP_SONAME, from the
# loader's search path, the PyPI wheel's directory the Python package adds, then TUG_NVCOMP_LIBRARY_DIR
# (where it was found here), so a build with it starts, and decompresses on the host, where it is missing.
macro(tug_find_nvcomp)
  find_path(TUG_NVCOMP_INCLUDE_DIR nvcomp/snappy.h HINTS ${TUG_NVCOMP_ROOT} $ENV{TUG_NVCOMP_ROOT} ${ARGN}
            PATH_SUFFIXES include)
  find_library(TUG_NVCOMP_LIBRARY NAMES nvcomp libnvcomp.so.6 libnvcomp.so.5
               HINTS ${TUG_NVCOMP_ROOT} $ENV{TUG_NVCOMP_ROOT} ${ARGN} PATH_SUFFIXES lib64 lib)
  set(TUG_NVCOMP_FOUND OFF)
  if(TUG_NVCOMP_INCLUDE_DIR AND TUG_NVCOMP_LIBRARY)
    set(TUG_NVCOMP_FOUND ON)
    get_filename_component(TUG_NVCOMP_ROOT_DIR ${TUG_NVCOMP_INCLUDE_DIR} DIRECTORY)
    get_filename_component(TUG_NVCOMP_SONAME ${TUG_NVCOMP_LIBRARY} NAME)
    get_filename_component(TUG_NVCOMP_LIBRARY_DIR ${TUG_NVCOMP_LIBRARY} DIRECTORY)
    if(NOT TARGET tug::nvcomp)
      add_library(tug::nvcomp INTERFACE IMPORTED)
      set_target_properties(tug::nvcomp PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${TUG_NVCOMP_INCLUDE_DIR})
    endif()
  endif()
endmacro()
