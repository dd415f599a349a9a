// tug._tug: the nanobind bindings under the Python package (python/tug). The Python layer adds the
// Polars-like argument handling (strings as columns, Python values as literals); this layer maps it onto
// the C++ API one to one.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <system_error>
#include <thread>
#include <string>
#include <tuple>
#include <vector>

#include "arrow_c.hpp"
#include "tug/api/io.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/core/error.hpp"
#include "tug/dist/ranks.hpp"
#include "tug/expr/expr.hpp"
#include "tug/memory/memory_manager.hpp"
#include "tug/runtime/cuda_libraries.hpp"
#include "tug/runtime/query_control.hpp"
#include "tug/version.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace tug {
namespace {

// ---------------------------------------------------------------------------------------------------
// exceptions: the classes live in tug/exceptions.py and are handed over by `_register_exceptions`

struct exception_classes {
  PyObject *column_not_found = nullptr, *schema = nullptr, *compute = nullptr, *invalid_argument = nullptr,
           *io = nullptr, *out_of_memory = nullptr, *resource = nullptr, *not_supported = nullptr,
           *internal = nullptr, *cancelled = nullptr, *base = nullptr;
} g_exc;

void set_error(PyObject* cls, const char* msg) { PyErr_SetString(cls ? cls : PyExc_RuntimeError, msg); }

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const cancelled_error& e) {
    set_error(g_exc.cancelled ? g_exc.cancelled : PyExc_KeyboardInterrupt, e.what());
  } catch (const column_not_found_error& e) {
    set_error(g_exc.column_not_found, e.what());
  } catch (const type_error& e) {
    set_error(g_exc.schema, e.what());
  } catch (const compute_error& e) {
    set_error(g_exc.compute, e.what());
  } catch (const invalid_argument_error& e) {
    set_error(g_exc.invalid_argument, e.what());
  } catch (const io_error& e) {
    set_error(g_exc.io, e.what());
  } catch (const user_error& e) {
    set_error(g_exc.base, e.what());
  } catch (const memory_error& e) {
    set_error(g_exc.out_of_memory, e.what());
  } catch (const resource_error& e) {
    set_error(g_exc.resource, e.what());
  } catch (const not_implemented_error& e) {
    set_error(g_exc.not_supported, e.what());
  } catch (const internal_error& e) {
    set_error(g_exc.internal, e.what());
  } catch (const error& e) {
    set_error(g_exc.base, e.what());
  } catch (const std::bad_alloc&) {
    set_error(g_exc.out_of_memory, "out of memory (std::bad_alloc)");
  }
}

// ---------------------------------------------------------------------------------------------------
// types and literals

const std::pair<const char*, type_id> k_type_names[] = {
    {"bool", type_id::boolean},   {"int8", type_id::int8},       {"int16", type_id::int16},
    {"int32", type_id::int32},    {"int64", type_id::int64},     {"uint8", type_id::uint8},
    {"uint16", type_id::uint16},  {"uint32", type_id::uint32},   {"uint64", type_id::uint64},
    {"float32", type_id::float32}, {"float64", type_id::float64}, {"decimal", type_id::decimal128},
    {"date", type_id::date32},    {"datetime", type_id::timestamp}, {"duration", type_id::duration},
    {"string", type_id::string},
};

type_id type_id_of(const std::string& s) {
  for (auto& [n, id] : k_type_names)
    if (s == n) return id;
  throw invalid_argument_error("unknown data type \"" + s + "\"");
}
const char* name_of(type_id id) {
  for (auto& [n, i] : k_type_names)
    if (i == id) return n;
  return "?";
}
time_unit unit_of(const std::string& s) {
  if (s == "s") return time_unit::s;
  if (s == "ms") return time_unit::ms;
  if (s == "us") return time_unit::us;
  if (s == "ns") return time_unit::ns;
  throw invalid_argument_error("time unit \"" + s + "\" is not one of s, ms, us, ns");
}

data_type make_type(const std::string& id, int precision, int scale, const std::string& unit, const std::string& tz) {
  type_id t = type_id_of(id);
  if (t == type_id::decimal128) return decimal(precision, scale);
  if (t == type_id::timestamp) return timestamp(unit_of(unit), tz);
  if (t == type_id::duration) return duration(unit_of(unit));
  return t;
}

__int128 parse_int128(const std::string& s) {
  __int128 v = 0;
  size_t i = 0;
  bool neg = !s.empty() && s[0] == '-';
  if (neg) i = 1;
  if (i >= s.size()) throw invalid_argument_error("decimal literal \"" + s + "\" is no integer");
  for (; i < s.size(); ++i) {
    if (s[i] < '0' || s[i] > '9') throw invalid_argument_error("decimal literal \"" + s + "\" is no integer");
    v = v * 10 + (s[i] - '0');
  }
  return neg ? -v : v;
}

