#pragma once
// Test helpers: column builders and equality assertions that report the first differing row.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

#include "tug/api/data_frame.hpp"
#include "tug/api/lazy_frame.hpp"
#include "tug/core/scalar.hpp"
#include "tug/exec/physical.hpp"

namespace tug {

/// The Python interpreter that tests run helper scripts with (pyarrow, DuckDB): $TUG_PYTHON when set,
/// else the one CMake resolved at configure time (TUG_PYTHON_EXECUTABLE: scripts/setup.sh's .venv). Never
/// a bare `python3`, whose packages differ from machine to machine.
inline std::string test_python() {
  const char* env = std::getenv("TUG_PYTHON");
  return env && *env ? env : TUG_PYTHON_EXECUTABLE;
}

/// Options that pin the CPU engine: for tests that check CPU operator names in explain() output, which
/// differ on the GPU engine (the automatic engine picks the GPU when one is visible).
/// Unsets an environment variable for its lifetime (restoring it after), for a test of what the
/// variable would change: e.g. TUG_FORCE_EXTERNAL in a test of the in-memory paths' row order, which
/// the external paths do not keep (docs/options.md), when the suite runs under it (ctest unit.force_external).
class without_env {
 public:
  explicit without_env(const char* name) : _name(name) {
    if (const char* v = std::getenv(name)) _old = v, _had = true;
    ::unsetenv(name);
  }
  ~without_env() {
    if (_had) ::setenv(_name.c_str(), _old.c_str(), 1);
  }
  without_env(const without_env&) = delete;
  without_env& operator=(const without_env&) = delete;

 private:
  std::string _name, _old;
  bool _had = false;
};

inline engine_options cpu_engine() {
  engine_options o;
  o.engine = engine_kind::cpu;
  return o;
}

/// Options that pin the GPU engine and raise on any fallback: a CUDA test must run every node on the GPU.
inline engine_options gpu_engine() {
  engine_options o;
  o.engine = engine_kind::gpu;
  o.fallback = fallback_mode::raise;
  return o;
}

/// gpu_engine() or the CPU engine (fallback raise on both), with `target` rows a partition.
inline engine_options engine_with(bool gpu, int64_t target) {
  engine_options o = gpu_engine();
  if (!gpu) o.engine = engine_kind::cpu;
  o.target_partition_rows = target;
  return o;
}

/// True when the tests run under compute-sanitizer (TUG_TEST_SANITIZER=1, set by scripts/gpu-check.sh):
/// every kernel launch is slow there, so the CUDA tests that racecheck runs sweep fewer cases.
inline bool sanitizer_run() {
  const char* e = std::getenv("TUG_TEST_SANITIZER");
  return e && *e && std::string(e) != "0";
}

/// Asserts equal type, length and values (nulls equal nulls), naming the first differing row.
inline void expect_columns_equal(const column& a, const column& b, const std::string& what = "column") {
  ASSERT_EQ(to_string(a.type()), to_string(b.type())) << what << ": types differ";
  ASSERT_EQ(a.size(), b.size()) << what << ": lengths differ";
  for (int64_t i = 0; i < a.size(); ++i) {
    std::string x = format_value(a, i), y = format_value(b, i);
    if (x != y || a.is_null(i) != b.is_null(i)) {
      ADD_FAILURE() << what << ": first difference at row " << i << ": " << x << " vs " << y;
      return;
    }
  }
}

/// Asserts equal schemas and rows, in order.
inline void expect_frames_equal(const data_frame& a, const data_frame& b) {
  ASSERT_EQ(a.schema().to_string(), b.schema().to_string());
  table x = a.to_table(), y = b.to_table();
  ASSERT_EQ(x.num_rows(), y.num_rows());
  for (size_t c = 0; c < x.num_columns(); ++c)
    expect_columns_equal(x[c], y[c], a.schema()[c].name);
}

/// Asserts equal schemas and rows, in order, with float64 cells within a relative 1e-9 (sums, means
/// and variances round differently on the GPU) and NaN equal to NaN: for GPU-vs-CPU comparisons.
inline void expect_frames_close(const data_frame& gpu, const data_frame& cpu) {
  ASSERT_EQ(gpu.schema().to_string(), cpu.schema().to_string());
  table a = gpu.to_table(), b = cpu.to_table();
  ASSERT_EQ(a.num_rows(), b.num_rows());
  for (size_t c = 0; c < a.num_columns(); ++c) {
    if (a[c].type().id != type_id::float64) {
      expect_columns_equal(a[c], b[c], gpu.schema()[c].name);
      continue;
    }
    for (int64_t i = 0; i < a.num_rows(); ++i) {
      ASSERT_EQ(a[c].is_null(i), b[c].is_null(i)) << gpu.schema()[c].name << " row " << i;
      if (a[c].is_null(i)) continue;
      double x = a[c].value<double>(i), y = b[c].value<double>(i);
      if (x == y) continue;  // infinities too
      if (std::isnan(x) || std::isnan(y)) {
        EXPECT_EQ(std::isnan(x), std::isnan(y)) << gpu.schema()[c].name << " row " << i;
        continue;
      }
      EXPECT_NEAR(x, y, 1e-9 * std::max(1.0, std::abs(y))) << gpu.schema()[c].name << " row " << i;
    }
  }
}

/// Asserts that `lf` gives the same frame on the GPU engine (`gpu`) as on the CPU engine (`cpu`).
inline void expect_gpu_matches_cpu(const lazy_frame& lf, const engine_options& gpu = gpu_engine(),
                                   const engine_options& cpu = cpu_engine()) {
  data_frame want = lf.collect(cpu);
  data_frame got = lf.collect(gpu);
  expect_frames_equal(got, want);
}

/// The message of the compute_error that collecting `lf` with `o` raises ("" when none).
inline std::string collect_error(const lazy_frame& lf, const engine_options& o) {
  try {
    lf.collect(o);
  } catch (const compute_error& e) {
    return e.what();
  }
  return {};
}

/// A physical plan leaf with a schema, for plan tests that build operators without running them.
class schema_leaf final : public physical_node {
 public:
  explicit schema_leaf(schema s, backend b = backend::cuda) {
    output_schema = std::move(s);
    where = b;
  }
  std::string name() const override { return "schema_leaf"; }

 protected:
  std::vector<table> run(exec_context&) override { return {}; }
};

/// Rows of a frame as strings "v1|v2|...", for order-insensitive comparison after sorting.
inline std::vector<std::string> rows_of(const data_frame& f) {
  table t = f.to_table();
  std::vector<std::string> rows;
  for (int64_t r = 0; r < t.num_rows(); ++r) {
    std::string s;
    for (size_t c = 0; c < t.num_columns(); ++c)
      s += (c ? "|" : "") + format_value(t[c], r);
    rows.push_back(s);
  }
  return rows;
}

inline std::vector<std::string> sorted_rows(const data_frame& f) {
  auto r = rows_of(f);
  std::sort(r.begin(), r.end());
  return r;
}

/// Convenience column builders.
inline column i64(const std::vector<std::optional<int64_t>>& v) { return make_column<int64_t>(type_id::int64, v); }
inline column i32(const std::vector<std::optional<int32_t>>& v) { return make_column<int32_t>(type_id::int32, v); }
inline column f64(const std::vector<std::optional<double>>& v) { return make_column<double>(type_id::float64, v); }
inline column str(const std::vector<std::optional<std::string>>& v) { return make_string_column(v); }
inline column boolean(const std::vector<std::optional<bool>>& v) { return make_bool_column(v); }

}  // namespace tug
