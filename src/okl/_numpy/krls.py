"""The kernel recursive least-squares step (KRLS-T, ALD, budgets), the readable twin of
_core/_krls.pyx (docs/krls.md).

The model is a Gaussian-process posterior over f, written in whitened coordinates of a
dictionary of m centres D: with K_D = L L^T and R = L^-1 (lower triangular),

    f(x) = b + l(x)^T u,   l(x) = R k_D(x),   u ~ N(mean - b ones, cov)

so that the prior is u ~ N(0, I) and ``gamma2 = k(x, x) - l^T l`` is the part of f(x)
the dictionary cannot explain (Engel's approximate-linear-dependence residual).  `mean`
is the posterior mean the raw targets give and `ones` the one the all-ones targets
give: every operation of the step is linear in the targets, so the posterior of the
targets centred by the current offset b (their running mean) is ``mean - b ones``.

One step, from the model before it (docs/krls.md, section 2):

1. predict: ``f = b + l^T (mean - b ones)``, variance ``sf2 = gamma2 + l^T cov l``;
2. learn (weight w > 0: the noise variance is noise / w): a centre joins the
   dictionary when gamma2 > nu (its coordinate enters with the prior N(0, 1)), else the
   residual counts as noise; one Kalman update of (mean, ones, cov) along
   e = [l; sqrt(gamma2)] or l;
3. the offset b and the signal scale s02 (the predictive variance is s02 (noise + sf2))
   take the event; over budget, one centre leaves: its coordinate is rotated to the last
   place by Givens rotations and marginalised (policy SIGNIFICANCE: the centre whose
   loss costs the least squared error, KRLS-T's rule; OLDEST: the sliding window);
4. forgetting lambda < 1 pulls the posterior back to the prior:
   ``cov <- lambda cov + (1 - lambda) I``, ``mean, ones <- sqrt(lambda) (mean, ones)``;
   with `inflate`, it injects uncertainty instead, bounded by the prior:
   ``cov <- D cov D``, ``d_i = 1 / sqrt(min(max(cov_ii, lambda), 1))`` (each variance grows
   by 1 / lambda up to the prior's, 1; one above 1 is left), the means kept (`inject`, section 11 of docs/krls.md);
5. with a change detector (`set_drift`, docs/drift.md), the event's residual over the
   targets' mean absolute deviation, ``|y - f| / (dev / devw)`` (a scale that does not
   narrow as the posterior does; 0 while devw is), taken before the update, is watched
   (`okl._numpy.drift.watch`); the sums take ``w |y - b|`` and w after the offset, with
   lambda.  At a change the posterior, once it has learned the event, takes one step of
   forgetting back to the prior by keep, in either mode (`forget`, and the offset's,
   signal scale's and deviation's sums times keep).

`cov` is kept exactly symmetric: every write computes the lower triangle's formula and
mirrors it.  The compiled twin takes the same operations in the same order.
"""
import copy
import math
from contextvars import ContextVar

import numpy as np
from scipy.linalg import LinAlgError, cholesky, lapack, solve_triangular

from okl._numpy.codes import Prune
from okl._numpy.drift import drift_loss, read_state, state_tuple, watch
from okl._numpy.kernels import gram_base, kernel_of, kernel_record, kernel_values

# a centre joins only if its residual is above this fraction of k(x, x) (with nu = 0: every
# point that the dictionary does not already span to rounding)
RESIDUAL_FLOOR = 1e-12


def inject(cov, lam, m):
    """Uncertainty injection bounded by the prior (docs/krls.md, section 11): cov <- D cov D,
    d_i = 1 / sqrt(min(max(cov_ii, lam), 1)), so that a variance below lam grows by 1 / lam,
    one between lam and 1 ends at the prior's, 1, and one above 1 (after a width move or a
    removal) is left; a congruence, so cov stays symmetric positive definite.  (A rounded
    cov_ii <= 0, or NaN, takes 1 / lam.)"""
    c = cov[:m, :m]
    s = c.diagonal().copy()
    d = 1.0 / np.sqrt(np.where(s > lam, np.minimum(s, 1.0), lam))
    c *= np.outer(d, d)


