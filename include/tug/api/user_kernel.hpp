#pragma once
/// Users' own kernels on every partition (`lazy_frame::map_partitions` / `foreach_partition`,
/// docs/user-kernels.md): C++ functors compiled into the user's program (host or device) and CUDA C++
/// source compiled at run time with NVRTC, cached on disk.
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "tug/core/column.hpp"
#include "tug/core/scalar.hpp"
#include "tug/core/table.hpp"
#include "tug/kernel.cuh"

namespace tug {

enum class backend : uint8_t;

/// Writable view of one output column a kernel fills: `size` rows of fixed-width values, all valid
/// until set_null. In host memory on the CPU engine, device memory on the GPU engine. A string output
/// of a CUDA source kernel is a tug::out_strings: `data` the characters (null while sizing) and
/// `offsets` the lengths, then the offsets (set by tug between its two launches).
struct mutable_column_view {
  data_type type;
  int64_t size = 0;
  void* data = nullptr;
  unsigned int* validity = nullptr;  ///< LSB-first bitmap as 32-bit words, all bits set at first
  long long* offsets = nullptr;      ///< string outputs of source kernels

  template <typename T> T* values() const { return static_cast<T*>(data); }
  /// Marks row i null (host memory only).
  void set_null(int64_t i) const { validity[i >> 5] &= ~(1u << (i & 31)); }
};

/// The launch of a CUDA source kernel. Zero fields are chosen by tug: 256 threads a block and enough
/// blocks for one thread a row, capped at 16 blocks per multiprocessor (kernels loop grid-stride).
struct launch_config {
  int64_t grid = 0;          ///< blocks
  int block = 0;             ///< threads per block
  int64_t shared_bytes = 0;  ///< dynamic shared memory per block
};

/// CUDA C++ source text for NVRTC, with the name of its `extern "C" __global__` entry point. The
/// source may `#include <tug/kernel.cuh>` (the column views). `options` are NVRTC's (e.g. "-use_fast_math");
/// tug adds `-arch` for the device, `-default-device`, `-std=c++17` and `--device-int128` (decimals).
struct cuda_source {
  std::string code;
  std::string name;
  std::vector<std::string> options{};
};

/// A compiled CUDA source kernel.
struct compiled_kernel {
  std::string arch;        ///< e.g. "sm_90"
  std::string cubin;       ///< the device code
  std::string log;         ///< NVRTC's log (warnings)
  std::string cache_file;  ///< where it is cached on disk ("" when caching is off)
  bool from_cache = false;
};

/// The directory of the kernel cache: $TUG_KERNEL_CACHE, else $XDG_CACHE_HOME/tug/kernels, else
/// ~/.cache/tug/kernels. An empty TUG_KERNEL_CACHE turns the disk cache off.
std::string default_kernel_cache_dir();

/// Compiles `src` for `arch` ("sm_90"; empty: the current device's) with NVRTC, or takes it from the
/// disk cache in `cache_dir` (empty: none), keyed by a hash of the source, the entry name, the options,
/// the architecture and the NVRTC version (a cached file holds its whole key, so a hash collision
/// only costs a compile). Needs no GPU when `arch` is given.
/// @throws invalid_argument_error with NVRTC's log (file and line of each error) when the source does
/// not compile; not_implemented_error when tug was built without CUDA, or no arch is given and no
/// GPU is visible; io_error naming the file when the cache cannot be written.
compiled_kernel compile_cuda_source(const cuda_source& src, const std::string& arch = {},
                                    const std::string& cache_dir = default_kernel_cache_dir());

/// What a user kernel gets for one partition: its input columns (struct of arrays, in host memory on
/// the CPU engine and device memory on the GPU engine), views of the output columns tug allocated
/// (`rows()` rows each), the scalar arguments, and on the GPU the CUDA stream the partition runs on.
class kernel_partition {
 public:
  /// `first_row` and `partition_rows`: where this call's rows lie in partition `number` when the
  /// partition is cut into several calls (-1: the call has the whole partition).
  kernel_partition(const std::string& kernel, int64_t number, backend where, void* stream, const table& input,
                   std::vector<std::string> input_names, const std::vector<scalar>& args, memory_resource* mr,
                   int64_t first_row = 0, int64_t partition_rows = -1);

