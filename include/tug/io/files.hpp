#pragma once
/// Expands a path argument into files: a file, a glob ("data/*.parquet") or a directory (every file
/// with the extension below it, sorted). Hive-style `key=value` directories are recognized.
#include <string>
#include <utility>
#include <vector>

namespace tug::io {

struct file_entry {
  std::string path;
  std::vector<std::pair<std::string, std::string>> hive;  ///< key=value directory parts, outermost first
};

/// @throws io_error naming the path when nothing matches.
std::vector<file_entry> expand_paths(const std::string& path, const std::string& extension);

}  // namespace tug::io