def forget(cov, mean, ones, lam, m, inflate=False):
    """Back to the prior by lam: cov <- lam cov + (1 - lam) I, mean and ones times sqrt(lam);
    with `inflate`, uncertainty injection bounded by the prior (`inject`), mean and ones
    kept."""
    if lam == 1.0:
        return
    if inflate:
        inject(cov, lam, m)
        return
    c = cov[:m, :m]
    c *= lam
    c[np.diag_indices(m)] += 1.0 - lam
    root = math.sqrt(lam)
    mean[:m] *= root
    ones[:m] *= root


def remove(R, cov, mean, ones, r, m):
    """The dictionary without centre r: R and the posterior of its m - 1 coordinates (the
    rows of R and entries of the posterior are updated in place; index m - 1 is dropped).

    Moving column r of R last leaves the rows r..m-1 one entry above the diagonal
    (the moved column); Givens rotations of rows (i, i + 1), i = r..m-2, zero it, so
    the leading block is the inverse Cholesky factor of the other centres' Gram matrix
    and the last coordinate, the one centre r alone explains, is marginalised.  The
    posterior's coordinates turn with the same rotations: cov's rows, then its columns
    (each row along its entries), then its lower triangle mirrored.
    """
    last = R[r:m, r].copy()
    for i in range(r, m):
        R[i, r:i] = R[i, r + 1:i + 1]
        R[i, i] = 0.0
    turns = []
    for k in range(m - 1 - r):
        i = r + k
        a, b = last[k], last[k + 1]
        rho = math.hypot(a, b)
        c, s = (1.0, 0.0) if rho == 0.0 else (b / rho, a / rho)
        turns.append((i, c, s))
        ri, rj = R[i, :i + 1].copy(), R[i + 1, :i + 1].copy()
        R[i, :i + 1] = c * ri - s * rj
        R[i + 1, :i + 1] = s * ri + c * rj
        last[k], last[k + 1] = 0.0, rho
        for v in (mean, ones):
            v[i], v[i + 1] = c * v[i] - s * v[i + 1], s * v[i] + c * v[i + 1]
        ci, cj = cov[i, :m].copy(), cov[i + 1, :m].copy()
        cov[i, :m] = c * ci - s * cj
        cov[i + 1, :m] = s * ci + c * cj
    for i, c, s in turns:
        ci, cj = cov[:m, i].copy(), cov[:m, i + 1].copy()
        cov[:m, i] = c * ci - s * cj
        cov[:m, i + 1] = s * ci + c * cj
    n = m - 1
    upper = np.triu_indices(n, 1)
    cov[upper] = cov[:n, :n].T[upper]
    R[n, :m] = 0.0
    R[:m, n] = 0.0
    for i in range(r, n):               # the factor with a positive diagonal: flip a coordinate
        if R[i, i] < 0.0:
            R[i, :i + 1] *= -1.0
            mean[i], ones[i] = -mean[i], -ones[i]
            cov[i, :n] *= -1.0
            cov[:n, i] *= -1.0


def significance(R, mean, ones, b, m):
    """KRLS-T's pruning criterion of every centre: |(K^-1 mu)_i| / (K^-1)_ii, mu the centred
    posterior mean at the centres (K^-1 mu = R^T (mean - b ones), (K^-1)_ii the squared norm
    of column i of R): the squared error the centre's removal costs, up to a factor."""
    Rm = R[:m, :m]
    v = Rm.T @ (mean[:m] - b * ones[:m])
    return np.abs(v) / np.einsum("ij,ij->j", Rm, Rm)


