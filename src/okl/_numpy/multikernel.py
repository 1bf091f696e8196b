"""Online multiple kernel learning in NumPy, the twin of _core/_multikernel.pyx.

See docs/multikernel.md.

A pool of learners: Gaussian ones share one support set, learner k with the
width ``gammas[width_of[k]]`` (times the running scale when `auto`) and its
coefficients, row k of the (Gaussian learners x centres) matrix `coef`; then
linear ones (``width_of[k] = -1``, the kernel (<x - m, u - m> + r) / ((d + 1) r) on the
inputs centred by their running mean m, r the mean squared entry of the centred
inputs), learner l with the weights ``linear_coef[l]`` of the centred features and
its intercept (last).
Learner k steps ``eta_scales[k]`` times the schedule's eta_t (the papers'
decaying step), or, when ``forgetting[k] > 0``, a constant step (eta_1 times its
scale) and a shrink by that factor at every step; it has its own offset b_k.
The SCALED schedule divides a Gaussian learner's step by kbar of its width,
(kbar_sum + 1) / (kbar_pairs + 1): the mean kernel value between each of the
first `WARMUP` events and the centres before it, counting K(x, x) = 1 once; and
a linear learner's by the linear kernel's mean between two inputs, 1 / (d + 1).
With ``n_outputs = C >= 3`` classes each learner is a multiclass learner
(docs/multiclass.md): `coef` is (learners x centres x C), `b` (learners x C),
y the class index, the step that of `okl._numpy.multiclass` and the merge
`multi_merge_find` of the multi-output expansion.  Each event computes the
squared distances to the centres once and one exponential per (centre, width),
takes the NORMA step of every learner (the step of `okl._numpy.pointwise`) and
the Hedge update of the weights `q` (Jin, Hoi and Yang 2010; Hoi, Jin, Zhao and
Yang 2013), mixed with a fixed share (Herbster and Warmuth 1998).  The schedule
and loss are the dicts of `okl._numpy.pointwise`; `hedge` holds beta, the
share, the combination (0 deterministic, 1 stochastic), the task (0
classification: the Hedge loss is the mistake; 1 regression: the loss over its
running maximum) and the seed of the stochastic draws.
"""
import numpy as np

from okl._numpy.codes import Loss, MulticlassLoss, Offset, StepSize
from okl._numpy.losses import gradient, value
from okl._numpy.merge import merge_find
from okl._numpy.multiclass import gradient as multi_gradient
from okl._numpy.multiexpansion import multi_merge_find
from okl._numpy.pointwise import DIVERGED, SKIPPED, TAKEN, schedule
from okl._numpy.warmup import WARMUP

OLDEST, SMALLEST, MERGE = 0, 1, 2
DETERMINISTIC, STOCHASTIC = 0, 1
CLASSIFY, REGRESS = 0, 1
_MASK = (1 << 64) - 1
NEGLIGIBLE = 1e-12      # a leader's ||a_m||^2 below this times its largest: x_m is removed
NO_GAIN = 1e-9          # a leader's merge gaining less than this times A + B: x_m is removed


def make_hedge(beta=0.8, combination=DETERMINISTIC, task=CLASSIFY, seed=0, share=0.0):
    """The `Hedge` fields: the discount beta, the fixed share, the combination, the task, the
    seed."""
    return dict(beta=float(beta), share=float(share), combination=int(combination),
                task=int(task), seed=int(seed) & _MASK)


