"""Engine options: ``EngineOptions`` mirrors the C++ ``engine_options`` (docs/options.md) field by field,
with the same names and defaults."""
from __future__ import annotations

from . import _tug
from .exceptions import InvalidArgumentError

_FIELDS = ("engine", "target_partition_rows", "target_partition_size", "num_threads", "memory_limit",
           "spill_device_limit", "pinned_memory", "gpu_parquet_reader", "gpu_parquet_device_decompression",
           "host_spill_limit", "spill_directory", "spill_disk_limit", "spill_everything", "force_external", "num_streams",
           "statistics", "fallback", "broadcast_limit", "collective_timeout", "collect_on_every_rank", "gpus", "optimizer", "check_optimizer_schema")
_OPTIMIZER_FIELDS = ("constant_folding", "predicate_pushdown", "projection_pushdown", "slice_pushdown",
                     "common_subplan", "late_materialization")


class OptimizerFlags(_tug.OptimizerFlags):
    """The optimizer's passes, each on or off (all on by default)."""

    def __init__(self, **flags):
        super().__init__()
        for k, v in flags.items():
            if k not in _OPTIMIZER_FIELDS:
                raise InvalidArgumentError(f"unknown optimizer flag {k!r} (known: {', '.join(_OPTIMIZER_FIELDS)})")
            setattr(self, k, bool(v))

    def __repr__(self):
        return "OptimizerFlags(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in _OPTIMIZER_FIELDS) + ")"


class EngineOptions(_tug.EngineOptions):
    """Options of one query: ``EngineOptions(engine="cpu", memory_limit=2 << 30, num_threads=4)``.

    ``engine`` is "auto" (the GPU when one is visible and tug was built with CUDA, else the CPU), "cpu" or
    "gpu"; ``fallback`` is "warn", "raise" or "silent"; ``optimizer`` is an OptimizerFlags or a dict of
    flags. Values are checked when a query runs (InvalidArgumentError naming the option).
    """

    def __init__(self, **options):
        super().__init__()
        self.update(**options)

    def update(self, **options) -> EngineOptions:
        for k, v in options.items():
            if k not in _FIELDS:
                raise InvalidArgumentError(f"unknown engine option {k!r} (known: {', '.join(_FIELDS)})")
            if k == "optimizer" and isinstance(v, dict):
                v = OptimizerFlags(**v)
            setattr(self, k, v)
        return self

    def to_dict(self) -> dict:
        out = {k: getattr(self, k) for k in _FIELDS}
        out["optimizer"] = {k: getattr(self.optimizer, k) for k in _OPTIMIZER_FIELDS}
        return out

    def copy(self) -> EngineOptions:
        return EngineOptions(**self.to_dict())

    def __repr__(self):
        return "EngineOptions(" + ", ".join(f"{k}={v!r}" for k, v in self.to_dict().items()) + ")"


def resolve(engine, options, overrides) -> EngineOptions:
    """The options of one call: `options` (or the defaults), then `engine`, then keyword overrides."""
    if isinstance(engine, _tug.EngineOptions):
        if options is not None:
            raise InvalidArgumentError("pass the options either as engine= or as options=, not both")
        options, engine = engine, None
    o = EngineOptions(**options.to_dict()) if isinstance(options, EngineOptions) else EngineOptions()
    if options is not None and not isinstance(options, EngineOptions):
        if isinstance(options, dict):
            o.update(**options)
        else:
            raise InvalidArgumentError(f"options must be an EngineOptions or a dict, got {type(options).__name__}")
    if engine is not None:
        if not isinstance(engine, str):
            raise InvalidArgumentError(f"engine must be 'auto', 'cpu', 'gpu' or an EngineOptions, got {engine!r}")
        o.engine = engine
    o.update(**overrides)
    return o
