"""A stream's partitions and the rounds that learn them (`okl.distributed.AveragedLearner`).

A stream is a sequence of partitions: the row blocks of a `dask.array`, the
partitions of a `dask.dataframe`, files read on the workers with `okl.stream`,
or blocks of ``sync_every`` rows of an in-memory array.  Partition i belongs
to local model ``i mod k``; a model's share is its partitions in order, and
round r learns events ``[r S, (r + 1) S)`` of every share (S = ``sync_every``).
A partition already in a worker's memory (a persisted collection, files read
on the workers) belongs instead to the model of the worker that holds it, as
long as the shares stay balanced (`assign`): the data stay where they are and
the models go to them.  Only the plan (lengths, owners and spans) lives on the
client; a partition is made on a worker and learned there.  See
docs/distributed.md, section 2.
"""
import numpy as np

__all__ = ["Partitions", "assign", "plan_rounds"]


def assign(lengths, holders, where):
    """The model of each partition: the one on the worker that holds it, shares kept balanced.

    ``holders[i]`` lists the workers that hold partition i in memory (empty
    when it is still to be made) and ``where[j]`` is model j's worker.  With
    nothing held, partition i goes to model ``i mod k`` (the plan of a lazy
    collection or of in-memory arrays, whatever the cluster).  Otherwise the
    partitions are taken in order, each by the least loaded model on one of
    its holders while that keeps the model within its quota (1/k of the
    rows, to half a partition); a partition that no holder can take goes to
    the least loaded model, and moves.  The shares end within one partition of each other,
    and only the rows beyond a worker's quota travel.
    """
    k = len(where)
    if not any(holders):
        return [i % k for i in range(len(lengths))]
    loads, owners, quota = [0] * k, [], sum(lengths) / k
    for n, held in zip(lengths, holders):
        local = [j for j in range(k) if where[j] in held and loads[j] + n / 2 <= quota]
        j = min(local or range(k), key=loads.__getitem__)
        owners.append(j)
        loads[j] += n
    return owners


def plan_rounds(lengths, k, S, owners=None):
    """The rounds: ``rounds[r][j]`` lists the spans ``(i, lo, hi)`` model j learns in round r.

    Partition i goes to model ``owners[i]`` (default ``i mod k``); a model's
    share is the concatenation of its partitions, and round r takes rows
    ``[r S, (r + 1) S)`` of it.
    """
    owners = [i % k for i in range(len(lengths))] if owners is None else owners
    shares = [[(i, n) for i, n in enumerate(lengths) if owners[i] == j and n > 0]
              for j in range(k)]
    rounds = []
    cursors = [[0, 0] for _ in range(k)]             # (position in the share, row in it)
    while any(c[0] < len(s) for c, s in zip(cursors, shares)):
        row = []
        for share, cursor in zip(shares, cursors):
            spans, need = [], S
            while need and cursor[0] < len(share):
                i, n = share[cursor[0]]
                take = min(need, n - cursor[1])
                spans.append((i, cursor[1], cursor[1] + take))
                need -= take
                cursor[1] += take
                if cursor[1] == n:
                    cursor[0], cursor[1] = cursor[0] + 1, 0
            row.append(spans)
        rounds.append(row)
    return rounds


def _read_file(path, options):
    """One file as (X, y), on the worker that reads it."""
    from okl.stream import iter_file

    chunks = list(iter_file(path, chunk_size=1 << 16, **options))
    if not chunks:
        return np.empty((0, 0)), np.empty(0)
    import scipy.sparse as sp

    Xs = [X for X, _ in chunks]
    X = sp.vstack(Xs).tocsr() if sp.issparse(Xs[0]) else np.concatenate(Xs)
    return X, np.concatenate([y for _, y in chunks])


def _frame_rows(frame, target):
    """(X, y) of a pandas partition with a target column."""
    return (frame.drop(columns=[target]).to_numpy(dtype=np.float64),
            frame[target].to_numpy())


def _shape(part):
    return int(part[0].shape[0]), int(part[0].shape[1])