class Posterior:
    """What the dictionary model and the feature model share: the posterior (mean, ones, cov)
    of the whitened coordinates (or feature weights), the offset b and the signal scale, and
    the update of one event along a measurement vector."""

    SCALARS = ("t", "b", "wsum", "nums", "dens", "dev", "devw")

    def _start(self, noise, forgetting, intercept, inflate):
        self.noise, self.forgetting, self.intercept = float(noise), float(forgetting), bool(intercept)
        self.inflate = bool(inflate)    # forgetting by uncertainty injection, not to the prior
        self.t = 0.0            # events of positive weight
        self.b = 0.0            # the offset
        self.wsum = 0.0         # the forgetting sum of weights behind b
        self.nums = 0.0         # s02 = nums / dens: the signal scale
        self.dens = 0.0
        self.dev = 0.0          # dev / devw: the targets' mean absolute deviation from b (the
        self.devw = 0.0         # scale of the watched residual)
        self.drift = None       # change detection: the settings (None: the steps do not watch)
        self.dstate = None      # and the state (a working copy of the learner's _drift_state)
        self._held = None       # the last row predict_one evaluated (`_recall`)

    def _hold(self, x, values):
        """Remember predict_one's evaluation `values` of row x (`_core._krls`: held)."""
        self._held = (np.array(x, dtype=np.float64).tobytes(), self.t, self.b, self.n_support,
                      values)

    def _recall(self, x):
        """The evaluation predict_one left of row x on the current state, or None; cleared."""
        held, self._held = self._held, None
        if held is not None and held[:4] == (np.asarray(x, dtype=np.float64).tobytes(), self.t,
                                             self.b, self.n_support):
            return held[4]
        return None

    def __getstate__(self):
        return dict(self.__dict__, _held=None)

    def set_drift(self, drift, state=None, t=0.0):
        """The steps that follow watch with the settings `drift` (the `Drift` fields,
        `okl._numpy.drift.make_drift`; None: they do not) from the drift state `state` (the
        learner's `_drift_state`, or None: nothing seen, the clock at t)."""
        self.drift = drift
        if drift is not None:
            self.dstate = read_state(state, float(t))

    def drift_state(self):
        """The drift state after the steps (as a learner stores it), or None when they did
        not watch."""
        return None if self.drift is None else state_tuple(self.dstate)

    def deviation(self):
        """The scale of the watched residual: the targets' mean absolute deviation from the
        offset so far, dev / devw (0 before any)."""
        return self.dev / self.devw if self.devw > 0.0 else 0.0

    def _watch(self, y, f):
        """The drift state after an event's residual |y - f| over the targets' mean absolute
        deviation (before the update); None when the steps do not watch."""
        if self.drift is None:
            return None
        return watch(self.drift, self.dstate, drift_loss(False, y, f, self.deviation()))[1]

    def _change(self, m, after):
        """Take the drift state after an event; at a change, one step of forgetting toward
        the prior by the settings' keep (the posterior, the offset's and signal scale's
        sums)."""
        if after is None:
            return
        if after["changes"] != self.dstate["changes"]:
            keep = self.drift["keep"]
            forget(self.cov, self.mean, self.ones, keep, m)
            self.wsum *= keep
            self.nums *= keep
            self.dens *= keep
            self.dev *= keep
            self.devw *= keep
        self.dstate = after

    def scale(self):
        """s02, the signal scale the variances are in units of (1 until an event counts)."""
        return self.nums / self.dens if self.dens > 0.0 else 1.0

    def _mean(self, l, m):
        return self.b + float(l @ (self.mean[:m] - self.b * self.ones[:m]))

    def _innovations(self, l, y, w, f, sf2, m):
        """(s, innov, innov1, z2) of an event, or None when they are not finite."""
        s = self.noise / w + sf2
        innov, innov1 = y - float(l @ self.mean[:m]), 1.0 - float(l @ self.ones[:m])
        z2 = (y - f) ** 2 / (self.noise / w + sf2)
        if not (math.isfinite(f) and math.isfinite(s) and math.isfinite(innov / s)
                and math.isfinite(innov1 / s) and math.isfinite(z2) and s > 0.0):
            return None
        return s, innov, innov1, z2

    def _absorb(self, h, n, s, innov, innov1, z2, y, w):
        """The Kalman update along h = cov e of the n coordinates and the forgetting; then
        the signal scale, the offset and the deviation's sums take the event (the offset's
        first event only fixes b)."""
        c = 1.0 / s
        self.mean[:n] += h * (innov * c)
        self.ones[:n] += h * (innov1 * c)
        self.cov[:n, :n] -= np.outer(h, h) * c
        lam = self.forgetting
        forget(self.cov, self.mean, self.ones, lam, n, self.inflate)
        if not self.intercept or self.wsum > 0.0:
            self.nums = lam * self.nums + z2
            self.dens = lam * self.dens + 1.0
        if self.intercept:
            self.wsum = lam * self.wsum + w
            self.b += (w / self.wsum) * (y - self.b)
        self.dev = lam * self.dev + w * abs(y - self.b)
        self.devw = lam * self.devw + w

    def _pass(self, f, m):
        """An event of weight 0: time passes (forgetting), nothing is learned."""
        if not math.isfinite(f):
            return False
        forget(self.cov, self.mean, self.ones, self.forgetting, m, self.inflate)
        self.wsum *= self.forgetting
        return True

    def _scalars(self):
        return {name: getattr(self, name) for name in self.SCALARS}

    def _set_scalars(self, state):
        for name in self.SCALARS:       # a state saved before the deviation: it starts at 0
            setattr(self, name, float(state.get(name, 0.0) if name in ("dev", "devw")
                                      else state[name]))
        self._held = None

    def predict(self, X, var_out=None):
        """f(x) of every row; with `var_out` (an array), the variance of f(x) into it."""
        out = np.empty(len(X))
        for i, x in enumerate(X):
            out[i], sf2 = self.predict_one(x)
            if var_out is not None:
                var_out[i] = sf2
        return out

    def checkpoint(self, n_new=0):
        return copy.deepcopy(self.__dict__)

    def restore(self, token):
        """Put back the model `checkpoint` copied: every array at its capacity, every field."""
        self.__dict__.clear()
        self.__dict__.update(token)


