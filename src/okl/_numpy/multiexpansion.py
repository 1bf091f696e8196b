"""NumpyMultiExpansion: the readable twin of _core/_multiexpansion.pyx (docs/multiclass.md, 2, 5).

f(x) = sum_i coef[i, :] K(centers[i], x) in R^k.  It keeps the true
coefficients and shrinks them all at every step; slots, budget policies, the
vector merge and the state format are those of `MultiExpansion`, so the two
convert into each other and give the same iterates (to rounding).
"""
import math

import numpy as np

from okl._numpy.codes import BudgetPolicy, Kernel
from okl._numpy.expansion import trimmed_state
from okl._numpy.kernels import kernel_record, kernel_values
from okl._numpy.merge import check_kernel

NO_EVICTION, NEWCOMER = -1, -2      # as in _core/_expansion.pxd
INVPHI = 0.6180339887498949         # (sqrt(5) - 1) / 2
GOLDEN_STEPS = 12                   # bracket 1/2 -> 1.6e-3; Newton polishes
PRUNE_SLACK = 1e-9                  # a bound within this of the best is still tried


def phi(A, B, C, g, h):
    """||a_m K(x_m, z) + a_n K(x_n, z)||^2 at z = h x_m + (1 - h) x_n (Gaussian, g = gamma d^2)."""
    kmz, knz = math.exp(-g * (1.0 - h) * (1.0 - h)), math.exp(-g * h * h)
    return A * kmz * kmz + B * knz * knz + 2.0 * C * kmz * knz


def lower(A, B, C, kk):
    """A lower bound of the degradation: sigma_min^2 of a_m K_m + a_n K_n (as clower)."""
    kk = kk if kk > 0.0 else 0.0
    T = A + B + 2.0 * C * kk
    det = (A * B - C * C) * (1.0 - kk * kk)
    det = det if det > 0.0 else 0.0
    disc = T * T - 4.0 * det
    disc = disc if disc > 0.0 else 0.0
    return 2.0 * det / (T + math.sqrt(disc)) if T > 0.0 else 0.0


def grid(A, B, C, kk):
    """(degradation, index) at the best h of {0, 1/4, 1/2, 3/4, 1} (as cgrid)."""
    kk = kk if kk > 0.0 else 0.0
    s1 = math.sqrt(kk)
    s2 = math.sqrt(s1)
    s4 = math.sqrt(math.sqrt(s2))
    top, j = -1.0, 0
    for c, (kmz, knz) in enumerate(((kk, 1.0), (s1 * s4, s4), (s2, s2), (s4, s1 * s4),
                                    (1.0, kk))):
        value = A * kmz * kmz + B * knz * knz + 2.0 * C * kmz * knz
        if value > top:
            top, j = value, c
    return A + B + 2.0 * C * kk - top, j


def newton(A, B, C, g, h, lo, hi):
    """Polish the maximiser h of `phi` on [lo, hi] by Newton steps on phi'(h) = 0 (as cnewton)."""
    for _ in range(8):
        u = 1.0 - h
        T1 = A * math.exp(-2.0 * g * u * u)
        T2 = B * math.exp(-2.0 * g * h * h)
        T3 = 2.0 * C * math.exp(-g * (u * u + h * h))
        d1 = 4.0 * g * (u * T1 - h * T2) + 2.0 * g * (u - h) * T3
        d2 = 4.0 * g * (T1 * (4.0 * g * u * u - 1.0) + T2 * (4.0 * g * h * h - 1.0)
                        + T3 * (g * (u - h) * (u - h) - 1.0))
        if not d2 < 0.0:
            break
        hn = min(max(h - d1 / d2, lo), hi)
        if hn == h:
            break
        h = hn
    return h


