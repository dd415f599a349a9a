#include "tug/io/files.hpp"

#include <glob.h>

#include <algorithm>
#include <filesystem>

#include "tug/core/error.hpp"

namespace tug::io {

namespace {
std::vector<std::pair<std::string, std::string>> hive_parts(const std::filesystem::path& root,
                                                            const std::filesystem::path& file) {
  std::vector<std::pair<std::string, std::string>> out;
  auto rel = std::filesystem::relative(file.parent_path(), root);
  for (auto& part : rel) {
    std::string s = part.string();
    auto eq = s.find('=');
    if (eq != std::string::npos && eq > 0) out.emplace_back(s.substr(0, eq), s.substr(eq + 1));
  }
  return out;
}
}  // namespace

std::vector<file_entry> expand_paths(const std::string& path, const std::string& extension) {
  namespace fs = std::filesystem;
  std::vector<file_entry> out;
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    for (auto it = fs::recursive_directory_iterator(path, ec); !ec && it != fs::recursive_directory_iterator();
         it.increment(ec)) {
      if (!it->is_regular_file()) continue;
      std::string name = it->path().filename().string();
      if (name.empty() || name[0] == '.' || name[0] == '_') continue;  // _SUCCESS, .crc, hidden files
      if (it->path().extension() != extension) continue;
      out.push_back({it->path().string(), hive_parts(path, it->path())});
    }
    if (ec) throw io_error("cannot list directory " + path + ": " + ec.message());
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.path < b.path; });
    if (out.empty()) throw io_error("no " + extension + " files under directory " + path);
    return out;
  }
  if (path.find_first_of("*?[") != std::string::npos) {
    glob_t g{};
    int rc = ::glob(path.c_str(), 0, nullptr, &g);
    if (rc == 0)
      for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back({g.gl_pathv[i], {}});
    globfree(&g);
    if (out.empty()) throw io_error("no file matches " + path);
    std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.path < b.path; });
    return out;
  }
  if (!fs::exists(path, ec)) throw io_error("file not found: " + path);
  out.push_back({path, {}});
  return out;
}

}  // namespace tug::io
