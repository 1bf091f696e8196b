"""The four models of PairwiseLearner, and the stored points they average over.

Each model learns a validated chunk with one call into `_core/_pairwise.pyx`
(or its NumPy twin), predicts f(x, x'), and has checkpoint / restore /
get_state / from_state; the estimator keeps parameters, schedules and
validation.  See docs/algorithms.md, section 6.

    LinearPairModel      f(x, x') = w.(x - x')                     O(m d) per step
    MetricPairModel      f(x, x') = (x - x')^T M (x - x')          O(m d^2)
    DifferencePairModel  f(x, x') = g(x) - g(x'), g an expansion   O(t d + m^2)
    MomentsPairModel     the linear model from running moments    O(d^2) (squared loss)
"""
import copy
from contextlib import nullcontext

import numpy as np

from okl._blas import one_thread
from okl._engines import ENGINES, engine_of
from okl._core._kernels import kernel_matrix



def reservoir_slots(t, buffer, seed):
    """The slot each step's point goes to: t-1 while there is room, then Algorithm R.

    Past the first `buffer` points, the t-th point draws j uniformly from
    {0, ..., t-1} and replaces slot j if j < buffer (else it is not stored),
    so the reservoir is a uniform sample of the stream at every step.  j is a
    hash (SplitMix64) of (seed, t): the draws need no state but the seed, and a
    stream split into any chunks draws the same.  -1 means "not stored".
    """
    t = np.asarray(t).astype(np.int64)
    slots = t - 1
    if buffer is None:
        return slots.astype(np.intp)
    full = t > buffer
    z = np.uint64(seed) + t[full].astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    j = (z ^ (z >> np.uint64(31))) % t[full].astype(np.uint64)
    slots[full] = np.where(j < np.uint64(buffer), j.astype(np.int64), -1)
    return slots.astype(np.intp)


# ---- the stored points -----------------------------------------------------------------------

