"""A plan's tables as a TorchRec model sharded under the plan by DistributedModelParallel."""

import dataclasses

import torch
from torch.distributed.optim import _apply_optimizer_in_backward
from torchrec.distributed import DistributedModelParallel
from torchrec.distributed.embeddingbag import EmbeddingBagCollectionSharder
from torchrec.modules.embedding_configs import DataType

from shardplan.plan_file import describe_plan
from shardplan.torchrec.bridge import build_sharding_plan
from shardplan.torchrec.optimizer import OPTIMIZER_CLASSES
from shardplan.torchrec.plan_model import model_of_plan

# Per-optimizer settings; what is trained does not matter here, only that the kernel does its update.
OPTIMIZER_KWARGS = {"sgd": {"lr": 0.01}, "adagrad": {"lr": 0.01, "eps": 1e-8},
                    "rowwise_adagrad": {"lr": 0.01, "eps": 1e-8}, "adam": {"lr": 0.001}}
DATA_TYPES = {"fp32": DataType.FP32, "fp16": DataType.FP16}


@dataclasses.dataclass
class ShardedPlanModel:
    model: DistributedModelParallel
    feature_names: list  # one feature per table, named after the plan's table


def shard_plan_model(plan, device, one_group=True):
    """Every rank calls this with the same plan (a dict); the process group must be up. one_group: as
    build_sharding_plan's."""
    description = describe_plan(plan)
    optimizer = plan.get("optimizer", "sgd")
    if optimizer not in OPTIMIZER_CLASSES:
        raise ValueError(f"plan: optimizer {optimizer!r} is not one of {', '.join(OPTIMIZER_CLASSES)}")
    dtypes = {t["name"]: DATA_TYPES.get(t.get("dtype", "fp32"), DataType.FP32) for t in plan["tables"]}
    model = model_of_plan(description, data_types=dtypes)
    # The fused kernel: TorchRec fuses the optimizer applied in backward into FBGEMM's update.
    _apply_optimizer_in_backward(OPTIMIZER_CLASSES[optimizer], model.parameters(), OPTIMIZER_KWARGS[optimizer])
    sharders = [EmbeddingBagCollectionSharder()]
    sharding_plan = build_sharding_plan(plan, model, device_type=device.type, sharders=sharders, one_group=one_group)
    dmp = DistributedModelParallel(model, device=device, plan=sharding_plan, sharders=sharders)
    return ShardedPlanModel(model=dmp, feature_names=[t["table"] for t in description["tables"]])
