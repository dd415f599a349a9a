// CUDA source kernels: NVRTC compilation, the disk cache (like PyCUDA's SourceModule), modules loaded
// once per process and device, and launches through the driver API. The driver's entry points come
// from the CUDA runtime (cudaGetDriverEntryPointByVersion), so libtug needs no libcuda at link time.
#include "tug/api/user_kernel.hpp"

#ifdef TUG_WITH_CUDA
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <nvrtc.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <thread>

#include "core/hash.hpp"
#include "exec/cuda/nvrtc.hpp"
#include "tug/exec/physical.hpp"

namespace tug {

namespace detail {
/// The text of include/tug/kernel.cuh (generated at configure time: cmake/kernel_cuh.cpp.in).
extern const char* const kernel_cuh_text;
}  // namespace detail

namespace {

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

void nvrtc_try(nvrtcResult r, const char* call) {
  if (r != NVRTC_SUCCESS) throw invalid_argument_error(std::string("NVRTC ") + call + ": " + nvrtcGetErrorString(r));
}

/// "sm_XY" of the current device. @throws not_implemented_error when none is visible.
std::string device_arch() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) {
    cudaGetLastError();
    throw not_implemented_error(
        "compiling a CUDA source kernel for the current device: no CUDA device is visible (give an arch such as "
        "\"sm_90\" to compile without one)");
  }
  return "sm_" + std::to_string(major) + std::to_string(minor);
}

/// NVRTC's options for `src` on `arch`: tug's own, then the source's. `--device-int128` lets kernels take
/// decimal columns (tug::in_column<__int128>).
std::vector<std::string> nvrtc_options(const cuda_source& src, const std::string& arch) {
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "-default-device", "-std=c++17", "--device-int128"};
  opts.insert(opts.end(), src.options.begin(), src.options.end());
  return opts;
}

/// What identifies a compiled kernel: everything that goes into the compilation.
std::string cache_key(const cuda_source& src, const std::string& arch) {
  std::string k = "tug kernel cache 2\nnvrtc " + nvrtc_version() + "\narch " + arch + "\nname " + src.name + "\n";
  for (auto& o : nvrtc_options(src, arch))
    k += "option " + o + "\n";
  k += "prelude " + std::to_string(hashing::hash_bytes(detail::kernel_cuh_text, std::strlen(detail::kernel_cuh_text)));
  k += "\nsource\n" + src.code;
  return k;
}

std::string hex(uint64_t v) {
  char b[17];
  std::snprintf(b, sizeof b, "%016llx", static_cast<unsigned long long>(v));
  return b;
}

constexpr char cache_magic[8] = {'T', 'U', 'G', 'K', 'R', 'N', 'L', '1'};

/// The cubin cached under `path` for `key`, or nothing (absent, unreadable, another key).
std::optional<std::string> read_cache(const std::string& path, const std::string& key) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return std::nullopt;
  char magic[8];
  uint64_t key_size = 0, cubin_size = 0;
  if (!f.read(magic, 8) || std::memcmp(magic, cache_magic, 8) != 0) return std::nullopt;
  if (!f.read(reinterpret_cast<char*>(&key_size), 8) || key_size != key.size()) return std::nullopt;
  std::string k(key_size, '\0');
  if (!f.read(k.data(), static_cast<std::streamsize>(key_size)) || k != key) return std::nullopt;
  if (!f.read(reinterpret_cast<char*>(&cubin_size), 8) || cubin_size == 0 || cubin_size > (1ull << 31))
    return std::nullopt;
  std::string cubin(cubin_size, '\0');
  if (!f.read(cubin.data(), static_cast<std::streamsize>(cubin_size))) return std::nullopt;
  return cubin;
}

/// Writes the entry through a temporary file renamed into place, so readers never see half of one.
void write_cache(const std::string& dir, const std::string& path, const std::string& key, const std::string& cubin) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    throw io_error("kernel cache directory " + dir + ": " + ec.message() +
                   " (set TUG_KERNEL_CACHE to another directory, or to \"\" to turn the cache off)");
  std::ostringstream tid;
  tid << std::this_thread::get_id();
  std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + tid.str();
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    uint64_t key_size = key.size(), cubin_size = cubin.size();
    f.write(cache_magic, 8);
    f.write(reinterpret_cast<const char*>(&key_size), 8);
    f.write(key.data(), static_cast<std::streamsize>(key.size()));
    f.write(reinterpret_cast<const char*>(&cubin_size), 8);
    f.write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    f.close();
    if (!f) {
      std::filesystem::remove(tmp, ec);
      throw io_error("kernel cache file " + tmp + ": write failed (a full disk?); set TUG_KERNEL_CACHE to another "
                     "directory, or to \"\" to turn the cache off");
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw io_error("kernel cache file " + path + ": " + ec.message());
  }
}

