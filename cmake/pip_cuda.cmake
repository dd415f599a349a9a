# pip builds (scikit-build-core sets SKBUILD; pyproject.toml, docs/python.md): the CUDA toolkit and nvCOMP
# are build requirements from PyPI, which pip installs in a temporary build environment whose path changes
# with every `pip install`. What the compile needs of them (nvcc, NVVM, the headers, the static runtime,
# nvCOMP's headers and library name) is hard-linked, or copied, to <build dir>/cuda-toolkit, once per set of
# wheel versions: the compiler's path and the include directories then stay the same from one install to
# the next, so that ccache hits (scikit-build-core clears the CMake cache and the objects when pip's
# environment is new). Sets CMAKE_CUDA_COMPILER, CUDAToolkit_ROOT, and nvCOMP's TUG_NVCOMP_INCLUDE_DIR and
# TUG_NVCOMP_LIBRARY (cmake/tugDependencies.cmake); sets nothing where the build environment has no CUDA
# toolkit (a platform without the wheels, or TUG_WITH_CUDA=OFF, which leaves them out of the requirements).
set(_tug_pip_cuda ${CMAKE_BINARY_DIR}/cuda-toolkit)
# cp -l: hard links where the build environment is on the same file system; a copy elsewhere
function(_tug_link_or_copy src dst_dir)
  execute_process(COMMAND cp -al ${src} ${dst_dir}/ RESULT_VARIABLE _rc ERROR_QUIET)
  if(NOT _rc EQUAL 0)
    execute_process(COMMAND cp -a ${src} ${dst_dir}/ COMMAND_ERROR_IS_FATAL ANY)
  endif()
endfunction()
execute_process(
  COMMAND ${Python_EXECUTABLE} -c [=[
import importlib.metadata as md, importlib.util
def where(name):
    try:
        s = importlib.util.find_spec(name)
    except ImportError:
        return ""
    return next(iter(s.submodule_search_locations), "") if s and s.submodule_search_locations else ""
def version(d):
    try:
        return md.version(d)
    except md.PackageNotFoundError:
        return "-"
dists = ["nvidia-cuda-nvcc", "nvidia-cuda-crt", "nvidia-nvvm", "nvidia-cuda-runtime", "nvidia-cuda-cccl",
         "nvidia-cuda-nvrtc", "nvidia-nvtx", "nvidia-libnvcomp-cu13"]
print(";".join([where("nvidia.cu13"), where("nvidia.libnvcomp"), " ".join(d + "=" + version(d) for d in dists)]))
]=]
  OUTPUT_VARIABLE _tug_pip_out OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE _tug_pip_rc)
list(LENGTH _tug_pip_out _tug_pip_n)
if(_tug_pip_rc EQUAL 0 AND _tug_pip_n EQUAL 3)
  list(GET _tug_pip_out 0 _tug_pip_cu)
  list(GET _tug_pip_out 1 _tug_pip_nvcomp)
  list(GET _tug_pip_out 2 _tug_pip_stamp)
endif()
if(_tug_pip_cu AND EXISTS ${_tug_pip_cu}/bin/nvcc)
  set(_tug_pip_old "")
  if(EXISTS ${_tug_pip_cuda}/stamp)
    file(READ ${_tug_pip_cuda}/stamp _tug_pip_old)
  endif()
  if(NOT _tug_pip_old STREQUAL _tug_pip_stamp)
    message(STATUS "CUDA toolkit from PyPI (${_tug_pip_stamp}) -> ${_tug_pip_cuda}")
    file(REMOVE_RECURSE ${_tug_pip_cuda})
    file(MAKE_DIRECTORY ${_tug_pip_cuda}/lib ${_tug_pip_cuda}/nvcomp/lib64)
    foreach(_p bin nvvm include)
      _tug_link_or_copy(${_tug_pip_cu}/${_p} ${_tug_pip_cuda})
    endforeach()
    foreach(_p libcudart_static.a libcudadevrt.a libcudart.so.13)
      _tug_link_or_copy(${_tug_pip_cu}/lib/${_p} ${_tug_pip_cuda}/lib)
    endforeach()
    # nvcc and CMake look for lib64/ and libcudart.so
    file(CREATE_LINK lib ${_tug_pip_cuda}/lib64 SYMBOLIC)
    file(CREATE_LINK libcudart.so.13 ${_tug_pip_cuda}/lib/libcudart.so SYMBOLIC)
    if(_tug_pip_nvcomp AND EXISTS ${_tug_pip_nvcomp}/include/nvcomp)
      _tug_link_or_copy(${_tug_pip_nvcomp}/include ${_tug_pip_cuda}/nvcomp)
      file(GLOB _tug_pip_nvcomp_libs ${_tug_pip_nvcomp}/lib64/libnvcomp.so.*)
      foreach(_p ${_tug_pip_nvcomp_libs})
        _tug_link_or_copy(${_p} ${_tug_pip_cuda}/nvcomp/lib64)
      endforeach()
    endif()
    file(WRITE ${_tug_pip_cuda}/stamp "${_tug_pip_stamp}")
  endif()
  set(CMAKE_CUDA_COMPILER ${_tug_pip_cuda}/bin/nvcc CACHE FILEPATH "nvcc (the PyPI CUDA toolkit of the pip build)" FORCE)
  set(CUDAToolkit_ROOT ${_tug_pip_cuda} CACHE PATH "CUDA toolkit (the PyPI one of the pip build)" FORCE)
  # nvCOMP's wheel also puts its own directory on CMAKE_PREFIX_PATH (a cmake.prefix entry point), which
  # tug_find_nvcomp would search first: the copy is set outright
  file(GLOB _tug_pip_nvcomp_lib ${_tug_pip_cuda}/nvcomp/lib64/libnvcomp.so.*)
  if(EXISTS ${_tug_pip_cuda}/nvcomp/include/nvcomp AND _tug_pip_nvcomp_lib)
    list(GET _tug_pip_nvcomp_lib 0 _tug_pip_nvcomp_lib)
    set(TUG_NVCOMP_INCLUDE_DIR ${_tug_pip_cuda}/nvcomp/include CACHE PATH "nvCOMP's headers (pip build)" FORCE)
    set(TUG_NVCOMP_LIBRARY ${_tug_pip_nvcomp_lib} CACHE FILEPATH "nvCOMP (pip build; opened at run time)" FORCE)
  endif()
endif()