def uniform(seed, t):
    """The uniform draw in [0, 1) of step t (splitmix64 of seed + t * golden ratio)."""
    z = (seed + (int(t) + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    z ^= z >> 31
    return (z >> 11) * 2.0 ** -53


def doublings(gammas):
    """p > 0 where gammas[j] = 2^p gammas[j - 1] exactly (1 <= p <= 3), else 0: that width's
    kernel row is the previous one squared p times (exp(-2 g s) = exp(-g s)^2)."""
    g = [float(v) for v in gammas]
    return [0] + [next((p for p in (1, 2, 3) if b == a * 2.0 ** p), 0)
                  for a, b in zip(g, g[1:])]


class NumpyMultiKernel:
    """A pool of kernel learners (Gaussian ones on one support set, linear ones) combined by
    Hedge weights."""

    def __init__(self, n_features, gammas, width_of, eta_scales, auto=False, budget=0,
                 policy=OLDEST, n_outputs=1, forgetting=None):
        self.n_features = int(n_features)
        self.gammas = np.array(gammas, dtype=np.float64)
        self.width_of = np.array(width_of, dtype=np.intp)
        self.eta_scales = np.array(eta_scales, dtype=np.float64)
        K = len(self.width_of)
        self.forgetting = (np.zeros(K) if forgetting is None
                           else np.array(forgetting, dtype=np.float64))
        self.auto, self.budget, self.policy = bool(auto), int(budget), int(policy)
        self.n_outputs = int(n_outputs)
        if self.n_outputs < 1 or self.n_outputs == 2:
            raise ValueError(f"n_outputs is 1 (a scalar f) or the number of classes >= 3, "
                             f"not {n_outputs}.")
        C = () if self.n_outputs == 1 else (self.n_outputs,)
        self.n_support, self.next_slot = 0, 0
        self._centers = np.empty((0, self.n_features))
        self._coef = np.empty((self.n_gauss, 0) + C)
        self.linear_coef = np.zeros((self.n_linear, self.n_features + 1) + C)
        self.b = np.zeros((K,) + C)
        self.q = np.full(K, 1.0 / K)
        self.t, self.ck2, self.eta_t, self.lam_t = 0.0, 0.0, np.nan, np.nan
        self.n_seen, self.mean, self.m2 = 0.0, np.zeros(self.n_features), np.zeros(self.n_features)
        self.loss_scale = 0.0
        self.kbar_sum, self.kbar_pairs = np.zeros(len(self.gammas)), 0.0

    @property
    def n_learners(self):
        return len(self.width_of)

    @property
    def n_linear(self):
        return int(np.sum(self.width_of < 0))

    @property
    def n_gauss(self):
        return self.n_learners - self.n_linear

    def spread(self):
        """n_seen tr(Cov) of the inputs learned so far, 0 before any (finite) spread."""
        total = float(np.sum(self.m2))
        if self.n_seen < 2 or not total > 0.0 or not np.isfinite(total):
            return 0.0
        return total

    def gamma_scale(self):
        """1 / tr(Cov) of the inputs learned so far (auto), 1 / n_features before any spread."""
        if not self.auto:
            return 1.0
        total = self.spread()
        return self.n_seen / total if total > 0.0 else 1.0 / self.n_features

    def centred(self, x):
        """(x - m, ||x - m||^2): x centred by the running mean m of the inputs learned so far
        (x itself before the first, so that a shifted stream is centred alike), the linear
        learners' input."""
        xc = x - self.mean if self.n_seen else np.zeros_like(x)
        with np.errstate(over="ignore"):
            return xc, float(np.dot(xc, xc))

    def linear_offset(self, xx):
        """r_t, the mean squared entry of the centred inputs learned so far and this one
        (xx = ||x_t - m||^2), the linear learners' intercept scale (1 while every input is
        the same)."""
        r = (float(np.sum(self.m2)) + xx) / ((self.n_seen + 1.0) * self.n_features)
        return r if r > 0.0 else 1.0

    def reserve(self, n_new):
        need = self.n_support + n_new
        if self.budget:     # MERGE holds the newcomer in slot B until the merge
            need = min(need, self.budget + (self.policy == MERGE))
        grow = need - self._centers.shape[0]
        if grow > 0:
            self._centers = np.vstack([self._centers, np.empty((grow, self.n_features))])
            self._coef = np.concatenate(
                [self._coef, np.empty((self.n_gauss, grow) + self._coef.shape[2:])], axis=1)

    def kernel_rows(self, x):
        """(widths, n_support) K_j(centers[i], x): one distance per centre, one exp per width."""
        sq = ((self._centers[:self.n_support] - x) ** 2).sum(axis=1)
        gs = self.gamma_scale()
        rows = np.empty((len(self.gammas), len(sq)))
        for j, p in enumerate(doublings(self.gammas)):
            if p == 0:
                with np.errstate(over="ignore"):
                    rows[j] = np.exp(-(self.gammas[j] * gs) * sq)
            else:                   # gammas[j] = 2^p gammas[j - 1]: K_j = K_{j-1}^(2^p)
                rows[j] = rows[j - 1]
                for _ in range(p):
                    rows[j] = rows[j] * rows[j]
        return rows

    def decisions_one(self, x, rows=None):
        """f_k(x) of every learner: (K,), or (K, C) class scores; `rows` receives the
        kernel rows (the merge reads the leader's)."""
        n, KG = self.n_support, self.n_gauss
        f = self.b.copy()
        if n and KG:
            kb = self.kernel_rows(x)
            if rows is not None:
                rows.append(kb)
            if self.n_outputs == 1:
                f[:KG] += np.einsum("ki,ki->k", self._coef[:, :n], kb[self.width_of[:KG]])
            else:       # one dot product per (learner, class), as the compiled class-major loop
                f[:KG] += np.einsum("ki,kic->kc", kb[self.width_of[:KG]], self._coef[:, :n])
        if self.n_linear:
            xc, xx = self.centred(x)
            if np.isfinite(xx):             # else the linear kernel is 0 (as exp(-inf))
                f[KG:] += np.einsum("j,lj...->l...", np.append(xc, 1.0), self.linear_coef)
        return f

    def combine(self, f, hedge, t):
        """The combined prediction of the learners' values f at step t: a float, or with C
        classes the Hedge weight of the learners voting for each class (one drawn learner's
        class, e_c, for the stochastic rule)."""
        if self.n_outputs > 1:
            votes = np.argmax(f, axis=1)
            out = np.zeros(self.n_outputs)
            if hedge["combination"] == STOCHASTIC:
                u = uniform(hedge["seed"], t) * self.q.sum()
                k = int(np.searchsorted(np.cumsum(self.q), u, side="right"))
                out[votes[min(k, len(f) - 1)]] = 1.0
                return out
            for k in range(len(f)):             # the order of the compiled sum
                out[votes[k]] += self.q[k]
            return out
        classify = hedge["task"] == CLASSIFY
        values = np.where(f > 0.0, 1.0, -1.0) if classify else f
        if hedge["combination"] == STOCHASTIC:
            u = uniform(hedge["seed"], t) * self.q.sum()
            k = int(np.searchsorted(np.cumsum(self.q), u, side="right"))
            return float(values[min(k, len(f) - 1)])
        out = 0.0
        for k in range(len(f)):             # the order of the compiled sum
            out += self.q[k] * values[k]
        return out

    def predict(self, X, hedge):
        out = np.array([self.combine(self.decisions_one(x), hedge, self.t) for x in X])
        return out.reshape((len(X),) if self.n_outputs == 1 else (len(X), self.n_outputs))

    def decisions(self, X):
        out = np.array([self.decisions_one(x) for x in X])
        return out.reshape((len(X), self.n_learners) + self.b.shape[1:])

    def _victim(self, a):
        n = self.n_support
        if not self.budget or n < self.budget or self.policy == MERGE:
            return -1                       # MERGE adds first, then merges
        if self.policy == OLDEST:
            return self.next_slot
        coef = self._coef[:, :n].reshape(self.n_gauss, n, -1)
        norms = np.zeros(n)
        for k in range(self.n_gauss):         # the order of the compiled sums
            for c in range(coef.shape[2]):
                norms += coef[k, :, c] ** 2
        slot = int(np.argmin(norms))
        return -2 if float(np.sum(a.ravel() ** 2)) <= norms[slot] else slot

    def _kbar(self, row, t):
        """(kbar_sum, kbar_pairs) after step t, whose kernel rows are `row` (None: no centre):
        the first `WARMUP` steps' rows at widths from the data (auto: once two inputs
        differ, so that a stream scaled by any factor takes the same steps)."""
        if (t > WARMUP or row is None or not self.n_gauss
                or (self.auto and not self.spread() > 0.0)):
            return self.kbar_sum, self.kbar_pairs
        return self.kbar_sum + row[:, :self.n_support].sum(axis=1), \
            self.kbar_pairs + self.n_support

    def _steps(self, x, s, t, ck2, kbar):
        """(eta_k, factor_k, kxx_k, eta_t, lam_t, (r, nx)) of every learner at step t: the
        decaying step scaled, or (forgetting) the constant step eta_1 scaled and the forgetting
        factor; with the SCALED schedule a Gaussian learner's step over kbar of its width
        (`kbar`: the sums after this step), a linear learner's over the linear kernel's mean
        between two inputs.  The linear learners' kernel is (<x - m, u - m> + r) nx, r =
        `linear_offset`, nx = 1 / ((d + 1) r): its mean K(x, x) is 1, as the Gaussian
        kernel's, and its mean between two inputs r nx = 1 / (d + 1); with the automatic
        step a linear learner's step is over its K(x_t, x_t) where that exceeds 1 (the step
        of normalised LMS, which does not overshoot)."""
        eta_t, lam_t = schedule(s, t, ck2)
        eta_1, _ = schedule(s, 1.0, ck2)
        kxx = np.ones(self.n_learners)
        r = nx = k_linear = 1.0     # the linear learners' step is over k_linear
        if self.n_linear:       # the kernel (<x - m, u - m> + r) nx, nx = 1 / ((d + 1) r)
            xx = self.centred(x)[1]
            r = self.linear_offset(xx)
            nx = 1.0 / ((self.n_features + 1.0) * r)
            kxx[self.n_gauss:] = (xx + r + 1.0) * nx    # K(x_t, x_t) and more: bounds |xc_j| nx
            if not np.isfinite(kxx[-1]):        # ||x - m||^2 overflows: no linear learner moves
                kxx[self.n_gauss:], r, nx = 0.0, 0.0, 0.0
            elif s["kind"] == StepSize.SCALED:  # the linear kernel's mean: 1 / (d + 1)
                k_linear = r * nx
            elif s["kind"] == StepSize.AUTO:    # K(x_t, x_t), where it exceeds 1
                k_linear = max(1.0, (xx + r) * nx)
        forgets = self.forgetting > 0.0
        eta = np.where(forgets, eta_1, eta_t) * self.eta_scales
        if s["kind"] == StepSize.SCALED:
            total, pairs = kbar
            KG = self.n_gauss
            eta[:KG] = eta[:KG] * (pairs + 1.0) / (total[self.width_of[:KG]] + 1.0)
        eta[self.n_gauss:] = eta[self.n_gauss:] / k_linear
        factor = np.where(forgets, self.forgetting, 1.0 - lam_t * eta)
        return eta, factor, kxx, eta_t, lam_t, (r, nx)

    def step(self, x, y, w, f, s, loss, hedge, rows=None):
        """The step of every learner and the Hedge update from f = (f_k(x_t)): TAKEN, SKIPPED
        or DIVERGED (nothing changed).  `rows`: the kernel rows of x (`decisions_one`)."""
        if not np.all(np.isfinite(f)):
            return DIVERGED
        if w == 0.0:
            return SKIPPED
        t = self.t + 1.0
        ck2 = max(self.ck2, 1.0)
        kbar = self._kbar(rows[0] if rows else None, t)
        eta, factor, kxx, eta_t, lam_t, r = self._steps(x, s, t, ck2, kbar)
        state = (t, ck2, eta_t, lam_t, r, rows[0] if rows else None, kbar)
        if self.n_outputs > 1:
            return self._multi_step(x, int(y), w, f, s, loss, hedge, eta, factor, kxx, state)
        b_next = self.b.copy()        # a MEAN offset moves first (docs/defaults.md, section 1)
        if s["intercept"] == Offset.MEAN:
            b_next = self.b + (y - self.b) * (w / t if w < t else 1.0)
        g = w * np.array([gradient(loss, y, fk) for fk in f - self.b + b_next])
        a = -eta * g
        if s["intercept"] == Offset.STEP:
            b_next = self.b - eta * g
        if not (np.all(np.isfinite(a * kxx)) and np.all(np.isfinite(b_next))):
            return DIVERGED
        if not np.all(np.isfinite(factor * (f - self.b) + a * kxx + b_next)):
            return DIVERGED
        # Hedge: the learners' losses of this event, then the discount
        if hedge["task"] == CLASSIFY:
            z = (np.where(f > 0.0, 1.0, -1.0) != y).astype(np.float64)
        else:
            losses = np.array([float(value(loss, fk - y)) for fk in f])
            if not np.all(np.isfinite(losses)):
                return DIVERGED
            self.loss_scale = max(self.loss_scale, float(losses.max()))
            z = losses / self.loss_scale if self.loss_scale > 0.0 else np.zeros_like(losses)
        return self._write(x, z, hedge, factor, a, np.any(g[:self.n_gauss] != 0.0), b_next,
                           state)

    def _multi_step(self, x, y, w, f, s, loss, hedge, eta, factor, kxx, state):
        """The multiclass step of every learner (`okl._numpy.multiclass.step`, each with its
        own step) from the (K, C) scores f."""
        mloss = MulticlassLoss.LOGISTIC if loss["kind"] == Loss.LOGISTIC else MulticlassLoss.HINGE
        g, moves = np.zeros_like(f), np.zeros(len(f), dtype=bool)
        for k in range(len(f)):
            g[k], moves[k] = multi_gradient(mloss, f[k], y, w)
        a = -eta[:, None] * g
        b_next = self.b - eta[:, None] * g if s["intercept"] == Offset.STEP else self.b.copy()
        if not (np.all(np.isfinite(a * kxx[:, None])) and np.all(np.isfinite(b_next))):
            return DIVERGED
        if not np.all(np.isfinite(factor[:, None] * (f - self.b) + a * kxx[:, None]
                                  + b_next)[moves]):
            return DIVERGED
        z = (np.argmax(f, axis=1) != y).astype(np.float64)
        return self._write(x, z, hedge, factor, a, bool(np.any(moves[:self.n_gauss])), b_next,
                           state)

    def _write(self, x, z, hedge, factor, a, add, b_next, state):
        """The writes of a step that passed its checks: Hedge, shrink, the new centre."""
        t, ck2, eta_t, lam_t, r, row, (self.kbar_sum, self.kbar_pairs) = state
        K, KG = self.n_learners, self.n_gauss
        q = self.q * np.exp(z * np.log(hedge["beta"]))
        self.q = q / q.sum()
        if hedge["share"] > 0.0:        # fixed share (Herbster and Warmuth)
            self.q = (1.0 - hedge["share"]) * self.q + hedge["share"] / K
        if self.n_linear:               # w <- factor w + a nx (x - m, r)
            (r, nx), shrink = r, np.maximum(factor[KG:], 0.0)
            xe = np.append(self.centred(x)[0], r) if nx else np.zeros(self.n_features + 1)
            if self.n_outputs == 1:
                self.linear_coef = shrink[:, None] * self.linear_coef + a[KG:, None] * nx * xe
            else:
                self.linear_coef = (shrink[:, None, None] * self.linear_coef
                                    + xe[None, :, None] * (a[KG:, None, :] * nx))
        # the Gaussian learners' steps on the shared support set
        n = self.n_support
        if KG and np.all(factor[:KG] <= 0.0):
            self.n_support = self.next_slot = 0
        else:
            shrink = np.maximum(factor[:KG], 0.0)
            self._coef[:, :n] *= shrink.reshape((-1,) + (1,) * (self._coef.ndim - 1))
        if add:
            self.reserve(1)
            slot = self._victim(a[:KG])
            if slot != -2:
                if slot == -1:
                    slot = self.n_support
                    self.n_support += 1
                elif self.policy == OLDEST:
                    self.next_slot = (slot + 1) % self.budget
                self._centers[slot] = x
                self._coef[:, slot] = a[:KG]
                if self.budget and self.policy == MERGE and self.n_support > self.budget:
                    self.merge(row)
        self.t, self.ck2, self.eta_t, self.lam_t = t, ck2, eta_t, lam_t
        self.b = b_next
        self.n_seen += 1.0                  # Welford's running moments of the inputs
        delta = x - self.mean
        self.mean = self.mean + delta / self.n_seen
        self.m2 = self.m2 + delta * (x - self.mean)
        return TAKEN

    def merge(self, rows=None):
        """B + 1 centres -> B, as `MultiKernel.cmerge`: BSGD's merge of the leading Gaussian
        learner (largest Hedge weight among those whose steps decay; the partner of least
        tabulated degradation); every learner keeps the projection of its two terms.  `rows`:
        this event's kernel rows."""
        N, KG = self.n_support, self.n_gauss
        decays = self.forgetting[:KG] == 0.0
        qg = np.where(decays | ~decays.any(), self.q[:KG], -1.0)      # the decaying learners
        ref = int(np.flatnonzero(qg >= qg.max() * (1.0 - 1e-9))[0])   # ties within 1e-9
        gs = self.gamma_scale()
        if self.n_outputs == 1:
            m, n, h, _, _ = merge_find(self._centers[:N], self._coef[ref, :N],
                                       self.gammas[self.width_of[ref]] * gs,
                                       None if rows is None else rows[self.width_of[ref]],
                                       refine=False)
        else:               # the vector merge of the multi-output expansion, m = argmin ||a_i||
            norms = np.array([row @ row for row in self._coef[ref, :N]])
            m, n, h = int(np.argmin(norms)), -1, 0.0
            if norms[m] > NEGLIGIBLE * norms.max():     # else the leader does not use x_m
                m, n, h, _, loss = multi_merge_find(self._centers[:N], self._coef[ref, :N],
                                                    self.gammas[self.width_of[ref]] * gs)
                # a merge no better than removing x_m beyond rounding (the leader sees no
                # centre near x_m): which partner wins would be rounding's, x_m is removed
                if n >= 0 and not norms[m] - loss > NO_GAIN * (norms[m] + norms[n]):
                    n = -1
        if n >= 0:
            D = float(((self._centers[m] - self._centers[n]) ** 2).sum())
            g = self.gammas[self.width_of[:KG]] * gs
            # K(x_m, z) = 1 at h = 1 (K(x_n, z) at h = 0), also when D overflowed to inf
            em = np.exp(-g * (1.0 - h) * (1.0 - h) * D) if h != 1.0 else np.ones_like(g)
            en = np.exp(-g * h * h * D) if h != 0.0 else np.ones_like(g)
            if self.n_outputs > 1:
                em, en = em[:, None], en[:, None]
            self._coef[:, n] = self._coef[:, m] * em + self._coef[:, n] * en
            self._centers[n] = self._centers[n] + h * (self._centers[m] - self._centers[n])
        last = N - 1
        if m != last:
            self._centers[m] = self._centers[last]
            self._coef[:, m] = self._coef[:, last]
        self.n_support = last

    def learn(self, X, y, weight, s, loss, hedge, pred_out):
        """Predict-then-update over the rows: the index of the first divergent row, or -1."""
        self.reserve(len(X))
        with np.errstate(over="ignore", invalid="ignore"):
            for i, x in enumerate(X):
                rows = []
                f = self.decisions_one(x, rows)
                pred_out[i] = self.combine(f, hedge, self.t)
                w = 1.0 if weight is None else weight[i]
                if self.step(x, y[i], w, f, s, loss, hedge, rows) == DIVERGED:
                    return i
        return -1

    def checkpoint(self, n_new):
        return self.get_state()

    def restore(self, state):
        self.__dict__.update(type(self).from_state(state).__dict__)

    @property
    def centers_(self):
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        """(Gaussian learners, n_support) coefficients."""
        return self._coef[:, :self.n_support].copy()

    @property
    def linear_coef_(self):
        """The linear learners' weights on the raw inputs: those learned on x - m, the
        intercept (last) less their product with m."""
        w = self.linear_coef.copy()
        if self.n_seen:
            w[:, -1] -= np.einsum("j,lj...->l...", self.mean, w[:, :-1])
        return w

    @property
    def b_(self):
        return self.b.copy()

    def get_state(self):
        return dict(n_features=self.n_features, gammas=self.gammas.copy(),
                    width_of=self.width_of.astype(np.int64), eta_scales=self.eta_scales.copy(),
                    forgetting=self.forgetting.copy(),
                    auto=self.auto, budget=self.budget, policy=self.policy,
                    next_slot=self.next_slot, centers=self.centers_, coef=self.coef_,
                    linear_coef=self.linear_coef.copy(),
                    scale=np.ones(self.n_learners), b=self.b.copy(), q=self.q.copy(),
                    t=self.t, ck2=self.ck2, eta_t=self.eta_t,
                    lam_t=self.lam_t, n_seen=self.n_seen, mean=self.mean.copy(),
                    m2=self.m2.copy(), loss_scale=self.loss_scale,
                    kbar_sum=self.kbar_sum.copy(), kbar_pairs=self.kbar_pairs,
                    n_outputs=self.n_outputs)

    @classmethod
    def from_state(cls, p):
        self = cls(p["n_features"], p["gammas"], p["width_of"], p["eta_scales"], p["auto"],
                   p["budget"], p["policy"], int(p.get("n_outputs", 1)), p["forgetting"])
        C = () if self.n_outputs == 1 else (self.n_outputs,)
        KG, L, d = self.n_gauss, self.n_linear, self.n_features
        n = np.size(p["centers"]) // d
        coef = np.asarray(p["coef"], dtype=np.float64).reshape((KG, n) + C)
        scale = np.asarray(p["scale"], dtype=np.float64)
        self._coef = scale[:KG].reshape((-1,) + (1,) * (coef.ndim - 1)) * coef
        if L:
            lin = np.asarray(p["linear_coef"], dtype=np.float64).reshape((L, d + 1) + C)
            self.linear_coef = scale[KG:].reshape((-1,) + (1,) * (lin.ndim - 1)) * lin
        self._centers = np.array(p["centers"], dtype=np.float64).reshape(-1, d)
        self.n_support, self.next_slot = n, int(p["next_slot"])
        self.b = np.array(p["b"], dtype=np.float64).reshape(self.b.shape)
        self.q = np.array(p["q"], dtype=np.float64)
        self.t, self.ck2 = float(p["t"]), float(p["ck2"])
        self.eta_t, self.lam_t = float(p["eta_t"]), float(p["lam_t"])
        self.n_seen, self.loss_scale = float(p["n_seen"]), float(p["loss_scale"])
        self.mean = np.array(p["mean"], dtype=np.float64)
        self.m2 = np.array(p["m2"], dtype=np.float64)
        self.kbar_sum = np.array(p["kbar_sum"], dtype=np.float64)
        self.kbar_pairs = float(p["kbar_pairs"])
        return self


def log_densities(r, s2, w, logw):
    """logw plus w times the log of each N(r_k; 0, s2_k), the twin of
    `okl._core._bayes.log_density` and `limit_densities`: a learner certain of its
    prediction (s2 = 0) that is right takes the weight with the others so (the rest -inf),
    and when every one is certain and wrong none moves (logw)."""
    if w == 0.0:
        return logw.copy()
    certain = s2 == 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        work = np.where(certain, np.where(r == 0.0, np.inf, -np.inf),
                        logw - 0.5 * w * (np.log(2.0 * np.pi * np.where(certain, 1.0, s2))
                                          + r * r / np.where(certain, 1.0, s2)))
    if work.max() == np.inf:
        return np.where(work == np.inf, logw, -np.inf)
    return logw.copy() if work.max() == -np.inf else work


def bayes_mixture(F, S, y, weight, logw, share, mean, std):
    """Bayesian model averaging of K learners over n events, the twin of
    `okl._core._multikernel.bayes_mixture` (docs/krls.md, section 9): the mixture's mean and
    standard deviation before each event into `mean`, `std`, then the weights exp(logw)
    times each learner's predictive density N(y_i; F[i, k], S[i, k]^2) to the power
    weight[i], normalised and mixed with the fixed share; `logw` is updated in place.  A
    learner with S = 0 takes its density's limit (`log_densities`).  Returns the first event
    with a non-finite F, S, y or an S < 0 (logw then as before it), or -1."""
    K = F.shape[1]
    mix = share / K if K else 0.0
    for i in range(F.shape[0]):
        f_k, s_k = F[i], S[i]
        if not (np.isfinite(y[i]) and np.isfinite(weight[i]) and np.all(np.isfinite(f_k))
                and np.all(np.isfinite(s_k)) and np.all(s_k >= 0.0)):
            return i
        w = np.exp(logw)
        f = float(w @ f_k)
        mean[i] = f
        second = float(w @ (s_k * s_k + f_k * f_k)) - f * f
        std[i] = np.sqrt(second) if second > 0.0 else 0.0
        work = log_densities(y[i] - f_k, s_k * s_k, weight[i], logw)
        work = np.exp(work - work.max())
        with np.errstate(divide="ignore"):      # share = 0: a weight may reach 0 (log -inf)
            logw[:] = np.log((1.0 - share) * work / work.sum() + mix)
    return -1