class NumpyKRLS(Posterior):
    """KRLS on a dictionary of centres: the posterior, the factor R and the counters.

    Parameters
    ----------
    n_features : int
    kernel : dict, the kernel's record (`okl.kernels.kernel_params`)
    noise : float > 0, the noise-to-signal variance ratio (KRLS-T's sn2)
    forgetting : float in (0, 1], lambda
    inflate : bool, whether forgetting injects uncertainty (cov / lambda) rather than pulls
        back to the prior
    threshold : float >= 0, the ALD threshold nu a new centre's residual must pass
    budget : int >= 0, the most centres kept (0: no bound)
    policy : a `Prune` code: which centre leaves a full dictionary
    intercept : bool, whether the offset b is the running mean of the targets
    """

    def __init__(self, n_features, kernel, noise, forgetting=1.0, threshold=0.0, budget=0,
                 policy=Prune.SIGNIFICANCE, intercept=True, inflate=False):
        self.n_features = int(n_features)
        self.kernel_params = kernel_record(kernel)
        self._start(noise, forgetting, intercept, inflate)
        self.threshold, self.budget, self.policy = float(threshold), int(budget), int(policy)
        self.n_support = 0
        self.next_order = 0     # the order number of the next centre
        self._alloc(0)

    def _alloc(self, capacity):
        d = self.n_features
        self.centers = np.zeros((capacity, d))
        self.sqnorms = np.zeros(capacity)
        self.order = np.zeros(capacity, dtype=np.int64)
        self.R = np.zeros((capacity, capacity))
        self.cov = np.zeros((capacity, capacity))
        self.mean = np.zeros(capacity)
        self.ones = np.zeros(capacity)

    @property
    def capacity(self):
        return len(self.mean)

    def reserve(self, n_new):
        """Room for n_new more centres (a budget of B needs B + 1: the newcomer)."""
        need = self.n_support + n_new
        if self.budget:
            need = min(need, self.budget + 1)
        if need > self.capacity:
            m, old = self.n_support, self.get_arrays()
            self._alloc(max(need, 2 * self.capacity))
            self.set_arrays(old, m)

    def get_arrays(self):
        m = self.n_support
        return dict(centers=self.centers[:m].copy(), order=self.order[:m].copy(),
                    R=self.R[:m, :m].copy(), cov=self.cov[:m, :m].copy(),
                    mean=self.mean[:m].copy(), ones=self.ones[:m].copy())

    def set_arrays(self, arrays, m):
        self.centers[:m] = arrays["centers"]
        self.sqnorms[:m] = np.einsum("ij,ij->i", self.centers[:m], self.centers[:m])
        self.order[:m] = arrays["order"]
        self.R[:m, :m] = arrays["R"]
        self.cov[:m, :m] = arrays["cov"]
        self.mean[:m] = arrays["mean"]
        self.ones[:m] = arrays["ones"]
        self.n_support = m
        self._held = None

    def whiten(self, x):
        """(l, gamma2, k(x, x)) of a row: l = R k_D(x) and the residual k(x, x) - l^T l."""
        m = self.n_support
        kxx = float(kernel_values(self.kernel_params, x[None, :], x)[0])
        if m == 0:
            return np.empty(0), kxx, kxx
        k = kernel_values(self.kernel_params, self.centers[:m], x, self.sqnorms[:m])
        l = self.R[:m, :m] @ k
        return l, kxx - float(l @ l), kxx

    def predict_one(self, x):
        """(f(x), sf2): the posterior mean and the variance of f(x), noise excluded."""
        m = self.n_support
        l, gamma2, kxx = self.whiten(x)
        g = self.cov[:m, :m] @ l
        gamma2 = max(gamma2, 0.0)
        f, sf2 = self._mean(l, m), gamma2 + float(l @ g)
        self._hold(x, (l, g, gamma2, kxx, f, sf2))
        return f, sf2

    def learn_one(self, x, y, w=1.0):
        """Predict, then learn one event: returns (f, sf2) before the step; None if the
        step would leave a non-finite model (nothing changed)."""
        m = self.n_support
        held = self._recall(x)
        if held is not None:        # predicted just before: l, g, f and sf2 are at hand
            l, g, gamma2, kxx, f, sf2 = held
        else:
            l, gamma2, kxx = self.whiten(x)
            g = self.cov[:m, :m] @ l
            gamma2 = max(gamma2, 0.0)
            sf2 = gamma2 + float(l @ g)
            f = self._mean(l, m)
        if w == 0.0:            # time passes, nothing is learned
            return (f, sf2) if self._pass(f, m) else None
        terms = self._innovations(l, y, w, f, sf2, m)
        if terms is None:
            return None
        after = self._watch(y, f)
        add = gamma2 > max(self.threshold, RESIDUAL_FLOOR * kxx) and (
            self.policy != Prune.FREEZE or m < self.budget)
        self.reserve(1)
        if add:
            gamma = math.sqrt(gamma2)
            h = np.append(g, gamma)
            self.cov[m, :m + 1] = 0.0
            self.cov[:m + 1, m] = 0.0
            self.cov[m, m] = 1.0
            self.mean[m] = self.ones[m] = 0.0
            # the new centre's row of R: [-l^T R / gamma, 1 / gamma]
            self.R[m, :m] = -(l @ self.R[:m, :m]) / gamma
            self.R[m, m] = 1.0 / gamma
            self.R[:m, m] = 0.0
            self.centers[m] = x
            self.sqnorms[m] = float(x @ x)
            self.order[m] = self.next_order
            self.next_order += 1
            n = m + 1
        else:
            h, n = g, m
        self._absorb(h, n, *terms, y, w)
        self.n_support = n
        if self.budget and n > self.budget and self.policy != Prune.FREEZE:
            if self.policy == Prune.OLDEST:
                r = int(np.argmin(self.order[:n]))
            else:
                r = int(np.argmin(significance(self.R, self.mean, self.ones, self.b, n)))
            self._remove(r)
        self._change(self.n_support, after)
        self.t += 1.0
        return f, sf2

    def _remove(self, r):
        m = self.n_support
        remove(self.R, self.cov, self.mean, self.ones, r, m)
        self.centers[r:m - 1] = self.centers[r + 1:m]
        self.sqnorms[r:m - 1] = self.sqnorms[r + 1:m]
        self.order[r:m - 1] = self.order[r + 1:m]
        self.n_support = m - 1

    def get_state(self):
        """Scalars and arrays that rebuild this model exactly (okl.save writes them)."""
        return dict(n_features=self.n_features, **self.kernel_params, noise=self.noise,
                    forgetting=self.forgetting, threshold=self.threshold, budget=self.budget,
                    policy=self.policy, intercept=self.intercept, inflate=self.inflate,
                    next_order=self.next_order, **self._scalars(), **self.get_arrays())

    @classmethod
    def from_state(cls, state):
        self = cls(int(state["n_features"]), kernel_record(state, complete=True),
                   float(state["noise"]), float(state["forgetting"]), float(state["threshold"]),
                   int(state["budget"]), int(state["policy"]), bool(state["intercept"]),
                   bool(state.get("inflate", False)))
        self._set_scalars(state)
        self.next_order = int(state["next_order"])
        m = len(state["mean"])
        self._alloc(m)
        self.set_arrays({k: np.asarray(state[k]) for k in
                         ("centers", "order", "R", "cov", "mean", "ones")}, m)
        return self


