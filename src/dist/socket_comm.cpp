// Ranks joined by Unix sockets (include/tug/dist/communicator.hpp, socket_ranks): the processes that
// engine_options::gpus forks (src/dist/fork_ranks.cpp). Every pair of ranks shares one socket; a reader
// thread per peer drains it into mailboxes keyed by (query, exchange), so a sender never waits for the
// receiving rank's main thread. A peer whose socket closes (the process ended) fails every wait at once.
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <thread>

#include "tug/core/error.hpp"
#include "fd_io.hpp"
#include "tug/dist/communicator.hpp"

namespace tug::dist {

namespace {

enum class frame_kind : uint8_t { data, finish, abort };

struct frame_header {
  int64_t query;
  int32_t tag;
  uint8_t kind;
  uint8_t code;  ///< an abort's error kind (error_code)
  uint16_t pad;
  uint64_t length;
};

class socket_comm final : public communicator, public std::enable_shared_from_this<socket_comm> {
 public:
  socket_comm(int rank, std::vector<int> fds) : _rank(rank), _fds(std::move(fds)), _send_mu(_fds.size()) {}
  ~socket_comm() override {
    for (int fd : _fds)
      if (fd >= 0) ::shutdown(fd, SHUT_RDWR);
    for (auto& t : _readers) t.join();
    for (int fd : _fds)
      if (fd >= 0) ::close(fd);
  }
  void start() {
    for (int r = 0; r < size(); ++r)
      if (r != _rank) _readers.emplace_back([this, r] { read_from(r); });
  }
  int rank() const override { return _rank; }
  int size() const override { return static_cast<int>(_fds.size()); }
  std::string describe() const override {
    return "processes joined by sockets, rank " + std::to_string(_rank) + " of " + std::to_string(size());
  }

  class ex final : public exchange {
   public:
    ex(socket_comm& c, int64_t q, int tag, double timeout) : _c(c), _q(q), _tag(tag), _timeout(timeout) {}
    void send(int to, message m) override {
      if (m.empty()) throw internal_error("exchange: an empty message");
      _c.put(to, _q, _tag, frame_kind::data, 0, std::move(m));
    }
    void finish() override {
      for (int r = 0; r < _c.size(); ++r) _c.put(r, _q, _tag, frame_kind::finish, 0, {});
    }
    std::optional<std::pair<int, message>> receive() override { return _c.take(_q, _tag, _timeout); }

   private:
    socket_comm& _c;
    int64_t _q;
    int _tag;
    double _timeout;
  };
  std::unique_ptr<exchange> open(int64_t query, int tag, double timeout) override {
    return std::make_unique<ex>(*this, query, tag, timeout);
  }
  void abort(int64_t query, const std::exception& e) noexcept override {
    try {
      const std::string what = e.what();
      message m(what.begin(), what.end());
      for (int r = 0; r < size(); ++r)
        if (r != _rank) put(r, query, -1, frame_kind::abort, error_code(e), m);
    } catch (...) {
    }
  }

 private:
  struct box {
    std::deque<std::pair<int, message>> got;
    std::vector<bool> finished_by;  ///< per rank: it sent its finish marker
    int finished = 0;
  };
  struct failure {
    int rank;
    uint8_t code;
    std::string what;
  };

  void put(int to, int64_t q, int tag, frame_kind k, uint8_t code, message m) {
    if (to == _rank) {
      std::lock_guard<std::mutex> g(_mu);
      deliver(_rank, q, tag, k, code, std::move(m));
      return;
    }
    frame_header h{q, tag, static_cast<uint8_t>(k), code, 0, m.size()};
    std::lock_guard<std::mutex> g(_send_mu[static_cast<size_t>(to)]);
    if (!write_all(_fds[static_cast<size_t>(to)], &h, sizeof h) || !write_all(_fds[static_cast<size_t>(to)], m.data(), m.size()))
      if (k != frame_kind::abort)
        throw distributed_error("rank " + std::to_string(to) + " of " + std::to_string(size()) +
                                " is gone (a message to it could not be written: its process ended), so this "
                                "query stops on rank " + std::to_string(_rank));
  }

