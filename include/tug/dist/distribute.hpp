#pragma once
/// Multi-rank execution of a physical plan (docs/architecture.md, "Multi-rank execution"): exchanges
/// are put below the nodes whose input is not spread over the ranks as they need it (rank_need), the
/// scans read their rank's share of their sources, and the result ends on rank 0.
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "tug/dist/communicator.hpp"
#include "tug/exec/physical.hpp"

namespace tug::dist {

/// One query on several ranks: the communicator, the query's number (the same on every rank: each
/// rank runs the same queries in the same order) and its exchange tags, handed out in plan order.
struct query_ranks {
  std::shared_ptr<communicator> comm;
  int64_t query = 0;
  double timeout = 0;  ///< collective_timeout
  int next_tag = 0;
  int take_tag();
  /// The exchange that sets up the NCCL link between the ranks' devices (src/dist/device_link.hpp) when
  /// the plan exchanges device tables and no earlier query set it up; -1: the plan has no such exchange.
  int device_tag = -1;
  /// Bytes this rank sent to other ranks per exchange (tag -> name, bytes), for statistics; of them,
  /// `device_bytes` went device to device over NCCL.
  std::map<int, std::pair<std::string, int64_t>> sent;
  int64_t device_bytes = 0;
  std::mutex sent_mu;
  void add_sent(int tag, const std::string& name, int64_t bytes, int64_t device = 0);
  /// One line: what this rank sent in each exchange; empty when it sent nothing.
  std::string sent_to_string() const;
  /// The same as a JSON object: {"rank": r, "ranks": n, "sent_bytes": total, "device_bytes": over NCCL,
  /// "sent": [{"exchange": tag, "name": ..., "bytes": ...}, ...]} (query_result::statistics_json's "exchanges").
  std::string sent_to_json() const;
};

/// The sum over all ranks of each rank's `v` (world()): a collective between queries, which every rank
/// calls in the same order (e.g. to agree whether to go on); on one rank, `v`. It takes a query number.
/// @throws distributed_error after `timeout` seconds (0: none) without every rank's value.
int64_t sum_over_ranks(int64_t v, double timeout);

/// The next query number of this process (every rank counts its queries alike).
int64_t next_query_number();

/// `root` with exchanges put in where its nodes need them, its scans reading this rank's share, and
/// the result gathered to rank 0 (to every rank with opts.collect_on_every_rank); the other ranks then
/// output nothing. With `leave_split`, a result split among the ranks stays where it is (each rank
/// outputs its share; in rank order they are the result); any other result is on rank 0 alone.
/// Joins broadcast their build side under opts.broadcast_limit rows.
/// Runs only with q.comm->size() > 1. @throws not_implemented_error when a plan needs more exchanges
/// than max_exchanges.
physical_ptr distribute(physical_ptr root, std::shared_ptr<query_ranks> q, const engine_options& opts,
                        bool leave_split = false);

/// A sink that every rank writes its own share of the result into (a directory of part files):
/// run_plan on several ranks does not gather the result for it (distribute's `leave_split`).
class rank_share_writer : public partition_writer {};

/// `flags` for a query on `ranks` ranks: late materialization is off on several (its row index would
/// gather every row to rank 0).
optimizer_flags flags_for_ranks(optimizer_flags flags, int ranks);

}  // namespace tug::dist
