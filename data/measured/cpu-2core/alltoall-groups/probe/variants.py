"""Three variants of one TorchRec plan (trplanner-7 of cluster-model-60/same-session, 56 tables table-wise
on 4 ranks) that differ from it in one table's or a few tables' sharding type only:
  tw1cw-7: t505 (386 x 40) column-wise in two pieces of 20 columns on its rank and the next
  tw4cw-7: that, and three more small tables (t635, t796, t665) halved the same way
  tw1dp-7: t505 data-parallel instead
  python3 variants.py PLAN OUT_DIR"""
import copy
import json
import sys


def column_wise(table, first):
    r0 = table["ranks"][0]
    r1 = (r0 + 1) % 4
    table.update(sharding_type="column_wise", ranks=[r0, r1], shards=[
        {"rank": r0, "shard_offsets": [0, 0], "shard_sizes": [table["rows"], first], "placement": f"rank:{r0}/cuda:{r0}"},
        {"rank": r1, "shard_offsets": [0, first], "shard_sizes": [table["rows"], table["dim"] - first],
         "placement": f"rank:{r1}/cuda:{r1}"}])


def data_parallel(table):
    table.update(sharding_type="data_parallel", compute_kernel="dense", ranks=[0, 1, 2, 3], shards=[
        {"rank": r, "shard_offsets": [0, 0], "shard_sizes": [table["rows"], table["dim"]], "placement": f"rank:{r}/cuda:{r}"}
        for r in range(4)])


def variant(plan, changes):
    out = copy.deepcopy(plan)
    out.pop("devices", None)
    out.pop("summary", None)
    for t in out["tables"]:
        if t["name"] in changes:
            changes[t["name"]](t)
    return out


plan = json.load(open(sys.argv[1]))
halve = lambda t: column_wise(t, t["dim"] // 2)
for name, changes in {"tw1cw-7": {"t505": halve},
                      "tw4cw-7": {"t505": halve, "t635": halve, "t796": halve, "t665": halve},
                      "tw1dp-7": {"t505": data_parallel}}.items():
    json.dump(variant(plan, changes), open(f"{sys.argv[2]}/{name}.json", "w"))
