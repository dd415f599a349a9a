#pragma once
// engine_options::gpus: a query on ranks that are processes forked from this one (forked_ranks.cpp).
#include <memory>

#include "tug/api/lazy_frame.hpp"

namespace tug {

/// The number of forked ranks `opts` asks for: gpus (-1: the host's GPUs), or 1 when this process runs
/// the query alone (gpus 0 or 1, or under an MPI launcher, whose processes are the ranks already).
int forked_ranks_for(const engine_options& opts);

/// Runs `p` on `ranks` processes forked from this one, joined by Unix sockets (dist::socket_ranks),
/// each seeing one GPU (dist::use_one_gpu of its rank); rank 0's result, statistics and plan come back
/// here. The children inherit the plan and its in-memory data (copy-on-write) and exit after the query.
/// With `sink`, rank 0 sends the result's partitions here in index order as they are made and `sink`
/// (made in this process) writes them; the result's frame is then empty.
/// @throws invalid_argument_error when this process has used CUDA already (a forked process cannot);
/// the error of the rank that failed, with its kind; distributed_error when a rank's process died; the
/// sink's error when it fails (the ranks are stopped).
query_result run_forked_ranks(const plan_ptr& p, const engine_options& opts, int ranks,
                              std::shared_ptr<partition_writer> sink = nullptr);

/// The number of ranks a query with `opts` runs on: the launcher's (mpirun) or the forked ones
/// (forked_ranks_for); the optimizer's rank-dependent flags follow it (dist::flags_for_ranks).
int query_ranks_for(const engine_options& opts);

}  // namespace tug
