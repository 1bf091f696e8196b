"""Online learning on Dask: many streams at once, or one stream on many workers.

API: `learn_many`, `map_trials`, `grid` (many streams, one learner each);
`AveragedLearner` and `average_models` (one stream, k workers, models averaged);
the errors `TaskError`, `LostTasksError`, `WorkerLostError`.

`learn_many` runs okl learners over a set of streams (one per customer,
sensor, hyper-parameter setting or repeated trial), each learner online over
its own stream with progressive validation, as tasks on a Dask cluster; it is
built on `map_trials`, which runs any function once per key.  `grid` makes the
keys of a grid x trials experiment.

Without ``client`` a `distributed.LocalCluster` of one single-threaded worker
process per core is started and closed afterwards; a `distributed.Client` (or
a scheduler address) is used as given; ``client="sequential"`` runs every task
in this process, in order, without importing Dask.  Results do not depend on
where a task runs: its randomness comes from its own stream and seed only.

`AveragedLearner` learns one stream (a Dask collection, files or arrays) on k
workers: each learns the partitions it holds with its own model, and the
models are averaged worker to worker every ``sync_every`` events (iterative
parameter mixing) or when one has drifted from the last average (dynamic
averaging); `average_models` is that average, usable without Dask.

One module per subject: `tasks` (where tasks run, `map_trials`, `grid`),
`streams` (`learn_many`), `averaging` (`AveragedLearner`) and `partitions` (the
partitions of one stream and the plan of its rounds).

Dask is an optional dependency: ``pip install "okl[dask]"``.  The design on a
real cluster (what travels, how often, failures) is in ``docs/distributed.md``.
"""
from okl._averaging import average_models
from okl.distributed.averaging import AveragedLearner, WorkerLostError
from okl.distributed.streams import StreamResult, learn_many
from okl.distributed.tasks import LostTasksError, TaskError, Trial, grid, map_trials

__all__ = ["AveragedLearner", "LostTasksError", "StreamResult", "TaskError", "Trial",
           "WorkerLostError", "average_models", "grid", "learn_many", "map_trials"]