  /// Under _mu.
  void deliver(int from, int64_t q, int tag, frame_kind k, uint8_t code, message m) {
    if (k == frame_kind::abort) {
      _aborts[q] = failure{from, code, std::string(m.begin(), m.end())};
    } else {
      box& b = _boxes[{q, tag}];
      if (k == frame_kind::finish) {
        b.finished_by.resize(static_cast<size_t>(size()));
        if (!b.finished_by[static_cast<size_t>(from)]) ++b.finished;
        b.finished_by[static_cast<size_t>(from)] = true;
      } else {
        b.got.emplace_back(from, std::move(m));
      }
    }
    _cv.notify_all();
  }

  void read_from(int r) {
    const int fd = _fds[static_cast<size_t>(r)];
    while (true) {
      frame_header h{};
      if (!read_all(fd, &h, sizeof h)) break;
      message m(h.length);
      if (h.length && !read_all(fd, m.data(), h.length)) break;
      std::lock_guard<std::mutex> g(_mu);
      deliver(r, h.query, h.tag, static_cast<frame_kind>(h.kind), h.code, std::move(m));
    }
    std::lock_guard<std::mutex> g(_mu);
    _gone.push_back(r);
    _cv.notify_all();
  }

  std::optional<std::pair<int, message>> take(int64_t q, int tag, double timeout) {
    std::unique_lock<std::mutex> g(_mu);
    auto last = std::chrono::steady_clock::now();
    while (true) {
      if (auto a = _aborts.find(q); a != _aborts.end())
        throw_error(a->second.code, "rank " + std::to_string(a->second.rank) + " of " + std::to_string(size()) +
                                        " failed, so this query stops on rank " + std::to_string(_rank) + ": " +
                                        a->second.what);
      box& b = _boxes[{q, tag}];
      if (!b.got.empty()) {
        auto m = std::move(b.got.front());
        b.got.pop_front();
        return m;
      }
      if (b.finished == size()) {
        _boxes.erase({q, tag});
        return std::nullopt;
      }
      // a rank that ended after its finish marker here is done with this exchange; one that ended
      // before it never will be
      for (int r : _gone)
        if (b.finished_by.size() <= static_cast<size_t>(r) || !b.finished_by[static_cast<size_t>(r)])
          throw distributed_error("rank " + std::to_string(r) + " of " + std::to_string(size()) +
                                  " is gone (its process ended), so this query stops on rank " + std::to_string(_rank));
      if (timeout > 0) {
        if (_cv.wait_until(g, last + std::chrono::duration<double>(timeout)) == std::cv_status::timeout) {
          const box& now = _boxes[{q, tag}];
          if (now.got.empty() && now.finished < size())
            throw distributed_error("exchange " + std::to_string(tag) + " on rank " + std::to_string(_rank) + " of " +
                                    std::to_string(size()) + ": nothing arrived for " +
                                    std::to_string(static_cast<int>(timeout)) + " s (collective_timeout)");
        }
        last = std::chrono::steady_clock::now();
      } else {
        _cv.wait(g);
      }
    }
  }

  int _rank;
  std::vector<int> _fds;
  std::vector<std::mutex> _send_mu;
  std::vector<std::thread> _readers;
  std::mutex _mu;
  std::condition_variable _cv;
  std::map<std::pair<int64_t, int>, box> _boxes;
  std::map<int64_t, failure> _aborts;
  std::vector<int> _gone;
};

}  // namespace

std::shared_ptr<communicator> socket_ranks(int rank, std::vector<int> fds) {
  auto c = std::make_shared<socket_comm>(rank, std::move(fds));
  c->start();
  return c;
}

}  // namespace tug::dist