def multi_merge_find(centers, coef, gamma, krow=None):
    """(m, partner, h, a_z, degradation) taking n centres to n - 1; partner -1 removes x_m.

    As `cmulti_merge_find`: m = argmin ||a_i||, every partner's degradation on
    the grid h in {0, 1/4, 1/2, 3/4, 1}, the least refined by golden section,
    a removal when the merge degrades more than ||a_m||^2.
    """
    centers = np.asarray(centers, dtype=np.float64)
    coef = np.asarray(coef, dtype=np.float64)
    n, k = coef.shape
    norms = np.array([row @ row for row in coef])
    m = int(np.argmin(norms))
    A = float(norms[m])
    if A == 0.0 or n < 2:
        return m, -1, 0.0, np.zeros(k), A
    if krow is None:
        krow = kernel_values(dict(kernel=int(Kernel.GAUSSIAN), gamma=gamma), centers, centers[m])
    dots = coef @ coef[m]
    bounds = np.array([lower(A, norms[i], float(dots[i]), float(krow[i])) for i in range(n)])
    bounds[m] = np.inf
    first = int(np.argmin(bounds))
    best, best_D, best_j, best_B, best_C = -1, 0.0, 0, 0.0, 0.0
    for i in [first] + [i for i in range(n) if i not in (m, first)]:
        if i != first and not bounds[i] <= best_D * (1.0 + PRUNE_SLACK):
            continue
        B, C = float(norms[i]), float(dots[i])
        D, j = grid(A, B, C, float(krow[i]))
        if best < 0 or D < best_D or (D == best_D and i < best):
            best, best_D, best_j, best_B, best_C = i, D, j, B, C
    diff = centers[m] - centers[best]
    g = gamma * float(diff @ diff)
    lo, hi = max(best_j * 0.25 - 0.25, 0.0), min(best_j * 0.25 + 0.25, 1.0)
    x1, x2 = hi - INVPHI * (hi - lo), lo + INVPHI * (hi - lo)
    f1, f2 = phi(A, best_B, best_C, g, x1), phi(A, best_B, best_C, g, x2)
    for _ in range(GOLDEN_STEPS):
        if f1 < f2:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + INVPHI * (hi - lo)
            f2 = phi(A, best_B, best_C, g, x2)
        else:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - INVPHI * (hi - lo)
            f1 = phi(A, best_B, best_C, g, x1)
    h, fh = (x1, f1) if f1 >= f2 else (x2, f2)
    if phi(A, best_B, best_C, g, best_j * 0.25) > fh:
        h = best_j * 0.25
    h = newton(A, best_B, best_C, g, h, 0.0, 1.0)
    kmz, knz = math.exp(-g * (1.0 - h) * (1.0 - h)), math.exp(-g * h * h)
    az = coef[m] * kmz + coef[best] * knz
    loss = A + best_B + 2.0 * best_C * math.exp(-g) - float(az @ az)
    if not loss < A:
        return m, -1, 0.0, az, A
    return m, best, h, az, loss


