"""The first events of a kernel learner in NumPy: the twin of _core/_warmup.pyx.

`WidthMoments` and `Width` are gamma="scale"'s warm-up (docs/defaults.md, section 2):
the moments of the entries of the rows taken, over the first `WARMUP` rows of
non-zero weight, and the width ``factor / (d Var)`` they give, taken after 1, 2,
3, 5, 8, 12, ... and `WARMUP` rows (`moves`).  `KernelMean` is
eta="scaled"'s kbar (docs/defaults.md, section 4): the mean kernel value
between two centres (or two of the rows learned), measured before each of the
first `WARMUP` steps, then fixed.  The loops of both engines take them the same
way: the width of every row is set on the model before its step, kbar gives the
step's Lipschitz constant.
"""
import numpy as np

from okl._numpy.kernels import kernel_record, kernel_values

# events over which gamma="scale" follows the data, then stays (every kernel learner), and
# over which eta="scaled" measures kbar
WARMUP = 100

# a variance below ROUNDING * mean^2 is the rounding of equal entries (~1e-32 mean^2), not a
# spread: it counts as 0 (else a first row of equal entries gave gamma ~ 1e25)
ROUNDING = 1e-24


def moves(rows):
    """True when the width follows the moments after `rows` rows: at 1, 2, 3, 5, 8, 12, ...
    rows (each move ceil(r / 2) rows after the last, r) and at the warm-up's end
    (docs/defaults.md, section 2); between them it stays."""
    r, k = int(rows), 1
    while k < r:
        k += (k + 1) // 2
    return r == WARMUP or (k == r and r < WARMUP)


def spread(var, mean):
    """var, or 0.0 when it is only the rounding of equal entries."""
    return var if var > ROUNDING * mean * mean else 0.0


class WidthMoments:
    """gamma="scale" from the first event: ``factor / (d Var)`` over the entries of the rows so far.

    Welford's running mean and sum of squared deviations over the d entries of
    every row learned (the variance scikit-learn's ``X.var()`` takes of the rows
    so far), for the first `WARMUP` rows; then the width stays.  The entries are
    shifted by the first one seen (`shift`), so rows far from 0 (an offset of
    1e8 and a spread of 0.01) keep their variance to the last bits, and a
    translated stream gets the same width.  One row gives the variance of its
    own entries; a variance of 0 gives ``factor / d`` before the second row and
    1.0 after (scikit-learn's constant-data value), and so does a variance that
    is only the rounding of equal entries (`ROUNDING`).
    """

    def __init__(self, rows=0.0, mean=0.0, m2=0.0, shift=0.0):
        self.rows, self.mean, self.m2 = float(rows), float(mean), float(m2)
        self.shift = float(shift)

    @staticmethod
    def warmup():
        return WARMUP

    @property
    def warming(self):
        return self.rows < WARMUP

    def add(self, x):
        """Take the row x (its d entries) into the moments; a row they cannot hold
        (entries so large that the squares overflow) does not count."""
        x = np.asarray(x, dtype=np.float64)
        d = x.size
        n = self.rows * d
        shift = self.shift
        if not self.rows:
            shift = float(x.flat[0]) if np.isfinite(x.flat[0]) else 0.0
        with np.errstate(over="ignore", invalid="ignore"):
            x = x - shift
            row_mean = float(x.mean())
            delta = row_mean - self.mean
            m2 = self.m2 + float(((x - row_mean) ** 2).sum()) + delta * delta * n * d / (n + d)
            mean = self.mean + delta * d / (n + d)
        if np.isfinite(m2) and np.isfinite(mean):
            self.m2, self.mean, self.rows, self.shift = m2, mean, self.rows + 1.0, shift

    def gamma(self, d, factor=1.0):
        """``factor / (d Var)`` of the rows taken so far."""
        var = spread(self.m2 / (self.rows * d), self.mean + self.shift) if self.rows else 0.0
        if var > 0:
            return factor / (d * var)
        return factor / d if self.rows <= 1 else 1.0

    def state(self):
        """[rows, mean, m2, shift], as okl.save keeps them (`_width_moments`)."""
        return [self.rows, self.mean, self.m2, self.shift]


