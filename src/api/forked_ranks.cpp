// engine_options::gpus (forked_ranks.hpp): one process per rank, forked from this one, so a program
// (or a Python session) uses every GPU of its host with one option and no launcher. The children
// inherit the optimized plan and its in-memory data copy-on-write, so nothing is shipped to them; each
// pair of ranks shares a Unix socket (dist::socket_ranks) and each child one more to this process, on
// which rank 0 sends the result (dist's wire format), its plan and statistics, and every rank "done"
// or its error. This process never touches CUDA for the query: the ranks do, each on its own GPU.
#include "forked_ranks.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

#include "dist/fd_io.hpp"
#include "dist/wire.hpp"
#include "api/in_order.hpp"
#include "tug/core/error.hpp"
#include "tug/dist/communicator.hpp"
#include "tug/dist/distribute.hpp"
#include "tug/memory/device.hpp"
#include "tug/runtime/options.hpp"
#include "tug/runtime/thread_pool.hpp"

namespace tug {

namespace {

/// What a child sends on its socket to this process: a kind byte, a length, the bytes. `written`: rank 0
/// sent every partition of a sink's result (the count follows); `exchanges`: what a rank other than 0
/// sent to the other ranks (query_ranks::sent_to_string; rank 0's is in its statistics).
enum class part : char {
  table = 'T',
  written = 'W',
  exchanges = 'X',
  plan = 'P',
  statistics = 'S',
  fallback = 'F',
  done = 'D',
  error = 'E'
};

bool send_part(int fd, part k, const void* p, uint64_t n) {
  const char kind = static_cast<char>(k);
  return dist::write_all(fd, &kind, 1) && dist::write_all(fd, &n, 8) && dist::write_all(fd, p, n);
}
bool send_text(int fd, part k, const std::string& s) { return send_part(fd, k, s.data(), s.size()); }

/// Rank 0's sink when the query has one: the result's partitions, handed over by the sink's threads in
/// any order, sent to the calling process in index order (in_order), where its writer writes them.
class parent_writer final : public partition_writer {
 public:
  parent_writer(int fd, size_t bound)
      : _fd(fd), _order([this](table& t) { send(t); }, bound) {}
  void write(table t, size_t index) override { _order.put(std::move(t), index); }
  void finish(size_t n) override {
    _order.finish(n);
    const uint64_t count = n;
    if (!send_part(_fd, part::written, &count, sizeof count)) gone();
  }

