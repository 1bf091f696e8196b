"""One stream on k workers: models averaged worker to worker (`AveragedLearner`;
docs/distributed.md, section 2)."""

import copy
import time
import uuid
from numbers import Integral
from typing import NamedTuple

import numpy as np
from sklearn.base import BaseEstimator, clone

from okl._averaging import average_models
from okl._params import INT_MAX, InvalidParameterError
from okl.distributed.tasks import SEQUENTIAL, import_distributed, local_cluster



class WorkerLostError(RuntimeError):
    """A worker holding local models died and the scheduler could not recompute its share.

    ``round`` is the round of the call the driver was waiting for (1-based),
    ``events`` the number of events of the call.  The estimator is left as it
    was before the call, so none of them is learned: nothing is kept half-done.
    """

    def __init__(self, round, events, cause):
        super().__init__(
            f"a local model was lost with its Dask worker ({cause}) in round {round} of this "
            f"call and could not be recomputed. The estimator is left as it was before the "
            f"call: its {events} events are not learned. Call partial_fit again with the same "
            "data, or raise distributed.scheduler.allowed-failures.")
        self.round, self.events = round, events


class _State(NamedTuple):
    """A local model between rounds, on its worker: the model, the last average it started
    from (the reference of dynamic averaging), whether it halted for a synchronisation, and
    its accounts for the call."""

    model: object
    reference: object
    halted: bool = False
    busy: float = 0.0
    """Seconds this model's tasks spent learning so far in the call."""
    mixing: float = 0.0
    """Seconds its tasks spent averaging (the all-reduce's merge)."""
    cpu: float = 0.0
    """CPU seconds of its learning (thread time: below ``busy`` when it waited for a core)."""
    received: int = 0
    """Bytes of the other models it received at the call's synchronisations (pickled)."""


class _Sync(NamedTuple):
    """A synchronisation: the average and, per model, its own event count and accounts."""

    average: object
    own: list
    busy: list
    mixing: list
    cpu: list
    received: list


def _learn_round(j, go, stop, classes, learner, n_features, spans, names, mix, n_prev, *args):
    """Model j's share of one round, on the worker that holds its partitions.

    The first ``n_prev`` arguments are the model's state after the previous
    round, or (``mix``) every model's state when the round starts with a
    synchronisation: then each model computes the same average itself (an
    all-reduce: the states travel worker to worker, no task in between) and
    restarts from it, keeping its own event count, as in iterative parameter
    mixing.  The others are the partitions of ``spans`` (``names``: their names
    for errors, by partition index).  ``go`` is True, or
    (dynamic averaging) the threshold and drifts of the previous round: the
    k drifts in this process; on a cluster only this model's own, so that the
    round starts without waiting for the other workers (a speculative round:
    the driver keeps it only if no model drifted past the threshold).  When a
    drift is past the threshold the model learns nothing and halts until the
    driver synchronises; ``stop`` (a speculative round) names the
    `distributed.Event` that another model's drift report sets then, read
    before each partition, so that a speculative round halts early too.
    """
    prev, parts = args[:n_prev], args[n_prev:]
    if mix:
        start = time.perf_counter()
        prev = _mix(*prev, sizes=True)
        prev.mixing[j] += time.perf_counter() - start
    else:
        prev = prev[0]
    if isinstance(prev, _Sync):
        model = copy.deepcopy(prev.average)
        model.t_ = prev.own[j]
        prev = _State(model, prev.average, False, prev.busy[j], prev.mixing[j], prev.cpu[j],
                      prev.received[j])
    if prev.halted or not (go is True or _go(*go)):
        return prev._replace(halted=True)
    pieces = []
    for (i, lo, hi), part in zip(spans, parts):     # the shapes: checked before learning
        X, y = part[0][lo:hi], np.asarray(part[1][lo:hi])
        _check_shape(X, y, n_features, names[i])
        pieces.append((names[i], X, y))
    if not pieces:
        return prev
    start, cpu = time.perf_counter(), time.thread_time()
    # a copy: a rerun of this task (after a lost worker) starts from the same input
    model = clone(learner) if prev.model is None else copy.deepcopy(prev.model)
    kwargs = {} if classes is None else {"classes": classes}
    for name, X, y in pieces:       # one pass, partition by partition: no concatenated copy
        if stop is not None and _stopped(stop):
            return prev._replace(halted=True)
        try:
            model.partial_fit(X, y, **kwargs)
        except Exception as exc:
            # the learner checks its values itself (every okl estimator refuses NaN and
            # infinity): a second pass is paid only here, to name the partition clearly
            bad = _bad_values(X, y)
            if bad:
                raise ValueError(f"{name} holds {bad}.") from exc
            try:
                named = type(exc)(f"learning {name}: {exc}")
            except Exception:           # noqa: BLE001 (an exception type with other arguments)
                raise exc from None
            raise named from exc
    return prev._replace(model=model, busy=prev.busy + time.perf_counter() - start,
                         cpu=prev.cpu + time.thread_time() - cpu)