class Width:
    """gamma="scale"'s warm-up: the moments of the rows taken and the width they give
    (`_core._warmup.Width`, same arguments)."""

    def __init__(self, n_features, factor, moments=None, gamma=np.nan):
        self.n_features, self.factor = int(n_features), float(factor)
        self.moments = WidthMoments(*(moments if moments is not None else ()))
        self.gamma = float(gamma) if gamma == gamma else self.factor / self.n_features

    @property
    def warming(self):
        return self.moments.warming

    def add(self, x):
        """Take the row x; True when the width moved (only at the rows of `moves`)."""
        self.moments.add(x)
        if not moves(self.moments.rows):
            return False
        gamma = self.moments.gamma(self.n_features, self.factor)
        if gamma != self.gamma:
            self.gamma = gamma
            return True
        return False

    def sequence(self, X, weight=None):
        """The width of every row of X and after them: (gamma (n + 1,), end); `end` the
        rows after which the warm-up ended, or -1."""
        n, end = len(X), -1
        gamma = np.empty(n + 1)
        for i in range(n):
            gamma[i] = self.gamma
            if self.warming and (weight is None or weight[i] != 0.0):
                self.add(X[i])
                if not self.warming:
                    end = i + 1
        gamma[n] = self.gamma
        return gamma, end

    def state(self):
        return self.moments.state()


def pair_sum(params, points):
    """The sum of K(x_i, x_j) over the pairs i < j of `points`: the sums of the rows
    K(x_j, x_0..x_{j-1}), added in row order (so that a point more adds its row)."""
    points = np.asarray(points, dtype=np.float64)
    K = np.array([kernel_values(params, points, x) for x in points]).reshape(len(points), -1)
    total = 0.0
    for j in range(1, len(points)):
        total += float(K[j, :j].sum())
    return total


class KernelMean:
    """eta="scaled"'s kbar during the first `WARMUP` steps (`_core._warmup.KernelMean`, same
    arguments): ``(S + 1) / (m (m - 1) / 2 + 1)``, S the sum of K over the pairs of the m
    centres (`sync`) or rows learned (`rows`, `append`) at the model's width."""

    def __init__(self, lipschitz, kernel, n_features, rows=False, points=None, total=0.0,
                 gamma=np.nan):
        self.lipschitz, self.rows, self.n_features = float(lipschitz), bool(rows), n_features
        self.kernel = kernel_record(kernel)
        self.gamma = float(self.kernel["gamma"])      # the width of a model without one
        self.active, self.final = True, np.nan
        self.points = np.empty((0, n_features))
        self.total, self.total_gamma, self.pending = 0.0, float(gamma), 0
        if rows and points is not None and len(points):
            self.points = np.array(points, dtype=np.float64).reshape(-1, n_features)
            self.total = float(total)

    def ensure(self, m):
        """(The compiled twin's room for m points.)"""

    @property
    def n_points(self):
        return len(self.points)

    def sync(self, C, budget=0, t=-2.0):
        """The points are the rows of C (the centres, in slot order, after t steps)."""
        self.points = np.array(C, dtype=np.float64).reshape(-1, self.n_features)

    def append(self, x):
        """With `rows`: x is learned."""
        self.points = np.vstack([self.points, np.asarray(x, dtype=np.float64)[None, :]])
        self.pending += 1

    def mean(self, gamma):
        """kbar of the points now, at the width gamma (with `rows`: the sum is kept at the
        width it was last taken, and a row learned at the same width adds its values)."""
        params = dict(self.kernel, gamma=float(gamma))
        m = len(self.points)
        if self.rows and gamma == self.total_gamma:
            for j in range(m - self.pending, m):
                self.total += float(kernel_values(params, self.points[:j],
                                                  self.points[j]).sum()) if j else 0.0
        elif m >= 2 or self.rows:
            self.total = pair_sum(params, self.points)
            self.total_gamma = float(gamma) if self.rows else np.nan
        self.pending = 0
        if m < 2:
            return 1.0
        return float((self.total + 1.0) / (m * (m - 1) / 2.0 + 1.0))

    def step_lipschitz(self, gamma, t):
        """M kbar for the next step (t steps taken); at t >= WARMUP kbar is fixed first."""
        if self.active and t >= WARMUP:
            self.final = self.mean(gamma)
            self.active = False
        if not self.active:
            return self.lipschitz * self.final
        return self.lipschitz * self.mean(gamma)

    def lipschitz_of(self, C, budget, gamma, t):
        """`step_lipschitz` of a model whose centres are C (None with `rows`)."""
        if self.active and not self.rows:
            self.sync(C, budget, t)
        return self.step_lipschitz(gamma, t)

    def after(self, C, budget, gamma, t):
        """After a step and its width: kbar is fixed at t >= WARMUP; with `rows` the sum
        follows the width now."""
        if self.active and (self.rows or t >= WARMUP):
            self.lipschitz_of(C, budget, gamma, t)

    def finish(self, gamma, t):
        """Fix kbar when t >= WARMUP steps are taken; True when it is fixed."""
        self.step_lipschitz(gamma, t)
        return not self.active

    def state(self):
        """With `rows`: (the rows learned, the sum of K over their pairs)."""
        return self.points, self.total
