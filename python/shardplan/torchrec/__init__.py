"""shard-plan for TorchRec 1.x users.

  ShardPlanPlanner      a drop-in ShardingPlanner (planner.py)
  build_sharding_plan   a plan file as the ShardingPlan of every EmbeddingBagCollection in a model (bridge.py)

Importing this package does not import TorchRec (so `python -m shardplan.torchrec PLAN` describes a plan
without it); the names above import it on first use. Importing it with a TorchRec that shardplan does not
support raises UnsupportedTorchRec naming the versions it supports (shardplan.versions).
"""
from shardplan.versions import require_supported_torchrec

require_supported_torchrec()

_LAZY = {"ShardPlanPlanner": "shardplan.torchrec.planner", "build_sharding_plan": "shardplan.torchrec.bridge"}

__all__ = list(_LAZY)


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'shardplan.torchrec' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(_LAZY[name]), name)
