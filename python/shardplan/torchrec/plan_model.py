"""A model holding a plan's tables: EmbeddingBagCollections on the meta device, at the module paths the
plan's table names give ("module.path/name"; plain names share one collection). Its forward looks every
feature up and returns the pooled embeddings side by side, so it can be trained under
DistributedModelParallel (python -m shardplan.measure) or only sharded (--check-torchrec)."""

import torch
from torchrec import EmbeddingBagCollection, EmbeddingBagConfig

UNQUALIFIED = "ebc"  # the module path of the plain-named tables' collection, unless a qualified name takes it


def split_plan_name(name):
    """(module path or None, table name) of a plan's table name."""
    path, sep, table = name.rpartition("/")
    return (path, table) if sep else (None, name)


class PlanTables(torch.nn.Module):
    """The collections at their paths; forward(features) is every collection's pooled output, concatenated."""

    def __init__(self):
        super().__init__()
        self.collection_paths = []  # by path: DistributedModelParallel swaps in sharded collections there

    def forward(self, features):
        outputs = [self.get_submodule(path)(features) for path in self.collection_paths]
        return torch.cat([o.values() for o in outputs], dim=1)  # KeyedTensors (awaited when sharded)


def model_of_plan(description, data_types=None):
    """The model of a described plan; every table's one feature is named after its plan name."""
    groups = {}
    qualified_paths = {split_plan_name(t["table"])[0] for t in description["tables"]} - {None}
    unqualified = UNQUALIFIED
    while unqualified in qualified_paths:
        unqualified = "_" + unqualified
    for t in description["tables"]:
        path, name = split_plan_name(t["table"])
        path = unqualified if path is None else path
        extra = {"data_type": data_types[t["table"]]} if data_types else {}
        groups.setdefault(path, []).append(EmbeddingBagConfig(
            name=name, num_embeddings=t["rows"], embedding_dim=t["dim"], feature_names=[t["table"]], **extra))
    root = PlanTables()
    root.unqualified_path = unqualified
    for path, configs in groups.items():
        parent, parts = root, path.split(".")
        for part in parts[:-1]:
            if not hasattr(parent, part):
                parent.add_module(part, torch.nn.Module())
            parent = getattr(parent, part)
        parent.add_module(parts[-1], EmbeddingBagCollection(tables=configs, device=torch.device("meta")))
        root.collection_paths.append(".".join(parts))
    return root
