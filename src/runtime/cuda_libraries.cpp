// NVRTC and nvCOMP opened at run time (include/tug/runtime/cuda_libraries.hpp). The nvrtc* functions that
// tug calls (src/exec/cuda/nvrtc.cpp) and the nvcomp* ones (src/io/parquet/gpu_reader.cu) are defined here
// and forward to the library loaded on first use, so libtug and the Python module carry no link-time
// dependency on either: a machine without NVRTC runs everything but CUDA source kernels, which raise
// not_implemented_error naming the library; one without nvCOMP decompresses Parquet pages on the host.
// The nccl* functions of src/dist/device_link.cu likewise: without NCCL exchanges between ranks move
// device tables through host memory.
#include "tug/runtime/cuda_libraries.hpp"

#include <mutex>
#include <vector>

#ifdef TUG_WITH_CUDA
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nvrtc.h>

#include <filesystem>
#ifdef TUG_WITH_NVCOMP
#include <nvcomp/lz4.h>
#include <nvcomp/snappy.h>
#include <nvcomp/zstd.h>
#endif

#ifdef TUG_WITH_NCCL
#include <nccl.h>
#endif

#include "tug/core/error.hpp"
#endif

namespace tug {

namespace {

std::mutex g_mu;
std::vector<std::string> g_dirs;

#ifdef TUG_WITH_CUDA
/// The soname of the NVRTC of the toolkit tug was compiled with (its major version).
std::string nvrtc_soname() { return "libnvrtc.so." + std::to_string(CUDART_VERSION / 1000); }

struct runtime_library {
  void* handle = nullptr;
  std::string error;  ///< why it could not be loaded
};

/// Opens `name` from the loader's search path, then the directories added by add_cuda_library_directory,
/// then `build_dir` (where the build found it; empty: none).
runtime_library open_library(const std::string& name, const std::string& build_dir) {
  runtime_library l;
  std::vector<std::string> tries{name};
  {
    std::lock_guard<std::mutex> g(g_mu);
    for (auto& d : g_dirs) tries.push_back(d + "/" + name);
  }
  if (!build_dir.empty()) tries.push_back(build_dir + "/" + name);
  for (auto& t : tries) {
    l.handle = dlopen(t.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (l.handle) break;
    const char* e = dlerror();
    l.error += (l.error.empty() ? "" : "; ") + std::string(e ? e : t + ": not found");
  }
  if (!l.handle) l.error = name + " could not be loaded (" + l.error + ")";
  return l;
}

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

const runtime_library& nvrtc() {
  static const runtime_library lib = [] {
#ifdef TUG_CUDA_LIBRARY_DIR
    runtime_library l = open_library(nvrtc_soname(), TUG_CUDA_LIBRARY_DIR);  // the toolkit tug was built with
#else
    runtime_library l = open_library(nvrtc_soname(), "");
#endif
    if (l.handle) load_builtins(l.handle);
    return l;
  }();
  return lib;
}

/// Whether `l` is loaded; `why` (when given) gets the reason it is not.
bool loaded(const runtime_library& l, std::string* why) {
  if (!l.handle && why) *why = l.error;
  return l.handle != nullptr;
}

/// The function `name` of library `what` (file `soname`), which callers made sure is loaded.
/// @throws internal_error when it is not, or has no such function.
template <typename F>
F loaded_fn(const runtime_library& l, const char* what, const char* soname, const char* name) {
  if (!l.handle) throw internal_error(std::string(what) + " called but not loaded: " + l.error);
  void* f = dlsym(l.handle, name);
  if (!f) throw internal_error(std::string(what) + " has no function " + name + " (" + soname + ")");
  return reinterpret_cast<F>(f);
}

#ifdef TUG_WITH_NVCOMP
/// nvCOMP, as the build found it (TUG_NVCOMP_SONAME in TUG_NVCOMP_LIBRARY_DIR, cmake/tugDependencies.cmake).
const runtime_library& nvcomp() {
  static const runtime_library lib = open_library(TUG_NVCOMP_SONAME, TUG_NVCOMP_LIBRARY_DIR);
  return lib;
}

/// The function `name` of nvCOMP. @throws internal_error when it cannot be loaded: callers check
/// nvcomp_available() first (the GPU Parquet reader plans device decompression only then).
template <typename F>
F nvcomp_fn(const char* name) {
  return loaded_fn<F>(nvcomp(), "nvCOMP", TUG_NVCOMP_SONAME, name);
}
#endif

#ifdef TUG_WITH_NCCL
#ifndef TUG_NCCL_LIBRARY_DIR
#define TUG_NCCL_LIBRARY_DIR ""
#endif
/// NCCL: the system's, else the one the build found (the PyPI wheel's).
const runtime_library& nccl() {
  static const runtime_library lib = open_library("libnccl.so.2", TUG_NCCL_LIBRARY_DIR);
  return lib;
}

/// The function `name` of NCCL. @throws internal_error when it cannot be loaded: callers check
/// nccl_available() first (device_link_of sets the link up only then).
template <typename F>
F nccl_fn(const char* name) {
  return loaded_fn<F>(nccl(), "NCCL", "libnccl.so.2", name);
}
#endif

/// The function `name` of NVRTC. @throws not_implemented_error when NVRTC cannot be loaded.
template <typename F>
F nvrtc_fn(const char* name) {
  const runtime_library& l = nvrtc();
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
  return loaded(nvrtc(), why);
#else
  if (why) *why = "tug was built without CUDA";
  return false;
#endif
}

bool nvcomp_available(std::string* why) {
#ifdef TUG_WITH_NVCOMP
  return loaded(nvcomp(), why);
#else
  if (why) *why = "tug was built without nvCOMP";
  return false;
#endif
}

bool nccl_available(std::string* why) {
#ifdef TUG_WITH_NCCL
  return loaded(nccl(), why);
#else
  if (why) *why = "tug was built without NCCL";
  return false;
#endif
}

}  // namespace tug

#ifdef TUG_WITH_NCCL
// The NCCL functions src/dist/device_link.cu calls, forwarding to the library opened at run time.
extern "C" {

const char* ncclGetErrorString(ncclResult_t result) {
  try {
    return tug::nccl_fn<const char* (*)(ncclResult_t)>("ncclGetErrorString")(result);
  } catch (...) {
    return "NCCL is not loaded";
  }
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) { return tug::nccl_fn<ncclResult_t (*)(ncclUniqueId*)>("ncclGetUniqueId")(id); }

ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return tug::nccl_fn<ncclResult_t (*)(ncclComm_t*, int, ncclUniqueId, int)>("ncclCommInitRank")(comm, nranks, id, rank);
}

ncclResult_t ncclCommAbort(ncclComm_t comm) { return tug::nccl_fn<ncclResult_t (*)(ncclComm_t)>("ncclCommAbort")(comm); }

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* error) {
  return tug::nccl_fn<ncclResult_t (*)(ncclComm_t, ncclResult_t*)>("ncclCommGetAsyncError")(comm, error);
}

ncclResult_t ncclGroupStart() { return tug::nccl_fn<ncclResult_t (*)()>("ncclGroupStart")(); }

ncclResult_t ncclGroupEnd() { return tug::nccl_fn<ncclResult_t (*)()>("ncclGroupEnd")(); }

ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream) {
  return tug::nccl_fn<ncclResult_t (*)(const void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)>("ncclSend")(
      buf, count, type, peer, comm, stream);
}

ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t type, int peer, ncclComm_t comm, cudaStream_t stream) {
  return tug::nccl_fn<ncclResult_t (*)(void*, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t)>("ncclRecv")(
      buf, count, type, peer, comm, stream);
}

}  // extern "C"
#endif

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

