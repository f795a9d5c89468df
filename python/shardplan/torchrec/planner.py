"""ShardPlanPlanner: shard-plan as a drop-in TorchRec ShardingPlanner.

    planner = ShardPlanPlanner(topology=Topology(world_size=8, compute_device="cuda", local_world_size=8),
                               batch_size=512, constraints=constraints)
    plan = planner.collective_plan(model, sharders)        # rank 0 plans, every rank gets the plan
    model = DistributedModelParallel(model, device=device, plan=plan, sharders=sharders)

    # Later, after a drift: plan again from that plan, moving what is worth its bytes, and move it live
    # (shardplan.torchrec.reshard.reshard: model.reshard(delta, path) for each module path with moves).
    plan, delta = planner.collective_replan(unsharded_copy, sharders, old_plan, move_budget="10%")
    reshard(model, delta)

It is built like TorchRec's EmbeddingShardingPlanner and reads the model through TorchRec's own enumerator
and storage reservation; the plan comes from the `shard-plan` binary; TorchRec's helpers turn it into the
ShardingPlan, and TorchRec's validators and storage estimate check it.
"""

import contextlib
import json
import logging
import os
import tempfile

import torch
import torch.distributed as dist
from torchrec.distributed.planner.planners import (EmbeddingPlannerBase, validate_compute_kernels,
                                                   validate_modules_inclusion_in_sharding_plan,
                                                   validate_rank_assignment)
from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
from torchrec.distributed.types import ShardedModule, ShardingPlan

from shardplan.binary import EXIT_INFEASIBLE, EXIT_USAGE, BinaryError, BinaryNotFound, run_binary
from shardplan.files import write_json_atomically
from shardplan.plan_file import UVM_KERNELS, PlanError, read_plan
from shardplan.torchrec.bridge import build_sharding_plan
from shardplan.torchrec.optimizer import planned_optimizer
from shardplan.torchrec.reshard import reshard_problems, sharding_plan_delta
from shardplan.torchrec.selected_options import check_storage, selected_options
from shardplan.torchrec.tables import TableError, describe_module, plan_sharding_types, tables_document

logger = logging.getLogger("shardplan")

# EmbeddingShardingPlanner's own search parts: shard-plan's search replaces them.
_SEARCH_PARTS = ("proposer", "partitioner", "performance_model", "callbacks", "plan_loader")