def _check_shape(X, y, n_features, name):
    """A partition's rows must have the stream's columns and their labels."""
    if X.ndim != 2 or (n_features is not None and X.shape[1] != n_features):
        raise ValueError(f"{name} has {X.shape[1] if X.ndim == 2 else X.shape} columns of "
                         f"features where the stream has {n_features}.")
    if X.shape[0] != len(y):
        raise ValueError(f"{name} has {X.shape[0]} rows but {len(y)} labels.")


def _bad_values(X, y):
    """What is not finite in a partition's values, or None."""
    values = X.data if hasattr(X, "tocsr") else X
    if not np.all(np.isfinite(values)):
        return "NaN or infinite feature values"
    if y.dtype.kind == "f" and not np.all(np.isfinite(y)):
        return "NaN or infinite labels"
    return None


def _mix(*states, sizes=False):
    """The average of the local models; deterministic, so every model computes the same.

    With ``sizes``, each model's ``received`` counts the pickled sizes of the
    k - 1 others (what this all-reduce sent it).
    """
    models = [s.model for s in states if s.model is not None]
    own = [0 if s.model is None else int(s.model.t_) for s in states]
    received = [s.received for s in states]
    if sizes:
        size = [0 if s.model is None else _nbytes(s.model) for s in states]
        received = [r + sum(size) - n for r, n in zip(received, size)]
    return _Sync(average_models(models), own, [s.busy for s in states],
                 [s.mixing for s in states], [s.cpu for s in states], received)


def _divergence(state, threshold=None, stop=None):
    """||f_j - f_ref||^2 of a local model, computed on its worker (a float travels).

    Past ``threshold``, it also sets the `distributed.Event` ``stop``: the other
    models' speculative rounds halt at their next partition.
    """
    from okl._averaging import divergence

    if state.model is None:
        drift = 0.0
    elif state.reference is None:           # the common start is the zero function
        drift = state.model.rkhs_norm() ** 2 + state.model.__dict__.get("intercept_", 0.0) ** 2
    else:
        drift = divergence(state.model, state.reference)
    if stop is not None and not _go(threshold, drift):
        import_distributed().Event(stop).set()
    return drift


def _stopped(stop):
    """True once some model's drift report asked for a synchronisation (``stop`` is set)."""
    return import_distributed().Event(stop).is_set()


def _go(threshold, *drifts):
    """False when some local model drifted past the threshold: synchronise."""
    return not max(drifts) > threshold


class _InProcess:
    """The Client interface AveragedLearner uses, run in this process (client="sequential")."""

    class Done:
        def __init__(self, value):
            self.value = value
            self.status = "finished"

        def result(self):
            return self.value

        def release(self):
            pass

    def submit(self, func, *args, **kwargs):
        def value(a):
            if type(a) is tuple:            # not a _State: a NamedTuple
                return tuple(value(b) for b in a)
            return a.value if isinstance(a, self.Done) else a
        return self.Done(func(*[value(a) for a in args]))

    def cancel(self, futures):
        pass


def _nbytes(obj):
    """The pickled size of obj (cloudpickle, as Dask sends it, when installed)."""
    try:
        import cloudpickle as pickle
    except ImportError:
        import pickle
    return len(pickle.dumps(obj, protocol=5))


