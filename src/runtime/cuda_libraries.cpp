// NVRTC opened at run time (include/tug/runtime/cuda_libraries.hpp). The nvrtc* functions that tug calls
// (src/exec/cuda/nvrtc.cpp) are defined here and forward to the library loaded on first use, so libtug and
// the Python module carry no link-time dependency on libnvrtc: a machine without it runs everything but
// CUDA source kernels, which raise not_implemented_error naming the library.
#include "tug/runtime/cuda_libraries.hpp"

#include <mutex>
#include <vector>

#ifdef TUG_WITH_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>

#include "tug/core/error.hpp"
#endif

namespace tug {

namespace {

std::mutex g_mu;
std::vector<std::string> g_dirs;

#ifdef TUG_WITH_CUDA
/// The soname of the NVRTC of the toolkit tug was compiled with (its major version).
std::string nvrtc_soname() { return "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000); }

struct nvrtc_library {
  void* handle = nullptr;
  std::string error;  ///< why it could not be loaded
};

/// NVRTC's builtins library sits next to libnvrtc, which opens it by soname: not found on the search path
/// where the toolkit is no system library (the PyPI one). Opened here from libnvrtc's directory, NVRTC's
/// own dlopen then finds it. RTLD_LOCAL: loaded global, its libstdc++ would join every later symbol lookup
/// of the process (a Python module with a C++ runtime of its own crashed so).
void load_builtins(void* nvrtc) {
  auto version = reinterpret_cast<nvrtcResult (*)(int*, int*)>(dlsym(nvrtc, "nvrtcVersion"));
  Dl_info info{};
  if (!version || !dladdr(reinterpret_cast<void*>(version), &info) || !info.dli_fname) return;
  int major = 0, minor = 0;
  version(&major, &minor);
  const std::string dir = std::filesystem::path(info.dli_fname).parent_path().string();
  dlopen((dir + "/libnvrtc-builtins.so." + std::to_string(major) + "." + std::to_string(minor)).c_str(),
         RTLD_NOW | RTLD_LOCAL);  // when it fails, NVRTC names the library in its own error
}

const nvrtc_library& nvrtc() {
  static const nvrtc_library lib = [] {
    nvrtc_library l;
    const std::string name = nvrtc_soname();
    std::vector<std::string> tries{name};
    {
      std::lock_guard<std::mutex> g(g_mu);
      for (auto& d : g_dirs) tries.push_back(d + "/" + name);
    }
#ifdef TUG_CUDA_LIBRARY_DIR
    tries.push_back(std::string(TUG_CUDA_LIBRARY_DIR) + "/" + name);  // the toolkit tug was built with
#endif
    for (auto& t : tries) {
      l.handle = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (l.handle) break;
      const char* e = dlerror();
      l.error += (l.error.empty() ? "" : "; ") + std::string(e ? e : t + ": not found");
    }
    if (l.handle) load_builtins(l.handle);
    else l.error = name + " could not be loaded (" + l.error + ")";
    return l;
  }();
  return lib;
}

/// The function `name` of NVRTC. @throws not_implemented_error when NVRTC cannot be loaded.
template <typename F>
F nvrtc_fn(const char* name) {
  const nvrtc_library& l = nvrtc();
  if (!l.handle)
    throw not_implemented_error("CUDA source kernels need NVRTC: " + l.error +
                                "; install the CUDA toolkit's NVRTC (pip install nvidia-cuda-nvrtc, or the "
                                "toolkit's lib directory on LD_LIBRARY_PATH)");
  void* f = dlsym(l.handle, name);
  if (!f) throw not_implemented_error(std::string("NVRTC has no function ") + name + " (" + nvrtc_soname() + ")");
  return reinterpret_cast<F>(f);
}
#endif

}  // namespace

void add_cuda_library_directory(const std::string& dir) {
  std::lock_guard<std::mutex> g(g_mu);
  g_dirs.push_back(dir);
}

bool nvrtc_available(std::string* why) {
#ifdef TUG_WITH_CUDA
  const nvrtc_library& l = nvrtc();
  if (!l.handle && why) *why = l.error;
  return l.handle != nullptr;
#else
  if (why) *why = "tug was built without CUDA";
  return false;
#endif
}

}  // namespace tug

#ifdef TUG_WITH_CUDA
// The NVRTC functions tug calls, forwarding to the library opened at run time.
extern "C" {

const char* nvrtcGetErrorString(nvrtcResult result) {
  try {
    return tug::nvrtc_fn<const char* (*)(nvrtcResult)>("nvrtcGetErrorString")(result);
  } catch (...) {
    return "NVRTC is not loaded";
  }
}

nvrtcResult nvrtcVersion(int* major, int* minor) {
  return tug::nvrtc_fn<nvrtcResult (*)(int*, int*)>("nvrtcVersion")(major, minor);
}

nvrtcResult nvrtcCreateProgram(nvrtcProgram* prog, const char* src, const char* name, int num_headers,
                               const char* const* headers, const char* const* include_names) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram*, const char*, const char*, int, const char* const*,
                                       const char* const*)>("nvrtcCreateProgram")(prog, src, name, num_headers,
                                                                                 headers, include_names);
}

nvrtcResult nvrtcDestroyProgram(nvrtcProgram* prog) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram*)>("nvrtcDestroyProgram")(prog);
}

nvrtcResult nvrtcCompileProgram(nvrtcProgram prog, int num_options, const char* const* options) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram, int, const char* const*)>("nvrtcCompileProgram")(
      prog, num_options, options);
}

nvrtcResult nvrtcGetProgramLogSize(nvrtcProgram prog, size_t* size) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetProgramLogSize")(prog, size);
}

nvrtcResult nvrtcGetProgramLog(nvrtcProgram prog, char* log) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram, char*)>("nvrtcGetProgramLog")(prog, log);
}

nvrtcResult nvrtcGetCUBINSize(nvrtcProgram prog, size_t* size) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram, size_t*)>("nvrtcGetCUBINSize")(prog, size);
}

nvrtcResult nvrtcGetCUBIN(nvrtcProgram prog, char* cubin) {
  return tug::nvrtc_fn<nvrtcResult (*)(nvrtcProgram, char*)>("nvrtcGetCUBIN")(prog, cubin);
}

}  // extern "C"
#endif
