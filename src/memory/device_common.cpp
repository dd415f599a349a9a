// Host-side helpers of the device layer that need no CUDA.
#include <cctype>
#include <cmath>

#include "tug/core/error.hpp"
#include "tug/core/table.hpp"
#include "tug/memory/device.hpp"

namespace tug {

int64_t parse_device_limit(const std::string& spec, int64_t total_memory) {
  auto bad = [&]() {
    return invalid_argument_error("spill_device_limit \"" + spec +
                                  "\" is neither a percentage above 0 and at most 100 (\"80%\") nor a byte count "
                                  "(\"8GiB\", \"500MB\", \"123456\")");
  };
  if (spec.empty()) throw bad();
  size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(spec, &pos);
  } catch (const std::exception&) {
    throw bad();
  }
  std::string unit = spec.substr(pos);
  while (!unit.empty() && std::isspace(static_cast<unsigned char>(unit.front())))
    unit.erase(0, 1);
  if (!(v > 0) || !std::isfinite(v)) throw bad();  // NaN fails v > 0
  if (unit == "%") {
    if (v > 100) throw bad();
    return static_cast<int64_t>(static_cast<double>(total_memory) * v / 100.0);
  }
  double mult = 0;
  if (unit.empty() || unit == "B")
    mult = 1;
  else if (unit == "KB")
    mult = 1e3;
  else if (unit == "MB")
    mult = 1e6;
  else if (unit == "GB")
    mult = 1e9;
  else if (unit == "KiB")
    mult = 1024.0;
  else if (unit == "MiB")
    mult = 1024.0 * 1024;
  else if (unit == "GiB")
    mult = 1024.0 * 1024 * 1024;
  else
    throw bad();
  if (v * mult < 1 || v * mult >= 9.2e18) throw bad();  // at least a byte, within int64
  return static_cast<int64_t>(v * mult);
}

bool on_device(const table& t) {
  for (auto& c : t.columns())
    if (c.data_buffer() && c.data_buffer()->resource()->kind() == memory_kind::device) return true;
  return false;
}

}  // namespace tug
