// User kernels from Python (docs/user-kernels.md, "From Python"): the bindings under python/tug/kernels.py.
// A Python callable becomes a host or device functor of a tug::user_kernel; the partition it receives
// hands out its columns as views with __array_interface__ (host), __cuda_array_interface__ (device)
// and DLPack (both), so numpy, CuPy and Numba work on tug's buffers without copying.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <mutex>
#include <set>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "tug/api/data_frame.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/api/user_kernel.hpp"
#include "tug/core/error.hpp"
#include "tug/core/table.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/options.hpp"
#ifdef TUG_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace nb = nanobind;
using namespace nb::literals;

namespace tug {
namespace {

// ---------------------------------------------------------------------------------------------------
// DLPack (https://dmlc.github.io/dlpack/latest/c_api.html), the structs of dlpack.h 1.0

struct dl_device {
  int32_t device_type;  // kDLCPU 1, kDLCUDA 2
  int32_t device_id;
};
struct dl_data_type {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct dl_tensor {
  void* data;
  dl_device device;
  int32_t ndim;
  dl_data_type dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct dl_managed_tensor {
  dl_tensor tensor;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor*);
};
struct dl_pack_version {
  uint32_t major;
  uint32_t minor;
};
struct dl_managed_tensor_versioned {
  dl_pack_version version;
  void* manager_ctx;
  void (*deleter)(dl_managed_tensor_versioned*);
  uint64_t flags;  // bit 0: read only
  dl_tensor tensor;
};
constexpr int32_t k_dl_cpu = 1, k_dl_cuda = 2;

// ---------------------------------------------------------------------------------------------------
// a column of a partition as a view for Python

/// One fixed-width buffer of a partition (a column's values, its validity bitmap, a string column's
/// offsets or chars), kept alive by its owner while Python holds the view.
struct py_column {
  std::string name;      ///< for messages: `column "x" of kernel "k", partition #n`
  std::string where;     ///< the partition (kernel_partition::where_text)
  data_type type;        ///< storage type of one element (strings: no view of values)
  int64_t size = 0;      ///< elements
  void* data = nullptr;  ///< first element
  bool device = false;
  bool writable = false;
  int device_id = 0;
  uintptr_t stream = 0;  ///< the producer's stream (device)
  int64_t null_count = 0;
  int64_t validity_offset = 0;  ///< bit of the first row in `validity`
  std::shared_ptr<py_column> validity;        ///< bytes of the bitmap (null: no nulls)
  std::shared_ptr<py_column> offsets, chars;  ///< strings: the rows' int64 offsets into the chars
  std::vector<buffer_ptr> keep;                  ///< the buffers the view points into