class Partitions:
    """How to make partition i on a worker, and the partitions' lengths.

    ``locate(client, where)`` sets ``owners`` (the model of each partition,
    `assign`); ``make(client, indices, where)`` returns, per index, the
    futures (or, in process, the objects) of ``(X_i, y_i)``; the learn task
    receives them as arguments.
    """

    def __init__(self, kind, lengths, n_features, sources, names, located=None):
        self.kind, self.lengths, self.n_features = kind, list(lengths), n_features
        self.sources, self.names = sources, names
        self.located = located
        """(collections, the keys of each partition's data): where to look for them."""
        self.owners = None
        self.held = {}
        """{i: (X_i, y_i) futures} of the partitions already in the workers' memory."""

    # ---- the kinds of input ---------------------------------------------------------------

    @classmethod
    def of(cls, X, y, S, client, where, file_options=None):
        """The partitions of any supported input (``client`` None: in this process)."""
        if _is_dask_array(X):
            return cls._dask_array(X, y)
        if _is_dask_frame(X):
            return cls._dask_frame(X, y, client)
        if isinstance(X, (list, tuple)) and X and all(isinstance(p, (str, bytes))
                                                      or hasattr(p, "__fspath__") for p in X):
            return cls._files(list(X), y, client, file_options or {}, where)
        return cls._in_memory(X, y, S, client, where)

    @classmethod
    def _in_memory(cls, X, y, S, client, where):
        if y is None:
            raise ValueError("an in-memory X needs its targets y.")
        X = np.asarray(X) if not hasattr(X, "tocsr") else X.tocsr()
        y = np.asarray(y)
        if X.ndim != 2:
            raise ValueError(f"X must be 2-d (n_samples, n_features); got shape {X.shape}.")
        if X.shape[0] != len(y):
            raise ValueError(f"X has {X.shape[0]} rows but y has {len(y)} labels.")
        bounds = list(range(0, X.shape[0], S)) + [X.shape[0]]
        blocks = [(X[a:b], y[a:b]) for a, b in zip(bounds[:-1], bounds[1:])]
        if client is not None:                   # scattered once, each to its model's worker
            k = len(where)
            futures = [None] * len(blocks)
            for j in range(k):
                mine = list(range(j, len(blocks), k))
                if mine:
                    scattered = client.scatter([blocks[i] for i in mine], workers=[where[j]],
                                               hash=False)
                    for i, f in zip(mine, scattered):
                        futures[i] = f
            blocks = futures
        return cls("memory", np.diff(bounds), X.shape[1], blocks,
                   [f"rows {a}..{b - 1}" for a, b in zip(bounds[:-1], bounds[1:])])

    @classmethod
    def _dask_array(cls, X, y):
        import dask.array as da

        if X.ndim != 2:
            raise ValueError(f"X must be 2-d (n_samples, n_features); got shape {X.shape}.")
        if not _is_dask_array(y):
            y = da.from_array(np.asarray(y), chunks=(X.chunks[0],))
        if any(np.isnan(c) for c in X.chunks[0]) or any(np.isnan(c) for c in y.chunks[0]):
            raise ValueError("the dask array has unknown chunk sizes; call "
                             "X.compute_chunk_sizes() (and y's) first.")
        if X.shape[0] != y.shape[0]:
            raise ValueError(f"X has {X.shape[0]} rows but y has {y.shape[0]} labels.")
        if X.numblocks[1] > 1:
            X = X.rechunk({1: -1})
        if y.chunks[0] != X.chunks[0]:
            y = y.rechunk((X.chunks[0],))
        # unoptimised: the keys of a persisted array stay its own (no alias tasks re-sent), and
        # a block that makes both X and y is made once
        xs = X.to_delayed(optimize_graph=False).ravel()
        ys = y.to_delayed(optimize_graph=False).ravel()
        bounds = np.concatenate([[0], np.cumsum(X.chunks[0])]).astype(int)
        return cls("dask", X.chunks[0], X.shape[1], list(zip(xs, ys)),
                   [f"block {i} (rows {bounds[i]}..{bounds[i + 1] - 1})"
                    for i in range(len(xs))], ((X, y), [(x.key, v.key) for x, v in zip(xs, ys)]))

    @classmethod
    def _dask_frame(cls, frame, target, client):
        if not isinstance(target, str) or target not in frame.columns:
            raise ValueError("a dask DataFrame is learned with y = the name of its target "
                             f"column; got y={target!r} (columns {list(frame.columns)}).")
        parts = frame.to_delayed()
        import dask
        pairs = [dask.delayed(_frame_rows, pure=True)(p, target) for p in parts]
        lengths = _lengths(client, [dask.delayed(len, pure=True)(p) for p in parts])
        return cls("frame", lengths, len(frame.columns) - 1, pairs,
                   [f"partition {i}" for i in range(len(parts))],
                   ((frame,), [(p.key,) for p in parts]))

    @classmethod
    def _files(cls, paths, target, client, options, where):
        if target is not None:
            options = dict(options, target=target)
        if client is None:
            pairs = [_read_file(str(p), options) for p in paths]
            shapes = [_shape(p) for p in pairs]
        else:                                   # read once, file i on model i mod k's worker
            pairs = [client.submit(_read_file, str(p), options, workers=[where[i % len(where)]],
                                   allow_other_workers=True, pure=False)
                     for i, p in enumerate(paths)]
            shapes = client.gather([client.submit(_shape, p, pure=False) for p in pairs])
        names = [f"file {p}" for p in paths]
        widths = {d for n, d in shapes if n}
        if len(widths) > 1:
            first = next(d for n, d in shapes if n)
            bad = next(i for i, (n, d) in enumerate(shapes) if n and d != first)
            raise ValueError(f"{names[bad]} has {shapes[bad][1]} columns of features where the "
                             f"first file has {first}: every partition of one stream needs the "
                             "same features.")
        return cls("files", [n for n, _ in shapes], widths.pop() if widths else None, pairs,
                   names, None if client is None else ((pairs,), [(p.key,) for p in pairs]))

    # ---- on the cluster -------------------------------------------------------------------

    def locate(self, client, where):
        """Set ``owners``: each partition's model (`assign`), from the workers holding it."""
        holders = [()] * len(self.lengths)
        if client is not None and self.located is not None:
            from distributed import futures_of

            collections, keys = self.located
            futures = {f.key: f for f in futures_of(collections)}
            if futures:                          # a persisted collection, or files read
                held = client.who_has(list(futures.values()))
                holders = [tuple(held.get(key[0], ())) for key in keys]
        self.owners = assign(self.lengths, holders, where)
        if self.kind == "dask" and any(holders):
            # X and y blocks in memory on their model's worker go to its tasks as they are;
            # a block that moves is paired by a task on that worker, which runs (and copies
            # it) at once, while the rounds before it learn
            self.held = {i: tuple(futures[key] for key in pair)
                         for i, pair in enumerate(keys)
                         if all(key in futures and where[self.owners[i]] in held.get(key, ())
                                for key in pair)}
        return self.owners

    def make(self, client, indices, where):
        """{i: (X_i, y_i) future or object} for the given partitions.

        A partition not yet computed is computed on the worker of its model
        (``where[owners[i]]``, a preference); one already in a worker's memory
        stays where it is (its model was chosen to be there, `locate`).
        """
        if self.kind in ("memory", "files"):
            return {i: self.sources[i] for i in indices}
        if client is None:
            return {i: _compute_here(self.sources[i]) for i in indices}
        k = len(where)
        owners = self.owners or [i % k for i in range(len(self.lengths))]
        made = {i: self.held[i] for i in indices if i in self.held}
        for j in range(k):
            mine = [i for i in indices if owners[i] == j and i not in made]
            if mine:
                futures = client.compute([self._pair(i) for i in mine], workers=[where[j]],
                                         optimize_graph=False,
                                         allow_other_workers=True)
                made.update(zip(mine, futures))
        return {i: made[i] for i in indices}

    def _pair(self, i):
        import dask
        if self.kind == "dask":
            return dask.delayed(tuple, pure=True)(list(self.sources[i]))
        return self.sources[i]


def _compute_here(source):
    import dask
    return tuple(dask.compute(*source, scheduler="sync")) if isinstance(source, tuple) \
        else dask.compute(source, scheduler="sync")[0]


def _lengths(client, delayeds):
    import dask
    if client is None:
        return list(dask.compute(*delayeds, scheduler="sync"))
    return client.gather(client.compute(delayeds))


def _is_dask_array(X):
    return type(X).__module__.startswith("dask.array") and hasattr(X, "to_delayed")


def _is_dask_frame(X):
    return type(X).__module__.startswith("dask") and hasattr(X, "map_partitions") \
        and hasattr(X, "columns")
