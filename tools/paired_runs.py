"""What the tools that read a `tools/paired-measure` run share: its planners' passes, paired by task."""
import json
import math


class BadInput(Exception):
    pass


def geometric_mean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def load_algorithms(path, labels):
    """The run's planners ({label: {"passes": {task: [pass, ...]}}}); BadInput when it is not a run or lacks a label."""
    try:
        with open(path, encoding="utf-8") as f:
            algorithms = json.load(f)["algorithms"]
    except (OSError, ValueError, KeyError) as e:
        raise BadInput(f"{path}: not a paired-measure measured.json ({e})") from e
    for label in labels:
        if label not in algorithms:
            raise BadInput(f"{path} has no planner {label!r} (it has {', '.join(sorted(algorithms))})")
    return algorithms


def common_tasks(algorithms, a, b):
    """The tasks both planners have passes for, in task order (the keys as the file spells them)."""
    return sorted(set(algorithms[a].get("passes", {})) & set(algorithms[b].get("passes", {})), key=int)