  std::string label() const { return "column \"" + name + "\" of " + where; }
};

/// The array-interface type string and DLPack type of `t`'s storage.
/// @throws not_implemented_error for strings and decimals (no array protocol describes them).
std::pair<std::string, dl_data_type> element_type(const py_column& c) {
  const type_id id = c.type.id;
  const int bits = id == type_id::boolean ? 8 : static_cast<int>(size_of(id)) * 8;
  const std::string n = std::to_string(bits / 8);
  switch (id) {
    case type_id::boolean: return {"|b1", {6, 8, 1}};
    case type_id::int8: case type_id::int16: case type_id::int32: case type_id::int64: case type_id::date32:
    case type_id::timestamp: case type_id::duration:
      return {(bits == 8 ? "|i" : "<i") + n, {0, static_cast<uint8_t>(bits), 1}};
    case type_id::uint8: case type_id::uint16: case type_id::uint32: case type_id::uint64:
      return {(bits == 8 ? "|u" : "<u") + n, {1, static_cast<uint8_t>(bits), 1}};
    case type_id::float32: case type_id::float64: return {"<f" + n, {2, static_cast<uint8_t>(bits), 1}};
    default:
      throw not_implemented_error(c.label() + " is " + to_string(c.type) +
                                  ": no array protocol describes it; use the partition's to_arrow()" +
                                  (id == type_id::string ? " or the column's offsets and chars" : ""));
  }
}

/// `__array_interface__` (host) or `__cuda_array_interface__` (device, version 3): a dict.
nb::dict array_interface(const py_column& c, bool cuda) {
  if (c.device != cuda)
    throw nb::attribute_error((c.label() + " is in " + (c.device ? "device" : "host") + " memory: it has no " +
                               (cuda ? "__cuda_array_interface__" : "__array_interface__"))
                                  .c_str());
  auto [typestr, dl] = element_type(c);
  nb::dict d;
  d["shape"] = nb::make_tuple(c.size);
  d["typestr"] = typestr;
  // an empty array's pointer is 0 in the CUDA array interface
  uintptr_t ptr = c.size == 0 && cuda ? 0 : reinterpret_cast<uintptr_t>(c.data);
  d["data"] = nb::make_tuple(ptr, !c.writable);
  d["strides"] = nb::none();
  d["version"] = 3;
  if (cuda) d["stream"] = c.stream == 0 ? nb::none() : nb::object(nb::int_(c.stream));
  return d;
}

struct dl_context {
  std::vector<buffer_ptr> keep;
  int64_t shape[1];
};

template <typename M>
void dl_delete(M* m) {
  delete static_cast<dl_context*>(m->manager_ctx);
  delete m;
}

template <typename M>
void dl_capsule_free(PyObject* cap) {
  const char* name = std::is_same_v<M, dl_managed_tensor> ? "dltensor" : "dltensor_versioned";
  if (!PyCapsule_IsValid(cap, name)) return;  // consumed ("used_dltensor"): the consumer calls the deleter
  auto* m = static_cast<M*>(PyCapsule_GetPointer(cap, name));
  if (m && m->deleter) m->deleter(m);
}

/// `__dlpack__`: a capsule of the view (versioned when the consumer asks for DLPack 1.x). The consumer's
/// `stream` waits for the partition's stream (device).
nb::object dlpack(const py_column& c, nb::handle stream, nb::handle max_version) {
  auto [typestr, dt] = element_type(c);
#ifdef TUG_WITH_CUDA
  if (c.device && !stream.is_none()) {
    // Our data is ready on c.stream; make the consumer's stream see it (-1: the consumer asks for none).
    auto s = nb::cast<int64_t>(stream);
    if (s != -1 && static_cast<uintptr_t>(s) != c.stream) {
      cudaError_t e = cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(c.stream));
      if (e != cudaSuccess)
        throw compute_error(c.label() + ": __dlpack__ could not synchronize the partition's stream: " +
                            cudaGetErrorString(e));
    }
  }
#endif
  auto* ctx = new dl_context{c.keep, {c.size}};
  dl_tensor t{c.data, {c.device ? k_dl_cuda : k_dl_cpu, c.device ? c.device_id : 0}, 1, dt, ctx->shape, nullptr, 0};
  bool versioned = false;
  if (!max_version.is_none()) {
    auto v = nb::cast<std::tuple<int, int>>(max_version);
    versioned = std::get<0>(v) >= 1;
  }
  PyObject* cap;
  if (versioned) {
    auto* m = new dl_managed_tensor_versioned{{1, 0}, ctx, dl_delete<dl_managed_tensor_versioned>,
                                              c.writable ? 0u : 1u, t};
    cap = PyCapsule_New(m, "dltensor_versioned", dl_capsule_free<dl_managed_tensor_versioned>);
    if (!cap) dl_delete(m);
  } else {
    auto* m = new dl_managed_tensor{t, ctx, dl_delete<dl_managed_tensor>};
    cap = PyCapsule_New(m, "dltensor", dl_capsule_free<dl_managed_tensor>);
    if (!cap) dl_delete(m);
  }
  if (!cap) throw nb::python_error();
  return nb::steal(cap);
}

// ---------------------------------------------------------------------------------------------------
// the partition a Python kernel receives

/// A kernel_partition for Python, valid while the kernel runs: every method after that raises.
struct py_partition {
  kernel_partition* p = nullptr;
  const std::vector<std::string>* names = nullptr;  ///< the input columns' (the kernel names them all)
  std::string where_text;
  bool device = false;
  int device_id = 0;

  kernel_partition& live() const {
    if (!p)
      throw invalid_argument_error(where_text +
                                   ": the partition was used after the kernel returned (its views stay valid, "
                                   "the partition does not)");
    return *p;
  }

  py_column base(std::string name) const {
    py_column c;
    c.name = std::move(name);
    c.where = where_text;
    c.device = device;
    c.device_id = device_id;
    c.stream = reinterpret_cast<uintptr_t>(p->stream());
    return c;
  }

  std::shared_ptr<py_column> bytes_view(const std::string& name, const buffer_ptr& b, void* at, int64_t n,
                                        data_type t, bool writable) const {
    auto v = std::make_shared<py_column>(base(name));
    v->type = t;
    v->size = n;
    v->data = at;
    v->writable = writable;
    v->keep = {b};
    return v;
  }

