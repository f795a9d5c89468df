"""ShardPlanPlanner: shard-plan as a drop-in TorchRec ShardingPlanner.

    planner = ShardPlanPlanner(topology=Topology(world_size=8, compute_device="cuda", local_world_size=8),
                               batch_size=512, constraints=constraints)
    plan = planner.collective_plan(model, sharders)        # rank 0 plans, every rank gets the plan
    model = DistributedModelParallel(model, device=device, plan=plan, sharders=sharders)

It is built like TorchRec's EmbeddingShardingPlanner (topology, batch size, constraints, enumerator, storage
reservation) and reads the model through TorchRec's own enumerator and storage reservation; the plan comes
from the `shard-plan` binary, and TorchRec's helpers and validators turn it into the ShardingPlan.
"""

import json
import logging
import os
import tempfile

from torchrec.distributed.planner.planners import (EmbeddingPlannerBase, validate_modules_inclusion_in_sharding_plan,
                                                   validate_rank_assignment)
from torchrec.distributed.planner.types import PlannerError, PlannerErrorType
from torchrec.distributed.types import ShardingPlan

from shardplan.binary import EXIT_INFEASIBLE, EXIT_USAGE, BinaryError, BinaryNotFound, run_binary
from shardplan.files import write_json_atomically
from shardplan.torchrec.bridge import build_sharding_plan
from shardplan.torchrec.optimizer import planned_optimizer
from shardplan.torchrec.tables import common_sharding_types, describe_module, tables_document

logger = logging.getLogger("shardplan")


class ShardPlanPlanner(EmbeddingPlannerBase):
    """A TorchRec ShardingPlanner whose plans come from shard-plan's neural cost model and search.

    Beyond EmbeddingShardingPlanner's arguments: `model` (a model directory or bundled name; None: the
    binary's default), `hardware` (a profile name or file), `optimizer` ("sgd", "adagrad",
    "rowwise_adagrad", "adam"; None: read from the optimizer applied in backward, else the sharders'
    fused_params), `time_limit` (seconds; None: none), `seed`, `extra_args` (more shard-plan flags),
    `binary` (the shard-plan executable; None: shardplan.binary's search) and `plan_path` (where to keep the
    shard-plan plan file; None: not kept). The last plan and report are in `last_plan` and `last_report`.
    """

    def __init__(self, topology=None, batch_size=None, enumerator=None, storage_reservation=None, stats=None,
                 constraints=None, debug=True, timeout_seconds=None, *, model=None, hardware=None, optimizer=None,
                 time_limit=None, seed=0, extra_args=(), binary=None, plan_path=None):
        super().__init__(topology=topology, batch_size=batch_size, enumerator=enumerator,
                         storage_reservation=storage_reservation, stats=stats, constraints=constraints, debug=debug,
                         timeout_seconds=timeout_seconds)
        self.model, self.hardware, self.optimizer = model, hardware, optimizer
        self.time_limit, self.seed, self.extra_args = time_limit, seed, list(extra_args)
        self.binary, self.plan_path = binary, plan_path
        self.last_plan, self.last_report = None, None

    def plan(self, module, sharders):
        try:
            return self._plan(module, sharders)
        except BinaryError as e:
            kind = {EXIT_INFEASIBLE: PlannerErrorType.INSUFFICIENT_STORAGE,
                    EXIT_USAGE: PlannerErrorType.INPUT_VALIDATION}.get(e.code, PlannerErrorType.OTHER)
            raise PlannerError(f"shard-plan: {e.message.strip()}", kind) from e
        except (ValueError, BinaryNotFound) as e:  # TableError, PlanError and optimizer errors among them
            raise PlannerError(f"shard-plan: {e}", PlannerErrorType.OTHER) from e

    def _plan(self, module, sharders):
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
        optimizer = self.optimizer or planned_optimizer(module, sharders)
        plan = self._run_binary(tables, topology, memory, optimizer)
        sharding_plan = build_sharding_plan(plan, module, device_type=topology.compute_device, sharders=sharders)
        validate_modules_inclusion_in_sharding_plan(sharding_plan, module, sharders)
        validate_rank_assignment(sharding_plan, topology)
        return sharding_plan

    def _cluster_args(self, topology, memory, optimizer, tables):
        args = ["--gpus", topology.world_size, "--gpus-per-host", topology.local_world_size,
                "--mem-per-gpu", int(memory), "--optimizer", optimizer, "--seed", self.seed,
                "--sharding-types", ",".join(common_sharding_types(tables))]
        if self.model:
            args += ["--model", self.model]
        if self.hardware:
            args += ["--hardware", self.hardware]
        if self.time_limit:
            args += ["--time-limit", self.time_limit]
        return args + self.extra_args

    def _run_binary(self, tables, topology, memory, optimizer):
        with tempfile.TemporaryDirectory(prefix="shardplan-") as work:
            tables_path = os.path.join(work, "tables.json")
            plan_path = os.path.join(work, "plan.json")
            with open(tables_path, "w", encoding="utf-8") as f:
                json.dump(tables_document(tables), f)
            args = ["plan", "--tables", tables_path, "-o", plan_path, "--log-level", "warn"]
            self.last_report = run_binary(args + self._cluster_args(topology, memory, optimizer, tables),
                                          binary=self.binary)
            logger.info("shard-plan's plan:\n%s", self.last_report)
            with open(plan_path, encoding="utf-8") as f:
                self.last_plan = json.load(f)
        if self.plan_path:
            write_json_atomically(self.plan_path, self.last_plan)
        return self.last_plan