class NumpyMultiExpansion:
    """f(x) = sum_i coef[i, :] K(centers[i], x) in R^k (docs/multiclass.md, section 2)."""

    scale = 1.0
    n_rescale = 0

    def __init__(self, n_features, n_classes, kernel, budget=0, policy=BudgetPolicy.OLDEST):
        self.n_features, self.n_classes = n_features, n_classes
        self.kernel_params = kernel_record(kernel)          # the kernel's record, by name
        self.budget, self.policy = budget, int(policy)
        if self.policy == BudgetPolicy.MERGE:
            check_kernel(self.kernel_params["kernel"])
        self.n_support, self.next_slot, self.n_merges = 0, 0, 0
        self._centers = np.empty((0, n_features))
        self._coef = np.empty((0, n_classes))
        self._sqnorms = np.empty(0)

    @property
    def capacity(self):
        return len(self._coef)

    def __getstate__(self):
        return trimmed_state(self)

    def reserve(self, n_new):
        need = self.n_support + n_new
        if self.budget:
            need = min(need, self.budget + (self.policy == BudgetPolicy.MERGE))
        if need > self.capacity:
            grow = need - self.capacity
            self._centers = np.vstack([self._centers, np.empty((grow, self.n_features))])
            self._coef = np.vstack([self._coef, np.empty((grow, self.n_classes))])
            self._sqnorms = np.concatenate([self._sqnorms, np.empty(grow)])

    def values(self, x):
        n = self.n_support
        return kernel_values(self.kernel_params, self._centers[:n], x, self._sqnorms[:n])

    def scores(self, x):
        """The k scores f_c(x) (no offset)."""
        if self.n_support == 0:
            return np.zeros(self.n_classes)
        return self.values(x) @ self._coef[:self.n_support]

    def _values(self):
        """The stored coefficients, one row per centre (their squares sum to the rows' norms)."""
        return self._coef

    def shrink(self, factor):
        if factor <= 0:
            self.n_support, self.next_slot = 0, 0
        else:
            self._values()[:self.n_support] *= factor

    def victim(self, aa):
        n = self.n_support
        if not self.budget or n < self.budget or self.policy == BudgetPolicy.MERGE:
            return NO_EVICTION
        if self.policy == BudgetPolicy.OLDEST:
            return self.next_slot
        norms = np.array([row @ row for row in self._values()[:n]])
        slot = int(np.argmin(norms))
        return NEWCOMER if aa <= norms[slot] else slot

    def slot(self, aa):
        """Where a new centre whose coefficients' squares sum to aa goes: a new slot, the
        victim's (the oldest advances), or NEWCOMER (it is not added)."""
        slot = self.victim(aa)
        if slot == NO_EVICTION:
            slot = self.n_support
            self.n_support += 1
        elif slot != NEWCOMER and self.policy == BudgetPolicy.OLDEST:
            self.next_slot = (slot + 1) % self.budget
        return slot

    def add(self, x, a):
        """f <- f + a K(x, .) (a in R^k); False when a is not finite."""
        a = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            return False
        if self.policy == BudgetPolicy.MERGE and self.budget and self.n_support >= self.budget:
            n = self.n_support
            self._centers[n], self._sqnorms[n], self._coef[n] = x, x @ x, a
            self.n_support = n + 1
            self.merge(n + 1)
            return True
        slot = self.slot(float(a @ a))
        if slot == NEWCOMER:
            return True
        self._centers[slot], self._sqnorms[slot], self._coef[slot] = x, x @ x, a
        return True

    def merge(self, n):
        m, partner, h, az, _ = multi_merge_find(self._centers[:n], self._coef[:n],
                                                self.kernel_params["gamma"])
        if partner >= 0:
            z = self._centers[partner] + h * (self._centers[m] - self._centers[partner])
            self._centers[partner], self._sqnorms[partner], self._coef[partner] = z, z @ z, az
            self.n_merges += 1
        last = n - 1
        if m != last:
            self._centers[m] = self._centers[last]
            self._sqnorms[m], self._coef[m] = self._sqnorms[last], self._coef[last]
        self.n_support = last

    def predict(self, X):
        return np.array([self.scores(x) for x in X], dtype=np.float64).reshape(-1, self.n_classes)

    def sq_norm(self):
        n = self.n_support
        if n == 0:
            return 0.0
        return float(np.sum(self._coef[:n] * self.predict(self._centers[:n])))

    @property
    def centers_(self):
        return self._centers[:self.n_support].copy()

    @property
    def coef_(self):
        return self._coef[:self.n_support].copy()

    raw_coef_ = coef_

    def set_gamma(self, gamma):
        """The kernel's width is gamma (gamma="scale"'s warm-up): centres and coefficients
        stay, the kernel values are re-read."""
        self.kernel_params = dict(self.kernel_params, gamma=float(gamma))

    def checkpoint(self, n_new):
        n = self.n_support
        return (n, self.next_slot, self.n_merges, self._coef[:n].copy(),
                self._centers[:n].copy(), self._sqnorms[:n].copy(), self.kernel_params)

    def restore(self, state):
        n, self.next_slot, self.n_merges, coef, centers, sqnorms, self.kernel_params = state
        if n > self.capacity:
            self.reserve(n - self.n_support)
        self._coef[:n], self._centers[:n], self._sqnorms[:n] = coef, centers, sqnorms
        self.n_support = n

    def get_state(self):
        n = self.n_support
        return dict(n_features=self.n_features, n_classes=self.n_classes, budget=self.budget,
                    policy=self.policy, scale=1.0, n_rescale=0, next_slot=self.next_slot,
                    n_merges=self.n_merges, centers=self.centers_, coef=self.coef_,
                    sqnorms=self._sqnorms[:n].copy(), **self.kernel_params)

    def with_class(self, position):
        """A new expansion with a zero score function at `position` (a new class); this one
        is unchanged (`okl._core._multiexpansion.MultiExpansion.with_class`)."""
        if not 0 <= position <= self.n_classes:
            raise ValueError(f"position must be in [0, {self.n_classes}], got {position}.")
        return type(self).from_state(insert_class(self.get_state(), position))

    @classmethod
    def from_state(cls, state):
        p = state
        self = cls(p["n_features"], p["n_classes"], kernel_record(p, complete=True),
                   p["budget"], p["policy"])
        coef = p["scale"] * np.asarray(p["coef"], dtype=np.float64).reshape(-1, p["n_classes"])
        self._centers = np.array(p["centers"], dtype=np.float64).reshape(-1, p["n_features"])
        self._set_coef(coef)
        self._sqnorms = np.array(p["sqnorms"], dtype=np.float64)
        self.n_support = len(coef)
        self.next_slot = p["next_slot"]
        self.n_merges = p.get("n_merges", 0)
        return self

    def _set_coef(self, coef):
        """The n x k coefficients of a state (true values)."""
        self._coef = coef