  /// The kernel's name (error messages name it with the partition).
  const std::string& kernel() const { return _kernel; }
  /// The partition's number: its place among the kernel's input partitions, 0, 1, ... (partitions
  /// arrive in parallel, in any order, as the scan completes them).
  int64_t number() const { return _number; }
  /// Rows of this call: the partition's, or a slice of them when the partition is larger than one call
  /// may take on its tier (memory_limit / threads on the CPU, the device budget / num_streams on the
  /// GPU; docs/user-kernels.md).
  int64_t rows() const { return _input.num_rows(); }
  /// The first row of this call within partition number() (0 unless the partition is cut into calls).
  int64_t first_row() const { return _first_row; }
  /// Rows of the whole partition number() (rows() unless it is cut into calls).
  int64_t partition_rows() const { return _partition_rows < 0 ? rows() : _partition_rows; }
  /// Where the partition's memory is: backend::cpu (host) or backend::cuda (device).
  backend where() const { return _where; }
  /// The `cudaStream_t` the partition's work runs on (GPU engine); nullptr on the CPU. Launch on it and
  /// do not synchronize the device: tug waits for this stream before it uses the outputs.
  void* stream() const { return _stream; }
  /// Memory for columns handed to set_output (device memory on the GPU engine).
  memory_resource* memory() const { return _mr; }

  size_t num_inputs() const { return _input.num_columns(); }
  /// Input column `i` (in the order of `user_kernel::inputs`). @throws invalid_argument_error when out of range.
  column_view input(size_t i) const;
  /// Input column by name. @throws column_not_found_error.
  column_view input(std::string_view name) const;
  /// The owning input column (to pass through with set_output, zero-copy).
  const column& input_column(size_t i) const;
  /// Input column `i` as the typed view kernels take. @throws type_error when T's size is not the column's.
  template <typename T>
  in_column<T> in(size_t i) const {
    column_view v = checked_input(i, sizeof(T));
    return {static_cast<const T*>(v.data), v.validity, v.offset, v.size};
  }

  /// String input column `i` as the view kernels take (offsets and chars; host or device memory as the
  /// partition is). @throws type_error when the column is not a string column.
  tug::in_strings in_strings(size_t i) const;

  size_t num_outputs() const { return _outputs.size(); }
  /// Output column `i` (declared order). @throws invalid_argument_error when out of range.
  const mutable_column_view& output(size_t i) const;
  const mutable_column_view& output(std::string_view name) const;
  /// Output column `i` as the typed view kernels take. @throws type_error when T's size is not the column's.
  template <typename T>
  out_column<T> out(size_t i) const {
    const mutable_column_view& v = checked_output(i, sizeof(T));
    return {static_cast<T*>(v.data), v.validity, v.size};
  }
  /// A string column of rows() rows made as a CUDA source kernel makes a string output (tug::out_strings):
  /// `pass` runs twice over the rows, first sizing, then writing. For a host functor that shares its loop
  /// body with the source kernel; hand the column over with set_output. Host memory only.
  /// @throws invalid_argument_error on the GPU engine (a device functor builds its own columns).
  column make_strings(const std::function<void(const tug::out_strings& o)>& pass) const;

  /// Replaces output `i` with `c` (any type the declared one equals, any length equal for all outputs;
  /// in memory() on the GPU engine): for kernels whose output length differs from the input's, or
  /// string outputs. Checked when the kernel returns.
  void set_output(size_t i, column c);

  const std::vector<scalar>& args() const { return _args; }
  /// Scalar argument `i`. @throws invalid_argument_error when out of range.
  const scalar& arg(size_t i) const;

  /// `kernel "k", partition #n (r rows)`, or `kernel "k", partition #n (rows a to b of r)` for a call on
  /// a slice of it: how errors name the kernel and the partition.
  std::string where_text() const;

  // for tug: the declared outputs (allocated by tug before the kernel runs) and what set_output gave
  struct output_slot {
    std::string name;
    mutable_column_view view;
    buffer_ptr data, validity;
    column replaced;
    bool is_replaced = false;
  };
  std::vector<output_slot>& slots() { return _outputs; }
  const table& input_table() const { return _input; }

 private:
  column_view checked_input(size_t i, size_t width) const;
  const mutable_column_view& checked_output(size_t i, size_t width) const;

