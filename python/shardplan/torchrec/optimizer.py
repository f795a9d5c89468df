"""Which of shard-plan's optimizers (the state kept beside each table's weights) a TorchRec model trains
its embeddings with: the optimizer applied in backward, else the sharders' fused_params."""

import torch
from torchrec import optim as trec_optim
from torchrec.distributed.utils import optimizer_type_to_emb_opt_type

# FBGEMM's optimizer types by the state they keep; shard-plan's --optimizer names (docs/formats.md).
_BY_EMB_OPT_TYPE = {"EXACT_SGD": "sgd", "SGD": "sgd", "EXACT_ADAGRAD": "adagrad",
                    "EXACT_ROWWISE_ADAGRAD": "rowwise_adagrad", "ROWWISE_ADAGRAD": "rowwise_adagrad",
                    "ADAM": "adam"}

# shard-plan's optimizers as the torch optimizer classes TorchRec fuses into FBGEMM's kernel.
OPTIMIZER_CLASSES = {"sgd": torch.optim.SGD, "adagrad": torch.optim.Adagrad,
                     "rowwise_adagrad": trec_optim.RowWiseAdagrad, "adam": torch.optim.Adam}


def _from_emb_opt_type(emb_opt_type, where):
    name = _BY_EMB_OPT_TYPE.get(getattr(emb_opt_type, "name", str(emb_opt_type)))
    if name is None:
        raise ValueError(f"{where}: optimizer {emb_opt_type} has no shard-plan counterpart "
                         f"({', '.join(OPTIMIZER_CLASSES)}); pass optimizer= explicitly")
    return name


def planned_optimizer(module, sharders):
    """shard-plan's optimizer name for `module`'s embeddings; "sgd" when nothing says otherwise."""
    found = set()
    for name, param in module.named_parameters():
        for cls in getattr(param, "_optimizer_classes", []):
            found.add(_from_emb_opt_type(optimizer_type_to_emb_opt_type(cls), f"parameter {name}"))
    for sharder in sharders or []:
        fused = getattr(sharder, "fused_params", None) or {}
        if "optimizer" in fused:
            found.add(_from_emb_opt_type(fused["optimizer"], f"{type(sharder).__name__}.fused_params"))
    if len(found) > 1:
        raise ValueError(f"the model's embeddings train with several optimizers {sorted(found)}; shard-plan plans "
                         "one: pass optimizer= explicitly")
    return found.pop() if found else "sgd"