  std::shared_ptr<py_column> input(size_t i) const {
    const column& col = live().input_column(i);
    auto c = std::make_shared<py_column>(base((*names)[i]));
    c->type = col.type();
    c->size = col.size();
    c->null_count = col.null_count();
    c->validity_offset = col.offset();
    c->keep = {col.data_buffer(), col.validity_buffer(), col.offsets_buffer()};
    auto* base_ptr = col.data_buffer() ? static_cast<char*>(col.data_buffer()->data()) : nullptr;
    if (col.type().id == type_id::string && col.offsets_buffer()) {
      c->data = base_ptr;  // the chars; rows reach them through the offsets
      const int64_t* offsets = col.offsets_buffer()->as<int64_t>() + col.offset();
      c->offsets = bytes_view(c->name + ".offsets", col.offsets_buffer(), const_cast<int64_t*>(offsets),
                              col.size() + 1, type_id::int64, false);
      // the chars the rows use (host); on the device, where offsets are not read here, the whole buffer
      int64_t nchars = col.data_buffer() ? static_cast<int64_t>(col.data_buffer()->size()) : 0;
      if (!device) nchars = offsets[col.size()];
      c->chars = bytes_view(c->name + ".chars", col.data_buffer(), base_ptr, nchars, type_id::uint8, false);
    } else if (base_ptr && col.type().id != type_id::string) {
      c->data = base_ptr + col.offset() * size_of(col.type().id);
    }
    if (col.validity_buffer())
      c->validity = bytes_view(c->name + ".validity", col.validity_buffer(), col.validity_buffer()->data(),
                               static_cast<int64_t>(col.validity_buffer()->size()), type_id::uint8, false);
    return c;
  }

  std::shared_ptr<py_column> output(size_t i) const {
    live().output(i);  // range check
    auto& s = p->slots()[i];
    auto c = std::make_shared<py_column>(base(s.name));
    c->type = s.view.type;
    if (s.view.type.id == type_id::string)
      throw not_implemented_error(c->label() + " is a string output: hand it over with set_output");
    c->size = s.view.size;
    c->data = s.view.data;
    c->writable = true;
    c->keep = {s.data, s.validity};
    c->validity = bytes_view(s.name + ".validity", s.validity, s.validity ? s.validity->data() : nullptr,
                             s.validity ? static_cast<int64_t>(s.validity->size()) : 0, type_id::uint8, true);
    return c;
  }

  size_t index_of(const std::string& name, bool out) const {
    live();
    if (out) {
      auto& slots = p->slots();
      for (size_t i = 0; i < slots.size(); ++i)
        if (slots[i].name == name) return i;
      throw column_not_found_error(where_text + ": no output column \"" + name + "\"");
    }
    auto& in = *names;
    for (size_t i = 0; i < in.size(); ++i)
      if (in[i] == name) return i;
    throw column_not_found_error(where_text + ": no input column \"" + name + "\"");
  }

  /// The inputs as a frame of one partition (host memory; for pyarrow).
  data_frame inputs_frame() const {
    const table& t = live().input_table();
    std::vector<field> fields;
    for (size_t i = 0; i < t.num_columns(); ++i) fields.push_back({(*names)[i], t[i].type()});
    if (device)
      throw invalid_argument_error(where_text + ": the partition is in device memory: to_arrow() reads host "
                                   "partitions; use the columns' __cuda_array_interface__ or __dlpack__");
    return data_frame(schema(std::move(fields)), {t});
  }

