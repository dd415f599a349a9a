// The communicators (include/tug/dist/communicator.hpp): a single rank, and MPI over host buffers.
#include "tug/dist/communicator.hpp"

#include <atomic>
#include <chrono>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <regex>
#include <list>
#include <mutex>
#include <thread>

#include "tug/core/error.hpp"

#ifdef TUG_WITH_MPI
#include <mpi.h>
#endif

namespace tug::dist {

int launcher_ranks() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE", "MPI_LOCALNRANKS"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::atoi(v);
  }
  return 0;
}

int host_gpus() {
  int gpus = 0;
  std::error_code ec;
  static const std::regex dev("nvidia[0-9]+");
  for (auto& e : std::filesystem::directory_iterator("/dev", ec))
    if (std::regex_match(e.path().filename().string(), dev)) ++gpus;
  return gpus;
}

void use_one_gpu(int local_rank) {
  if (const char* set = std::getenv("CUDA_VISIBLE_DEVICES")) {
    std::vector<std::string> list;
    std::string cur;
    for (const char* p = set;; ++p) {
      if (*p == ',' || *p == '\0') {
        if (!cur.empty()) list.push_back(cur);
        cur.clear();
        if (*p == '\0') break;
      } else {
        cur += *p;
      }
    }
    if (list.size() > 1) setenv("CUDA_VISIBLE_DEVICES", list[static_cast<size_t>(local_rank) % list.size()].c_str(), 1);
    return;
  }
  const int gpus = host_gpus();
  if (gpus == 0) return;
  setenv("CUDA_VISIBLE_DEVICES", std::to_string(local_rank % gpus).c_str(), 0);
}

namespace {

/// What an exchange does while it waits: short sleeps that grow, so a waiting rank leaves the cores to
/// the others, and the deadline.
class waiter {
 public:
  explicit waiter(double timeout) : _timeout(timeout) { progress(); }
  void progress() {
    _last = std::chrono::steady_clock::now();
    _sleep_us = 20;
  }
  /// Sleeps a little; true when `timeout` seconds passed since the last progress.
  bool wait() {
    std::this_thread::sleep_for(std::chrono::microseconds(_sleep_us));
    _sleep_us = std::min(_sleep_us * 2, 250);
    if (_timeout <= 0) return false;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - _last).count() > _timeout;
  }

 private:
  double _timeout;
  std::chrono::steady_clock::time_point _last;
  int _sleep_us = 20;
};

std::string rank_list(const std::vector<bool>& finished) {
  std::string s;
  for (size_t r = 0; r < finished.size(); ++r)
    if (!finished[r]) s += (s.empty() ? "" : ", ") + std::to_string(r);
  return s;
}

// ---------------------------------------------------------------------------------------------
// One rank: what it sends to itself comes back in order.

class single_communicator final : public communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  std::string describe() const override { return "a single rank"; }

  class local_exchange final : public exchange {
   public:
    void send(int to, message m) override {
      if (to != 0) throw internal_error("exchange: rank " + std::to_string(to) + " does not exist (1 rank)");
      if (m.empty()) throw internal_error("exchange: an empty message");
      if (_finished) throw internal_error("exchange: a send after finish");
      _queue.push_back(std::move(m));
    }
    void finish() override { _finished = true; }
    std::optional<std::pair<int, message>> receive() override {
      if (_queue.empty()) {
        if (!_finished) throw internal_error("exchange: receive on one rank before finish would wait forever");
        return std::nullopt;
      }
      message m = std::move(_queue.front());
      _queue.pop_front();
      return std::make_pair(0, std::move(m));
    }

   private:
    std::deque<message> _queue;
    bool _finished = false;
  };

  std::unique_ptr<exchange> open(int64_t, int tag, double) override {
    if (tag < 0 || tag >= max_exchanges) throw internal_error("exchange tag " + std::to_string(tag) + " out of range");
    return std::make_unique<local_exchange>();
  }
  void abort(int64_t, const std::exception&) noexcept override {}
};

int launcher_size() { return launcher_ranks(); }

/// The rank's index among the processes on its host, from the launcher; -1 when unknown.
int local_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID", "PMIX_LOCAL_RANK"}) {
    const char* v = std::getenv(name);
    if (v && *v) return std::atoi(v);
  }
  return -1;
}