#ifdef TUG_WITH_NVCOMP
// The nvCOMP functions tug calls (src/io/parquet/gpu_reader.cu), forwarding to the library opened at run time.
extern "C" {

#define TUG_NVCOMP_DECOMPRESS(Codec)                                                                                  \
  nvcompStatus_t nvcompBatched##Codec##DecompressGetTempSize(size_t num_chunks, size_t max_uncompressed_chunk_bytes, \
                                                             nvcompBatched##Codec##DecompressOpts_t opts,            \
                                                             size_t* temp_bytes, size_t max_total_uncompressed_bytes, \
                                                             cudaStream_t stream) {                                  \
    return tug::nvcomp_fn<nvcompStatus_t (*)(size_t, size_t, nvcompBatched##Codec##DecompressOpts_t, size_t*, size_t, \
                                             cudaStream_t)>("nvcompBatched" #Codec "DecompressGetTempSize")(          \
        num_chunks, max_uncompressed_chunk_bytes, opts, temp_bytes, max_total_uncompressed_bytes, stream);           \
  }                                                                                                                  \
  nvcompStatus_t nvcompBatched##Codec##DecompressAsync(                                                              \
      const void* const* device_compressed_chunk_ptrs, const size_t* device_compressed_chunk_bytes,                  \
      const size_t* device_uncompressed_buffer_bytes, size_t* device_uncompressed_chunk_bytes, size_t num_chunks,    \
      void* const device_temp_ptr, size_t temp_bytes, void* const* device_uncompressed_chunk_ptrs,                   \
      nvcompBatched##Codec##DecompressOpts_t opts, nvcompStatus_t* device_statuses, cudaStream_t stream) {           \
    return tug::nvcomp_fn<nvcompStatus_t (*)(const void* const*, const size_t*, const size_t*, size_t*, size_t,       \
                                             void* const, size_t, void* const*,                                      \
                                             nvcompBatched##Codec##DecompressOpts_t, nvcompStatus_t*,                \
                                             cudaStream_t)>("nvcompBatched" #Codec "DecompressAsync")(               \
        device_compressed_chunk_ptrs, device_compressed_chunk_bytes, device_uncompressed_buffer_bytes,               \
        device_uncompressed_chunk_bytes, num_chunks, device_temp_ptr, temp_bytes, device_uncompressed_chunk_ptrs,    \
        opts, device_statuses, stream);                                                                              \
  }

TUG_NVCOMP_DECOMPRESS(Snappy)
TUG_NVCOMP_DECOMPRESS(Zstd)
TUG_NVCOMP_DECOMPRESS(LZ4)
#undef TUG_NVCOMP_DECOMPRESS

}  // extern "C"
#endif
