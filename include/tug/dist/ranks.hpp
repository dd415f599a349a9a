#pragma once
/// Queries on ranks that a launcher tug does not know started (Ray actors: python/tug/ray.py): each rank
/// process joins the others through a communicator it is given (socket_ranks over connected TCP
/// sockets) and runs the same queries in the same order (SPMD), as under mpirun.
#include <memory>

#include "tug/api/lazy_frame.hpp"
#include "tug/dist/communicator.hpp"

namespace tug::dist {

/// Runs `lf` as rank comm->rank() of comm->size(): every rank calls it with the same query, in the same
/// order. The result is on rank 0 (the other ranks get empty frames); an error on any rank raises on
/// every rank (its kind, naming the rank). engine_options::gpus is ignored (these ranks have their GPUs).
query_result collect_as_rank(const lazy_frame& lf, const engine_options& opts, std::shared_ptr<communicator> comm);

}  // namespace tug::dist
