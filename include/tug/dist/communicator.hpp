#pragma once
/// Multi-rank execution: the communicator the exchanges run over (docs/architecture.md, "Multi-rank
/// execution"). Every rank runs the same physical plan on its share of the data; ranks meet only in
/// exchanges, which every rank opens in the same order with the same tag. One interface, two
/// implementations: a single rank, and MPI (host buffers) when the process was started by an MPI
/// launcher (`mpirun -np N`, `srun`) with more than one process.
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace tug::dist {

/// One message of an exchange: bytes (tug::dist::serialize makes them of a table).
using message = std::vector<uint8_t>;

class device_link;

class communicator {
 public:
  virtual ~communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// One line for explain() and errors, e.g. "MPI, rank 1 of 4".
  virtual std::string describe() const = 0;

  /// One collective in flight, streaming: messages in (send, to any rank, this one included), then a
  /// finish marker (finish), and messages out (receive) as they arrive, until every rank has finished.
  class exchange {
   public:
    virtual ~exchange() = default;
    /// Sends `m` to rank `to` without waiting for it to arrive. An empty message is not allowed.
    virtual void send(int to, message m) = 0;
    /// This rank sends nothing more.
    virtual void finish() = 0;
    /// The next message from any rank, with its sender; nullopt once every rank has finished and every
    /// message has arrived (the exchange is complete then).
    /// @throws distributed_error when another rank aborted the query (its message), or when nothing
    /// arrived for `timeout` seconds (naming the ranks that have not finished).
    virtual std::optional<std::pair<int, message>> receive() = 0;
  };
  /// Opens exchange `tag` of query `query` (>= 0): every rank opens the same tags, in the same order.
  /// `timeout` in seconds, 0 = none.
  virtual std::unique_ptr<exchange> open(int64_t query, int tag, double timeout) = 0;
  /// Tells every other rank that query `query` failed here with `e`: their exchanges of that query
  /// throw an error of e's kind (error_code) naming this rank and e's message. Never throws.
  virtual void abort(int64_t query, const std::exception& e) noexcept = 0;

  /// The link between the ranks' devices over NCCL, set up by the first query that exchanges device
  /// tables (src/dist/device_link.hpp): `device_checked` once it was tried, `device` null when the
  /// ranks cannot all use one (`device_why` says why).
  std::mutex device_mu;
  bool device_checked = false;
  std::shared_ptr<device_link> device;
  std::string device_why;
};

/// The kind of tug error `e` is (compute_error, io_error, memory_error, ...), as one byte that another
/// rank turns back into the same kind with throw_error.
uint8_t error_code(const std::exception& e);
/// Throws the error of kind `code` (error_code) with message `what`.
[[noreturn]] void throw_error(uint8_t code, const std::string& what);

/// The process's communicator: MPI's world when the process was started by an MPI launcher with more
/// than one process (MPI is initialized on first use and finalized at exit) and tug was built with
/// MPI (TUG_WITH_MPI), else a single rank. @throws distributed_error when started by a launcher with
/// several processes but built without MPI.
std::shared_ptr<communicator> world();

/// Whether exchanges between ranks may move device tables over NCCL in this process: tug built with CUDA
/// and NCCL, libnccl loadable, TUG_NCCL not "0". The ranks settle it when the first query exchanges device
/// tables (every rank must be able to; src/dist/device_link.hpp).
bool device_exchanges_possible();

/// Processes in the job when an MPI launcher started this one (OpenMPI's mpirun, Hydra, srun with PMI);
/// 0 when none did.
int launcher_ranks();

/// GPUs of this host, counted from /dev/nvidiaN without initializing CUDA (0 when there are none).
int host_gpus();

/// Makes this process see one GPU, for rank `local_rank` of this host: entry (local_rank mod entries) of
/// CUDA_VISIBLE_DEVICES when the user set a list there, else GPU (local_rank mod host_gpus()). Only
/// before CUDA is initialized in the process (the device is fixed then).
void use_one_gpu(int local_rank);

/// Rank `rank` of ranks joined pairwise by connected stream sockets (socketpair): `fds[r]` is this
/// rank's end of the socket to rank r (-1 for itself); the communicator owns and closes them. A rank
/// whose socket closes (its process ended) makes every wait fail at once with distributed_error. Used
/// by the processes that engine_options::gpus forks.
std::shared_ptr<communicator> socket_ranks(int rank, std::vector<int> fds);

/// A single rank (exchanges deliver to this rank itself); for tests and single-process queries.
std::shared_ptr<communicator> single_rank();

/// Rank 0 of `ranks`, for planning only (explain() of a query that the gpus option would fork): it
/// describes the ranks; opening an exchange on it is an internal_error.
std::shared_ptr<communicator> planning_ranks(int ranks);

/// Exchange tags 0 .. max_exchanges - 1 are free for a query's exchanges.
constexpr int max_exchanges = 1000;

}  // namespace tug::dist