def fourier_features(state, x):
    """z(x) = sqrt(2 / D) cos(x W + b) of a random Fourier map's state (`RandomFourierFeatures`)."""
    W, b = state["W"], state["b"]
    return math.sqrt(2.0 / W.shape[1]) * np.cos(x @ W + b)


class NumpyRLSFeatures(Posterior):
    """Recursive least squares on random Fourier features: the posterior of the weights w of
    f(x) = b + z(x)^T w, prior N(0, I) (so that the prior covariance is z(x)^T z(u), which
    approximates k(x, u)); the same update as `NumpyKRLS` along e = z(x), no dictionary.

    Parameters
    ----------
    fmap : dict, the state of a fitted `okl._feature_maps.RandomFourierFeatures`
    noise, forgetting, intercept, inflate : as `NumpyKRLS`
    """

    def __init__(self, fmap, noise, forgetting=1.0, intercept=True, inflate=False):
        self.fmap = {k: (np.ascontiguousarray(v, dtype=np.float64) if isinstance(v, np.ndarray)
                         else v) for k, v in fmap.items()}
        self.n_features = int(self.fmap["n_features"])
        self.n_components = D = int(self.fmap["n_components"])
        self._start(noise, forgetting, intercept, inflate)
        self.n_support = 0
        self.mean, self.ones = np.zeros(D), np.zeros(D)
        self.cov = np.eye(D)

    def reserve(self, n_new):
        """Nothing to make room for: the model has a fixed size."""

    def predict_one(self, x):
        z = fourier_features(self.fmap, x)
        g = self.cov @ z
        f, sf2 = self._mean(z, self.n_components), float(z @ g)
        self._hold(x, (z, g, f, sf2))
        return f, sf2

    def learn_one(self, x, y, w=1.0):
        """As `NumpyKRLS.learn_one`."""
        D = self.n_components
        held = self._recall(x)
        if held is not None:
            z, g, f, sf2 = held
        else:
            z = fourier_features(self.fmap, x)
            g = self.cov @ z
            sf2 = float(z @ g)
            f = self._mean(z, D)
        if w == 0.0:
            return (f, sf2) if self._pass(f, D) else None
        terms = self._innovations(z, y, w, f, sf2, D)
        if terms is None:
            return None
        after = self._watch(y, f)
        self._absorb(g, D, *terms, y, w)
        self._change(D, after)
        self.t += 1.0
        return f, sf2

    def fit_rows(self, X, y, weight):
        """Learn rows (the warm-up's, again): the number that would not be finite, or -1."""
        for i in range(len(X)):
            if self.learn_one(X[i], y[i], weight[i]) is None:
                return i
        return -1

    def get_arrays(self):
        return dict(mean=self.mean.copy(), ones=self.ones.copy(), cov=self.cov.copy())

    def get_state(self):
        return dict(**{"map_" + k: v for k, v in self.fmap.items()}, noise=self.noise,
                    forgetting=self.forgetting, intercept=self.intercept, inflate=self.inflate,
                    **self._scalars(), **self.get_arrays())

    @classmethod
    def from_state(cls, state):
        fmap = {k[4:]: v for k, v in state.items() if k.startswith("map_")}
        self = cls(fmap, float(state["noise"]), float(state["forgetting"]),
                   bool(state["intercept"]), bool(state.get("inflate", False)))
        self._set_scalars(state)
        for name in ("mean", "ones", "cov"):
            setattr(self, name, np.array(state[name], dtype=np.float64))
        self._held = None
        return self