 private:
  void send(table& t) {
    const dist::message m = dist::serialize(t);
    if (!send_part(_fd, part::table, m.data(), m.size())) gone();
  }
  [[noreturn]] static void gone() {
    throw distributed_error(std::string("gpus: the calling process stopped taking the result of rank 0 (") +
                            std::strerror(errno) + ")");
  }
  int _fd;
  in_order<table> _order;
};

/// Rank `r`'s process: runs the query as that rank and reports to `parent`; never returns. With `sink`,
/// rank 0 sends the result's partitions as they are made (parent_writer) and the other ranks send theirs
/// to rank 0.
[[noreturn]] void run_child(const plan_ptr& p, engine_options opts, int r, std::vector<int> peers, int parent,
                            bool sink) {
  int status = 0;
  try {
    forget_thread_pool_after_fork();
    // NVLink multicast off for whatever this rank loads that reads it (NCCL): a program using it can put
    // a shared host's GPUs out of service (the GPU machines' rule; tug_pdsh --gpus passes it to mpirun)
    ::setenv("NCCL_NVLS_ENABLE", "0", 1);
    dist::use_one_gpu(r);
    opts.gpus = 0;
    auto q = std::make_shared<dist::query_ranks>();
    q->comm = dist::socket_ranks(r, std::move(peers));
    q->query = 0;
    q->timeout = opts.collective_timeout;
    query_result res;
    std::shared_ptr<partition_writer> to_parent;
    if (sink && r == 0)
      to_parent = std::make_shared<parent_writer>(parent, 2 * static_cast<size_t>(global_thread_pool(opts.num_threads).size()));
    try {
      res = run_plan_as_rank(p, opts, to_parent, q);
    } catch (const std::exception& e) {
      q->comm->abort(q->query, e);  // the other ranks stop with this error
      throw;
    }
    if (r == 0) {
      for (const table& t : res.frame.partitions()) {
        const dist::message m = dist::serialize(t);
        send_part(parent, part::table, m.data(), m.size());
      }
      send_text(parent, part::plan, res.physical_plan);
      send_text(parent, part::statistics, res.statistics);
      for (auto& f : res.fallbacks) send_text(parent, part::fallback, f);
    }
    if (r != 0 && opts.statistics) send_text(parent, part::exchanges, q->sent_to_string());
    const double figures[2] = {static_cast<double>(res.peak_memory), res.total_seconds};
    send_part(parent, part::done, figures, sizeof figures);
  } catch (const std::exception& e) {
    const std::string msg = std::string(1, static_cast<char>(dist::error_code(e))) + e.what();
    send_text(parent, part::error, msg);
    status = 1;
  } catch (...) {
    send_text(parent, part::error, std::string(1, '\0') + "rank " + std::to_string(r) + ": an unknown exception");
    status = 1;
  }
  // this process's output only: a stream of the parent's (a sink's file) was flushed before the fork and
  // is not this process's to write
  std::fflush(stdout);
  std::fflush(stderr);
  ::_exit(status);  // no static destructors or atexit handlers of the parent's program
}

/// What a child reported: its parts, or how it ended.
struct report {
  std::vector<std::pair<part, std::string>> parts;
  bool done = false;
  bool failed = false;
  uint8_t code = 0;
  std::string error;
};

/// Reads what a child reports on `fd` until it is done, failed or gone. `on_table`, when given, takes
/// each table part as it arrives (a sink's partition) instead of the report.
report read_report(int fd, const std::function<void(const std::string&)>& on_table = {}) {
  report rep;
  while (true) {
    char kind = 0;
    uint64_t n = 0;
    if (!dist::read_all(fd, &kind, 1) || !dist::read_all(fd, &n, 8)) break;
    std::string bytes(n, '\0');
    if (n && !dist::read_all(fd, bytes.data(), n)) break;
    const auto k = static_cast<part>(kind);
    if (k == part::error) {
      rep.failed = true;
      rep.code = bytes.empty() ? 0 : static_cast<uint8_t>(bytes[0]);
      rep.error = bytes.empty() ? "" : bytes.substr(1);
      break;
    }
    if (k == part::table && on_table) {
      on_table(bytes);
      continue;
    }
    rep.parts.emplace_back(k, std::move(bytes));
    if (k == part::done) {
      rep.done = true;
      break;
    }
  }
  return rep;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return "was killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  return "ended";
}

}  // namespace

int forked_ranks_for(const engine_options& opts) {
  if (opts.gpus == 0 || opts.gpus == 1 || dist::launcher_ranks() > 1) return 1;
  return opts.gpus < 0 ? std::max(1, dist::host_gpus()) : opts.gpus;
}

int query_ranks_for(const engine_options& opts) { return std::max(dist::world()->size(), forked_ranks_for(opts)); }

query_result run_forked_ranks(const plan_ptr& p, const engine_options& opts, int ranks,
                              std::shared_ptr<partition_writer> sink) {
  validate_options(opts);  // here, not once per rank
  if (cuda_started())
    throw invalid_argument_error(
        "gpus = " + std::to_string(opts.gpus) + ": the ranks are processes forked from this one, and a process "
        "forked after CUDA started cannot use the GPU; this process has used CUDA already (a query ran here "
        "on the GPU, or asked for one): set gpus from the first query on, or start the ranks with mpirun");
  const auto n = static_cast<size_t>(ranks);
  std::vector<std::vector<int>> peer(n, std::vector<int>(n, -1));
  std::vector<int> to_parent(n, -1), from_child(n, -1);
  auto close_ends = [](std::vector<int>& fds) {
    for (int& fd : fds)
      if (fd >= 0) ::close(std::exchange(fd, -1));
  };
  auto close_all = [&] {
    for (auto& row : peer) close_ends(row);
    close_ends(to_parent);
    close_ends(from_child);
  };
  auto pair = [&](int& a, int& b) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
      const int e = errno;
      close_all();
      throw resource_error(std::string("gpus: cannot make a socket between ranks: ") + std::strerror(e));
    }
    a = sv[0];
    b = sv[1];
  };
  for (size_t i = 0; i < n; ++i) {
    for (size_t j = i + 1; j < n; ++j) pair(peer[i][j], peer[j][i]);
    pair(from_child[i], to_parent[i]);
  }
  gpu_available();  // asked once here (without starting CUDA), so the ranks inherit the answer
  std::fflush(nullptr);  // what the program buffered is printed once, not once per child
  std::vector<pid_t> pids;
  for (size_t r = 0; r < n; ++r) {
    const pid_t pid = ::fork();
    if (pid < 0) {
      const int e = errno;
      for (pid_t c : pids) ::kill(c, SIGKILL);
      for (pid_t c : pids) ::waitpid(c, nullptr, 0);
      close_all();
      throw resource_error("gpus: cannot start rank " + std::to_string(r) + " of " + std::to_string(ranks) +
                           " (fork): " + std::strerror(e));
    }
    if (pid == 0) {
      // this rank's sockets only
      std::vector<int> mine = peer[r];
      const int parent = to_parent[r];
      for (size_t i = 0; i < n; ++i) {
        for (size_t j = 0; j < n; ++j)
          if (i != r && peer[i][j] >= 0) ::close(peer[i][j]);
        if (i != r) ::close(to_parent[i]);
        ::close(from_child[i]);
      }
      run_child(p, opts, static_cast<int>(r), std::move(mine), parent, sink != nullptr);
    }
    pids.push_back(pid);
  }
  // this process keeps only the ends that the children report on
  for (auto& row : peer) close_ends(row);
  close_ends(to_parent);
  std::vector<report> reports(n);
  size_t written = 0;  // partitions of the sink's result written here
  std::function<void(const std::string&)> write_here;  // rank 0's partitions, when the query has a sink
  if (sink)
    write_here = [&](const std::string& bytes) {
      const dist::message m(bytes.begin(), bytes.end());
      sink->write(dist::deserialize(m, default_host_resource()), written++);
    };
  try {
    for (size_t r = 0; r < n; ++r) reports[r] = read_report(from_child[r], r == 0 ? write_here : nullptr);
  } catch (...) {
    // the writer failed here (a full disk, a dead Cassandra node): the ranks stop, and its error is the query's
    for (pid_t c : pids) ::kill(c, SIGKILL);
    for (pid_t c : pids) ::waitpid(c, nullptr, 0);
    close_ends(from_child);
    throw;
  }
  close_ends(from_child);
  std::vector<int> status(n, 0);
  for (size_t r = 0; r < n; ++r) ::waitpid(pids[r], &status[r], 0);
  // the error of a rank that failed by itself (not because another rank stopped or went away), else
  // rank 0's (which names the rank that failed first), else a rank that died
  for (size_t r = 0; r < n; ++r)
    if (reports[r].failed && reports[r].error.find("so this query stops on rank") == std::string::npos)
      dist::throw_error(reports[r].code, reports[r].error);
  for (size_t r = 0; r < n; ++r)
    if (reports[r].failed) dist::throw_error(reports[r].code, reports[r].error);
  for (size_t r = 0; r < n; ++r)
    if (!reports[r].done)
      throw distributed_error("rank " + std::to_string(r) + " of " + std::to_string(ranks) + " (process " +
                              std::to_string(pids[r]) + ") " + how_it_ended(status[r]) + " before the query finished");
  query_result res;
  std::vector<table> parts;
  for (auto& [k, bytes] : reports[0].parts) {
    if (k == part::written && sink) {
      uint64_t count = 0;
      if (bytes.size() == sizeof count) std::memcpy(&count, bytes.data(), sizeof count);
      if (count != written)
        throw internal_error("gpus: rank 0 sent " + std::to_string(written) + " partitions of the result but counted " +
                             std::to_string(count));
      sink->finish(written);
    } else if (k == part::table) {
      const dist::message m(bytes.begin(), bytes.end());
      parts.push_back(dist::deserialize(m, default_host_resource()));
    } else if (k == part::plan) {
      res.physical_plan = bytes;
    } else if (k == part::statistics) {
      res.statistics = bytes;
    } else if (k == part::fallback) {
      res.fallbacks.push_back(bytes);
    } else if (k == part::done && bytes.size() == 16) {
      double figures[2];
      std::memcpy(figures, bytes.data(), 16);
      res.peak_memory = static_cast<int64_t>(figures[0]);
      res.total_seconds = figures[1];
    }
  }
  res.frame = data_frame(p->schema, std::move(parts));
  if (!res.statistics.empty()) {
    res.statistics += "ranks: " + std::to_string(ranks) + " processes forked by engine_options::gpus; the figures above are rank 0's\n";
    for (size_t r = 1; r < n; ++r)  // what each other rank sent in the exchanges
      for (auto& [k, bytes] : reports[r].parts)
        if (k == part::exchanges && !bytes.empty()) res.statistics += bytes + "\n";
  }
  return res;
}

}  // namespace tug
