// Validation of engine_options and of the environment variables the engine reads: the one check a
// query's options pass before anything runs (plan/lower calls it).
#include "tug/runtime/options.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

#include "tug/core/error.hpp"
#include "tug/memory/device.hpp"

namespace tug {

namespace {

[[noreturn]] void bad(const std::string& option, const std::string& value, const std::string& allowed) {
  throw invalid_argument_error(option + " = " + value + ": " + allowed);
}

void at_least(const char* option, int64_t value, int64_t min, const std::string& why = "") {
  if (value < min) bad(option, std::to_string(value), "must be at least " + std::to_string(min) + why);
}

/// The value of environment variable `name`, or nullptr when it is unset or empty.
const char* env(const char* name) {
  const char* v = std::getenv(name);
  return v && *v ? v : nullptr;
}

/// A byte count with an optional unit: "123456", "64MiB", "1.5 GB" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB).
int64_t parse_byte_count(const char* var, const std::string& text) {
  auto fail = [&]() -> int64_t {
    bad(var, "\"" + text + "\"", "must be a byte count such as 123456, 64MiB or 2GB");
  };
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(text, &pos);
  } catch (const std::exception&) {
    return fail();
  }
  std::string unit = text.substr(pos);
  while (!unit.empty() && unit.front() == ' ')
    unit.erase(0, 1);
  static const std::pair<const char*, double> units[] = {
      {"", 1},          {"B", 1},         {"KB", 1e3},       {"MB", 1e6},       {"GB", 1e9},
      {"TB", 1e12},     {"KiB", 1024.0},  {"MiB", 1048576.0}, {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}};
  for (auto& [name, mult] : units)
    if (unit == name) {
      if (!(v >= 0) || v * mult > 9.2e18) return fail();
      return static_cast<int64_t>(v * mult);
    }
  return fail();
}

int64_t parse_integer(const char* var, const std::string& text) {
  try {
    size_t pos = 0;
    long long v = std::stoll(text, &pos);
    if (pos == text.size()) return v;
  } catch (const std::exception&) {
  }
  bad(var, "\"" + text + "\"", "must be an integer");
}

double parse_number(const char* var, const std::string& text) {
  try {
    size_t pos = 0;
    const double v = std::stod(text, &pos);
    if (pos == text.size()) return v;
  } catch (const std::exception&) {
  }
  bad(var, "\"" + text + "\"", "must be a number");
}

bool parse_flag(const char* var, const std::string& text) {
  if (text == "1" || text == "true" || text == "on") return true;
  if (text == "0" || text == "false" || text == "off") return false;
  bad(var, "\"" + text + "\"", "must be 1, true, on, 0, false or off");
}

}  // namespace

engine_options::engine_options() {
  // TUG_ENGINE keeps its own meaning (cpu only; checked by validate_options)
  if (const char* e = env("TUG_TARGET_PARTITION_ROWS")) target_partition_rows = parse_integer("TUG_TARGET_PARTITION_ROWS", e);
  if (const char* e = env("TUG_TARGET_PARTITION_SIZE")) target_partition_size = parse_byte_count("TUG_TARGET_PARTITION_SIZE", e);
  if (const char* e = env("TUG_NUM_THREADS")) num_threads = static_cast<int>(parse_integer("TUG_NUM_THREADS", e));
  if (const char* e = env("TUG_MEMORY_LIMIT")) memory_limit = parse_byte_count("TUG_MEMORY_LIMIT", e);
  if (const char* e = env("TUG_SPILL_DEVICE_LIMIT")) spill_device_limit = e;  // checked by validate_options
  if (const char* e = env("TUG_PINNED_MEMORY")) pinned_memory = parse_flag("TUG_PINNED_MEMORY", e);
  if (const char* e = env("TUG_GPU_PARQUET_READER")) gpu_parquet_reader = parse_flag("TUG_GPU_PARQUET_READER", e);
  if (const char* e = env("TUG_GPU_PARQUET_DEVICE_DECOMPRESSION"))
    gpu_parquet_device_decompression = parse_flag("TUG_GPU_PARQUET_DEVICE_DECOMPRESSION", e);
  if (const char* e = env("TUG_HOST_SPILL_LIMIT")) host_spill_limit = parse_byte_count("TUG_HOST_SPILL_LIMIT", e);
  if (const char* e = env("TUG_SPILL_DIRECTORY")) spill_directory = e;
  if (const char* e = env("TUG_SPILL_DISK_LIMIT")) spill_disk_limit = parse_byte_count("TUG_SPILL_DISK_LIMIT", e);
  if (const char* e = env("TUG_SPILL_EVERYTHING")) spill_everything = parse_flag("TUG_SPILL_EVERYTHING", e);
  if (const char* e = env("TUG_FORCE_EXTERNAL")) force_external = parse_flag("TUG_FORCE_EXTERNAL", e);
  if (const char* e = env("TUG_NUM_STREAMS")) num_streams = static_cast<int>(parse_integer("TUG_NUM_STREAMS", e));
  if (const char* e = env("TUG_STATISTICS")) statistics = parse_flag("TUG_STATISTICS", e);
  if (const char* e = env("TUG_FALLBACK")) {
    const std::string v = e;
    if (v == "warn") fallback = fallback_mode::warn;
    else if (v == "raise") fallback = fallback_mode::raise;
    else if (v == "silent") fallback = fallback_mode::silent;
    else bad("TUG_FALLBACK", "\"" + v + "\"", "must be warn, raise or silent");
  }
  if (const char* e = env("TUG_BROADCAST_LIMIT")) broadcast_limit = parse_integer("TUG_BROADCAST_LIMIT", e);
  if (const char* e = env("TUG_COLLECTIVE_TIMEOUT")) collective_timeout = parse_number("TUG_COLLECTIVE_TIMEOUT", e);
  if (const char* e = env("TUG_COLLECT_ON_EVERY_RANK"))
    collect_on_every_rank = parse_flag("TUG_COLLECT_ON_EVERY_RANK", e);
  if (const char* e = env("TUG_GPUS")) gpus = std::string(e) == "all" ? -1 : static_cast<int>(parse_integer("TUG_GPUS", e));
}