scalar make_scalar_value(const data_type& t, nb::handle v) {
  if (t.id == type_id::boolean) return scalar(t, nb::cast<bool>(v));
  if (t.id == type_id::string) return scalar(t, nb::cast<std::string>(v));
  if (t.id == type_id::decimal128) return scalar(t, parse_int128(nb::cast<std::string>(nb::str(v))));
  if (is_floating(t.id)) return scalar(t, nb::cast<double>(v));
  if (t.id == type_id::uint64) return scalar(t, nb::cast<uint64_t>(v));
  return scalar(t, nb::cast<int64_t>(v));
}

/// A scalar of `t` from a Python value: None, bool, int (ticks for temporal types, the unscaled value as a
/// decimal string for decimals), float or str.
scalar make_scalar(const data_type& t, nb::handle v) {
  if (v.is_none()) return scalar::null(t);
  try {
    return make_scalar_value(t, v);
  } catch (const nb::cast_error&) {
    throw invalid_argument_error("the value " + nb::cast<std::string>(nb::repr(v)) + " is no " + to_string(t));
  }
}

expr dynamic_null() {
  auto n = std::make_shared<expr_node>();
  n->kind = expr_kind::literal;
  n->dynamic = true;  // takes the type of the other operand, as Polars' lit(None)
  n->value = scalar::null(type_id::int64);
  n->dtype = type_id::int64;
  return expr(n);
}

join_type join_type_of(const std::string& s) {
  for (join_type j : {join_type::inner, join_type::left, join_type::right, join_type::full, join_type::semi,
                      join_type::anti, join_type::cross})
    if (s == to_string(j)) return j;
  if (s == "outer") return join_type::full;
  throw invalid_argument_error("join: how=\"" + s + "\" is not one of inner, left, right, full, semi, anti, cross");
}
unique_keep keep_of(const std::string& s) {
  for (unique_keep k : {unique_keep::any, unique_keep::first, unique_keep::last, unique_keep::none})
    if (s == to_string(k)) return k;
  throw invalid_argument_error("unique: keep=\"" + s + "\" is not one of any, first, last, none");
}

std::string engine_name(engine_kind k) {
  switch (k) {
    case engine_kind::automatic: return "auto";
    case engine_kind::cpu: return "cpu";
    case engine_kind::gpu: return "gpu";
  }
  return "?";
}
engine_kind engine_of(const std::string& s) {
  if (s == "auto" || s == "automatic") return engine_kind::automatic;
  if (s == "cpu") return engine_kind::cpu;
  if (s == "gpu") return engine_kind::gpu;
  throw invalid_argument_error("engine=\"" + s + "\" is not one of auto (automatic), cpu, gpu");
}
std::string fallback_name(fallback_mode m) {
  switch (m) {
    case fallback_mode::warn: return "warn";
    case fallback_mode::raise: return "raise";
    case fallback_mode::silent: return "silent";
  }
  return "?";
}
fallback_mode fallback_of(const std::string& s) {
  if (s == "warn") return fallback_mode::warn;
  if (s == "raise") return fallback_mode::raise;
  if (s == "silent") return fallback_mode::silent;
  throw invalid_argument_error("fallback=\"" + s + "\" is not one of warn, raise, silent");
}

std::vector<std::pair<std::string, data_type>> schema_items(const schema& s) {
  std::vector<std::pair<std::string, data_type>> out;
  for (auto& f : s) out.emplace_back(f.name, f.type);
  return out;
}

// ---------------------------------------------------------------------------------------------------
// Arrow PyCapsules (the Arrow PyCapsule interface: "arrow_schema", "arrow_array", "arrow_array_stream")

void stream_capsule_free(PyObject* cap) {
  auto* s = static_cast<ArrowArrayStream*>(PyCapsule_GetPointer(cap, "arrow_array_stream"));
  if (!s) {
    PyErr_Clear();
    return;
  }
  if (s->release) s->release(s);
  delete s;
}
void schema_capsule_free(PyObject* cap) {
  auto* s = static_cast<ArrowSchema*>(PyCapsule_GetPointer(cap, "arrow_schema"));
  if (!s) {
    PyErr_Clear();
    return;
  }
  if (s->release) s->release(s);
  delete s;
}

template <typename T>
T* capsule_pointer(nb::handle cap, const char* name) {
  void* p = PyCapsule_GetPointer(cap.ptr(), name);
  if (!p) {
    PyErr_Clear();
    throw invalid_argument_error(std::string("from_arrow: expected a PyCapsule named \"") + name + "\"");
  }
  return static_cast<T*>(p);
}

