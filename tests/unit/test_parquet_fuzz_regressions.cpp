// Regression files of the Parquet fuzz targets (scripts/fuzz.sh, fuzz/): every file of tests/data/fuzz
// is opened and every row group of every column read, with statistics. Inputs that once crashed the
// reader (footer-*, page-*: crashers and inputs the fuzzers reached) must now read or fail with a
// typed tug::error, never crash or throw anything else; seed-* files are valid pyarrow files and must
// read in full.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <string>
#include <vector>

#include "tug/core/error.hpp"
#include "tug/io/parquet/reader.hpp"

namespace tug {
namespace {

namespace fs = std::filesystem;
using io::parquet::file_reader;

/// Reads all of `path` as the fuzz targets do; returns the rows read.
int64_t read_all(const std::string& path) {
  auto r = file_reader::open(path);
  std::vector<size_t> cols(r.schema().size());
  std::iota(cols.begin(), cols.end(), size_t{0});
  int64_t rows = 0;
  for (int rg = 0; rg < r.num_row_groups(); ++rg) {
    (void)r.row_group_uncompressed_bytes(rg, cols);
    for (size_t c : cols)
      (void)r.statistics(rg, c);
    table t = r.read_row_group(rg, cols);
    EXPECT_EQ(t.num_rows(), r.row_group_num_rows(rg)) << path << " row group " << rg;
    EXPECT_EQ(t.num_columns(), cols.size()) << path << " row group " << rg;
    rows += t.num_rows();
  }
  EXPECT_EQ(rows, r.num_rows()) << path;
  return rows;
}

std::vector<fs::path> files_of(const std::string& prefix) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(TUG_SOURCE_DIR "/tests/data/fuzz"))
    if (e.is_regular_file() && e.path().filename().string().starts_with(prefix)) out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

TEST(ParquetFuzzRegressions, SeedFilesReadInFull) {
  auto files = files_of("seed-");
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    int64_t rows = -1;
    EXPECT_NO_THROW(rows = read_all(f.string()));
    EXPECT_GT(rows, 0);
  }
}

TEST(ParquetFuzzRegressions, FuzzerInputsReadOrFailWithTypedErrors) {
  auto files = files_of("footer-");
  auto pages = files_of("page-");
  files.insert(files.end(), pages.begin(), pages.end());
  ASSERT_FALSE(files.empty());
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    try {
      read_all(f.string());
    } catch (const tug::error& e) {
      EXPECT_FALSE(std::string(e.what()).empty());
    } catch (const std::exception& e) {
      ADD_FAILURE() << "untyped exception: " << e.what();
    }
  }
}

// Found by hand while writing the targets (libFuzzer's malloc limit reports it): a SNAPPY data page
// claiming 2^31-1 uncompressed bytes from 4 made the reader allocate 2 GiB before decompressing. Pages
// claiming more than their codec can expand to are now rejected before allocating.
TEST(ParquetFuzzRegressions, PageClaimingMoreThanItsCodecCanExpandToIsRejected) {
  const std::string path = TUG_SOURCE_DIR "/tests/data/fuzz/page-oom-snappy-uncompressed-size.parquet";
  try {
    read_all(path);
    ADD_FAILURE() << "expected an io_error";
  } catch (const io_error& e) {
    EXPECT_NE(std::string(e.what()).find("claims 2147483647 bytes uncompressed from 4 SNAPPY bytes"), std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("column 'c' row group 0"), std::string::npos) << e.what();
  }
}

// Found by parquet_page_fuzzer: a BROTLI dictionary page claiming 1.1 GiB uncompressed was allocated
// before the codec was found unsupported. The codec is now checked before allocating.
TEST(ParquetFuzzRegressions, UnsupportedCodecFailsBeforeAllocating) {
  const std::string path = TUG_SOURCE_DIR "/tests/data/fuzz/page-oom-306da29c7e6d6aadf9debad08ca80bd17721dc5d.parquet";
  try {
    read_all(path);
    ADD_FAILURE() << "expected a not_implemented_error";
  } catch (const not_implemented_error& e) {
    EXPECT_NE(std::string(e.what()).find("codec BROTLI is not supported"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tug
