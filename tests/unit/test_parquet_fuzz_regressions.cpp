// Regression files of the Parquet fuzz targets (scripts/fuzz.sh, fuzz/): every file of tests/data/fuzz
// is opened and every row group of every column read, with statistics. Inputs that once crashed the
// reader (footer-*, page-*: crashers and inputs the fuzzers reached) must now read or fail with a
// typed tug::error, never crash or throw anything else; seed-* files are valid pyarrow files and must
// read in full.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
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

/// Child process of expect_error_within_memory: limits the address space to 256 MiB more than it uses,
/// reads `path` and exits 0 on an error of type E whose message holds `what`; 1 when the read
/// succeeds, 2 on another message, 3 on another exception (std::bad_alloc).
template <typename E>
[[noreturn]] void read_within_memory(const std::string& path, const std::string& what) {
  long pages = 0;
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f || std::fscanf(f, "%ld", &pages) != 1) std::_Exit(4);
  std::fclose(f);
  const rlim_t limit = static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + (256u << 20);
  rlimit r{limit, limit};
  if (::setrlimit(RLIMIT_AS, &r) != 0) std::_Exit(5);
  try {
    read_all(path);
  } catch (const E& e) {
    std::_Exit(std::string(e.what()).find(what) != std::string::npos ? 0 : 2);
  } catch (...) {
    std::_Exit(3);
  }
  std::_Exit(1);
}

/// Expects reading `name` (under tests/data/fuzz) to fail with an error of type E holding `what`, in a
/// child process whose address space is limited, so that a reader allocating sizes taken from the file
/// fails with std::bad_alloc rather than getting lazily mapped memory.
template <typename E>
void expect_error_within_memory(const std::string& name, const std::string& what) {
  const std::string path = TUG_SOURCE_DIR "/tests/data/fuzz/" + name;
  EXPECT_EXIT(read_within_memory<E>(path, what), ::testing::ExitedWithCode(0), "")
      << name << ": exit 1 = read without error, 2 = other message, 3 = other exception (std::bad_alloc)";
}

// Found by hand while writing the targets (libFuzzer's malloc limit reports it): a SNAPPY data page
// claiming 2^31-1 uncompressed bytes from 4 made the reader allocate 2 GiB before decompressing. Pages
// claiming more than their codec can expand to are now rejected before allocating.
TEST(ParquetFuzzRegressions, PageClaimingMoreThanItsCodecCanExpandToIsRejected) {
  expect_error_within_memory<io_error>("page-oom-snappy-uncompressed-size.parquet",
                                       "column 'c' row group 0: corrupt page: page claims 2147483647 bytes "
                                       "uncompressed from 4 SNAPPY bytes");
}

// Found by parquet_page_fuzzer: a BROTLI dictionary page claiming 1.1 GiB uncompressed was allocated
// before the codec was found unsupported. The codec is now checked before allocating.
TEST(ParquetFuzzRegressions, UnsupportedCodecFailsBeforeAllocating) {
  expect_error_within_memory<not_implemented_error>("page-oom-306da29c7e6d6aadf9debad08ca80bd17721dc5d.parquet",
                                                    "codec BROTLI is not supported");
}

}  // namespace
}  // namespace tug
