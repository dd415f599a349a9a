#pragma once
/// Shared helpers of the Parquet fuzz targets: the bytes of one input become an anonymous in-memory
/// file (memfd) that `file_reader::open` reads through /proc/self/fd, and every row group of every
/// column is read. tug::error exceptions are the expected outcome of malformed input; anything else
/// (a crash, a sanitizer report, std::bad_alloc, another exception) is a bug that the fuzzer reports.
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <numeric>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug::fuzz {

/// An anonymous in-memory file holding `size` bytes; closed on destruction.
class mem_file {
 public:
  mem_file(const uint8_t* data, size_t size) {
    _fd = ::memfd_create("tug_fuzz", MFD_CLOEXEC);
    if (_fd < 0) std::abort();
    size_t done = 0;
    while (done < size) {
      ssize_t w = ::write(_fd, data + done, size - done);
      if (w <= 0) std::abort();
      done += static_cast<size_t>(w);
    }
  }
  mem_file(const mem_file&) = delete;
  mem_file& operator=(const mem_file&) = delete;
  ~mem_file() { ::close(_fd); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(_fd); }

 private:
  int _fd = -1;
};

/// Row groups with more rows than this are opened but not read (see read_whole_file).
inline constexpr int64_t max_rows = int64_t{1} << 20;

/// Opens the bytes as a Parquet file and reads statistics and data of every row group and column.
/// Returns normally on success or on a tug::error.
inline void read_whole_file(const uint8_t* data, size_t size) {
  mem_file f(data, size);
  try {
    auto r = io::parquet::file_reader::open(f.path());
    std::vector<size_t> cols(r.schema().size());
    std::iota(cols.begin(), cols.end(), size_t{0});
    for (int rg = 0; rg < r.num_row_groups(); ++rg) {
      (void)r.row_group_uncompressed_bytes(rg, cols);
      for (size_t c : cols) {
        (void)r.statistics(rg, c);
        (void)r.page_index(rg, c);
      }
      // Parquet lets a few bytes stand for millions of rows (an RLE run of nulls or of one dictionary
      // index), and the reader allocates for the rows a row group declares, as any reader must: larger
      // row groups are not read, so that the fuzzer's malloc limit flags only sizes taken from the
      // file that are not bounded by it.
      if (r.row_group_num_rows(rg) > max_rows) continue;
      table t = r.read_row_group(rg, cols);
      if (t.num_rows() != r.row_group_num_rows(rg)) std::abort();  // a read that succeeds has every row
      // the rows of the second half only, through the offset index where there is one
      const int64_t n = r.row_group_num_rows(rg);
      if (n > 1 && r.read_row_group_ranges(rg, cols, {{n / 2, n}}).num_rows() != n - n / 2) std::abort();
      // every third row (late materialization's selective decoding), equal to those of the whole read
      std::vector<int64_t> rows;
      for (int64_t i = 0; i < n; i += 3)
        rows.push_back(i);
      table sel = r.read_row_group_rows(rg, cols, rows);
      if (sel.num_rows() != static_cast<int64_t>(rows.size())) std::abort();
      table want = gather(t, rows.data(), static_cast<int64_t>(rows.size()));
      for (size_t c = 0; c < cols.size(); ++c)
        for (size_t i = 0; i < rows.size(); ++i)
          if (sel[c].is_valid(static_cast<int64_t>(i)) != want[c].is_valid(static_cast<int64_t>(i))) std::abort();
    }
  } catch (const tug::error&) {
    // malformed input rejected with a typed error: expected
  }
}

}  // namespace tug::fuzz