class PairHistory:
    """The points z_j Algorithm 1 averages over: every point seen, or a reservoir of `buffer`.

    kind "points" stores the rows x_j (linear and metric pair kernels).  kind
    "centres" (difference pair kernel) stores, per point, the index of its
    centre in the expansion of g, the cached value g(x_j), and the Gram matrix
    k(x_i, x_j) of the stored points: 8 m^2 bytes for m stored points.
    Buffers grow by half their size; no step allocates.
    """

    def __init__(self, n_features, kind, buffer=None):
        self.n_features, self.kind, self.buffer = int(n_features), kind, buffer
        self.m = 0
        self.capacity = 0
        self.y = np.empty(0)
        if kind == "points":
            self.X = np.empty((0, self.n_features))
        else:
            self.idx = np.empty(0, dtype=np.intp)
            self.s = np.empty(0)
            self.gram = np.empty((0, 0))

    def reserve(self, n_new):
        """Room for `n_new` more points (capped by the buffer).  All or nothing: the new
        arrays are bound in one call, so an interrupt leaves the old ones."""
        need = self.m + n_new if self.buffer is None else min(self.m + n_new, self.buffer)
        if need <= self.capacity:
            return
        capacity = max(need, self.capacity + self.capacity // 2)
        if self.buffer is not None:
            capacity = min(capacity, self.buffer)
        m = self.m
        grown = {"capacity": capacity}
        if self.kind == "centres":
            try:
                gram = np.empty((capacity, capacity))
            except MemoryError:
                raise MemoryError(
                    f"The difference pair kernel keeps the Gram matrix of the stored points: "
                    f"{capacity}^2 doubles = {8 * capacity ** 2 / 2 ** 30:.1f} GiB do not fit. "
                    "Pass buffer=B to average over a reservoir of B points (8 B^2 bytes).") \
                    from None
            gram[:m, :m] = self.gram[:m, :m]
            grown["gram"] = gram
        for name in ("y", "X", "idx", "s"):
            if hasattr(self, name):
                old = getattr(self, name)
                new = np.empty((capacity,) + old.shape[1:], dtype=old.dtype)
                new[:m] = old[:m]
                grown[name] = new
        self.__dict__.update(grown)

    def checkpoint(self, n_new):
        """What `restore` needs to undo the next `n_new` steps.

        The slots below m are rewritten only once the reservoir is full; g(x_j)
        changes at every step.
        """
        m = self.m
        live = {"s": self.s[:m].copy()} if self.kind == "centres" else {}
        if self.buffer is not None and m + n_new > self.buffer:
            for name in ("y", "X", "idx"):
                if hasattr(self, name):
                    live[name] = getattr(self, name)[:m].copy()
            if self.kind == "centres":
                live["gram"] = self.gram[:m, :m].copy()
        return m, live

    def restore(self, state):
        """Return to a `checkpoint`."""
        self.m, live = state
        m = self.m
        for name, value in live.items():
            if name == "gram":
                self.gram[:m, :m] = value
            else:
                getattr(self, name)[:m] = value

    def get_state(self):
        """Scalars and the live arrays (for pickle and okl.save)."""
        m = self.m
        state = dict(n_features=self.n_features, kind=self.kind, buffer=self.buffer, m=m,
                     y=self.y[:m].copy())
        if self.kind == "points":
            state["X"] = self.X[:m].copy()
        else:
            state.update(idx=self.idx[:m].copy(), s=self.s[:m].copy(),
                         gram=self.gram[:m, :m].copy())
        return state

    @classmethod
    def from_state(cls, state):
        buffer = state["buffer"]
        self = cls(state["n_features"], state["kind"], None if buffer is None else int(buffer))
        m = int(state["m"])
        self.reserve(m)
        self.m = m
        self.y[:m] = state["y"]
        if self.kind == "points":
            self.X[:m] = np.reshape(state["X"], (m, self.n_features))
        else:
            self.idx[:m] = state["idx"]
            self.s[:m] = state["s"]
            self.gram[:m, :m] = np.reshape(state["gram"], (m, m))
        return self

    def __reduce__(self):
        return (PairHistory.from_state, (self.get_state(),))


def _prefixed(prefix, state):
    return {prefix + key: value for key, value in state.items()}


def _unprefixed(prefix, state):
    return {key[len(prefix):]: value for key, value in state.items() if key.startswith(prefix)}


class LinearPairModel:
    """f(x, x') = w.(x - x'), averaged over the stored points."""

    kind = "points"

    def __init__(self, n_features, buffer=None):
        self.w = np.zeros(n_features)
        self.history = PairHistory(n_features, self.kind, buffer)

    def checkpoint(self, n_new):
        return self.w, self.history.checkpoint(n_new)     # learn rebinds, never writes, w

    def restore(self, token):
        self.w, undo = token
        self.history.restore(undo)

    def learn(self, engine, X, y, eta, slots, args):
        """Run the chunk with the engine named `engine`; return -1 or the first divergent step."""
        engine = ENGINES[engine].pairwise
        h = self.history
        h.reserve(len(X))
        w = self.w.copy()
        h.m, failed = engine.linear_chunk(h.X, h.y, h.m, w, X, y, eta, slots, *args)
        self.w = w
        return failed

    def decision(self, X1, X2):
        return (X1 - X2) @ self.w

    def scores(self, X):
        return X @ self.w

    def norm(self):
        return float(np.linalg.norm(self.w))

    @property
    def n_stored(self):
        return self.history.m

    def get_state(self):
        return dict(w=self.w.copy(), **_prefixed("history_", self.history.get_state()))

    @classmethod
    def from_state(cls, state):
        self = cls.__new__(cls)
        self.w = np.array(state["w"], dtype=np.float64)
        self.history = PairHistory.from_state(_unprefixed("history_", state))
        return self


class MetricPairModel(LinearPairModel):
    """f(x, x') = (x - x')^T M (x - x'), M symmetric (stored in `w`, shape (d, d))."""

    def __init__(self, n_features, buffer=None):
        super().__init__(n_features, buffer)
        self.w = np.zeros((n_features, n_features))

    def learn(self, engine, X, y, eta, slots, args):
        engine = ENGINES[engine].pairwise
        h = self.history
        h.reserve(len(X))
        M = self.w.copy()
        with one_thread():
            h.m, failed = engine.metric_chunk(h.X, h.y, h.m, M, X, y, eta, slots, *args)
        self.w = M
        return failed

    def decision(self, X1, X2):
        D = X1 - X2
        return np.einsum("ij,ij->i", D @ self.w, D)

    def scores(self, X):
        raise AttributeError("score_samples needs f(x, x') = g(x) - g(x'): pair_kernel "
                             "'linear' or 'difference', not 'metric'.")

    @classmethod
    def from_state(cls, state):
        self = super().from_state(state)
        d = self.history.n_features
        self.w = self.w.reshape(d, d)
        return self


def stored_caches(g, idx):
    """(g(x_j), K(x_i, x_j)) of the stored points, the centres `idx` of g: the caches a
    difference model keeps beside them (the kernel rows as the loops compute them, exact
    far out)."""
    points = np.ascontiguousarray(g.centers_[idx])
    return g.predict(points), kernel_matrix(points, points, g.kernel_params)


class DifferencePairModel:
    """f(x, x') = g(x) - g(x'), g = sum_i a_i k(x_i, .) with one centre per step."""

    kind = "centres"

    def __init__(self, expansion, buffer=None):
        self.g = expansion
        self.history = PairHistory(expansion.n_features, self.kind, buffer)

    def on(self, engine):
        """g, converted if `engine` changed since it was built."""
        cls = ENGINES[engine].expansion
        if not isinstance(self.g, cls):
            self.g = cls.from_state(self.g.get_state())
        return self.g

    def checkpoint(self, n_new):
        return self.g, self.g.checkpoint(n_new), self.history.checkpoint(n_new)

    def restore(self, token):
        self.g, g_undo, undo = token
        self.g.restore(g_undo)
        self.history.restore(undo)

    def with_own_caches(self):
        """A new model on the same g whose history holds its own Gram matrix, for a chunk
        whose loop recomputes the caches at new widths (gamma="scale"'s warm-up, m <= 100
        points: docs/defaults.md, section 2): a failed call drops it, and the old model's
        checkpoint restores g and g(x_j)."""
        history = copy.copy(self.history)
        history.gram = self.history.gram.copy()
        new = type(self).__new__(type(self))
        new.g, new.history = self.g, history
        return new

    def learn(self, engine, X, y, eta, slots, args, gamma=None):
        """The chunk; `gamma` the width of each row and after them (`with_own_caches`)."""
        h = self.history
        h.reserve(len(X))
        g = self.on(engine)
        loops = ENGINES[engine].pairwise
        widths = {} if gamma is None else {"gamma": gamma}
        # the cython step calls no BLAS; the NumPy twin's products on one thread
        with one_thread() if engine == "numpy" else nullcontext():
            h.m, failed = loops.difference_chunk(g, h.idx, h.y, h.s, h.gram, h.m,
                                                 X, y, eta, slots, *args, **widths)
        return failed

    def decision(self, X1, X2):
        return self.g.predict(X1) - self.g.predict(X2)

    def scores(self, X):
        return self.g.predict(X)

    def norm(self):
        return float(np.sqrt(max(self.g.sq_norm(), 0.0)))

    @property
    def n_stored(self):
        return self.history.m

    def get_state(self):
        engine = engine_of(self.g)
        return dict(engine=engine, **_prefixed("g_", self.g.get_state()),
                    **_prefixed("history_", self.history.get_state()))

    @classmethod
    def from_state(cls, state):
        self = cls.__new__(cls)
        self.g = ENGINES[state["engine"]].expansion.from_state(_unprefixed("g_", state))
        self.history = PairHistory.from_state(_unprefixed("history_", state))
        return self


class MomentsPairModel:
    """The linear pair model of the squared loss with r = y - y', from running moments.

    S = sum_j z_j z_j^T over z_j = (1, x_j - x_1, y_j - y_1): the exact average
    of Algorithm 1 in O(d^2) per step (docs/algorithms.md, section 6.5).
    """

    n_stored = 0

    def __init__(self, origin):
        d = len(origin) - 1
        self.S = np.zeros((d + 2, d + 2))
        self.origin = np.asarray(origin, dtype=np.float64)
        self.w = np.zeros(d)

    def checkpoint(self, n_new):
        return self.S, self.w

    def restore(self, token):
        self.S, self.w = token

    def learn(self, engine, X, y, eta, slots, args):
        engine = ENGINES[engine].pairwise
        S, w = self.S.copy(), self.w.copy()
        failed = engine.linear_moments_chunk(S, self.origin, w, X, y, eta)
        self.S, self.w = S, w
        return failed

    decision = LinearPairModel.decision
    scores = LinearPairModel.scores
    norm = LinearPairModel.norm

    def get_state(self):
        return dict(S=self.S.copy(), origin=self.origin.copy(), w=self.w.copy())

    @classmethod
    def from_state(cls, state):
        self = cls(state["origin"])
        d = len(self.origin) - 1
        self.S = np.array(state["S"], dtype=np.float64).reshape(d + 2, d + 2)
        self.w = np.array(state["w"], dtype=np.float64)
        return self