def rewidth(state, gamma):
    """The state of a dictionary model at another kernel width (gamma="scale"'s warm-up,
    docs/krls.md, section 5): the posterior of f at the centres (mean L mean, covariance
    L cov L^T) kept, the factor of the centres' Gram matrix at the new width, and a centre
    whose residual falls below the ALD threshold there marginalised (compiled, in place:
    `KRLSModel.rewidth`)."""
    state = dict(state, gamma=float(gamma))
    m = len(state["mean"])
    if m == 0:
        return state
    L = solve_triangular(state["R"], np.eye(m), lower=True)
    f_mean, f_ones = L @ state["mean"], L @ state["ones"]
    f_cov = L @ state["cov"] @ L.T
    centers = np.asarray(state["centers"])
    record = kernel_record(state, complete=True)
    K = kernel_of(record, shared_gram_base(record["kernel"], centers))
    K = 0.5 * (K + K.T)
    keep, Lk = [], np.zeros((m, m))
    for j in range(m):                  # Cholesky, a centre at a time, in the centres' order
        n = len(keep)                   # (LAPACK's solve as solve_triangular calls it)
        row = lapack.dtrtrs(Lk[:n, :n].T, K[keep, j], lower=0, trans=1)[0] if n \
            else np.empty(0)
        gamma2 = K[j, j] - row @ row
        if gamma2 > max(float(state["threshold"]), RESIDUAL_FLOOR * K[j, j]):
            Lk[n, :n], Lk[n, n] = row, math.sqrt(gamma2)
            keep.append(j)
    n = len(keep)
    R = solve_triangular(Lk[:n, :n], np.eye(n), lower=True)
    cov = R @ f_cov[np.ix_(keep, keep)] @ R.T
    state.update(centers=centers[keep], order=np.asarray(state["order"])[keep], R=R,
                 mean=R @ f_mean[keep], ones=R @ f_ones[keep], cov=0.5 * (cov + cov.T))
    return state