  /// Replaces output `i` with column 0 of `df` (one partition; copied to the device on the GPU engine).
  void set_output(size_t i, const data_frame& df) {
    live().output(i);
    const std::string& name = p->slots()[i].name;
    if (df.schema().size() != 1)
      throw invalid_argument_error(where_text + ": set_output(\"" + name + "\") takes one column, got " +
                                   std::to_string(df.schema().size()));
    column c;
    if (df.partitions().size() == 1) {
      c = df.partitions()[0][0];
    } else if (df.partitions().empty()) {
      c = make_empty_column(df.schema()[0].type);
    } else {
      throw invalid_argument_error(where_text + ": set_output(\"" + name + "\") takes one array, got " +
                                   std::to_string(df.partitions().size()) + " chunks");
    }
    if (device) c = to_device(table({c}), p->memory())[0];
    p->set_output(i, std::move(c));
  }
};

/// A Python callable shared by the copies of a kernel; released under the GIL. The plan that holds it is
/// invisible to Python's garbage collector, so a kernel whose function reaches its module's globals (which
/// hold the frame) makes a cycle: release_all (at exit, tug/kernels.py) drops the functions first.
struct py_callable {
  nb::object fn;
  explicit py_callable(nb::object f) : fn(std::move(f)) {
    std::lock_guard<std::mutex> g(registry_mutex());
    registry().insert(this);
  }
  ~py_callable() {
    {
      std::lock_guard<std::mutex> g(registry_mutex());
      registry().erase(this);
    }
    if (!fn.is_valid()) return;
    if (!Py_IsInitialized()) {
      fn.release();  // the interpreter is gone: leak rather than touch it
      return;
    }
    nb::gil_scoped_acquire g;
    fn.reset();
  }
  /// Drops every live kernel's function (with the GIL held).
  static void release_all() {
    std::vector<nb::object> dropped;  // decref'd after the lock is released
    {
      std::lock_guard<std::mutex> g(registry_mutex());
      for (py_callable* c : registry()) dropped.push_back(std::move(c->fn));
    }
  }
  static std::set<py_callable*>& registry() {
    static std::set<py_callable*> r;
    return r;
  }
  static std::mutex& registry_mutex() {
    static std::mutex m;
    return m;
  }
};

/// `fn(partition)` as a kernel functor; `names` are the kernel's input columns.
kernel_fn python_functor(nb::object fn, std::vector<std::string> names) {
  auto f = std::make_shared<py_callable>(std::move(fn));
  auto in = std::make_shared<const std::vector<std::string>>(std::move(names));
  return [f, in](kernel_partition& p) {
    nb::gil_scoped_acquire g;
    auto pp = std::make_shared<py_partition>();
    pp->p = &p;
    pp->names = in.get();
    pp->where_text = p.where_text();
    pp->device = p.where() == backend::cuda;
#ifdef TUG_WITH_CUDA
    if (pp->device) cudaGetDevice(&pp->device_id);
#endif
    nb::object obj = nb::cast(pp);
    std::string failure;
    try {
      if (!f->fn.is_valid())
        throw compute_error(p.where_text() + ": the Python interpreter is shutting down; its kernels are released");
      f->fn(obj);
    } catch (nb::python_error& e) {
      failure = nb::cast<std::string>(nb::str(e.value()));  // the adapter's text (tug/kernels.py)
      if (failure.empty()) failure = e.what();
    }
    pp->p = nullptr;  // views handed out stay valid (they hold their buffers); the partition does not
    if (!failure.empty()) throw compute_error(p.where_text() + " raised " + failure);
  };
}

}  // namespace

void bind_kernels(nb::module_& m) {
  nb::class_<py_column>(m, "ColumnView",
                        "One column of a partition a Python kernel receives: __array_interface__ (host), "
                        "__cuda_array_interface__ (device) and __dlpack__ over tug's buffer, without a copy.")
      .def_ro("name", &py_column::name)
      .def_ro("dtype", &py_column::type)
      .def_ro("size", &py_column::size)
      .def("__len__", [](const py_column& c) { return c.size; })
      .def_ro("null_count", &py_column::null_count)
      .def_ro("on_device", &py_column::device)
      .def_ro("writable", &py_column::writable)
      .def_prop_ro("data_ptr", [](const py_column& c) { return reinterpret_cast<uintptr_t>(c.data); })
      .def_ro("validity", &py_column::validity, "The validity bitmap's bytes (LSB first; None: no nulls).")
      .def_ro("validity_offset", &py_column::validity_offset, "The bit of the first row in `validity`.")
      .def_ro("offsets", &py_column::offsets, "Strings: the rows' int64 offsets into `chars` (size + 1).")
      .def_ro("chars", &py_column::chars, "Strings: the UTF-8 bytes.")
      .def_prop_ro("__array_interface__", [](const py_column& c) { return array_interface(c, false); })
      .def_prop_ro("__cuda_array_interface__", [](const py_column& c) { return array_interface(c, true); })
      .def("__dlpack__", [](const py_column& c, nb::handle stream, nb::handle max_version, nb::handle,
                            nb::handle) { return dlpack(c, stream, max_version); },
           "stream"_a.none() = nb::none(), "max_version"_a.none() = nb::none(), "dl_device"_a.none() = nb::none(),
           "copy"_a.none() = nb::none())
      .def("__dlpack_device__", [](const py_column& c) {
        return std::make_tuple(c.device ? k_dl_cuda : k_dl_cpu, c.device ? c.device_id : 0);
      });

  nb::class_<py_partition>(m, "KernelPartition")
      .def_prop_ro("rows", [](const py_partition& p) { return p.live().rows(); })
      .def_prop_ro("number", [](const py_partition& p) { return p.live().number(); })
      .def_prop_ro("first_row", [](const py_partition& p) { return p.live().first_row(); })
      .def_prop_ro("partition_rows", [](const py_partition& p) { return p.live().partition_rows(); })
      .def_prop_ro("on_device", [](const py_partition& p) { return p.device; })
      .def_prop_ro("stream", [](const py_partition& p) { return reinterpret_cast<uintptr_t>(p.live().stream()); })
      .def_prop_ro("kernel", [](const py_partition& p) { return p.live().kernel(); })
      .def_prop_ro("where", [](const py_partition& p) { return p.where_text; })
      .def_prop_ro("input_names", [](const py_partition& p) {
        p.live();
        return *p.names;
      })
      .def_prop_ro("output_names",
                   [](const py_partition& p) {
                     std::vector<std::string> n;
                     for (auto& s : p.live().slots()) n.push_back(s.name);
                     return n;
                   })
      .def("input", [](const py_partition& p, size_t i) { return p.input(i); })
      .def("input", [](const py_partition& p, const std::string& n) { return p.input(p.index_of(n, false)); })
      .def("output", [](const py_partition& p, size_t i) { return p.output(i); })
      .def("output", [](const py_partition& p, const std::string& n) { return p.output(p.index_of(n, true)); })
      .def("set_output", [](py_partition& p, size_t i, const data_frame& df) { p.set_output(i, df); })
      .def("set_output",
           [](py_partition& p, const std::string& n, const data_frame& df) { p.set_output(p.index_of(n, true), df); })
      .def("inputs_frame", &py_partition::inputs_frame);

  nb::class_<user_kernel>(m, "UserKernel").def("describe", &user_kernel::describe);

  m.def(
      "user_kernel",
      [](const std::string& name, std::vector<std::string> inputs,
         std::vector<std::pair<std::string, data_type>> outputs, std::vector<std::string> keep,
         std::vector<scalar> args, nb::object host, nb::object device,
         std::optional<std::tuple<std::string, std::string, std::vector<std::string>>> source,
         std::optional<std::string> cache_dir, std::tuple<int64_t, int, int64_t> launch) {
        if (inputs.empty() && (!host.is_none() || !device.is_none()))
          throw invalid_argument_error("user_kernel \"" + name + "\": a Python kernel names its input columns");
        user_kernel k(name);
        std::vector<field> fields;
        for (auto& [n, t] : outputs) fields.push_back({n, t});
        k.inputs(std::move(inputs)).outputs(schema(std::move(fields))).keep(std::move(keep)).args(std::move(args));
        if (!host.is_none()) k.host(python_functor(host, k.input_names()));
        if (!device.is_none()) k.device(python_functor(device, k.input_names()));
        if (source) {
          auto& [code, entry, options] = *source;
          k.source({code, entry, options}, cache_dir ? *cache_dir : default_kernel_cache_dir());
        }
        k.launch({std::get<0>(launch), std::get<1>(launch), std::get<2>(launch)});
        return k;
      },
      "name"_a, "inputs"_a, "outputs"_a, "keep"_a, "args"_a, "host"_a.none(), "device"_a.none(), "source"_a.none(),
      "cache_dir"_a.none(), "launch"_a);

  m.def("map_partitions", [](const lazy_frame& l, const user_kernel& k) { return l.map_partitions(k); });
  m.def("foreach_partition", &lazy_frame::foreach_partition, "lf"_a, "kernel"_a, "options"_a,
        nb::call_guard<nb::gil_scoped_release>());
  m.def("compile_cuda_source",
        [](const std::string& code, const std::string& entry, std::vector<std::string> options,
           const std::string& arch, std::optional<std::string> cache_dir) {
          compiled_kernel c;
          {
            nb::gil_scoped_release r;
            c = compile_cuda_source({code, entry, std::move(options)}, arch,
                                    cache_dir ? *cache_dir : default_kernel_cache_dir());
          }
          return std::make_tuple(c.arch, nb::bytes(c.cubin.data(), c.cubin.size()), c.log, c.cache_file,
                                 c.from_cache);
        },
        "code"_a, "entry"_a, "options"_a, "arch"_a, "cache_dir"_a.none());
  m.def("gpu_available", &gpu_available);
  m.def("_release_kernels", &py_callable::release_all, "Drops the Python functions of every kernel (at exit).");
}

}  // namespace tug