/// Compiles with NVRTC. @throws invalid_argument_error with the log when the source does not compile.
std::string compile(const cuda_source& src, const std::string& arch, std::string& log) {
  // NVRTC is opened on first use, its builtins library with it (src/runtime/cuda_libraries.cpp)
  const char* header = detail::kernel_cuh_text;
  const char* header_name = "tug/kernel.cuh";
  nvrtcProgram prog = nullptr;
  std::string file = src.name + ".cu";
  nvrtc_try(nvrtcCreateProgram(&prog, src.code.c_str(), file.c_str(), 1, &header, &header_name),
            "nvrtcCreateProgram");
  struct destroy {
    nvrtcProgram& p;
    ~destroy() { nvrtcDestroyProgram(&p); }
  } guard{prog};
  std::vector<std::string> opts = nvrtc_options(src, arch);
  std::vector<const char*> argv;
  for (auto& o : opts)
    argv.push_back(o.c_str());
  nvrtcResult r = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  log.assign(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (r != NVRTC_SUCCESS)
    throw invalid_argument_error("kernel \"" + src.name + "\" does not compile (NVRTC " + nvrtc_version() + ", " +
                                 arch + "): " + nvrtcGetErrorString(r) + "\n" + log);
  size_t size = 0;
  nvrtc_try(nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::string cubin(size, '\0');
  nvrtc_try(nvrtcGetCUBIN(prog, cubin.data()), "nvrtcGetCUBIN");
  return cubin;
}

}  // namespace

compiled_kernel compile_cuda_source(const cuda_source& src, const std::string& arch_in, const std::string& cache_dir) {
  if (src.name.empty()) throw invalid_argument_error("cuda_source: the entry point's name is empty");
  compiled_kernel out;
  out.arch = arch_in.empty() ? device_arch() : arch_in;
  const std::string key = cache_key(src, out.arch);
  if (!cache_dir.empty()) {
    out.cache_file = cache_dir + "/" + src.name + "-" + hex(hashing::hash_bytes(key.data(), key.size())) + ".cubin";
    if (auto c = read_cache(out.cache_file, key)) {
      out.cubin = std::move(*c);
      out.from_cache = true;
      return out;
    }
  }
  out.cubin = compile(src, out.arch, out.log);
  if (!cache_dir.empty()) write_cache(cache_dir, out.cache_file, key, out.cubin);
  return out;
}

namespace cuda {

namespace {

/// Reads a little-endian T at `at` of `b`; false when it does not fit.
template <typename T>
bool read_le(std::string_view b, size_t at, T& v) {
  if (at > b.size() || b.size() - at < sizeof(T)) return false;
  std::memcpy(&v, b.data() + at, sizeof(T));
  return true;
}

}  // namespace

std::optional<std::vector<size_t>> cubin_param_sizes(std::string_view cubin, const std::string& entry) {
  // ELF64 header: e_phoff at 0x20, e_shoff at 0x28, e_phentsize, e_phnum, e_shentsize, e_shnum, e_shstrndx
  // from 0x36; both header tables must lie within the bytes
  uint64_t phoff = 0, shoff = 0;
  uint16_t phentsize = 0, phnum = 0, shentsize = 0, shnum = 0, shstrndx = 0;
  auto table_fits = [&](uint64_t off, uint16_t entsize, uint16_t n) {
    return n == 0 || (entsize > 0 && off <= cubin.size() && (cubin.size() - off) / entsize >= n);
  };
  if (cubin.size() < 0x40 || cubin.substr(0, 4) != "\x7f" "ELF" || cubin[4] != 2 /* ELFCLASS64 */ ||
      !read_le(cubin, 0x20, phoff) || !read_le(cubin, 0x28, shoff) || !read_le(cubin, 0x36, phentsize) ||
      !read_le(cubin, 0x38, phnum) || !read_le(cubin, 0x3a, shentsize) || !read_le(cubin, 0x3c, shnum) ||
      !read_le(cubin, 0x3e, shstrndx) || shentsize < 0x40 || shstrndx >= shnum ||
      !table_fits(phoff, phentsize, phnum) || !table_fits(shoff, shentsize, shnum))
    return std::nullopt;
  struct section {
    uint32_t name = 0, type = 0;
    uint64_t offset = 0, size = 0;
  };
  // every section within the bytes (but SHT_NOBITS, which has none): a cut or damaged cubin is unknown
  std::vector<section> sections(shnum);
  for (size_t i = 0; i < shnum; ++i) {
    section& s = sections[i];
    size_t h = shoff + i * shentsize;  // sh_name at 0, sh_type at 4, sh_offset at 0x18, sh_size at 0x20
    if (!read_le(cubin, h, s.name) || !read_le(cubin, h + 4, s.type) || !read_le(cubin, h + 0x18, s.offset) ||
        !read_le(cubin, h + 0x20, s.size) ||
        (s.type != 8 && (s.offset > cubin.size() || s.size > cubin.size() - s.offset)))
      return std::nullopt;
  }
  const section& names = sections[shstrndx];
  if (names.type == 8) return std::nullopt;
  const std::string wanted = ".nv.info." + entry;
  for (const section& s : sections) {
    if (s.type == 8 || s.name >= names.size) continue;
    std::string_view name = cubin.substr(names.offset + s.name, names.size - s.name);
    name = name.substr(0, name.find('\0'));
    if (name != wanted) continue;
    // records: format (1 byte), attribute (1 byte), a 2-byte value, or for EIFMT_SVAL (4) the size of
    // the payload that follows. EIATTR_KPARAM_INFO (0x17): index (4), ordinal (2), offset (2), then
    // flags with the size in bytes in bits 18-31; EIATTR_CBANK_PARAM_SIZE (0x19): all parameters' bytes.
    std::string_view info = cubin.substr(s.offset, s.size);
    std::map<uint16_t, std::pair<size_t, size_t>> params;  // ordinal -> (offset, size)
    std::optional<size_t> total;
    for (size_t at = 0; at + 4 <= info.size();) {
      uint8_t format = static_cast<uint8_t>(info[at]), attribute = static_cast<uint8_t>(info[at + 1]);
      uint16_t value = 0;
      read_le(info, at + 2, value);
      at += 4;
      if (format == 4) {
        if (info.size() - at < value) return std::nullopt;
        uint16_t ordinal = 0, offset = 0;
        uint32_t flags = 0;
        if (attribute == 0x17) {
          if (value < 12 || !read_le(info, at + 4, ordinal) || !read_le(info, at + 6, offset) ||
              !read_le(info, at + 8, flags) ||
              !params.emplace(ordinal, std::pair<size_t, size_t>{offset, (flags >> 18) & 0x3fff}).second)
            return std::nullopt;
        }
        at += value;
      } else if (format == 3 && attribute == 0x19) {
        total = value;
      }
    }
    // believe it only when the ordinals are 0..n-1 and the parameters end where the parameter bank does
    std::vector<size_t> sizes;
    size_t end = 0;
    for (auto& [ordinal, p] : params) {
      if (ordinal != sizes.size()) return std::nullopt;
      sizes.push_back(p.second);
      end = std::max(end, p.first + p.second);
    }
    if (total ? *total != end : !sizes.empty()) return std::nullopt;
    return sizes;
  }
  return std::nullopt;
}

namespace {

/// The driver API functions tug uses, from the runtime.
struct driver_api {
  decltype(&::cuModuleLoadData) module_load_data = nullptr;
  decltype(&::cuModuleGetFunction) module_get_function = nullptr;
  decltype(&::cuLaunchKernel) launch_kernel = nullptr;
  decltype(&::cuGetErrorName) get_error_name = nullptr;
  decltype(&::cuGetErrorString) get_error_string = nullptr;

  static const driver_api& get() {
    static const driver_api api = load();
    return api;
  }

 private:
  template <typename F>
  static void entry(const char* name, F& f, unsigned version, bool required) {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion(name, &p, version, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !p) {
      cudaGetLastError();
      if (required)
        throw not_implemented_error(std::string("CUDA driver entry point ") + name +
                                    " is not available (is the NVIDIA driver installed and new enough?)");
      return;
    }
    f = reinterpret_cast<F>(p);
  }
  static driver_api load() {
    driver_api a;
    entry("cuModuleLoadData", a.module_load_data, 12000, true);
    entry("cuModuleGetFunction", a.module_get_function, 12000, true);
    entry("cuLaunchKernel", a.launch_kernel, 12000, true);
    entry("cuGetErrorName", a.get_error_name, 12000, true);
    entry("cuGetErrorString", a.get_error_string, 12000, true);
    return a;
  }
};

std::string driver_error(CUresult r) {
  const driver_api& d = driver_api::get();
  const char* name = nullptr;
  const char* text = nullptr;
  d.get_error_name(r, &name);
  d.get_error_string(r, &text);
  return std::string(name ? name : "CUDA error") + ": " + (text ? text : "unknown");
}

/// A loaded kernel: its function and how many bytes each parameter takes (nothing: unknown).
struct loaded_kernel {
  CUfunction fn = nullptr;
  std::optional<std::vector<size_t>> param_sizes;
};

/// Kernels loaded in this process, by device and cache key (a module stays loaded until exit).
loaded_kernel load(const user_kernel& k) {
  static std::mutex mu;
  static std::map<std::pair<int, std::string>, loaded_kernel> loaded;
  const cuda_source& src = *k.source_code();
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) {
    cudaGetLastError();
    throw not_implemented_error("kernel \"" + k.name() + "\": no CUDA device is visible");
  }
  std::lock_guard<std::mutex> g(mu);
  std::string arch = device_arch();
  std::pair<int, std::string> id{dev, cache_key(src, arch)};
  auto it = loaded.find(id);
  if (it != loaded.end()) return it->second;
  compiled_kernel c = compile_cuda_source(src, arch, k.cache_dir());
  const driver_api& d = driver_api::get();
  cudaFree(nullptr);  // the runtime's primary context is current on this thread before the driver loads into it
  CUmodule module = nullptr;
  if (CUresult r = d.module_load_data(&module, c.cubin.data()); r != CUDA_SUCCESS)
    throw compute_error("kernel \"" + k.name() + "\": loading its module failed: " + driver_error(r));
  loaded_kernel lk;
  if (CUresult r = d.module_get_function(&lk.fn, module, src.name.c_str()); r != CUDA_SUCCESS)
    throw invalid_argument_error("kernel \"" + k.name() + "\": the source has no entry point \"" + src.name +
                                 "\" (declare it extern \"C\" __global__): " + driver_error(r));
  // from the cubin, not by probing cuFuncGetParamInfo past the last parameter (a failing driver call)
  if (auto sizes = cubin_param_sizes(c.cubin, src.name)) lk.param_sizes = std::move(*sizes);
  loaded.emplace(id, lk);
  return lk;
}

/// The bytes a scalar argument is passed as: its own C type.
std::vector<unsigned char> arg_bytes(const scalar& s) {
  return type_dispatch(s.type().id, [&]<type_id Id>() -> std::vector<unsigned char> {
    if constexpr (Id == type_id::string) {
      throw internal_error("a string argument reached a CUDA source kernel");
    } else {
      using T = storage_t<Id>;
      T v{};
      if constexpr (Id == type_id::boolean) v = s.as_bool();
      else if constexpr (Id == type_id::float32 || Id == type_id::float64) v = static_cast<T>(s.as_double());
      else if constexpr (Id == type_id::decimal128) v = s.as_int128();
      else if constexpr (Id == type_id::uint64) v = std::get<uint64_t>(s.value());
      else v = static_cast<T>(s.as_int64());
      std::vector<unsigned char> b(sizeof(T));
      std::memcpy(b.data(), &v, sizeof(T));
      return b;
    }
  });
}

}  // namespace

void launch_source_kernel(const user_kernel& k, kernel_partition& p, long long grid, int block) {
  loaded_kernel lk = load(k);
  // parameters: rows, the input columns, the output columns, the arguments (tug/kernel.cuh)
  long long rows = p.rows();
  std::vector<in_column<unsigned char>> ins;
  std::vector<in_strings> strs;
  std::vector<out_column<unsigned char>> outs;
  std::vector<out_strings> str_outs;
  std::vector<std::vector<unsigned char>> args;
  std::vector<size_t> sizes{sizeof(long long)};
  std::vector<std::string> what{"long long rows"};
  std::vector<void*> in_params;  // into ins and strs, which are reserved so that they never move
  ins.reserve(p.num_inputs());
  strs.reserve(p.num_inputs());
  for (size_t i = 0; i < p.num_inputs(); ++i) {
    column_view v = p.input(i);
    if (v.type.id == type_id::string) {
      strs.push_back(p.in_strings(i));
      in_params.push_back(&strs.back());
      sizes.push_back(sizeof(in_strings));
      what.push_back("tug::in_strings");
    } else {
      ins.push_back({static_cast<const unsigned char*>(v.data), v.validity, v.offset, v.size});
      in_params.push_back(&ins.back());
      sizes.push_back(sizeof(in_column<unsigned char>));
      what.push_back("tug::in_column<" + to_string(v.type) + ">");
    }
  }
  std::vector<void*> out_params;  // into outs and str_outs, reserved likewise
  outs.reserve(p.num_outputs());
  str_outs.reserve(p.num_outputs());
  for (size_t i = 0; i < p.num_outputs(); ++i) {
    const mutable_column_view& v = p.output(i);
    if (v.type.id == type_id::string) {
      str_outs.push_back({static_cast<char*>(v.data), v.offsets, v.validity, v.size});
      out_params.push_back(&str_outs.back());
      sizes.push_back(sizeof(out_strings));
      what.push_back("tug::out_strings");
    } else {
      outs.push_back({static_cast<unsigned char*>(v.data), v.validity, v.size});
      out_params.push_back(&outs.back());
      sizes.push_back(sizeof(out_column<unsigned char>));
      what.push_back("tug::out_column<" + to_string(v.type) + ">");
    }
  }
  for (size_t i = 0; i < p.args().size(); ++i) {
    if (p.args()[i].is_null())
      throw invalid_argument_error(p.where_text() + ": argument " + std::to_string(i) + " is null");
    args.push_back(arg_bytes(p.args()[i]));
    sizes.push_back(args.back().size());
    what.push_back(to_string(p.args()[i].type()) + " argument " + std::to_string(i));
  }
  if (lk.param_sizes) {
    const std::vector<size_t>& want = *lk.param_sizes;
    auto signature = [&] {
      std::string s;
      for (auto& w : what)
        s += (s.empty() ? "" : ", ") + w;
      return "(" + s + ")";
    };
    if (want.size() != sizes.size())
      throw invalid_argument_error("kernel \"" + k.name() + "\" takes " + std::to_string(want.size()) +
                                   " parameters but tug passes " + std::to_string(sizes.size()) + ": " + signature());
    for (size_t i = 0; i < sizes.size(); ++i)
      if (want[i] != sizes[i])
        throw invalid_argument_error("kernel \"" + k.name() + "\": parameter " + std::to_string(i) + " takes " +
                                     std::to_string(want[i]) + " bytes but tug passes " + what[i] + " (" +
                                     std::to_string(sizes[i]) + " bytes); tug passes " + signature());
  }
  if (rows == 0) return;
  std::vector<void*> params{&rows};
  for (void* c : in_params)
    params.push_back(c);
  for (void* c : out_params)
    params.push_back(c);
  for (auto& a : args)
    params.push_back(a.data());
  const launch_config& cfg = k.launch_cfg();
  CUresult r = driver_api::get().launch_kernel(lk.fn, static_cast<unsigned>(grid), 1, 1, static_cast<unsigned>(block),
                                               1, 1, static_cast<unsigned>(cfg.shared_bytes),
                                               static_cast<CUstream>(p.stream()), params.data(), nullptr);
  if (r != CUDA_SUCCESS)
    throw compute_error(p.where_text() + ": the launch (grid " + std::to_string(grid) + ", block " +
                        std::to_string(block) + ", " + std::to_string(cfg.shared_bytes) +
                        " bytes of shared memory) failed: " + driver_error(r));
}

}  // namespace cuda

}  // namespace tug

#else  // without CUDA

namespace tug {
compiled_kernel compile_cuda_source(const cuda_source&, const std::string&, const std::string&) {
  throw not_implemented_error("compiling a CUDA source kernel: tug was built without CUDA (configure with -DTUG_WITH_CUDA=ON)");
}
}  // namespace tug

#endif
