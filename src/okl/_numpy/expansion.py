"""NumpyExpansion: the readable twin of _core/_expansion.pyx.

It keeps the true coefficients and shrinks them all at every step (O(m)),
where the Cython expansion multiplies one scale.  Slots, budget policies and
the state format are the same, so the two convert into each other.
"""
import numpy as np

from okl._numpy.codes import BudgetPolicy
from okl._numpy.kernels import kernel_record, kernel_values
from okl._numpy.merge import check_kernel, merge_find

NO_EVICTION, NEWCOMER = -1, -2      # as in _core/_expansion.pxd


def trimmed_state(expansion):
    """The pickled state of an expansion: its buffers cut to the centres in use, so that a
    pickle depends on the model only (not on spare capacity, or what an undone call reserved)."""
    state, n = dict(expansion.__dict__), expansion.n_support
    for key in ("_centers", "_coef", "_sqnorms"):
        state[key] = state[key][:n].copy()
    return state


class NumpyExpansion:
    """f(x) = sum_i coef[i] K(centers[i], x)."""

    scale = 1.0
    n_rescale = 0

    def __init__(self, n_features, kernel, budget=0, policy=BudgetPolicy.OLDEST):
        self.n_features = n_features
        self.kernel_params = kernel_record(kernel)          # the kernel's record, by name
        self.budget, self.policy = budget, int(policy)
        if self.policy == BudgetPolicy.MERGE:
            check_kernel(self.kernel_params["kernel"])
        self.n_support, self.next_slot, self.n_merges = 0, 0, 0
        self.track_norm, self.norm_change = False, 0.0
        self._centers = np.empty((0, n_features))
        self._coef = np.empty(0)
        self._sqnorms = np.empty(0)

    @property
    def capacity(self):
        return len(self._coef)

    def __getstate__(self):
        return trimmed_state(self)

    def reserve(self, n_new):
        need = self.n_support + n_new
        if self.budget:    # MERGE holds the newcomer in slot B until the merge
            need = min(need, self.budget + (self.policy == BudgetPolicy.MERGE))
        if need > self.capacity:
            grow = need - self.capacity
            self._centers = np.vstack([self._centers, np.empty((grow, self.n_features))])
            self._coef = np.concatenate([self._coef, np.empty(grow)])
            self._sqnorms = np.concatenate([self._sqnorms, np.empty(grow)])

    def values(self, x):
        """K(centers[i], x) for every centre (distances from the cached norms, as `cvalues`)."""
        n = self.n_support
        return kernel_values(self.kernel_params, self._centers[:n], x, self._sqnorms[:n])

    def predict_one(self, x):
        if self.n_support == 0:
            return 0.0
        return float(self._coef[:self.n_support] @ self.values(x))

    def shrink(self, factor):
        """f <- factor * f; factor <= 0 empties the expansion."""
        if factor <= 0:
            self.n_support, self.next_slot = 0, 0
        else:
            self._coef[:self.n_support] *= factor

    def victim(self, a):
        """The slot that leaves if a centre of coefficient a is added: NO_EVICTION while
        there is room, NEWCOMER when the policy drops the new centre itself."""
        n = self.n_support
        if not self.budget or n < self.budget or self.policy == BudgetPolicy.MERGE:
            return NO_EVICTION              # MERGE adds first, then merges
        if self.policy == BudgetPolicy.OLDEST:
            return self.next_slot
        slot = int(np.argmin(np.abs(self._coef[:n])))
        return NEWCOMER if abs(a) <= abs(self._coef[slot]) else slot

    def add(self, x, a):
        """f <- f + a K(x, .); False when a is not finite."""
        if not np.isfinite(a):
            return False
        self.norm_change = 0.0
        if self.policy == BudgetPolicy.MERGE and self.budget and self.n_support >= self.budget:
            n = self.n_support
            self._centers[n], self._sqnorms[n], self._coef[n] = x, x @ x, a
            self.n_support = n + 1
            self.merge(n + 1)
            return True
        slot = self.victim(a)
        k = self.kernel_params
        if slot == NEWCOMER:
            if self.track_norm:     # as KernelExpansion.cadd
                kxx = kernel_values(k, x[None, :], x)[0]
                self.norm_change = -a * (a * kxx + 2.0 * self.predict_one(x))
            return True
        if slot == NO_EVICTION:
            slot = self.n_support
            self.n_support += 1
        else:
            if self.track_norm:
                x_o = self._centers[slot]
                r = self._coef[slot]
                k_o, k_x = kernel_values(k, np.stack([x_o, x]), x_o)
                self.norm_change = r * (r * k_o - 2.0 * (self.predict_one(x_o) + a * k_x))
            if self.policy == BudgetPolicy.OLDEST:
                self.next_slot = (slot + 1) % self.budget
        self._centers[slot] = x
        self._sqnorms[slot] = x @ x
        self._coef[slot] = a
        return True

    def merge(self, n):
        """n centres -> n - 1 by BSGD merging (okl._numpy.merge), as KernelExpansion.cmerge."""
        k = self.kernel_params
        m, partner, h, cz, loss = merge_find(self._centers[:n], self._coef[:n], k["gamma"])
        if self.track_norm:       # see KernelExpansion.cmerge; f is the n centres
            cm = self._coef[m]
            fm = self.predict_one(self._centers[m])
            if partner >= 0:
                z = self._centers[partner] + h * (self._centers[m] - self._centers[partner])
                cn = self._coef[partner]
                fn, fz = self.predict_one(self._centers[partner]), self.predict_one(z)
                self.norm_change = 2.0 * (cz * fz - cm * fm - cn * fn) + loss
            else:
                self.norm_change = cm * cm - 2.0 * cm * fm
        if partner >= 0:
            z = self._centers[partner] + h * (self._centers[m] - self._centers[partner])
            self._centers[partner], self._sqnorms[partner], self._coef[partner] = z, z @ z, cz
            self.n_merges += 1
        last = n - 1
        if m != last:
            self._centers[m] = self._centers[last]
            self._sqnorms[m], self._coef[m] = self._sqnorms[last], self._coef[last]
        self.n_support = last

    def predict(self, X):
        return np.array([self.predict_one(x) for x in X], dtype=np.float64)

    def sq_norm(self):
        n = self.n_support
        if n == 0:
            return 0.0
        return float(self._coef[:n] @ self.predict(self._centers[:n]))

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
        return (n, self.next_slot, self._coef[:n].copy(),
                self._centers[:n].copy(), self._sqnorms[:n].copy(), self.kernel_params)

    def restore(self, state):
        n, self.next_slot, coef, centers, sqnorms, self.kernel_params = state
        self._coef[:n], self._centers[:n], self._sqnorms[:n] = coef, centers, sqnorms
        self.n_support = n

    def get_state(self):
        n = self.n_support
        return dict(n_features=self.n_features, budget=self.budget, policy=self.policy,
                    scale=1.0, n_rescale=0, next_slot=self.next_slot,
                    centers=self.centers_, coef=self.coef_,
                    sqnorms=self._sqnorms[:n].copy(), **self.kernel_params)

    @classmethod
    def from_state(cls, state):
        p = state
        self = cls(p["n_features"], kernel_record(p, complete=True), p["budget"], p["policy"])
        self._centers = np.array(p["centers"], dtype=np.float64).reshape(-1, p["n_features"])
        self._coef = p["scale"] * np.asarray(p["coef"], dtype=np.float64)
        self._sqnorms = np.array(p["sqnorms"], dtype=np.float64)
        self.n_support = len(self._coef)
        self.next_slot = p["next_slot"]
        return self