def fit_chunk(model, X, y, pred_out, var_out, weight=None, scale_out=None):
    """Run the chunk (`_core._krls.fit_chunk`): the index of the first row that is not finite
    or whose step would leave a non-finite model (nothing changed by it), or -1; with
    `scale_out`, s02 before each step into it."""
    for i in range(len(X)):
        x = X[i]
        if scale_out is not None:
            scale_out[i] = model.scale()
        out = None
        if np.isfinite(x @ x) or np.isfinite(x).all():
            out = model.learn_one(x, y[i], 1.0 if weight is None else weight[i])
        if out is None:
            return i
        pred_out[i], var_out[i] = out
    return -1


#: a dict while learners that see the same rows learn them (MultiKernelRegressor(learner="krls"),
#: docs/krls.md, section 9): the warm-up's work that does not depend on the learner, done once
SHARED_WARMUP = ContextVar("krls_shared_warmup", default=None)


def shared(key, compute):
    """compute(), or while `SHARED_WARMUP` holds a dict the value an earlier call with the same
    key (the same inputs, by value) computed."""
    cache = SHARED_WARMUP.get()
    if cache is None:
        return compute()
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def shared_gram_base(kernel, X, gram=None):
    """`gram_base` of the rows X (or `gram`'s: its compiled twin), `shared` by the learners
    that see the same rows."""
    return shared(("gram_base", int(kernel), X.shape, X.tobytes()),
                  lambda: (gram or gram_base)(kernel, X))


#: noise="auto": the noises the warm-up's evidence chooses from (docs/krls.md, section 8)
NOISE_GRID = 10.0 ** np.arange(-6.0, 1.0)
#: gamma="scale" with noise="auto": the widths, as multiples of the scale rule's
WIDTH_FACTORS = 2.0 ** np.arange(-6.0, 4.0)
#: gamma="scale" with noise="auto": the evidence tries every WIDTH_STRIDE-th width of the grid,
#: then the neighbours of the best (1: every width, the rule before; docs/krls.md, section 8)
WIDTH_STRIDE = 2
#: noise="auto": the evidence reads the warm-up's last this many events (of positive weight;
#: okl._gamma.WARMUP: all of them, the rule before; docs/krls.md, section 8)
EVIDENCE_EVENTS = 50


def log_evidence(K, y, w, noise, centred):
    """The log marginal likelihood of targets y under f ~ GP(0, s02 K) and noise
    s02 noise / w, the scale s02 at its maximum (up to a constant): with A = K + noise
    diag(1 / w) = L L^T and q = y^T A^-1 y, ``-dof / 2 log(q / dof) - log |L|``.  With
    `centred`, y less its weighted mean, and one degree of freedom fewer."""
    y = y - np.average(y, weights=w) if centred else y
    dof = len(y) - 1 if centred else len(y)
    try:
        L = cholesky(K + np.diag(noise / w), lower=True)
    except LinAlgError:
        return -np.inf
    a = solve_triangular(L, y, lower=True)
    q = max(float(a @ a), np.finfo(float).tiny)
    return -0.5 * dof * math.log(q / dof) - float(np.log(np.diag(L)).sum())


