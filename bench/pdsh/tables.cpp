#include <filesystem>
#include <map>

#include "queries.hpp"
#include "tug/api/io.hpp"
#include "tug/core/error.hpp"

namespace tug::pdsh {

namespace {
std::map<int, query_fn>& registry() {
  static std::map<int, query_fn> r;
  return r;
}
}  // namespace

tables scan_tables(const std::string& dir) {
  auto scan = [&](const char* name) {
    std::filesystem::path p = std::filesystem::path(dir) / name;
    if (!std::filesystem::exists(p))
      throw io_error("PDS-H table directory " + p.string() + " does not exist (generate it with `tug_gen pdsh`)");
    return scan_parquet(p.string());
  };
  return tables{scan("region"), scan("nation"), scan("supplier"), scan("customer"),
                scan("part"),   scan("partsupp"), scan("orders"), scan("lineitem")};
}

bool register_query(int number, query_fn fn) {
  registry()[number] = std::move(fn);
  return true;
}

const query_fn& query(int number) {
  auto it = registry().find(number);
  if (number < 1 || number > 22 || it == registry().end())
    throw invalid_argument_error("PDS-H query " + std::to_string(number) + " does not exist (1..22)");
  return it->second;
}

std::vector<int> registered_queries() {
  std::vector<int> out;
  for (auto& [n, f] : registry())
    out.push_back(n);
  return out;
}

}  // namespace tug::pdsh