  std::string _kernel;
  int64_t _number;
  int64_t _first_row, _partition_rows;
  backend _where;
  void* _stream;
  const table& _input;
  std::vector<std::string> _input_names;
  const std::vector<scalar>& _args;
  memory_resource* _mr;
  std::vector<output_slot> _outputs;
};

/// A kernel run on one partition: fills `p`'s outputs (or replaces them with set_output).
using kernel_fn = std::function<void(kernel_partition& p)>;

/// A user kernel and its declared interface: the input columns it reads, the output columns it makes
/// (types checked on every partition), input columns passed through, scalar arguments, and one or
/// more forms: a host functor (CPU engine), a device functor or CUDA source (GPU engine).
/// Built with the chained setters, then given to map_partitions / foreach_partition (which copy it).
class user_kernel {
 public:
  explicit user_kernel(std::string name) : _name(std::move(name)) {}

  /// Input columns the kernel reads, in the order it receives them (empty: all input columns).
  user_kernel& inputs(std::vector<std::string> names) { _inputs = std::move(names); return *this; }
  /// Declared output columns (none: a foreach kernel, or one that only passes columns through).
  user_kernel& outputs(schema s) { _outputs = std::move(s); return *this; }
  /// Input columns copied (zero-copy) into the output ahead of the kernel's columns; then every output
  /// has the input's length.
  user_kernel& keep(std::vector<std::string> names) { _keep = std::move(names); return *this; }
  /// Scalar arguments (see kernel_args).
  user_kernel& args(std::vector<scalar> a) { _args = std::move(a); return *this; }
  /// The CPU form: runs on each partition in host memory.
  user_kernel& host(kernel_fn f) { _host = std::move(f); return *this; }
  /// The GPU form as a functor of the user's program: gets device views and the stream.
  user_kernel& device(kernel_fn f) { _device = std::move(f); return *this; }
  /// The GPU form as CUDA source, compiled at run time (NVRTC) and cached in `cache_dir`.
  user_kernel& source(cuda_source s, std::string cache_dir = default_kernel_cache_dir()) {
    _source = std::make_shared<cuda_source>(std::move(s));
    _cache_dir = std::move(cache_dir);
    return *this;
  }
  /// The launch of the source kernel (zero fields: tug chooses).
  user_kernel& launch(launch_config c) { _launch = c; return *this; }

  const std::string& name() const { return _name; }
  const std::vector<std::string>& input_names() const { return _inputs; }
  const schema& output_schema() const { return _outputs; }
  const std::vector<std::string>& kept() const { return _keep; }
  const std::vector<scalar>& arguments() const { return _args; }
  const kernel_fn& host_fn() const { return _host; }
  const kernel_fn& device_fn() const { return _device; }
  const cuda_source* source_code() const { return _source.get(); }
  const std::string& cache_dir() const { return _cache_dir; }
  const launch_config& launch_cfg() const { return _launch; }
  bool has_host() const { return static_cast<bool>(_host); }
  bool has_device() const { return static_cast<bool>(_device) || _source != nullptr; }
  /// One line for explain().
  std::string describe() const;

 private:
  std::string _name;
  std::vector<std::string> _inputs;
  schema _outputs;
  std::vector<std::string> _keep;
  std::vector<scalar> _args;
  kernel_fn _host, _device;
  std::shared_ptr<cuda_source> _source;
  std::string _cache_dir;
  launch_config _launch;
};

/// A scalar argument from a plain C++ value, typed as the value is: bool, the integers, float, double,
/// strings (functors only). A source kernel receives it as that C type.
template <typename T>
scalar kernel_arg(T v) {
  if constexpr (std::is_same_v<T, bool>) return scalar(type_id::boolean, v);
  else if constexpr (std::is_same_v<T, float>) return scalar(type_id::float32, static_cast<double>(v));
  else if constexpr (std::is_same_v<T, double>) return scalar(type_id::float64, v);
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    constexpr type_id id = sizeof(T) == 1 ? type_id::int8 : sizeof(T) == 2 ? type_id::int16
                           : sizeof(T) == 4 ? type_id::int32 : type_id::int64;
    return scalar(id, static_cast<int64_t>(v));
  } else if constexpr (std::is_integral_v<T>) {
    constexpr type_id id = sizeof(T) == 1 ? type_id::uint8 : sizeof(T) == 2 ? type_id::uint16
                           : sizeof(T) == 4 ? type_id::uint32 : type_id::uint64;
    return scalar(id, static_cast<uint64_t>(v));
  } else if constexpr (std::is_same_v<T, scalar>) return v;
  else return scalar(type_id::string, std::string(v));
}

/// Scalar arguments from plain C++ values: `kernel_args(2.0, 10, "x")`.
template <typename... T>
std::vector<scalar> kernel_args(T... v) {
  return {kernel_arg(v)...};
}

}  // namespace tug