class ShardPlanPlanner(EmbeddingPlannerBase):
    """A TorchRec ShardingPlanner whose plans come from shard-plan's neural cost model and search.

    Takes EmbeddingShardingPlanner's arguments, in its order: topology, batch_size, enumerator,
    storage_reservation, proposer, partitioner, performance_model, stats, constraints, debug, callbacks,
    timeout_seconds (shard-plan's time limit), plan_loader. The search parts (proposer, partitioner,
    performance_model, callbacks, plan_loader) are shard-plan's own and are ignored with a warning.
    Beyond them, by keyword: `model` (a model directory or bundled name; None: the binary's default),
    `hardware` (a profile name or file), `optimizer` ("sgd", "adagrad", "rowwise_adagrad", "adam"; None:
    read from the optimizer applied in backward, else the sharders' fused_params), `seed`, `extra_args`
    (more shard-plan flags), `binary` (None: shardplan.binary's search), `plan_path` (where to keep the
    shard-plan plan file) and `tables_path` (where to keep the tables file it was planned from, so that
    `python -m shardplan.measure --plan PLAN --tables TABLES` times the same plan). After plan():
    `last_plan`, `last_tables`, `last_report`, and get_selected_options().

    replan(module, sharders, old_plan, move_budget="10%") plans again starting from `old_plan` (a shard-plan
    plan dict, such as `last_plan` after plan(), or its file), moving only the table-wise and column-wise
    shards worth their bytes within `move_budget`, whole, as TorchRec's reshard moves them (shard-plan's
    `--from OLD --move-budget SIZE|PCT --keep-shapes`: "10%", "64MiB", a byte count; "0" keeps the old
    placement). It returns (ShardingPlan, delta): delta is
    {module path: (megabytes, EmbeddingModuleShardingPlan of the tables that move)}, TorchRec's own
    output_sharding_plans_delta between the old plan's ShardingPlan and the new one, which
    DistributedModelParallel.reshard(delta, path) takes, one call per module path with moves (path None for
    a model that is itself the collection); shardplan.torchrec.reshard.reshard(dmp, delta) makes the calls,
    also on a DMP that wrapped nothing in DDP, where TorchRec's own fails (reshard.py). `module` is
    the unsharded model, as for plan() (DMP shards its model in place: keep a copy, on the meta device
    will do, with the same optimizer applied in backward); `old_plan` must be the plan the job runs, for
    the same tables, world size and local world size. A replan TorchRec's reshard cannot apply (a table
    changing type, shards changing on the same ranks, two shards of a moved table on one rank) raises
    PlannerError (OTHER); the new plan is in `last_plan` (and plan_path) still. collective_replan() runs it
    on rank 0 and broadcasts the pair; a PlannerError there is raised on every rank. On Gloo every rank must
    run with one PYTHONHASHSEED for the reshard: TorchRec tags its sends with hashes of table names.
    """

    def __init__(self, topology=None, batch_size=None, enumerator=None, storage_reservation=None, proposer=None,
                 partitioner=None, performance_model=None, stats=None, constraints=None, debug=True, callbacks=None,
                 timeout_seconds=None, plan_loader=None, *, model=None, hardware=None, optimizer=None, seed=0,
                 extra_args=(), binary=None, plan_path=None, tables_path=None):
        super().__init__(topology=topology, batch_size=batch_size, enumerator=enumerator,
                         storage_reservation=storage_reservation, stats=stats, constraints=constraints, debug=debug,
                         timeout_seconds=timeout_seconds)
        given = dict(proposer=proposer, partitioner=partitioner, performance_model=performance_model,
                     callbacks=callbacks, plan_loader=plan_loader)
        ignored = [name for name in _SEARCH_PARTS if given[name]]
        if ignored:
            logger.warning("ShardPlanPlanner: %s are EmbeddingShardingPlanner's search; shard-plan searches "
                           "itself and ignores them", ", ".join(ignored))
        self.model, self.hardware, self.optimizer = model, hardware, optimizer
        self.seed, self.extra_args = seed, list(extra_args)
        if plan_path and tables_path and os.path.abspath(plan_path) == os.path.abspath(tables_path):
            raise ValueError(f"ShardPlanPlanner: plan_path and tables_path are the same file ({plan_path})")
        self.binary, self.plan_path, self.tables_path = binary, plan_path, tables_path
        self.last_plan, self.last_tables, self.last_report = None, None, None
        self._selected = None

    def get_selected_options(self):
        """The plan's shards as TorchRec's ShardingOptions, with its storage estimates (after plan())."""
        return self._selected or []

    def plan(self, module, sharders):
        with _planner_errors():
            return self._plan(module, sharders)

    def replan(self, module, sharders, old_plan, move_budget="10%"):
        """(ShardingPlan, delta for DistributedModelParallel.reshard): the class docstring says more."""
        with _planner_errors():
            return self._replan(module, sharders, old_plan, move_budget)

    def collective_replan(self, module, sharders, old_plan, move_budget="10%", pg=None):
        """replan() on rank 0 of `pg` (default: the world), its (plan, delta) broadcast to every rank; a
        failure on rank 0 is raised there and as a PlannerError on every other rank. Only rank 0 reads old_plan
        and keeps last_plan."""
        if pg is None:
            if not dist.is_initialized():
                raise RuntimeError("collective_replan needs an initialized process group; replan() plans alone")
            pg = dist.GroupMember.WORLD
        outcome, failure = [None], None
        if pg.rank() == 0:
            try:
                outcome = [("plan", self.replan(module, sharders, old_plan, move_budget))]
            except Exception as e:  # every rank raises: none is left waiting for a broadcast
                outcome, failure = [("error", (str(e), getattr(e, "error_type", PlannerErrorType.OTHER)))], e
        if pg.size() > 1:
            dist.broadcast_object_list(outcome, group_src=0, group=pg)
        kind, value = outcome[0]
        if failure is not None:
            raise failure
        if kind == "error":
            raise PlannerError(*value)
        return value

    def _replan(self, module, sharders, old_plan, move_budget):
        if any(isinstance(m, ShardedModule) for m in module.modules()):
            raise PlannerError("shard-plan: replan plans the unsharded model, as plan() does; "
                               "DistributedModelParallel shards its model in place: pass a copy built as the "
                               "original (on the meta device will do)", PlannerErrorType.INPUT_VALIDATION)
        old_path = None if isinstance(old_plan, dict) else os.fspath(old_plan)
        # The plan the job runs is never written over: plan_path and tables_path receive the replan's files.
        for kept, name in ((self.plan_path, "plan_path"), (self.tables_path, "tables_path")):
            if old_path and kept and os.path.abspath(kept) == os.path.abspath(old_path):
                raise PlannerError(f"shard-plan: the old plan {old_path} is this planner's {name}, which the "
                                   "replan would overwrite: give the old plan as a dict, or another plan_path",
                                   PlannerErrorType.INPUT_VALIDATION)
        try:
            old = old_plan if old_path is None else read_plan(old_path)
            old_sharding = build_sharding_plan(old, module, device_type=self._topology.compute_device,
                                               sharders=sharders, check_launch=False)
        except PlanError as e:
            raise PlannerError(f"shard-plan: the old plan: {e}", PlannerErrorType.INPUT_VALIDATION) from e
        new_sharding = self._plan(module, sharders, replan=(old_path, old, move_budget))
        delta = sharding_plan_delta(old_sharding, new_sharding)
        problems = reshard_problems(old_sharding, new_sharding, delta)
        if problems:
            more = f" (and {len(problems) - 5} more)" if len(problems) > 5 else ""
            raise PlannerError("shard-plan: TorchRec's reshard cannot move the running model to the replan (it "
                               "is in last_plan): " + "; ".join(problems[:5]) + more, PlannerErrorType.OTHER)
        return new_sharding, delta

    def _plan(self, module, sharders, replan=None):
        topology = self._topology
        reserved = self._storage_reservation.reserve(topology=topology, batch_size=self._batch_size,
                                                     module=module, sharders=sharders,
                                                     constraints=self._constraints)
        try:
            options = self._enumerator.enumerate(module=module, sharders=sharders)
        except RuntimeError as e:  # TorchRec's enumerator: a table its sharders and constraints leave nothing
            raise PlannerError(f"shard-plan: TorchRec offers a table no way to shard it on "
                               f"{topology.compute_device}: {e}", PlannerErrorType.STRICT_CONSTRAINTS) from e
        tables = describe_module(options)
        if not tables:
            return ShardingPlan({})
        # Embeddings live in HBM on GPUs; a CPU topology keeps them in DDR.
        kind = "hbm" if topology.compute_device == "cuda" else "ddr"
        memory = min(getattr(device.storage, kind) for device in reserved.devices)
        if memory <= 0:
            raise PlannerError(f"no {kind.upper()} is left per rank after TorchRec's storage reservation "
                               f"({memory} bytes)", PlannerErrorType.INSUFFICIENT_STORAGE)
        try:
            optimizer = self.optimizer or planned_optimizer(module, sharders)
        except ValueError as e:
            raise PlannerError(f"shard-plan: {e}", PlannerErrorType.INPUT_VALIDATION) from e
        plan = self._run_binary(tables, topology, memory, optimizer, replan)
        # Planning a topology is not running in one: the plan is for `topology`, whatever job plans it.
        sharding_plan = build_sharding_plan(plan, module, device_type=topology.compute_device, sharders=sharders,
                                            check_launch=False)
        validate_modules_inclusion_in_sharding_plan(sharding_plan, module, sharders)
        validate_rank_assignment(sharding_plan, topology)
        built = {(path, name): ps.sharding_type for path, module_plan in sharding_plan.plan.items()
                 for name, ps in module_plan.items()}
        self._selected = selected_options(options, tables, plan, topology, self._constraints, sharders, built)
        validate_compute_kernels(self._selected)
        check_storage(self._selected, reserved, kind)
        if kind == "hbm" and any(o.compute_kernel in UVM_KERNELS for o in self._selected):
            check_storage(self._selected, reserved, "ddr")  # UVM tables live in host memory
        return sharding_plan

    def _cluster_args(self, topology, memory, optimizer, tables):
        args = ["--gpus", topology.world_size, "--gpus-per-host", topology.local_world_size,
                "--mem-per-gpu", int(memory), "--optimizer", optimizer, "--seed", self.seed,
                "--sharding-types", ",".join(plan_sharding_types(tables))]
        if self.model:
            args += ["--model", self.model]
        if self.hardware:
            args += ["--hardware", self.hardware]
        if self._timeout_seconds:
            args += ["--time-limit", self._timeout_seconds]
        return args + self._device_args(topology) + self._host_memory_args(topology) + self.extra_args

    def _device_args(self, topology):
        # The GPU this job runs on, so that a cost model timed on another device is warned of; a planner
        # on a host without GPUs cannot tell, and the user's own --device-model wins.
        if topology.compute_device != "cuda" or "--device-model" in self.extra_args:
            return []
        name = _local_gpu_name()
        return ["--device-model", name] if name else []

    def _host_memory_args(self, topology):
        # On GPUs, the topology's DDR per rank (after TorchRec's reservation, which counts none for
        # embeddings on cuda) lets shard-plan keep tables HBM cannot hold in host memory behind a cache
        # (fused_uvm_caching); a host's ranks share it. Its host link is TorchRec's hbm_to_ddr_mem_bw
        # (bytes per ms) unless a hardware profile says. The user's own flags win.
        if topology.compute_device != "cuda":
            return []
        given = set(self.extra_args)
        args = []
        ddr = min(device.storage.ddr for device in topology.devices)
        if "--ddr-per-host" not in given and ddr > 0:
            args += ["--ddr-per-host", int(ddr) * topology.local_world_size]
        bandwidth = getattr(topology, "hbm_to_ddr_mem_bw", None)
        if "--host-link-GBps" not in given and not self.hardware and bandwidth:
            args += ["--host-link-GBps", float(bandwidth) * 1e-6]
        return args

    def _run_binary(self, tables, topology, memory, optimizer, replan=None):
        with tempfile.TemporaryDirectory(prefix="shardplan-") as work:
            tables_path = os.path.join(work, "tables.json")
            plan_path = os.path.join(work, "plan.json")
            self.last_tables = tables_document(tables)
            with open(tables_path, "w", encoding="utf-8") as f:
                json.dump(self.last_tables, f)
            # No comparison with shard-plan's own baselines: a training job wants its plan.
            args = ["plan", "--tables", tables_path, "-o", plan_path, "--log-level", "warn", "--no-compare"]
            if replan:
                # A replan starts from the old plan's file: the one given, else a copy of the dict.
                old_path, old, move_budget = replan
                if old_path is None:
                    old_path = os.path.join(work, "old-plan.json")
                    with open(old_path, "w", encoding="utf-8") as f:
                        json.dump(old, f)
                # Whole shards only: TorchRec's reshard moves shards, it cannot re-cut them or change a type.
                args += ["--from", old_path, "--move-budget", str(move_budget), "--keep-shapes"]
            self.last_report = run_binary(args + self._cluster_args(topology, memory, optimizer, tables),
                                          binary=self.binary)
            logger.info("shard-plan's plan:\n%s", self.last_report)
            with open(plan_path, encoding="utf-8") as f:
                self.last_plan = json.load(f)
        if self.plan_path:
            write_json_atomically(self.plan_path, self.last_plan)
        if self.tables_path:
            write_json_atomically(self.tables_path, self.last_tables)
        return self.last_plan


def _local_gpu_name():
    try:
        return torch.cuda.get_device_name() if torch.cuda.is_available() else None
    except RuntimeError:  # a driver that cannot be reached reads as no GPU
        return None


@contextlib.contextmanager
def _planner_errors():
    # What goes wrong as TorchRec's PlannerError, of the kind TorchRec's planner would raise.
    try:
        yield
    except BinaryError as e:
        kind = {EXIT_INFEASIBLE: PlannerErrorType.INSUFFICIENT_STORAGE,
                EXIT_USAGE: PlannerErrorType.INPUT_VALIDATION}.get(e.code, PlannerErrorType.OTHER)
        raise PlannerError(f"shard-plan: {e.message.strip()}", kind) from e
    except TableError as e:
        raise PlannerError(f"shard-plan: {e}", PlannerErrorType.STRICT_CONSTRAINTS) from e
    except (PlanError, BinaryNotFound) as e:
        raise PlannerError(f"shard-plan: {e}", PlannerErrorType.OTHER) from e
