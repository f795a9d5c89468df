"""shard-plan's Python side: TorchRec integration and real-stack measurement.

  shardplan.torchrec   ShardPlanPlanner (a TorchRec ShardingPlanner), the plan-file bridge, TorchRec's
                       own planner as a baseline (python -m shardplan.torchrec.baseline)
  shardplan.measure    training steps of a plan on TorchRec + FBGEMM, under torchrun
  shardplan.plan_file  the plan file, read and described (standard library only)
  shardplan.binary     finding and running the shard-plan binary (standard library only)
"""

__version__ = "0.1.0"
