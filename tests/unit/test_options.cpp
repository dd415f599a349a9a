// Engine options are checked when a query starts (validate_options): every bad value raises
// invalid_argument_error naming the option, the value and what is allowed; so do the environment
// variables the engine reads. A thread pool that cannot start its threads raises instead of hanging.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>

#include "test_util.hpp"
#include "tug/api/io.hpp"
#include "tug/io/source.hpp"
#include "tug/runtime/thread_pool.hpp"

using namespace tug;
namespace fs = std::filesystem;

namespace {

lazy_frame small_query() {
  return data_frame::from_columns({{"a", i64({1, 2, 3, std::nullopt, 5})}}).lazy().filter(col("a") > 1);
}

/// The message of the invalid_argument_error that explain() and collect() with `o` raise (they must
/// agree), "" when none.
/// The message of the error E that explain() and collect() raise for options `o` (the same for both).
template <typename E = invalid_argument_error>
std::string option_error(const engine_options& o) {
  std::string from_explain, from_collect;
  try {
    small_query().explain(o);
  } catch (const E& e) {
    from_explain = e.what();
  }
  try {
    small_query().collect(o);
  } catch (const E& e) {
    from_collect = e.what();
  }
  EXPECT_EQ(from_explain, from_collect);
  return from_collect;
}

/// Sets an environment variable for its lifetime (restores the previous value).
struct env_var {
  std::string name;
  std::optional<std::string> old;
  env_var(const std::string& n, const std::string& v) : name(n) {
    if (const char* o = std::getenv(n.c_str())) old = o;
    ::setenv(n.c_str(), v.c_str(), 1);
  }
  ~env_var() {
    if (old)
      ::setenv(name.c_str(), old->c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

}  // namespace

TEST(EngineOptions, TargetPartitionRowsZeroIsAutomatic) {
  // 0 (the default) = default_partition_rows for in-memory sources; an explicit value is used as given
  EXPECT_EQ(engine_options{}.target_partition_rows, 0);
  EXPECT_EQ(partition_rows(engine_options{}), default_partition_rows);
  const int64_t n = 3 * default_partition_rows + 5;
  fixed_width_builder<int64_t> b(type_id::int64, n);
  std::fill(b.data(), b.data() + n, int64_t{1});
  const table t({b.finish()});
  memory_source src(schema({{"x", data_type(type_id::int64)}}), {t});
  thread_pool pool(1);
  engine_options o = cpu_engine();
  EXPECT_EQ(src.read({"x"}, {}, o, pool, default_host_resource()).size(), 4u);
  o.target_partition_rows = 2 * default_partition_rows;
  EXPECT_EQ(src.read({"x"}, {}, o, pool, default_host_resource()).size(), 2u);
  o.target_partition_rows = 0;
  EXPECT_EQ(option_error(o), "");
}

TEST(EngineOptions, DefaultsAndBoundsAreAccepted) {
  EXPECT_EQ(option_error(engine_options{}), "");
  engine_options o = cpu_engine();
  o.target_partition_rows = 1;
  o.target_partition_size = min_target_partition_size;
  o.num_threads = 1;
  o.memory_limit = 0;
  o.num_streams = 1;
  o.host_spill_limit = 1;
  o.broadcast_limit = 0;
  for (const char* limit : {"100%", "0.5%", "8GiB", "500MB", "123456", "1 KiB"}) {
    o.spill_device_limit = limit;
    EXPECT_EQ(option_error(o), "") << limit;
  }
  EXPECT_EQ(rows_of(small_query().collect(o)).size(), 3u);
}

TEST(EngineOptions, BadValuesNameTheOptionTheValueAndTheRange) {
  struct bad_case {
    std::function<void(engine_options&)> set;
    std::vector<std::string> words;  // the message holds each
  };
  const std::vector<bad_case> cases = {
      {[](engine_options& o) { o.memory_limit = -1; }, {"memory_limit = -1", "at least 0"}},
      {[](engine_options& o) { o.num_threads = -5; }, {"num_threads = -5", "at least 0", "hardware threads"}},
      {[](engine_options& o) { o.num_threads = 100000; }, {"num_threads = 100000", "at most 4096"}},
      {[](engine_options& o) { o.target_partition_rows = -7; }, {"target_partition_rows = -7", "at least 0", "automatic"}},
      {[](engine_options& o) { o.target_partition_size = -100; }, {"target_partition_size = -100", "16384"}},
      {[](engine_options& o) { o.target_partition_size = 1; }, {"target_partition_size = 1", "must be 0", "16384"}},
      {[](engine_options& o) { o.target_partition_size = min_target_partition_size - 1; },
       {"target_partition_size = 16383"}},
      {[](engine_options& o) { o.num_streams = 0; }, {"num_streams = 0", "at least 1"}},
      {[](engine_options& o) { o.host_spill_limit = -1; }, {"host_spill_limit = -1"}},
      {[](engine_options& o) { o.broadcast_limit = -1; }, {"broadcast_limit = -1"}},
      {[](engine_options& o) { o.engine = static_cast<engine_kind>(9); }, {"engine = 9", "automatic, cpu or gpu"}},
      {[](engine_options& o) { o.fallback = static_cast<fallback_mode>(9); },
       {"fallback = 9", "warn, raise or silent"}},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    engine_options o = cpu_engine();
    cases[i].set(o);
    const std::string msg = option_error(o);
    for (auto& w : cases[i].words)
      EXPECT_NE(msg.find(w), std::string::npos) << "case " << i << ": '" << msg << "' lacks '" << w << "'";
  }
}

TEST(EngineOptions, SpillDeviceLimitIsAPercentageOrBytes) {
  for (const char* bad : {"banana", "", "-5%", "0%", "101%", "0", "12 parsecs", "nan%", "inf", "1e30GiB"}) {
    engine_options o = cpu_engine();  // checked on every engine: the options are one object
    o.spill_device_limit = bad;
    const std::string msg = option_error(o);
    EXPECT_NE(msg.find("spill_device_limit"), std::string::npos) << bad << ": " << msg;
    EXPECT_NE(msg.find(std::string("\"") + bad + "\""), std::string::npos) << bad << ": " << msg;
  }
}

TEST(EngineOptions, SpillDirectoryMustBeAWritableDirectory) {
  const fs::path dir = fs::temp_directory_path() / ("tug_options_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  engine_options o = cpu_engine();
  o.spill_directory = dir.string();
  EXPECT_EQ(option_error(o), "");
  // a missing, non-directory or unwritable directory is an io_error naming it (as a full one is); "" a bad value
  o.spill_directory = (dir / "missing").string();
  std::string msg = option_error<io_error>(o);
  EXPECT_NE(msg.find("spill_directory = \"" + o.spill_directory + "\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("no such directory"), std::string::npos) << msg;
  std::ofstream(dir / "file") << "x";
  o.spill_directory = (dir / "file").string();
  msg = option_error<io_error>(o);
  EXPECT_NE(msg.find("not a directory"), std::string::npos) << msg;
  o.spill_directory = "";
  EXPECT_NE(option_error(o).find("spill_directory"), std::string::npos);
  if (::geteuid() != 0) {  // root may write anywhere
    fs::create_directories(dir / "ro");
    fs::permissions(dir / "ro", fs::perms::owner_read | fs::perms::owner_exec);
    o.spill_directory = (dir / "ro").string();
    msg = option_error<io_error>(o);
    EXPECT_NE(msg.find("not writable"), std::string::npos) << msg;
    fs::permissions(dir / "ro", fs::perms::owner_all);
  }
  fs::remove_all(dir);
}

TEST(EngineOptions, SinksCheckTheOptionsBeforeWriting) {
  const fs::path out = fs::temp_directory_path() / ("tug_options_sink_" + std::to_string(::getpid()) + ".csv");
  fs::remove(out);
  engine_options o = cpu_engine();
  o.num_threads = -1;
  EXPECT_THROW(sink_csv(small_query(), out.string(), {}, o), invalid_argument_error);
  EXPECT_FALSE(fs::exists(out));
}

TEST(EngineOptions, EnvironmentOverridesAreChecked) {
  {
    env_var e("TUG_ENGINE", "banana");
    const std::string msg = option_error(engine_options{});
    EXPECT_NE(msg.find("TUG_ENGINE = \"banana\""), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpu"), std::string::npos) << msg;
  }
  {
    env_var e("TUG_ENGINE", "cpu");
    EXPECT_EQ(option_error(engine_options{}), "");
    EXPECT_EQ(small_query().explain().find("@cuda"), std::string::npos);  // automatic stays on the CPU
  }
  {
    env_var e("TUG_ENGINE", "");  // empty = unset
    EXPECT_EQ(option_error(engine_options{}), "");
  }
  {
    env_var e("TUG_GPU_DIRECT_TABLE", "yes");
    const std::string msg = option_error(engine_options{});
    EXPECT_NE(msg.find("TUG_GPU_DIRECT_TABLE = \"yes\""), std::string::npos) << msg;
  }
  for (const char* v : {"0", "1"}) {
    env_var e("TUG_GPU_DIRECT_TABLE", v);
    EXPECT_EQ(option_error(engine_options{}), "") << v;
  }
}

namespace {

/// Runs `body` in a forked child under a virtual memory limit of `headroom` bytes above what the
/// process maps now; returns the child's exit status and the text it wrote, or fails the test when it
/// has not finished within `timeout_s` (then it is killed).
std::pair<int, std::string> run_limited(int64_t headroom, int timeout_s, const std::function<int(int)>& body) {
  int fds[2];
  if (::pipe(fds) != 0) ADD_FAILURE() << "pipe failed";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    long pages = 0;
    if (FILE* f = std::fopen("/proc/self/statm", "r")) {
      if (std::fscanf(f, "%ld", &pages) != 1) pages = 0;
      std::fclose(f);
    }
    const rlim_t limit =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(::sysconf(_SC_PAGESIZE)) + static_cast<rlim_t>(headroom);
    rlimit rl{limit, limit};
    if (pages == 0 || ::setrlimit(RLIMIT_AS, &rl) != 0) ::_exit(90);
    ::_exit(body(fds[1]));
  }
  ::close(fds[1]);
  std::string text;
  pollfd p{fds[0], POLLIN, 0};
  bool timed_out = false;
  for (;;) {
    int r = ::poll(&p, 1, timeout_s * 1000);
    if (r == 0) {
      timed_out = true;
      break;
    }
    char buf[4096];
    ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n <= 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (timed_out) ADD_FAILURE() << "the child did not finish within " << timeout_s << " s (a hang); it wrote: " << text;
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), text};
}

void write_all(int fd, const std::string& s) {
  if (::write(fd, s.data(), s.size()) < 0) ::_exit(91);
}

}  // namespace

// 2000 threads of 8 MiB stacks cannot fit 256 MiB of address space: the pool must raise naming
// num_threads and the system's error, join the threads it started, and leave the process usable.
TEST(ThreadPool, ThreadCreationFailureRaisesInsteadOfHanging) {
  auto [status, text] = run_limited(256 << 20, 60, [](int fd) {
    try {
      thread_pool pool(2000);
      write_all(fd, "no error");
      return 2;
    } catch (const resource_error& e) {
      write_all(fd, e.what());
    } catch (const std::exception& e) {
      write_all(fd, std::string("other error: ") + e.what());
      return 3;
    }
    // the process is still usable: a small pool runs work on its threads
    thread_pool small(2);
    std::atomic<int64_t> sum{0};
    small.parallel_for(100, [&](int64_t i) { sum += i; });
    return sum == 4950 ? 0 : 4;
  });
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("num_threads = 2000"), std::string::npos) << text;
  EXPECT_NE(text.find("could not start worker thread"), std::string::npos) << text;
  EXPECT_NE(text.find("Resource temporarily unavailable"), std::string::npos) << text;
}

// The same through a query: collect() with num_threads = 2000 under the limit raises resource_error.
TEST(ThreadPool, QueryWithTooManyThreadsRaises) {
  auto [status, text] = run_limited(256 << 20, 60, [](int fd) {
    engine_options o = cpu_engine();
    o.num_threads = 2000;
    try {
      small_query().collect(o);
      write_all(fd, "no error");
      return 2;
    } catch (const resource_error& e) {
      write_all(fd, e.what());
      return 0;
    } catch (const std::exception& e) {
      write_all(fd, std::string("other error: ") + e.what());
      return 3;
    }
  });
  EXPECT_EQ(status, 0) << text;
  EXPECT_NE(text.find("num_threads = 2000"), std::string::npos) << text;
}
