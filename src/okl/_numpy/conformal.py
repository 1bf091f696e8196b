"""Online conformal calibration of a score threshold: the NumPy twin of `okl._core._conformal`.

A `NumpyCalibration` keeps the threshold q_t on nonconformity scores s_t
(docs/conformal.md): the prediction set of event t holds every answer whose
score is at most q_t, and the score of the true answer, taken before the
model learns the event, then updates the state.  Four rules:

- ``ACI``: adaptive conformal inference (Gibbs and Candes 2021), the level
  a_{t+1} = a_t + gamma (alpha - err_t) and q_t the conformal quantile of
  level 1 - a_t of the last `window` scores;
- ``QUANTILE``: quantile tracking, the proportional part of conformal PID
  control (Angelopoulos, Candes and Tibshirani 2023),
  q_{t+1} = q_t + gamma B_t (err_t - alpha), B_t the largest score of the window;
- ``PID``: the same proportional part p_t plus the integrator of conformal PID
  control, q_t = p_t + K_I |B|_t tan(E_t log(t + 1) / (C_sat (t + 1))), E_t the
  summed excess of misses sum_{i <= t} (err_i - alpha), |B|_t the window's
  largest absolute score, the tangent saturated to +-inf at and past +-pi/2, so
  that |E_T| <= pi/2 C_sat max_{t <= T} (t + 1) / log(t + 1) + 1 on every
  sequence;
- ``AGACI``: ACI experts over several steps gamma_k, their levels a_k
  aggregated by second-order exponential weights on the pinball loss of
  level alpha of the levels (Zaffran et al. 2022), q_t the conformal
  quantile of level 1 - sum_k w_k a_k.

The compiled twin holds the same state in the same arrays and takes the same
steps in the same order (max abs difference <= 1e-10, tests/test_conformal.py).
"""
import math
from enum import IntEnum

import numpy as np

# the conformal quantile's index ceil((n + 1) beta) forgives this rounding of the product
INDEX_SLACK = 1e-9


class Method(IntEnum):
    ACI = 0
    QUANTILE = 1
    AGACI = 2
    PID = 3


SCALARS = ("method", "alpha", "window", "t", "n", "head", "ki", "csat", "integral")
ARRAYS = ("gammas", "levels", "regret", "variance", "range", "ring", "sorted")


def conformal_quantile(sorted_scores, n, beta):
    """The ceil((n + 1) beta)-th smallest of the n scores: +inf past the n-th, -inf before
    the first (beta <= 0)."""
    k = math.ceil((n + 1) * beta - INDEX_SLACK)
    if k > n:
        return math.inf
    if k < 1:
        return -math.inf
    return float(sorted_scores[k - 1])


def saturation(integral, t, csat):
    """tan(integral log(t + 1) / (csat (t + 1))), +-inf at and past +-pi/2."""
    x = integral * math.log(t + 1.0) / (csat * (t + 1.0))
    if x >= math.pi / 2:
        return math.inf
    if x <= -math.pi / 2:
        return -math.inf
    return math.tan(x)


