#pragma once
/// The CUDA libraries tug loads at run time rather than at link time, so that a build with the CUDA backend
/// starts (and runs on the CPU) on a machine without them: the CUDA runtime is linked statically and finds
/// the driver (libcuda) itself; NVRTC (CUDA source kernels), nvCOMP (the GPU Parquet reader's page
/// decompression) and NCCL (device tables between ranks' GPUs) are opened on first use.
#include <string>

namespace tug {

/// Adds a directory where NVRTC (libnvrtc.so.<CUDA major>) and nvCOMP (libnvcomp.so.<major>) are looked for
/// when the loader's search path (LD_LIBRARY_PATH, the program's RUNPATH, the system's directories) does not
/// have them: the Python package adds the PyPI wheels' (nvidia/cu13/lib, nvidia/libnvcomp/lib64). Takes
/// effect until each is first loaded.
void add_cuda_library_directory(const std::string& dir);

/// Whether NVRTC can be loaded (loading it when not yet done); false in a build without CUDA. `why`, when
/// given, gets the reason it cannot: each place tried and the loader's error.
bool nvrtc_available(std::string* why = nullptr);

/// Whether nvCOMP can be loaded (loading it when not yet done); false in a build without nvCOMP. Without
/// it the GPU Parquet reader decompresses pages on the host. `why` as for nvrtc_available.
bool nvcomp_available(std::string* why = nullptr);

/// Whether NCCL (libnccl.so.2) can be loaded (loading it when not yet done); false in a build without NCCL's
/// header. Without it exchanges between ranks move device tables through host memory. `why` as for
/// nvrtc_available.
bool nccl_available(std::string* why = nullptr);

}  // namespace tug