def insert_class(state, position):
    """The state of a multi-output expansion with a zero column at `position` (a new class)."""
    coef = np.asarray(state["coef"], dtype=np.float64).reshape(-1, state["n_classes"])
    return dict(state, n_classes=state["n_classes"] + 1,
                coef=np.insert(coef, position, 0.0, axis=1))


def from_binary(state, position):
    """The 3-class state of a binary expansion's state (KernelExpansion or NumpyExpansion).

    The binary f becomes the scores (-f/2, f/2) of classes_[0] and classes_[1]
    (same predictions; softmax(-f/2, f/2) = (s(-f), s(f))), and the new class
    gets a zero column at `position` (docs/multiclass.md, section 3).
    """
    a = state["scale"] * np.asarray(state["coef"], dtype=np.float64)
    coef = np.insert(np.column_stack([-0.5 * a, 0.5 * a]), position, 0.0, axis=1)
    out = {key: state[key] for key in ("n_features", "budget", "policy", "next_slot")}
    return dict(out, **kernel_record(state, complete=True), n_classes=3, scale=1.0, n_rescale=0,
                n_merges=0, centers=np.asarray(state["centers"], dtype=np.float64), coef=coef,
                sqnorms=np.asarray(state["sqnorms"], dtype=np.float64))


class NumpySparseMultiExpansion(NumpyMultiExpansion):
    """The twin of `okl._core._multiexpansion.SparseMultiExpansion`: at most two (class, value)
    pairs per centre, `_pcls` and `_pval` of shape (capacity, 2) (class -1: none); the
    scores are a scatter-add of the kernel row, a new class renumbers the classes.

    References
    ----------
    docs/multiclass.md, sections 1 and 2.
    """

    def __init__(self, n_features, n_classes, kernel, budget=0, policy=BudgetPolicy.OLDEST):
        if int(policy) == BudgetPolicy.MERGE and budget:
            raise ValueError("The merge budget policy makes coefficient rows dense: use "
                             "NumpyMultiExpansion for it.")
        super().__init__(n_features, n_classes, kernel, budget, policy)
        del self._coef
        self._pcls = np.empty((0, 2), dtype=np.intp)
        self._pval = np.empty((0, 2))

    @property
    def capacity(self):
        return len(self._pval)

    def __getstate__(self):
        state, n = dict(self.__dict__), self.n_support
        for key in ("_centers", "_pcls", "_pval", "_sqnorms"):
            state[key] = state[key][:n].copy()
        return state

    def reserve(self, n_new):
        need = self.n_support + n_new
        if self.budget:
            need = min(need, self.budget)
        if need > self.capacity:
            grow = need - self.capacity
            self._centers = np.vstack([self._centers, np.empty((grow, self.n_features))])
            self._pcls = np.vstack([self._pcls, np.full((grow, 2), -1, dtype=np.intp)])
            self._pval = np.vstack([self._pval, np.zeros((grow, 2))])
            self._sqnorms = np.concatenate([self._sqnorms, np.empty(grow)])

    def scores(self, x):
        """The k scores: the kernel row scattered over the pairs."""
        out = np.zeros(self.n_classes)
        n = self.n_support
        if n:
            cls = self._pcls[:n]
            used = cls >= 0
            np.add.at(out, cls[used], (self._pval[:n] * self.values(x)[:, None])[used])
        return out

    def _values(self):
        """The pairs' values (a row's squares sum to its dense row's: zeros add nothing)."""
        return self._pval

    def add(self, x, a):
        """f <- f + a K(x, .) (a in R^k, at most two nonzeros); False when a is not finite."""
        a = np.asarray(a, dtype=np.float64)
        if not np.all(np.isfinite(a)):
            return False
        cls = np.flatnonzero(a)
        if len(cls) > 2:
            raise ValueError("NumpySparseMultiExpansion.add takes at most two nonzero "
                             "coefficients; use NumpyMultiExpansion for dense ones.")
        val = a[cls]
        slot = self.slot(float(val @ val))
        if slot == NEWCOMER:
            return True
        self._centers[slot], self._sqnorms[slot] = x, x @ x
        self._pcls[slot], self._pval[slot] = -1, 0.0
        self._pcls[slot, :len(cls)], self._pval[slot, :len(cls)] = cls, val
        return True

    def sq_norm(self):
        total = 0.0
        for j in range(self.n_support):
            s = self.scores(self._centers[j])
            used = self._pcls[j] >= 0
            total += float(self._pval[j][used] @ s[self._pcls[j][used]])
        return total

    @property
    def coef_(self):
        n = self.n_support
        return dense_layout(self._pcls[:n], self._pval[:n], self.n_classes)

    raw_coef_ = coef_

    def checkpoint(self, n_new):
        n = self.n_support
        return (n, self.next_slot, self._pcls[:n].copy(), self._pval[:n].copy(),
                self._centers[:n].copy(), self._sqnorms[:n].copy(), self.kernel_params)

    def restore(self, state):
        n, self.next_slot, pcls, pval, centers, sqnorms, self.kernel_params = state
        if n > self.capacity:
            self.reserve(n - self.n_support)
        self._pcls[:n], self._pval[:n] = pcls, pval
        self._centers[:n], self._sqnorms[:n] = centers, sqnorms
        self.n_support = n

    def with_class(self, position):
        """A new expansion with a zero score function at `position`; this one unchanged
        (O(n) renumbering, no n x k values)."""
        if not 0 <= position <= self.n_classes:
            raise ValueError(f"position must be in [0, {self.n_classes}], got {position}.")
        n = self.n_support
        out = type(self)(self.n_features, self.n_classes + 1, self.kernel_params, self.budget,
                         self.policy)
        out.reserve(max(self.capacity, n))
        out._centers[:n], out._sqnorms[:n] = self._centers[:n], self._sqnorms[:n]
        out._pval[:n] = self._pval[:n]
        pcls = self._pcls[:n].copy()
        pcls[pcls >= position] += 1
        out._pcls[:n] = pcls
        out.n_support, out.next_slot, out.n_merges = n, self.next_slot, self.n_merges
        return out

    def _set_coef(self, coef):
        """The n x k coefficients of a state as pairs (ValueError when a row has more than two
        nonzeros)."""
        self._pcls, self._pval = pair_layout(coef)


def pair_layout(coef):
    """(classes, values), each (n, 2): the at most two nonzeros of every row of the dense coef
    (class -1, value 0 where a row has fewer); ValueError when a row has more."""
    coef = np.asarray(coef, dtype=np.float64)
    n = len(coef)
    rows, cols = np.nonzero(coef)
    counts = np.bincount(rows, minlength=n)
    if n and counts.max(initial=0) > 2:
        raise ValueError("a row of coef has more than two nonzeros: the pair layout cannot hold "
                         "it; use MultiExpansion.")
    slot = np.arange(len(rows)) - np.repeat(np.cumsum(counts) - counts, counts)
    classes = np.full((n, 2), -1, dtype=np.intp)
    values = np.zeros((n, 2))
    classes[rows, slot] = cols
    values[rows, slot] = coef[rows, cols]
    return classes, values


def dense_layout(classes, values, k):
    """The (n, k) coefficients of the pair layout (`pair_layout`'s inverse)."""
    classes = np.asarray(classes, dtype=np.intp)
    out = np.zeros((len(classes), k))
    rows, slot = np.nonzero(classes >= 0)
    np.add.at(out, (rows, classes[rows, slot]), np.asarray(values)[rows, slot])
    return out