def _warm_up():
    """Import what the tasks use and run each kind of step once, on a worker that is new
    to this process: its first round then learns at full speed."""
    from okl import OnlineKernelClassifier, OnlineKernelRegressor

    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((40, 2)), rng.standard_normal(40)
    models = [OnlineKernelRegressor(gamma=1.0, budget=8, budget_policy="merge").fit(X, y),
              OnlineKernelClassifier(gamma=1.0, approximation="fourier", n_components=8,
                                     random_state=0).fit(X, y > 0)]
    for model in models:
        state = _State(model, None)
        _mix(state, state, sizes=True)
        _divergence(state)
    try:                    # the worker's client, which speculative rounds ask for their Event
        from distributed import get_client, get_worker
        get_worker()
        get_client()
    except (ImportError, ValueError):
        pass


_WARM = set()
"""Worker addresses warmed up (`_warm_up`) by this process."""

AHEAD = 2
"""Rounds submitted ahead of the one the driver watches: the workers never wait for it."""


def _check_workers(k, X):
    """Refuse more local models than the stream has rows (an array) or partitions (a dask
    DataFrame, files: each goes whole to one model): the others could learn nothing."""
    if hasattr(X, "npartitions") and not hasattr(X, "chunks"):     # a dask DataFrame
        bound, what = X.npartitions, "partitions"
    elif isinstance(X, (list, tuple)):
        bound, what = len(X), "files"
    else:
        rows = getattr(X, "shape", (None,))[0]
        if not isinstance(rows, Integral):      # unknown (a dask array's nan)
            return
        bound, what = int(rows), "rows"
    if k > bound:
        raise ValueError(f"n_workers={k} is more than the {bound} {what} of the stream: the "
                         f"other local models would learn nothing. Use n_workers <= {bound}.")