def log_evidences(K, y, w, noises, centred):
    """`log_evidence` at every noise of `noises`, from one tridiagonal reduction
    W^1/2 K W^1/2 = Q T Q^T (W = diag(w)): with z = Q^T W^1/2 y and T + noise I = L D L^T,
    ``log |A| = sum log D_i - sum log w_i`` and ``q = z^T (T + noise I)^-1 z``, O(n) a noise;
    -inf where that factor fails (A not positive definite, as the Cholesky factor's failure)
    (docs/krls.md, section 8)."""
    y = y - np.average(y, weights=w) if centred else y
    dof = len(y) - 1 if centred else len(y)
    root = np.sqrt(w)
    c, d, e, tau, _ = lapack.dsytrd(root[:, None] * K * root[None, :], lower=1)
    z = root * y
    if len(tau):                # Q's reflectors are those of a QR factor of c[1:, :-1]
        z[1:] = lapack.dormqr("L", "T", c[1:, :-1], tau, z[1:, None], 1)[0][:, 0]
    else:                       # one row: LAPACK's wrappers take an unused off-diagonal
        e = np.zeros(1)
    out = np.full(len(noises), -np.inf)
    log_w = float(np.log(w).sum())
    for i, noise in enumerate(noises):
        dn, en, info = lapack.dpttrf(d + float(noise), e)
        if info == 0:
            x = lapack.dpttrs(dn, en, z[:, None])[0][:, 0]
            q = max(float(z @ x), np.finfo(float).tiny)
            out[i] = -0.5 * dof * math.log(q / dof) - 0.5 * (float(np.log(dn).sum()) - log_w)
    return out


def evidence_choice(kernel, X, y, w, gammas, noises, centred, evidences=log_evidences,
                    stride=1, gram=None):
    """(gamma, noise, log evidence) of the largest `log_evidences` of the rows (X, y, w) over
    the grids (the first of equal ones, gammas then noises in their order); `evidences` and
    `gram` (None: `gram_base`): those functions or their compiled twins (`okl._core._evidence`).
    With `stride` s > 1, coarse to fine: every s-th width from the first, then the widths
    within s - 1 of the best of those."""
    record = kernel_record(kernel)
    base = shared_gram_base(record["kernel"], X, gram)
    values = {}

    def score(i):
        K = kernel_of(dict(record, gamma=float(gammas[i])), base)
        values[i] = evidences(0.5 * (K + K.T), y, w, noises, centred)

    def best():
        top = (-np.inf, 0, len(noises) - 1)
        for i in sorted(values):
            for j, value in enumerate(values[i]):
                if value > top[0]:
                    top = (float(value), i, j)
        return top

    for i in range(0, len(gammas), stride):
        score(i)
    if stride > 1:
        top = best()[1]
        for i in range(max(top - stride + 1, 0), min(top + stride, len(gammas))):
            if i not in values:
                score(i)
    value, i, j = best()
    return float(gammas[i]), float(noises[j]), value


def linear_evidence(X, y, w, noises, centred, evidences=log_evidences):
    """(coef0, noise, log evidence) of the linear kernel ``<x, u> + c`` on the rows (X, y, w),
    with c the mean of <x, x> (the constant carries the part of the offset the targets' mean
    does not, with the prior variance of an average row): its Gram matrix over its mean
    diagonal, 2 c, is scored at every noise of the grid (so that a noise means what it means
    for the Gaussian, whose k(x, x) is 1), the first of equal ones.  The noise returned is in
    the kernel's own units, the grid's times 2 c; (nan, nan, -inf) when c is not positive
    (docs/krls.md, section 8); `evidences` as `evidence_choice`'s."""
    c = float(np.mean(np.einsum("ij,ij->i", X, X)))
    if not c > 0.0 or not math.isfinite(c):
        return math.nan, math.nan, -np.inf
    K = X @ X.T + c
    K = 0.5 * (K + K.T) / (2.0 * c)
    best, choice = -np.inf, math.nan
    for noise, value in zip(noises, evidences(K, y, w, noises, centred)):
        if value > best:
            best, choice = float(value), float(noise) * 2.0 * c
    return c, choice, best