void validate_options(const engine_options& o) {
  if (o.engine != engine_kind::automatic && o.engine != engine_kind::cpu && o.engine != engine_kind::gpu)
    bad("engine", std::to_string(static_cast<int>(o.engine)), "must be automatic, cpu or gpu");
  at_least("target_partition_rows", o.target_partition_rows, 0, " (0 = automatic)");
  if (o.target_partition_size != 0 && o.target_partition_size < min_target_partition_size)
    bad("target_partition_size", std::to_string(o.target_partition_size),
        "must be 0 (use rows: target_partition_rows) or at least " + std::to_string(min_target_partition_size) +
            " bytes (16 KiB)");
  at_least("num_threads", o.num_threads, 0, " (0 = all hardware threads)");
  at_least("gpus", o.gpus, -1, " (-1 = every GPU of the host, 0 or 1 = this process alone)");
  if (o.num_threads > max_num_threads)
    bad("num_threads", std::to_string(o.num_threads), "must be at most " + std::to_string(max_num_threads));
  at_least("memory_limit", o.memory_limit, 0, " (0 = unlimited)");
  parse_device_limit(o.spill_device_limit, int64_t{1} << 40);  // the syntax; the device's size comes later
  at_least("host_spill_limit", o.host_spill_limit, 0, " (0 = unlimited)");
  at_least("spill_disk_limit", o.spill_disk_limit, 0, " (0 = unlimited)");
  {
    namespace fs = std::filesystem;
    const std::string& d = o.spill_directory;
    std::error_code ec;
    if (d.empty()) bad("spill_directory", "\"\"", "must name an existing, writable directory");
    // a directory that is missing or cannot be written is an I/O failure (io_error), as a full disk is
    if (!fs::is_directory(d, ec))
      throw io_error("spill_directory = \"" + d + "\": " +
                     std::string(fs::exists(d, ec) ? "not a directory" : "no such directory") +
                     " (it must name an existing, writable directory)");
    if (::access(d.c_str(), W_OK | X_OK) != 0) {
      const int err = errno;
      throw io_error("spill_directory = \"" + d + "\": the directory is not writable: " +
                     std::error_code(err, std::generic_category()).message());
    }
  }
  at_least("num_streams", o.num_streams, 1);
  if (o.fallback != fallback_mode::warn && o.fallback != fallback_mode::raise && o.fallback != fallback_mode::silent)
    bad("fallback", std::to_string(static_cast<int>(o.fallback)), "must be warn, raise or silent");
  at_least("broadcast_limit", o.broadcast_limit, 0);
  if (!(o.collective_timeout >= 0) || !std::isfinite(o.collective_timeout))
    bad("collective_timeout", std::to_string(o.collective_timeout), "must be a finite number of seconds >= 0 (0 = no timeout)");
  // environment overrides
  if (const char* e = env("TUG_ENGINE"); e && std::string(e) != "cpu")
    bad("TUG_ENGINE", std::string("\"") + e + "\"",
        "the only value is cpu (keeps engine = automatic on the CPU); unset it for the default");
  if (const char* e = env("TUG_GPU_DIRECT_TABLE"); e && std::string(e) != "0" && std::string(e) != "1")
    bad("TUG_GPU_DIRECT_TABLE", std::string("\"") + e + "\"", "must be 0 (direct tier off) or 1 (on, the default)");
}

}  // namespace tug