/// One GPU per rank: when an MPI launcher started several processes, each sees one GPU (use_one_gpu of
/// its local rank). Runs when the library is loaded, before anything can initialize CUDA (the device
/// is fixed per process then, and every thread must use the same one).
struct one_gpu_per_rank {
  one_gpu_per_rank() {
    if (launcher_size() <= 1) return;
    const int lr = local_rank();
    if (lr >= 0) use_one_gpu(lr);
  }
};
const one_gpu_per_rank g_one_gpu_per_rank;

#ifdef TUG_WITH_MPI
// ---------------------------------------------------------------------------------------------
// MPI: point-to-point messages on MPI_COMM_WORLD. Tag 0 carries aborts; an exchange's messages carry
// a tag made of the query's number and the exchange's; an empty message is a rank's finish marker.
// Every MPI call holds `_mu` (the library may not be thread-safe); waits poll with short sleeps.

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw distributed_error(std::string("MPI ") + what + " failed: " + std::string(text, static_cast<size_t>(len)));
}

class mpi_communicator final : public communicator {
 public:
  mpi_communicator() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
      _owns = true;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &_size);
    int* ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &found);
    const int64_t tag_ub = found && ub ? *ub : 32767;
    _queries = std::max<int64_t>(1, (tag_ub - 1) / max_exchanges);
  }
  ~mpi_communicator() override {
    // after a rank stopped answering, MPI_Finalize would wait for it forever: exit without it, and the
    // launcher ends the job (it kills the ranks that are left)
    if (!_owns || _broken) return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
  }
  int rank() const override { return _rank; }
  int size() const override { return _size; }
  std::string describe() const override {
    return "MPI, rank " + std::to_string(_rank) + " of " + std::to_string(_size);
  }

  int tag_of(int64_t query, int tag) const { return 1 + static_cast<int>((query % _queries) * max_exchanges + tag); }

  /// Throws when some rank aborted `query` (aborts of other queries are kept for theirs). Holds _mu.
  void check_aborts_locked(int64_t query) {
    for (;;) {
      int flag = 0;
      MPI_Status st;
      check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, 0, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
      if (!flag) break;
      int n = 0;
      MPI_Get_count(&st, MPI_BYTE, &n);
      std::string buf(static_cast<size_t>(n), '\0');
      check_mpi(MPI_Recv(buf.data(), n, MPI_BYTE, st.MPI_SOURCE, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE), "MPI_Recv");
      int64_t q = -1;
      if (buf.size() >= 9) std::memcpy(&q, buf.data(), 8);
      _aborts.push_back({q, st.MPI_SOURCE, buf.size() >= 9 ? static_cast<uint8_t>(buf[8]) : uint8_t{0},
                         buf.size() >= 9 ? buf.substr(9) : std::string()});
    }
    for (auto& a : _aborts)
      if (a.query == query)
        throw_error(a.code, "rank " + std::to_string(a.from) + " of " + std::to_string(_size) +
                                " failed, so this query stops on rank " + std::to_string(_rank) + ": " + a.what);
  }

  class mpi_exchange final : public exchange {
   public:
    mpi_exchange(mpi_communicator& c, int64_t query, int tag, double timeout)
        : _c(c), _query(query), _exchange(tag), _tag(c.tag_of(query, tag)), _timeout(timeout),
          _finished(static_cast<size_t>(c._size)) {}
    ~mpi_exchange() override {
      // a failed exchange leaves its sends behind: MPI delivers them or drops them with the job
      std::lock_guard<std::mutex> g(_c._mu);
      for (auto& s : _sends)
        if (s.req != MPI_REQUEST_NULL) MPI_Request_free(&s.req);
    }
    void send(int to, message m) override {
      if (to < 0 || to >= _c._size) throw internal_error("exchange: rank " + std::to_string(to) + " does not exist");
      if (m.empty()) throw internal_error("exchange: an empty message");
      if (_done_sending) throw internal_error("exchange: a send after finish");
      if (to == _c._rank) {
        _local.push_back(std::move(m));
        return;
      }
      post(to, std::move(m));
    }
    void finish() override {
      if (_done_sending) return;
      _done_sending = true;
      for (int r = 0; r < _c._size; ++r) {
        if (r == _c._rank) {
          mark_finished(r);
          continue;
        }
        post(r, {});
      }
    }
    std::optional<std::pair<int, message>> receive() override {
      waiter w(_timeout);
      for (;;) {
        if (!_local.empty()) {
          message m = std::move(_local.front());
          _local.pop_front();
          return std::make_pair(_c._rank, std::move(m));
        }
        bool progress = false;
        {
          std::lock_guard<std::mutex> g(_c._mu);
          _c.check_aborts_locked(_query);
          if (_unfinished > 0) {
            int flag = 0;
            MPI_Status st;
            check_mpi(MPI_Iprobe(MPI_ANY_SOURCE, _tag, MPI_COMM_WORLD, &flag, &st), "MPI_Iprobe");
            if (flag) {
              int n = 0;
              MPI_Get_count(&st, MPI_BYTE, &n);
              message m(static_cast<size_t>(n));
              check_mpi(MPI_Recv(m.data(), n, MPI_BYTE, st.MPI_SOURCE, _tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                        "MPI_Recv");
              if (n > 0) return std::make_pair(static_cast<int>(st.MPI_SOURCE), std::move(m));
              mark_finished(st.MPI_SOURCE);
              progress = true;
            }
          }
          progress = test_sends_locked() || progress;
          if (_unfinished == 0 && _pending == 0) return std::nullopt;
        }
        if (progress) {
          w.progress();
        } else if (w.wait()) {
          _c._broken = true;
          throw distributed_error(
              "exchange #" + std::to_string(_exchange) + " of query " + std::to_string(_query) + " on rank " +
              std::to_string(_c._rank) + " of " +
              std::to_string(_c._size) + ": nothing arrived for " + std::to_string(static_cast<int>(_timeout)) +
              " s (collective_timeout); still waiting for rank(s) " +
              (_unfinished > 0 ? rank_list(_finished) : std::string("to receive this rank's data")) +
              " (a rank died or hangs)");
        }
      }
    }

   private:
    struct pending_send {
      message data;
      MPI_Request req = MPI_REQUEST_NULL;
    };
    void post(int to, message m) {
      if (m.size() > static_cast<size_t>(INT_MAX))
        throw not_implemented_error("exchange: a message of " + std::to_string(m.size()) +
                                    " bytes is over MPI's 2 GiB; lower target_partition_size");
      std::lock_guard<std::mutex> g(_c._mu);
      _c.check_aborts_locked(_query);
      _sends.emplace_back();
      pending_send& s = _sends.back();
      s.data = std::move(m);
      check_mpi(MPI_Isend(s.data.data(), static_cast<int>(s.data.size()), MPI_BYTE, to, _tag, MPI_COMM_WORLD, &s.req),
                "MPI_Isend");
      ++_pending;
      test_sends_locked();
    }
    /// Frees the buffers of the sends that completed; true when one did.
    bool test_sends_locked() {
      bool any = false;
      for (auto it = _sends.begin(); it != _sends.end();) {
        int done = 0;
        check_mpi(MPI_Test(&it->req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        if (done) {
          it = _sends.erase(it);
          --_pending;
          any = true;
        } else {
          ++it;
        }
      }
      return any;
    }
    void mark_finished(int r) {
      if (_finished[static_cast<size_t>(r)]) return;
      _finished[static_cast<size_t>(r)] = true;
      --_unfinished;
    }

    mpi_communicator& _c;
    int64_t _query;
    int _exchange;  ///< the query's exchange number
    int _tag;       ///< the MPI tag
    double _timeout;
    std::vector<bool> _finished;
    int _unfinished = static_cast<int>(_finished.size());
    bool _done_sending = false;
    std::deque<message> _local;
    std::list<pending_send> _sends;
    int _pending = 0;
  };

  std::unique_ptr<exchange> open(int64_t query, int tag, double timeout) override {
    if (tag < 0 || tag >= max_exchanges) throw internal_error("exchange tag " + std::to_string(tag) + " out of range");
    return std::make_unique<mpi_exchange>(*this, query, tag, timeout);
  }

  void abort(int64_t query, const std::exception& e) noexcept override {
    try {
      std::string buf(8, '\0');
      std::memcpy(buf.data(), &query, 8);
      buf += static_cast<char>(error_code(e));
      buf += std::string(e.what()).substr(0, 4000);
      std::lock_guard<std::mutex> g(_mu);
      for (int r = 0; r < _size; ++r) {
        if (r == _rank) continue;
        MPI_Request req;
        // small: sent eagerly; the request is freed at once, so a rank that never receives it cannot
        // hold this one up
        if (MPI_Isend(buf.data(), static_cast<int>(buf.size()), MPI_BYTE, r, 0, MPI_COMM_WORLD, &req) == MPI_SUCCESS) {
          _abort_buffers.push_back(buf);
          MPI_Request_free(&req);
        }
      }
    } catch (...) {
    }
  }

 private:
  struct abort_note {
    int64_t query;
    int from;
    uint8_t code;
    std::string what;
  };
  std::mutex _mu;
  int _rank = 0, _size = 1;
  bool _owns = false;
  std::atomic<bool> _broken{false};  ///< an exchange timed out: a rank does not answer
  int64_t _queries = 1;  ///< query numbers wrap around at this many (tags are bounded by MPI_TAG_UB)
  std::vector<abort_note> _aborts;
  std::list<std::string> _abort_buffers;  ///< sent abort messages (a freed request's buffer must outlive it)
};
#endif

}  // namespace

uint8_t error_code(const std::exception& e) {
  // the most derived kinds first
  if (dynamic_cast<const column_not_found_error*>(&e)) return 1;
  if (dynamic_cast<const type_error*>(&e)) return 2;
  if (dynamic_cast<const compute_error*>(&e)) return 3;
  if (dynamic_cast<const invalid_argument_error*>(&e)) return 4;
  if (dynamic_cast<const io_error*>(&e)) return 5;
  if (dynamic_cast<const user_error*>(&e)) return 6;
  if (dynamic_cast<const memory_error*>(&e)) return 7;
  if (dynamic_cast<const resource_error*>(&e)) return 8;
  if (dynamic_cast<const internal_error*>(&e)) return 9;
  if (dynamic_cast<const not_implemented_error*>(&e)) return 10;
  if (dynamic_cast<const cancelled_error*>(&e)) return 11;
  return 0;  // distributed_error, and anything else
}

void throw_error(uint8_t code, const std::string& what) {
  switch (code) {
    case 1: throw column_not_found_error(what);
    case 2: throw type_error(what);
    case 3: throw compute_error(what);
    case 4: throw invalid_argument_error(what);
    case 5: throw io_error(what);
    case 6: throw user_error(what);
    case 7: throw memory_error(what);
    case 8: throw resource_error(what);
    case 9: throw internal_error(what);
    case 10: throw not_implemented_error(what);
    case 11: throw cancelled_error(what);
    default: throw distributed_error(what);
  }
}

std::shared_ptr<communicator> single_rank() { return std::make_shared<single_communicator>(); }

namespace {

class planning_communicator final : public communicator {
 public:
  explicit planning_communicator(int ranks) : _ranks(ranks) {}
  int rank() const override { return 0; }
  int size() const override { return _ranks; }
  std::string describe() const override { return std::to_string(_ranks) + " ranks (planned only)"; }
  std::unique_ptr<exchange> open(int64_t, int, double) override {
    throw internal_error("exchange opened on a communicator made for planning only");
  }
  void abort(int64_t, const std::exception&) noexcept override {}

 private:
  int _ranks;
};

}  // namespace

std::shared_ptr<communicator> planning_ranks(int ranks) { return std::make_shared<planning_communicator>(ranks); }

std::shared_ptr<communicator> world() {
  static std::once_flag once;
  static std::shared_ptr<communicator> w;
  static std::string failure;
  std::call_once(once, [] {
    const int n = launcher_size();
#ifdef TUG_WITH_MPI
    if (n > 1) {
      try {
        w = std::make_shared<mpi_communicator>();
      } catch (const std::exception& e) {
        failure = e.what();
      }
      return;
    }
#else
    if (n > 1) {
      failure = "this process was started by an MPI launcher with " + std::to_string(n) +
                " processes, but tug was built without MPI (TUG_WITH_MPI=OFF; install libopenmpi-dev and rebuild)";
      return;
    }
#endif
    w = single_rank();
  });
  if (!w) throw distributed_error(failure);
  return w;
}

}  // namespace tug::dist