class NumpyCalibration:
    """The threshold of one conformal calibration and the state it learns from.

    Parameters
    ----------
    method : Method
    alpha : float in (0, 1)
        Target miscoverage.
    gammas : sequence of float > 0
        The step of each expert (one for ACI, QUANTILE and PID).
    window : int >= 1
        Scores kept (the most recent ones).
    ki, csat : float > 0
        PID: the integrator's gain K_I (in units of the window's largest absolute score) and
        its saturation constant C_sat.
    """

    def __init__(self, method, alpha, gammas, window, ki=1.0, csat=1.0):
        k = len(gammas)
        self.method, self.alpha, self.window = int(method), float(alpha), int(window)
        self.ki, self.csat, self.integral = float(ki), float(csat), 0.0
        self.gammas = np.array(gammas, dtype=np.float64)
        tracks = self.method in (Method.QUANTILE, Method.PID)
        self.levels = np.full(k, 0.0 if tracks else self.alpha)
        self.regret, self.variance, self.range = np.zeros(k), np.zeros(k), np.zeros(k)
        self.ring, self.sorted = np.zeros(self.window), np.zeros(self.window)
        self.t = self.n = self.head = 0
        self._refresh()

    # -- the threshold ----------------------------------------------------------------------

    def expert_thresholds(self):
        """Each expert's threshold (ACI experts: +-inf outside the scores)."""
        if self.method in (Method.QUANTILE, Method.PID):
            return np.array([self.q])
        return np.array([conformal_quantile(self.sorted, self.n, 1.0 - a) for a in self.levels])

    def weights(self):
        """The aggregation weights of the experts (AGACI; uniform before any regret)."""
        k = len(self.gammas)
        logk = math.log(k)
        z = [0.0] * k
        for i in range(k):
            if self.variance[i] > 0.0:
                z[i] = min(1.0 / (2.0 * self.range[i]),
                           math.sqrt(logk / self.variance[i])) * self.regret[i]
        top = max(z)
        w = [math.exp(v - top) for v in z]
        total = 0.0
        for v in w:
            total += v
        return np.array([v / total for v in w])

    def _refresh(self):
        self.level = float(self.levels[0])
        if self.method == Method.AGACI:
            level = 0.0                     # summed in order, as the compiled twin
            for w, a in zip(self.weights(), self.levels):
                level += w * a
            self.level = level
        if self.n == 0:
            self.q = math.inf
        elif self.method == Method.QUANTILE:
            self.q = float(self.levels[0])
        elif self.method == Method.PID:
            r = saturation(self.integral, self.t, self.csat)
            if math.isinf(r):
                self.q = r
            else:
                scale = max(abs(float(self.sorted[0])), abs(float(self.sorted[self.n - 1])))
                self.q = float(self.levels[0]) + self.ki * scale * r
        else:
            self.q = conformal_quantile(self.sorted, self.n, 1.0 - self.level)

    def threshold(self):
        """q_t: the threshold of the next event's prediction set."""
        return self.q

    # -- learning ---------------------------------------------------------------------------

    def _insert(self, s):
        n, w = self.n, self.window
        if n == w:                        # the oldest score leaves
            i = int(np.searchsorted(self.sorted[:n], self.ring[self.head], side="left"))
            self.sorted[i:n - 1] = self.sorted[i + 1:n].copy()
            n -= 1
        self.ring[self.head] = s
        self.head = (self.head + 1) % w
        j = int(np.searchsorted(self.sorted[:n], s, side="right"))
        self.sorted[j + 1:n + 1] = self.sorted[j:n].copy()
        self.sorted[j] = s
        self.n = n + 1

    def learn(self, s):
        """One event's score s (finite), taken before the model learned the event."""
        s = float(s)
        alpha = self.alpha
        if self.method in (Method.QUANTILE, Method.PID):
            first = self.t == 0
            err = float(s > self.q)                 # q_1 = inf: the first event is covered
            self._insert(s)
            if first:
                self.levels[0] = s
            else:
                self.levels[0] += self.gammas[0] * self.sorted[self.n - 1] * (err - alpha)
            if self.method == Method.PID:
                self.integral += err - alpha
        else:
            q = self.expert_thresholds()
            if self.method == Method.AGACI and self.n > 0:
                # beta: the largest level whose set holds s (its rank among the window's scores)
                rank = int(np.searchsorted(self.sorted[:self.n], s, side="left"))
                beta = 1.0 - rank / (self.n + 1.0)
                g = (1.0 if beta < self.level else 0.0) - alpha   # pinball'(beta - a) in a
                logk = math.log(len(self.gammas))
                for i in range(len(self.gammas)):
                    r = g * (self.level - self.levels[i])   # the linearised regret of expert i
                    eta = 0.0
                    if self.variance[i] > 0.0:
                        eta = min(1.0 / (2.0 * self.range[i]),
                                  math.sqrt(logk / self.variance[i]))
                    self.regret[i] += r - eta * r * r
                    self.variance[i] += r * r
                    self.range[i] = max(self.range[i], abs(r))
            for i in range(len(self.gammas)):
                self.levels[i] += self.gammas[i] * (alpha - float(s > q[i]))
            self._insert(s)
        self.t += 1
        self._refresh()

    def update(self, scores, q_out):
        """Learn the scores in order; q_out[i] = the threshold event i was predicted with."""
        for i, s in enumerate(scores):
            q_out[i] = self.q
            self.learn(s)

    # -- state ------------------------------------------------------------------------------

    def get_state(self):
        state = {name: getattr(self, name) for name in SCALARS}
        state.update({name: getattr(self, name).copy() for name in ARRAYS})
        return state

    @classmethod
    def from_state(cls, state):
        new = cls.__new__(cls)
        for name in SCALARS:
            setattr(new, name, state[name])
        new.method, new.window = int(new.method), int(new.window)
        new.alpha, new.ki, new.csat = float(new.alpha), float(new.ki), float(new.csat)
        new.integral = float(new.integral)
        new.t, new.n, new.head = int(new.t), int(new.n), int(new.head)
        for name in ARRAYS:
            setattr(new, name, np.array(state[name], dtype=np.float64))
        new._refresh()
        return new

    def checkpoint(self, n=0):
        return self.get_state()

    def restore(self, token):
        restored = type(self).from_state(token)
        self.__dict__.update(restored.__dict__)

    def copy(self):
        return type(self).from_state(self.get_state())