class AveragedLearner(BaseEstimator):
    """One stream, k workers: data-parallel online learning by model averaging.

    The stream is a sequence of partitions: the row blocks of a `dask.array`,
    the partitions of a `dask.dataframe` (with a target column), files that
    the workers read with `okl.stream`, or blocks of ``sync_every`` rows of an
    in-memory array (scattered to the workers once).  A partition already in
    a worker's memory (a persisted collection) belongs to the local model on
    that worker, within a balanced share; one still to be made belongs to
    model ``i mod k`` and is made on its worker.  The client never holds the
    stream, only the plan of the rounds.  In round r
    every local model learns the next ``sync_every`` events of its share, one
    task per model; then the models are averaged (`average_models`) on the
    workers (``sync="static"``, iterative parameter mixing), or only when some
    model has moved more than ``threshold`` from the last average,
    ``||f_j - f_ref||^2 > threshold`` (``sync="dynamic"``, Kamp et al.), and
    every model continues from the average with its own event count.  The
    whole chain of rounds is submitted ahead to the scheduler, so models pass
    worker to worker and the client is never on the path between rounds
    (dynamic averaging asks it once per synchronisation; its rounds without
    one do not wait for the other workers, when the partitions of a Dask
    collection let a round learned ahead halt part-way).  Every call of fit /
    partial_fit ends with an average, ``model_``: an ordinary okl estimator.
    A bad partition raises an error naming it; a worker that dies is replaced
    and its share recomputed when the scheduler can, else the call raises
    `WorkerLostError`; in both cases the estimator keeps its previous model.
    Design and measurements: docs/distributed.md, section 2.

    Parameters
    ----------
    learner : okl estimator
        OnlineKernelRegressor, OnlineKernelClassifier, RegularizedPAClassifier
        or CoefficientRegularizedClassifier with ``centers``; cloned per worker.
    n_workers : int, default=2
        k, the number of local models (and of the LocalCluster's workers when
        ``client`` is None; on a given cluster model j prefers worker j mod
        the cluster's size).
    sync_every : int, default=250000
        Events per local model per round (in-memory input is cut into
        partitions of this many rows).  The default makes a round of the
        fastest models okl has (a kernel expansion with a budget of 200, 500
        random features: 300 000-600 000 events per second in one process)
        learn for 0.4-0.8 s, over twenty times a round's coordination on a
        LocalCluster (a few hops, the merge and the checks: about 20-60 ms
        measured); a stream of n events takes about n / (k sync_every)
        rounds (docs/distributed.md, section 2).
    sync : {"static", "dynamic"}, default="static"
    threshold : float, default=0.0
        Delta of dynamic averaging: a squared RKHS (or Euclidean) distance.
        0 synchronises after every round in which a model changed.
    client : distributed.Client, str, None or "sequential", default=None
        None starts a LocalCluster of ``n_workers`` single-threaded processes on
        first use, kept until `close` (or the estimator is garbage collected);
        an address connects a Client; "sequential" runs the workers' steps
        here, in order (same results).  `sklearn.base.clone` deep-copies
        parameters, so clone with None, an address or "sequential".

    Attributes
    ----------
    model_ : estimator
        The last average.
    n_rounds_, n_syncs_ : int
        Rounds run and averages made (each call's final average included).
    bytes_sent_ : int
        Bytes of model state transferred (pickled sizes): every model sent to
        the k - 1 others at every synchronisation, the k last models sent to
        the client, the average sent to the k models when a partial_fit
        restarts from it, and 8 bytes per divergence report in dynamic mode.
        The stream's own events are not counted.
    t_ : int
        Events learned, over all workers.
    busy_seconds_ : list of float
        Seconds each local model's tasks spent learning in the last call; the
        rest of the call's wall time is averaging, checking the partitions,
        coordination, waiting and making the partitions.
    cpu_seconds_ : list of float
        CPU seconds of that learning (thread time): below ``busy_seconds_``
        when a worker waited for a core.
    mixing_seconds_ : list of float
        Seconds each local model's tasks spent averaging (the merge of every
        all-reduce).

    References
    ----------
    .. [1] R. McDonald, K. Hall and G. Mann, "Distributed training strategies
       for the structured perceptron", NAACL HLT 2010, pp. 456-464.
    .. [2] M. Kamp, S. Bothe, M. Boley and M. Mock, "Communication-efficient
       distributed online learning with kernels", ECML PKDD 2016, LNCS 9852,
       pp. 805-819.
    """

    def __init__(self, learner, n_workers=2, sync_every=250000, sync="static", threshold=0.0,
                 client=None):
        self.learner = learner
        self.n_workers = n_workers
        self.sync_every = sync_every
        self.sync = sync
        self.threshold = threshold
        self.client = client

    # -- sklearn ---------------------------------------------------------------------------

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = self.learner.__sklearn_tags__()
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags, tags.regressor_tags = inner.classifier_tags, inner.regressor_tags
        tags.input_tags = inner.input_tags
        return tags

    def __getstate__(self):
        state = dict(self.__dict__)
        for name in ("_cluster", "_own_client"):
            state.pop(name, None)
        return state

    def __del__(self):
        try:
            self.close()
        except Exception:       # noqa: BLE001 (interpreter shutdown)
            pass

    def close(self):
        """Close the LocalCluster (or Client) this estimator started, if any."""
        own, cluster = self.__dict__.pop("_own_client", None), self.__dict__.pop("_cluster", None)
        if own is not None:
            own.close()
        if cluster is not None:
            cluster.close()

    # -- learning ----------------------------------------------------------------------------

    def fit(self, X, y=None, classes=None, **file_options):
        """Learn the stream from fresh local models (one pass over its partitions in order).

        Parameters
        ----------
        X : array, sparse matrix, dask array, dask DataFrame or list of paths
            The stream.  A list of files is read on the workers with
            `okl.stream.iter_file` (``file_options`` are passed to it).
        y : array, dask array, str or None
            The targets; for a dask DataFrame the name of its target column;
            for CSV files the ``target`` column (None for libsvm files).
        classes : array, optional
            A classifier's labels.  Default: the labels of y (for a Dask
            collection or files computed on the workers: one more pass).
        """
        return self._stream(X, y, classes, fresh=True, file_options=file_options)

    def partial_fit(self, X, y=None, classes=None, **file_options):
        """Continue the stream with more partitions (``classes`` on the first call of a
        classifier, as okl's classifiers take it)."""
        if self._is_classifier():
            if not hasattr(self, "model_") and classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit of "
                    f"AveragedLearner({type(self.learner).__name__}), e.g. classes=[0, 1].")
            if classes is None:
                classes = self.model_.classes_
        return self._stream(X, y, classes, file_options=file_options)

    def _is_classifier(self):
        return self.learner.__sklearn_tags__().estimator_type == "classifier"

    def _validate(self):
        from okl._averaging import _kind

        for name in ("n_workers", "sync_every"):
            value = getattr(self, name)
            if (isinstance(value, (bool, np.bool_)) or not isinstance(value, Integral)
                    or not 1 <= value <= INT_MAX):
                raise InvalidParameterError(
                    f"{name} must be an int in [1, {INT_MAX}]; got {value!r}.")
        if self.sync not in ("static", "dynamic"):
            raise ValueError(f"sync must be 'static' or 'dynamic'; got {self.sync!r}.")
        if not self.threshold >= 0:
            raise ValueError(f"threshold must be >= 0; got {self.threshold!r}.")
        from okl._kernel_learners import PointwiseMixin
        from okl.classification import CoefficientRegularizedClassifier
        from okl.passive_aggressive import RegularizedPAClassifier

        learner = self.learner
        if not isinstance(learner, (PointwiseMixin, RegularizedPAClassifier,
                                    CoefficientRegularizedClassifier)):
            _kind(learner)          # raises the TypeError that says why
        if isinstance(learner, CoefficientRegularizedClassifier) and learner.centers is None:
            raise ValueError(
                "CoefficientRegularizedClassifier(centers=None) takes its centres from each "
                "worker's own stream, so the local models cannot be averaged; pass centers.")

    def _executor(self):
        """(client-like object, list of k worker addresses)."""
        k = int(self.n_workers)
        if isinstance(self.client, str) and self.client == SEQUENTIAL:
            return _InProcess(), ["local"] * k
        if self.client is None:
            if getattr(self, "_own_client", None) is None:
                self._cluster = local_cluster(k)
                self._own_client = import_distributed().Client(self._cluster)
            client = self._own_client
        elif isinstance(self.client, str):
            if getattr(self, "_own_client", None) is None:
                self._own_client = import_distributed().Client(self.client)
            client = self._own_client
        else:
            client = self.client
        addresses = sorted(client.nthreads())          # asks the scheduler (not a cache)
        if not addresses:                               # e.g. a worker restarting after a crash
            client.wait_for_workers(1, timeout=60)
            addresses = sorted(client.nthreads())
        cold = [a for a in addresses if a not in _WARM]
        if cold:    # first use of these workers: imports and first calls, before any round
            distributed = import_distributed()
            for address in cold:    # a task, not awaited: a worker that dies just forgets it
                distributed.fire_and_forget(client.submit(
                    _warm_up, workers=[address], allow_other_workers=False, pure=False,
                    priority=10))
            _WARM.update(cold)
        return client, [addresses[j % len(addresses)] for j in range(k)]

    def _classes(self, parts, client):
        """The labels of the whole stream, computed where its partitions are."""
        if parts.kind == "memory" and client is not None:
            futures = [client.submit(_labels, p, pure=False) for p in parts.sources]
            return np.unique(np.concatenate(client.gather(futures)))
        made = parts.make(client, list(range(len(parts.lengths))),
                          ["local"] * int(self.n_workers) if client is None
                          else self._executor()[1])
        if client is None:
            return np.unique(np.concatenate([_labels(p) for p in made.values()]))
        futures = [client.submit(_labels, made[i], pure=False) for i in sorted(made)]
        return np.unique(np.concatenate(client.gather(futures)))

    def _stream(self, X, y, classes, fresh=False, file_options=None):
        """Learn the partitions in rounds; set the attributes only once every round is learned."""
        from okl.distributed.partitions import Partitions, plan_rounds

        self._validate()
        k, S = int(self.n_workers), int(self.sync_every)
        _check_workers(k, X)                # before anything of size k is made
        client, where = self._executor()
        dask = not isinstance(client, _InProcess)
        parts = Partitions.of(X, y, S, client if dask else None, where, file_options)
        parts.locate(client if dask else None, where)
        if sum(parts.lengths) == 0:
            raise ValueError("AveragedLearner needs at least one sample to learn.")
        if self._is_classifier() and classes is None:
            classes = self._classes(parts, client if dask else None)
        average = None if fresh else getattr(self, "model_", None)
        own = [0] * k if average is None else list(self._own_t)
        if len(own) != k:
            raise ValueError(f"n_workers changed from {len(own)} to {k} since the last fit; "
                             "call fit to start over.")
        if average is not None and parts.n_features is not None \
                and parts.n_features != getattr(average, "n_features_in_", parts.n_features):
            raise ValueError(f"the stream has {parts.n_features} features; the model was "
                             f"fitted on {average.n_features_in_}.")
        rounds = plan_rounds(parts.lengths, k, S, parts.owners)
        R = len(rounds)
        last_use = {}
        for r, row in enumerate(rounds):
            for spans in row:
                for i, _, _ in spans:
                    last_use[i] = r
        lost = (import_distributed().KilledWorker, *_cancelled_errors()) if dask else ()
        dynamic = self.sync == "dynamic"
        # rounds learn ahead on a cluster when a speculative round can halt part-way (its
        # partitions are at most half a round; not an in-memory array's, a round long)
        speculate = dynamic and dask and 2 * max(parts.lengths) <= S

        def submit(func, *args, j=None, priority=0):
            if not dask:
                return client.submit(func, *args)
            if j is None:
                return client.submit(func, *args, pure=False, priority=priority)
            return client.submit(func, *args, workers=[where[j]], allow_other_workers=True,
                                 pure=False, priority=priority)

        # the state every model starts the call from: nothing, or a restart from the average
        start = ([_State(None, None)] * k if average is None
                 else [_Sync(average, own, [0.0] * k, [0.0] * k, [0.0] * k, [0] * k)] * k)
        sent = 0 if average is None else k * _nbytes(average)
        # inputs[s]: (the previous states: one per model, or all k for a synchronisation,
        # each model's go, whether to average first, the Event that halts a speculative round)
        made, states, gos = {}, {}, {}
        inputs = {0: ([[x] for x in start], [True] * k, False, None)}
        n_syncs = 1                         # the call's final average
        events, call = [], uuid.uuid4().hex     # one Event per dynamic round on a cluster

        def synchronise(row):
            """The states of a round are averaged at the start of the next (all-reduce)."""
            nonlocal n_syncs
            n_syncs += 1
            return [list(row)] * k, [True] * k, True, None

        submitted, r = -1, 0
        phases = {"planned": time.time()}   # wall-clock moments of the call, for bench/
        try:
            while True:
                # keep AHEAD rounds in flight beyond the one watched
                while submitted < min(R - 1, r + AHEAD):
                    s = submitted + 1
                    need = sorted({i for spans in rounds[s] for i, _, _ in spans} - set(made))
                    made.update(parts.make(client if dask else None, need, where))
                    base, go, mix, stop = inputs[s]
                    states[s] = [submit(_learn_round, j, go[j], stop, classes, self.learner,
                                        parts.n_features, rounds[s][j],
                                        {i: parts.names[i] for i, _, _ in rounds[s][j]},
                                        mix, len(base[j]), *base[j],
                                        *[made[i] for i, _, _ in rounds[s][j]], j=j)
                                 for j in range(k)]
                    if s < R - 1 and dynamic:
                        # speculative: model j's next round waits for its own drift only, not
                        # for the other workers (kept when no model drifted past the
                        # threshold); else for all k drifts
                        threshold, stop = float(self.threshold), None
                        if speculate:   # a new name per submission: a dropped round's
                            stop = f"okl-sync-{call}-{len(events)}"
                            events.append(stop)     # report never halts a later one
                        gos[s] = [submit(_divergence, st, threshold, stop, j=j, priority=1)
                                  for j, st in enumerate(states[s])]
                        go = ([(threshold, g) for g in gos[s]] if speculate
                              else [(threshold, *gos[s])] * k)
                        inputs[s + 1] = ([[st] for st in states[s]], go, False, stop)
                    elif s < R - 1:
                        inputs[s + 1] = synchronise(states[s])
                    submitted = s
                phases.setdefault("dispatched", time.time())
                if r == R - 1:
                    break
                # watch round r: it is learned (static), or the drift reports say whether
                # to synchronise (dynamic)
                if dynamic:
                    sent += 8 * k
                    drifts = client.gather(gos[r]) if dask else [f.result() for f in gos[r]]
                    if not _go(float(self.threshold), *drifts):
                        for s in range(r + 1, submitted + 1):   # halted: dropped, released
                            states.pop(s)
                            gos.pop(s, None)
                        inputs[r + 1] = synchronise(states[r])
                        submitted = r
                else:
                    if dask:
                        import_distributed().wait(states[r])
                    for f in states[r]:
                        if f.status != "finished":
                            f.result()                      # raises the task's error
                for i in [i for i, last in last_use.items() if last <= r and i in made]:
                    made.pop(i)                             # a partition learned: released
                states.pop(r - 1, None)
                inputs.pop(r, None)
                r += 1
            # the last states come to the client, which averages them: one hop, in parallel
            final = client.gather(states[R - 1]) if dask else [f.result() for f in states[R - 1]]
            phases["gathered"] = time.time()
            average, own, busy, mixing, cpu, received = _mix(*final)
            # every synchronisation sent each model to the k - 1 others; the last, to here
            sent += sum(received) + sum(_nbytes(st.model) for st in final if st.model is not None)
            phases["averaged"] = time.time()
        except lost as exc:
            raise WorkerLostError(r + 1, sum(parts.lengths),
                                  f"{type(exc).__name__}: {exc}") from exc
        finally:
            # release every future of the call now, so that the scheduler forgets its tasks
            # (a traceback that keeps this frame alive must not keep them running)
            held = [f for row in [*states.values(), *gos.values()] for f in row] \
                + list(made.values()) + list(parts.sources)
            for f in held:
                if dask and hasattr(f, "release") and hasattr(f, "key"):
                    f.release()
            states.clear(), gos.clear(), made.clear(), inputs.clear()
            for name in events:                     # the scheduler forgets them
                try:
                    import_distributed().Event(name, client=client).clear()
                except Exception:       # noqa: BLE001 (a scheduler lost with the call's error)
                    pass
        self.model_ = average
        self._own_t = own
        self.t_ = int(average.t_)
        self.busy_seconds_ = busy
        self.mixing_seconds_ = mixing
        self.cpu_seconds_ = cpu
        self._phases = phases
        before = {} if fresh else self.__dict__
        self.n_rounds_ = before.get("n_rounds_", 0) + R
        self.n_syncs_ = before.get("n_syncs_", 0) + n_syncs
        self.bytes_sent_ = before.get("bytes_sent_", 0) + sent
        if hasattr(average, "n_features_in_"):
            self.n_features_in_ = average.n_features_in_
        if hasattr(average, "classes_"):
            self.classes_ = average.classes_
        return self

    # -- the averaged model ------------------------------------------------------------------

    def _fitted(self):
        from sklearn.utils.validation import check_is_fitted

        check_is_fitted(self, "model_")
        return self.model_

    def predict(self, X):
        """The averaged model's predictions."""
        return self._fitted().predict(X)

    def decision_function(self, X):
        """The averaged model's f(x) (classifiers)."""
        return self._fitted().decision_function(X)

    def score(self, X, y, sample_weight=None):
        """The averaged model's score: accuracy (classifiers) or R^2 (regressors)."""
        return self._fitted().score(X, y, sample_weight=sample_weight)


def _labels(part):
    return np.unique(np.asarray(part[1]))


def _cancelled_errors():
    import asyncio

    errors = [asyncio.CancelledError]
    try:
        from distributed.client import FutureCancelledError, FuturesCancelledError
        errors += [FutureCancelledError, FuturesCancelledError]
    except ImportError:
        pass
    return tuple(errors)