nb::object stream_capsule(const data_frame& df) {
  auto* s = new ArrowArrayStream{};
  arrow_c::export_stream(df, s);
  PyObject* cap = PyCapsule_New(s, "arrow_array_stream", stream_capsule_free);
  if (!cap) {
    s->release(s);
    delete s;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

nb::object schema_capsule(const schema& sch) {
  auto* s = new ArrowSchema{};
  arrow_c::export_schema(sch, s);
  PyObject* cap = PyCapsule_New(s, "arrow_schema", schema_capsule_free);
  if (!cap) {
    s->release(s);
    delete s;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

/// Buffer addresses of a frame's columns (the first partition's; for the zero-copy tests): per column
/// (name, values address, validity address or 0).
std::vector<std::tuple<std::string, uintptr_t, uintptr_t>> buffer_addresses(const data_frame& df) {
  std::vector<std::tuple<std::string, uintptr_t, uintptr_t>> out;
  if (df.partitions().empty()) return out;
  const table& t = df.partitions()[0];
  for (size_t i = 0; i < t.num_columns(); ++i) {
    const column& c = t[i];
    uintptr_t v = 0, m = 0;
    if (c.data_buffer()) {
      auto base = reinterpret_cast<uintptr_t>(c.data_buffer()->data());
      v = c.type().id == type_id::string ? base : base + static_cast<uintptr_t>(c.offset() * size_of(c.type().id));
    }
    if (c.validity_buffer()) m = reinterpret_cast<uintptr_t>(c.validity_buffer()->data());
    out.emplace_back(df.schema()[i].name, v, m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------
// running a query: on a thread of its own, so that the Python thread can watch for Ctrl-C and show progress

nb::dict progress_dict(const query_progress& p) {
  nb::dict d;
  d["rows_scanned"] = p.rows_scanned;
  d["partitions_scanned"] = p.partitions_scanned;
  d["rows_total"] = p.rows_total;
  d["operators_done"] = p.operators_done;
  d["operators_total"] = p.operators_total;
  d["spilled_bytes"] = p.spilled_bytes;
  nb::dict moved;
  for (size_t i = 0; i < num_transfer_directions; ++i)
    moved[to_string(static_cast<transfer_direction>(i))] = p.bytes_moved[i];
  d["bytes_moved"] = moved;
  return d;
}

/// Threads that run queries for Python callers, kept for reuse: a fresh thread a query cost about 0.1 ms
/// (the thread and its first allocations), as much as a 10k-row query takes. A runner is idle or runs one
/// query; submit starts another runner when none is free, so queries from several Python threads run at once.
class query_runners {
 public:
  /// Runs `job` on a free runner. @throws resource_error when no thread can be started.
  void submit(std::function<void()> job) {
    std::lock_guard<std::mutex> g(_mu);
    _jobs.push_back(std::move(job));
    if (static_cast<int64_t>(_jobs.size()) > _idle) {
      try {
        std::thread([this] { loop(); }).detach();  // lives as long as the process, idle between queries
      } catch (const std::system_error& e) {
        _jobs.pop_back();
        throw resource_error(std::string("could not start a thread to run the query: ") + e.what());
      }
    }
    _cv.notify_one();
  }
  static query_runners& get() {
    static auto* runners = new query_runners();  // never destroyed: its threads outlive static destruction
    return *runners;
  }

 private:
  void loop() {
    std::unique_lock<std::mutex> lock(_mu);
    for (;;) {
      ++_idle;
      _cv.wait(lock, [&] { return !_jobs.empty(); });
      --_idle;
      std::function<void()> job = std::move(_jobs.front());
      _jobs.pop_front();
      lock.unlock();
      job();  // never throws: run_controlled's job catches everything
      job = nullptr;
      lock.lock();
    }
  }
  std::mutex _mu;
  std::condition_variable _cv;
  std::deque<std::function<void()>> _jobs;
  int64_t _idle = 0;
};

/// Runs `work` (a query) on a query_runners thread under a query_control, while the calling thread waits
/// with the GIL released. Every `interval` seconds it takes the GIL, runs Python's signal handlers
/// (PyErr_CheckSignals: Ctrl-C's KeyboardInterrupt) and calls `progress(dict, False)` when given; at the
/// end `progress(dict, True)`. An exception there (KeyboardInterrupt) cancels the query; once the query's
/// thread has stopped, the call raises tug.CancelledError (a KeyboardInterrupt) when the query stopped
/// at a cancellation point, else the exception itself. The query's own exceptions come through as they are.
template <typename R>
R run_controlled(const std::function<R()>& work, nb::handle progress, double interval) {
  query_control control;
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  std::optional<R> result;
  std::exception_ptr error;
  query_runners::get().submit([&] {
    {
      query_control::scope s(&control);
      try {
        result.emplace(work());
      } catch (...) {
        error = std::current_exception();
      }
    }
    std::lock_guard<std::mutex> g(mu);  // the last access to this frame: it may end once this unlocks
    done = true;
    cv.notify_all();
  });
  const auto wait = std::chrono::duration<double>(interval > 0 ? interval : 0.05);
  std::optional<nb::python_error> interrupt;  // Ctrl-C, or what the progress callback raised
  for (;;) {
    bool finished;
    {
      nb::gil_scoped_release nogil;
      std::unique_lock<std::mutex> lock(mu);
      finished = cv.wait_for(lock, wait, [&] { return done; });
    }
    if (finished) break;
    try {
      if (PyErr_CheckSignals() != 0) throw nb::python_error();
      if (progress.is_valid() && !progress.is_none()) progress(progress_dict(control.progress()), false);
    } catch (nb::python_error& e) {
      interrupt.emplace(std::move(e));
      control.cancel();
      break;
    }
  }
  {
    nb::gil_scoped_release nogil;
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return done; });
  }
  if (interrupt) {
    if (error) {
      try {
        std::rethrow_exception(error);
      } catch (const cancelled_error&) {
        // named by what stopped it: "KeyboardInterrupt", or the callback's "Stop: enough"
        std::string why = nb::cast<std::string>(nb::handle(interrupt->type()).attr("__name__"));
        std::string msg = nb::cast<std::string>(nb::str(interrupt->value()));
        throw cancelled_error("the query was cancelled (" + why + (msg.empty() ? "" : ": " + msg) + ")");
      } catch (...) {
      }
    }
    throw std::move(*interrupt);
  }
  if (error) std::rethrow_exception(error);
  if (progress.is_valid() && !progress.is_none()) progress(progress_dict(control.progress()), true);
  return std::move(*result);
}

}  // namespace

void run_controlled_call(const std::function<void()>& work, nb::handle progress, double interval) {
  run_controlled<bool>([&] { return work(), true; }, progress, interval);
}

void bind_kernels(nb::module_& m);    // kernels.cpp: user kernels from Python
void bind_cassandra(nb::module_& m);  // cassandra.cpp: scan_cassandra, sink_cassandra

}  // namespace tug

NB_MODULE(_tug, m) {
  using namespace tug;
  m.attr("__version__") = TUG_VERSION;
#ifdef TUG_WITH_CUDA
  m.attr("built_with_cuda") = true;
#else
  m.attr("built_with_cuda") = false;
#endif

  // CUDA libraries opened at run time (include/tug/runtime/cuda_libraries.hpp)
  m.def("add_cuda_library_directory", &add_cuda_library_directory, "dir"_a);
  m.def("nvrtc_available", [] {
    std::string why;
    const bool ok = nvrtc_available(&why);
    return std::make_pair(ok, why);
  });
  m.def("nvcomp_available", [] {
    std::string why;
    const bool ok = nvcomp_available(&why);
    return std::make_pair(ok, why);
  });

  nb::register_exception_translator(translate);
  m.def("_register_exceptions", [](nb::dict d) {
    auto get = [&](const char* k) {
      PyObject* o = nb::object(d[k]).release().ptr();  // kept for the process's lifetime
      return o;
    };
    g_exc.base = get("TugError");
    g_exc.column_not_found = get("ColumnNotFoundError");
    g_exc.schema = get("SchemaError");
    g_exc.compute = get("ComputeError");
    g_exc.invalid_argument = get("InvalidArgumentError");
    g_exc.io = get("IOError");
    g_exc.out_of_memory = get("OutOfMemoryError");
    g_exc.resource = get("ResourceError");
    g_exc.not_supported = get("NotSupportedError");
    g_exc.internal = get("InternalError");
    g_exc.cancelled = get("CancelledError");
  });

  // ----- data types
  nb::class_<data_type>(m, "DataType")
      .def(nb::init<>())
      .def("__init__",
           [](data_type* t, const std::string& id, int precision, int scale, const std::string& unit,
              const std::string& tz) { new (t) data_type(make_type(id, precision, scale, unit, tz)); },
           "id"_a, "precision"_a = 0, "scale"_a = 0, "unit"_a = "us", "tz"_a = "")
      .def_prop_ro("id", [](const data_type& t) { return std::string(name_of(t.id)); })
      .def_prop_ro("precision", [](const data_type& t) { return static_cast<int>(t.precision); })
      .def_prop_ro("scale", [](const data_type& t) { return static_cast<int>(t.scale); })
      .def_prop_ro("unit", [](const data_type& t) { return to_string(t.unit); })
      .def_prop_ro("tz", [](const data_type& t) { return t.tz; })
      .def("__str__", [](const data_type& t) { return to_string(t); })
      .def("__eq__", [](const data_type& a, const data_type& b) { return a == b; });

  // ----- expressions
  nb::class_<expr>(m, "Expr")
      .def("__str__", [](const expr& e) { return to_string(e); })
      .def("output_name", [](const expr& e) { return output_name(e); })
      .def("meta_eq", [](const expr& a, const expr& b) { return equal(a, b); })
      .def("alias", &expr::alias)
      .def("cast", &expr::cast, "dtype"_a, "strict"_a = true)
      .def("add", [](const expr& a, const expr& b) { return a + b; })
      .def("sub", [](const expr& a, const expr& b) { return a - b; })
      .def("mul", [](const expr& a, const expr& b) { return a * b; })
      .def("truediv", [](const expr& a, const expr& b) { return a / b; })
      .def("mod", [](const expr& a, const expr& b) { return a % b; })
      .def("neg", [](const expr& a) { return -a; })
      .def("floor_div", &expr::floor_div)
      .def("pow", &expr::pow)
      .def("eq", &expr::eq)
      .def("ne", &expr::ne)
      .def("lt", &expr::lt)
      .def("le", &expr::le)
      .def("gt", &expr::gt)
      .def("ge", &expr::ge)
      .def("and_", &expr::and_)
      .def("or_", &expr::or_)
      .def("xor", &expr::xor_)
      .def("not_", &expr::not_)
      .def("is_null", &expr::is_null)
      .def("is_not_null", &expr::is_not_null)
      .def("is_nan", &expr::is_nan)
      .def("fill_null", &expr::fill_null)
      .def("is_in", &expr::is_in)
      .def("is_between", &expr::is_between, "lo"_a, "hi"_a, "closed"_a = "both")
      .def("abs", &expr::abs)
      .def("round", &expr::round, "decimals"_a = 0)
      .def("floor", &expr::floor)
      .def("ceil", &expr::ceil)
      .def("sqrt", &expr::sqrt)
      .def("log", &expr::log, "base"_a = 0.0)
      .def("exp", &expr::exp)
      .def("str_len_chars", &expr::str_len_chars)
      .def("str_len_bytes", &expr::str_len_bytes)
      .def("str_starts_with", nb::overload_cast<const expr&>(&expr::str_starts_with, nb::const_))
      .def("str_ends_with", nb::overload_cast<const expr&>(&expr::str_ends_with, nb::const_))
      .def("str_contains", nb::overload_cast<const expr&, bool>(&expr::str_contains, nb::const_), "pattern"_a,
           "literal"_a)
      .def("str_slice", &expr::str_slice, "offset"_a, "length"_a = -1)
      .def("str_to_upper", &expr::str_to_upper)
      .def("str_to_lower", &expr::str_to_lower)
      .def("str_to_title", &expr::str_to_title)
      .def("str_strip", &expr::str_strip, "chars"_a = "")
      .def("dt_year", &expr::dt_year)
      .def("dt_month", &expr::dt_month)
      .def("dt_day", &expr::dt_day)
      .def("dt_hour", &expr::dt_hour)
      .def("dt_minute", &expr::dt_minute)
      .def("dt_second", &expr::dt_second)
      .def("dt_weekday", &expr::dt_weekday)
      .def("dt_truncate", &expr::dt_truncate)
      .def("dt_date", &expr::dt_date)
      .def("dt_total_days", &expr::dt_total_days)
      .def("dt_total_seconds", &expr::dt_total_seconds)
      .def("dt_total_milliseconds", &expr::dt_total_milliseconds)
      .def("sum", &expr::sum)
      .def("mean", &expr::mean)
      .def("min", &expr::min)
      .def("max", &expr::max)
      .def("count", &expr::count)
      .def("n_unique", &expr::n_unique)
      .def("first", &expr::first)
      .def("last", &expr::last)
      .def("std", &expr::std, "ddof"_a = 1)
      .def("var", &expr::var, "ddof"_a = 1)
      .def("median", &expr::median)
      .def("quantile", &expr::quantile, "q"_a, "interpolation"_a = "nearest")
      .def("any", &expr::any)
      .def("all", &expr::all)
      .def("over", nb::overload_cast<std::vector<expr>>(&expr::over, nb::const_));

  nb::class_<scalar>(m, "Scalar")
      .def("__init__", [](scalar* s, const data_type& t, nb::handle v) { new (s) scalar(make_scalar(t, v)); },
           "dtype"_a, "value"_a.none())
      .def("__str__", &scalar::to_string);

  m.def("col", &col);
  m.def("lit", [](const scalar& v) { return lit(v); });
  m.def("lit_dynamic_int", [](int64_t v) { return expr(v); });
  m.def("lit_dynamic_float", [](double v) { return expr(v); });
  m.def("lit_dynamic_null", &dynamic_null);
  m.def("len", &len);
  m.def("coalesce", &coalesce);
  m.def("concat_str", &concat_str, "exprs"_a, "separator"_a = "");
  m.def("when_then", [](const std::vector<std::pair<expr, expr>>& branches, nb::handle otherwise) {
    then_builder t(branches);
    if (otherwise.is_none()) return static_cast<expr>(t);
    return t.otherwise(nb::cast<expr>(otherwise));
  }, "branches"_a, "otherwise"_a.none());

  // ----- options
  nb::class_<optimizer_flags>(m, "OptimizerFlags")
      .def(nb::init<>())
      .def_rw("constant_folding", &optimizer_flags::constant_folding)
      .def_rw("predicate_pushdown", &optimizer_flags::predicate_pushdown)
      .def_rw("projection_pushdown", &optimizer_flags::projection_pushdown)
      .def_rw("slice_pushdown", &optimizer_flags::slice_pushdown)
      .def_rw("common_subplan", &optimizer_flags::common_subplan)
      .def_rw("late_materialization", &optimizer_flags::late_materialization);
  nb::class_<engine_options>(m, "EngineOptions")
      .def(nb::init<>())
      .def_prop_rw(
          "engine", [](const engine_options& o) { return engine_name(o.engine); },
          [](engine_options& o, const std::string& s) { o.engine = engine_of(s); })
      .def_rw("target_partition_rows", &engine_options::target_partition_rows)
      .def_rw("target_partition_size", &engine_options::target_partition_size)
      .def_rw("num_threads", &engine_options::num_threads)
      .def_rw("memory_limit", &engine_options::memory_limit)
      .def_rw("spill_device_limit", &engine_options::spill_device_limit)
      .def_rw("pinned_memory", &engine_options::pinned_memory)
      .def_rw("gpu_parquet_reader", &engine_options::gpu_parquet_reader)
      .def_rw("gpu_parquet_device_decompression", &engine_options::gpu_parquet_device_decompression)
      .def_rw("host_spill_limit", &engine_options::host_spill_limit)
      .def_rw("spill_directory", &engine_options::spill_directory)
      .def_rw("spill_disk_limit", &engine_options::spill_disk_limit)
      .def_rw("spill_everything", &engine_options::spill_everything)
      .def_rw("force_external", &engine_options::force_external)
      .def_rw("num_streams", &engine_options::num_streams)
      .def_rw("statistics", &engine_options::statistics)
      .def_prop_rw(
          "fallback", [](const engine_options& o) { return fallback_name(o.fallback); },
          [](engine_options& o, const std::string& s) { o.fallback = fallback_of(s); })
      .def_rw("broadcast_limit", &engine_options::broadcast_limit)
      .def_rw("collective_timeout", &engine_options::collective_timeout)
      .def_rw("collect_on_every_rank", &engine_options::collect_on_every_rank)
      .def_rw("gpus", &engine_options::gpus)
      .def_rw("optimizer", &engine_options::optimizer)
      .def_rw("check_optimizer_schema", &engine_options::check_optimizer_schema)
      .def("validate", [](const engine_options& o) { validate_options(o); });

  // ----- results
  nb::class_<operator_stats>(m, "OperatorStats")
      .def_ro("name", &operator_stats::name)
      .def_ro("rows_in", &operator_stats::rows_in)
      .def_ro("rows_out", &operator_stats::rows_out)
      .def_ro("partitions_out", &operator_stats::partitions_out)
      .def_ro("bytes_out", &operator_stats::bytes_out)
      .def_ro("seconds", &operator_stats::seconds)
      .def_ro("device_waits", &operator_stats::device_waits)
      .def_ro("wait_seconds", &operator_stats::wait_seconds)
      .def_ro("bytes_in", &operator_stats::bytes_in)
      .def_ro("peak_host_memory", &operator_stats::peak_host_memory)
      .def_ro("peak_device_memory", &operator_stats::peak_device_memory)
      .def_prop_ro("spilled_from_device", &operator_stats::spilled_from_device)
      .def_prop_ro("spilled_to_disk", &operator_stats::spilled_to_disk);

  nb::class_<data_frame>(m, "DataFrame")
      .def_prop_ro("num_rows", &data_frame::num_rows)
      .def_prop_ro("num_partitions", [](const data_frame& d) { return d.partitions().size(); })
      .def_prop_ro("schema", [](const data_frame& d) { return schema_items(d.schema()); })
      .def("lazy", &data_frame::lazy)
      .def("to_string", &data_frame::to_string, "max_rows"_a = 10)
      .def("to_csv", &data_frame::to_csv)
      .def("repartition", &data_frame::repartition)
      .def("__arrow_c_stream__", [](const data_frame& d, nb::handle) { return stream_capsule(d); },
           "requested_schema"_a.none() = nb::none())
      .def("__arrow_c_schema__", [](const data_frame& d) { return schema_capsule(d.schema()); })
      .def("_buffer_addresses", &buffer_addresses)
      .def_static("from_arrow_stream",
                  [](nb::handle cap) {
                    auto* s = capsule_pointer<ArrowArrayStream>(cap, "arrow_array_stream");
                    return arrow_c::import_stream(s);
                  })
      .def_static("from_arrow_array", [](nb::handle schema_cap, nb::handle array_cap) {
        auto* s = capsule_pointer<ArrowSchema>(schema_cap, "arrow_schema");
        auto* a = capsule_pointer<ArrowArray>(array_cap, "arrow_array");
        return arrow_c::import_array(s, a);
      });

  nb::class_<query_result>(m, "QueryResult")
      .def_ro("frame", &query_result::frame)
      .def_ro("physical_plan", &query_result::physical_plan)
      .def_ro("statistics", &query_result::statistics)
      .def_ro("statistics_json", &query_result::statistics_json)
      .def_ro("fallbacks", &query_result::fallbacks)
      .def_ro("operators", &query_result::operators)
      .def_ro("peak_memory", &query_result::peak_memory)
      .def_ro("total_seconds", &query_result::total_seconds);

  // ----- ranks that a launcher tug does not know started (tug.ray): a communicator over connected sockets
  nb::class_<dist::communicator>(m, "Ranks")
      .def_prop_ro("rank", &dist::communicator::rank)
      .def_prop_ro("size", &dist::communicator::size)
      .def("describe", &dist::communicator::describe);
  m.def(
      "socket_ranks",
      [](int rank, std::vector<int> fds) {
        // this process's end of a connected stream socket to each other rank (-1 for itself); owned from here
        if (rank < 0 || rank >= static_cast<int>(fds.size()) || fds[static_cast<size_t>(rank)] != -1)
          throw invalid_argument_error("socket_ranks: rank " + std::to_string(rank) + " of " +
                                       std::to_string(fds.size()) + " needs -1 in its own place among the sockets");
        return dist::socket_ranks(rank, std::move(fds));
      },
      "rank"_a, "fds"_a);

  // ----- lazy frames
  nb::class_<group_by_builder>(m, "GroupBy").def("agg", &group_by_builder::agg);
  nb::class_<lazy_frame>(m, "LazyFrame")
      .def_prop_ro("schema", [](const lazy_frame& l) { return schema_items(l.schema()); })
      .def("filter", &lazy_frame::filter)
      .def("select", &lazy_frame::select)
      .def("with_columns", &lazy_frame::with_columns)
      .def("group_by",
           nb::overload_cast<std::vector<expr>, bool>(&lazy_frame::group_by, nb::const_), "keys"_a,
           "maintain_order"_a = false)
      .def(
          "join",
          [](const lazy_frame& l, const lazy_frame& r, std::vector<expr> left_on, std::vector<expr> right_on,
             const std::string& how, std::string suffix) {
            join_type j = join_type_of(how);
            if (j == join_type::cross) return l.cross_join(r, std::move(suffix));
            return l.join(r, std::move(left_on), std::move(right_on), j, std::move(suffix));
          },
          "other"_a, "left_on"_a, "right_on"_a, "how"_a = "inner", "suffix"_a = "_right")
      .def(
          "sort",
          [](const lazy_frame& l, std::vector<expr> by, std::vector<bool> descending, std::vector<bool> nulls_last,
             bool maintain_order) {
            return l.sort(std::move(by), sort_options{std::move(descending), std::move(nulls_last), maintain_order});
          },
          "by"_a, "descending"_a, "nulls_last"_a, "maintain_order"_a = false)
      .def("slice", &lazy_frame::slice, "offset"_a, "length"_a = -1)
      .def(
          "unique",
          [](const lazy_frame& l, std::vector<std::string> subset, const std::string& keep, bool maintain_order) {
            return l.unique(std::move(subset), keep_of(keep), maintain_order);
          },
          "subset"_a, "keep"_a = "any", "maintain_order"_a = false)
      .def("rename", &lazy_frame::rename)
      .def("drop", &lazy_frame::drop)
      .def("with_row_index", &lazy_frame::with_row_index, "name"_a = "index", "offset"_a = 0)
      .def("explain", &lazy_frame::explain, "options"_a, nb::call_guard<nb::gil_scoped_release>())
      // the queries run on a thread of their own (run_controlled): Ctrl-C cancels them, `progress` watches them
      .def(
          "collect",
          [](const lazy_frame& l, const engine_options& o, nb::handle progress, double interval) {
            return run_controlled<data_frame>([&] { return l.collect(o); }, progress, interval);
          },
          "options"_a, "progress"_a.none() = nb::none(), "interval"_a = 0.05)
      .def(
          "_collect_seconds",
          [](const lazy_frame& l, const engine_options& o, int reps) {
            // the C++ API alone (no Python, no thread of its own): bench/python_overhead.py compares with it
            std::vector<double> out;
            for (int i = 0; i < reps; ++i) {
              const auto t0 = std::chrono::steady_clock::now();
              l.collect(o);
              out.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
            }
            return out;
          },
          "options"_a, "reps"_a, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "collect_as_rank",
          [](const lazy_frame& l, const engine_options& o, std::shared_ptr<dist::communicator> ranks) {
            return dist::collect_as_rank(l, o, std::move(ranks));
          },
          "options"_a, "ranks"_a, nb::call_guard<nb::gil_scoped_release>())
      .def(
          "profile",
          [](const lazy_frame& l, const engine_options& o, nb::handle progress, double interval) {
            return run_controlled<query_result>([&] { return l.profile(o); }, progress, interval);
          },
          "options"_a, "progress"_a.none() = nb::none(), "interval"_a = 0.05)
      .def(
          "sink_parquet",
          [](const lazy_frame& l, const std::string& path, const std::string& codec, int64_t row_group_rows,
             bool statistics, const engine_options& o, nb::handle progress, double interval) {
            io::parquet::write_options w;
            w.codec = codec;
            if (row_group_rows > 0) w.row_group_rows = row_group_rows;
            w.statistics = statistics;
            run_controlled<bool>([&] { return sink_parquet(l, path, w, o), true; }, progress, interval);
          },
          "path"_a, "codec"_a, "row_group_rows"_a, "statistics"_a, "options"_a, "progress"_a.none() = nb::none(),
          "interval"_a = 0.05)
      .def(
          "sink_csv",
          [](const lazy_frame& l, const std::string& path, bool header, const std::string& sep,
             const engine_options& o, nb::handle progress, double interval) {
            io::csv::csv_options c;
            c.has_header = header;
            if (sep.size() != 1) throw invalid_argument_error("sink_csv: separator must be one character");
            c.delimiter = sep[0];
            run_controlled<bool>([&] { return sink_csv(l, path, c, o), true; }, progress, interval);
          },
          "path"_a, "include_header"_a, "separator"_a, "options"_a, "progress"_a.none() = nb::none(),
          "interval"_a = 0.05);
  m.def("concat", &concat);

  // ----- sources
  m.def(
      "scan_parquet",
      [](const std::string& path, bool skip_unsupported) {
        io::parquet::read_options o;
        o.skip_unsupported_columns = skip_unsupported;
        return scan_parquet(path, o);
      },
      "path"_a, "skip_unsupported_columns"_a = false);
  m.def(
      "scan_csv",
      [](const std::string& path, bool has_header, const std::string& sep, const std::string& quote,
         std::vector<std::string> null_values, const std::string& comment, int64_t skip_rows,
         int64_t infer_schema_rows, std::vector<std::pair<std::string, data_type>> overrides,
         bool skip_malformed, int64_t n_rows, const std::string& encoding) {
        auto one_char = [](const std::string& s, const char* what) -> char {
          if (s.size() > 1) throw invalid_argument_error(std::string("scan_csv: ") + what + " must be one character");
          return s.empty() ? 0 : s[0];
        };
        io::csv::csv_options o;
        o.has_header = has_header;
        o.delimiter = one_char(sep, "separator");
        if (!o.delimiter) throw invalid_argument_error("scan_csv: separator must be one character");
        o.quote = one_char(quote, "quote_char");
        o.null_values = std::move(null_values);
        o.comment = one_char(comment, "comment_prefix");
        o.skip_rows = skip_rows;
        o.infer_schema_rows = infer_schema_rows;
        for (auto& [n, t] : overrides) o.schema_overrides.push_back({n, t});
        o.skip_malformed = skip_malformed;
        o.n_rows = n_rows;
        o.encoding = encoding;
        return scan_csv(path, o);
      },
      "path"_a, "has_header"_a, "separator"_a, "quote_char"_a, "null_values"_a, "comment_prefix"_a, "skip_rows"_a,
      "infer_schema_length"_a, "schema_overrides"_a, "ignore_errors"_a, "n_rows"_a, "encoding"_a);

  bind_kernels(m);
  bind_cassandra(m);
}
