"""tug on Ray: one Ray actor per rank (per GPU where the cluster has GPUs), running the same SPMD ranks as
``mpirun`` or ``EngineOptions.gpus`` (docs/python.md, "Ray").

    import tug
    from tug.ray import RayEngine

    engine = RayEngine()              # one rank per GPU of the Ray cluster (ray.init() first if you like)
    df = engine.collect(lambda: tug.scan_parquet("/shared/lineitem/").group_by("l_returnflag")
                                       .agg(tug.col("l_quantity").sum()))
    engine.shutdown()

A query is given as a function that builds it: every rank builds the same plan and reads its own share of
the sources (as every process does under mpirun), so the sources must be readable from every actor (a
shared file system, Cassandra). A LazyFrame itself cannot travel to the actors. The ranks exchange rows
over TCP sockets between the actors (and GPU rows device to device over NCCL when every rank has a GPU of
its own); the result comes back from rank 0 as Arrow. An error on any rank raises here, with its kind.
"""
from __future__ import annotations

import socket

from . import _tug
from .frame import DataFrame, _as_lazy, from_arrow
from .options import EngineOptions, resolve

__all__ = ["RayEngine"]


class _Rank:
    """One rank: a process of its own (a Ray actor), which joins the others through TCP sockets."""

    def __init__(self, rank: int, size: int):
        self.rank, self.size = rank, size
        self._listener = None
        self._ranks = None

    def listen(self) -> tuple:
        """Opens a listening socket; returns where the other ranks reach this one."""
        import ray

        self._listener = socket.create_server(("", 0), backlog=self.size)
        host = ray.util.get_node_ip_address()
        return host, self._listener.getsockname()[1]

    def connect(self, addresses: list, timeout: float) -> str:
        """Connects to every other rank: to each lower rank by its address (saying who this is), and takes
        the connections of the higher ranks. Returns the communicator's description."""
        fds = [-1] * self.size
        socks = {}
        for r in range(self.rank):
            s = socket.create_connection(tuple(addresses[r]), timeout=timeout)
            s.sendall(self.rank.to_bytes(4, "little"))
            socks[r] = s
        self._listener.settimeout(timeout)
        for _ in range(self.rank + 1, self.size):
            s, _addr = self._listener.accept()
            s.settimeout(timeout)
            who = int.from_bytes(_read_exactly(s, 4), "little")
            if who <= self.rank or who >= self.size or who in socks:
                raise RuntimeError(f"tug.ray: rank {self.rank} got a connection from rank {who}")
            socks[who] = s
        self._listener.close()
        for r, s in socks.items():
            s.settimeout(None)
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            fds[r] = s.detach()  # the communicator owns the descriptor from here
        self._ranks = _tug.socket_ranks(self.rank, fds)
        return self._ranks.describe()

    def collect(self, build, options: dict):
        """Builds the query and runs it as this rank: rank 0 returns the result as an Arrow table."""
        lf = _as_lazy(build())
        frame = DataFrame._from(lf._lf.collect_as_rank(EngineOptions(**options), self._ranks).frame)
        return frame.to_arrow() if self.rank == 0 else None


def _read_exactly(s, n: int) -> bytes:
    out = b""
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise RuntimeError("tug.ray: a rank closed its connection while the ranks were joining")
        out += chunk
    return out


class RayEngine:
    """``ranks`` actors (default: one per GPU of the Ray cluster, else one per node's CPU share: 1), each
    with ``gpus_per_rank`` GPUs (default: 1 when the cluster has a GPU for every rank, else 0, the CPU
    engine). ``ray_init``: keywords for ``ray.init`` when Ray is not initialized yet. ``timeout``: seconds
    the ranks wait for each other while joining."""

    def __init__(self, ranks: int | None = None, *, gpus_per_rank: float | None = None, timeout: float = 60,
                 **ray_init):
        import ray

        if not ray.is_initialized():
            ray.init(**ray_init)
        cluster_gpus = int(ray.cluster_resources().get("GPU", 0))
        if ranks is None:
            ranks = max(cluster_gpus, 1)
        if ranks < 1:
            raise ValueError(f"RayEngine: ranks must be at least 1, not {ranks}")
        if gpus_per_rank is None:
            gpus_per_rank = 1 if cluster_gpus >= ranks else 0
        actor = ray.remote(num_gpus=gpus_per_rank, num_cpus=0)(_Rank)
        self.ranks = ranks
        self._actors = [actor.remote(r, ranks) for r in range(ranks)]
        addresses = ray.get([a.listen.remote() for a in self._actors])
        self.description = ray.get([a.connect.remote(addresses, timeout) for a in self._actors])[0]

    def collect(self, query, *, engine="auto", options=None, **option_overrides) -> DataFrame:
        """Runs ``query()`` (a function returning a LazyFrame) on every rank; returns rank 0's result.
        ``engine``, ``options`` and keywords as in LazyFrame.collect."""
        import ray

        if not callable(query):
            raise TypeError("RayEngine.collect takes a function that builds the query (every rank builds it), "
                            "not a LazyFrame")
        o = resolve(engine, options, option_overrides)
        o.statistics = False
        results = [a.collect.remote(query, o.to_dict()) for a in self._actors]
        # every rank's outcome (so Ray reports no error as unhandled); rank 0's error first: it names the
        # rank where the query failed and keeps its kind
        outcomes = []
        for r in results:
            try:
                outcomes.append((ray.get(r), None))
            except ray.exceptions.RayError as e:
                outcomes.append((None, getattr(e, "cause", None) or e))
        for _, error in outcomes:
            if error is not None:
                raise error
        return from_arrow(outcomes[0][0])

    def shutdown(self) -> None:
        """Ends the actors (the engine cannot run queries after this)."""
        import ray

        for a in self._actors:
            ray.kill(a)
        self._actors = []

