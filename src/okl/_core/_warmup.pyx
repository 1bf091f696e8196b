"""The first events of a kernel learner, compiled (docs/defaults.md, sections 2 and 4).

`Width` is gamma="scale"'s warm-up: the running moments of the entries of the
rows taken, and the width ``factor / (d Var)`` they give after 1, 2, 3, 5, 8,
12, ... and `WARMUP` rows of non-zero weight (`cmoves`; in between the width
stays, so that kbar and the stored kernel values follow it at O(t) per event,
amortised).  `sequence` gives the width every row of a chunk is learned with (it
depends only on the rows), which the loops set on their model before the row's
step; a one-event step adds its row after the step (`cadd`).  `KernelMean` is
eta="scaled"'s kbar, the mean kernel value between two centres (or, on features,
two of the rows learned) at the model's width, measured before each of the first
`WARMUP` steps and then fixed: the pair distances are kept, so a new width costs
the kernel values of the pairs only.

Both give the NumPy twin's values bit for bit (okl/_numpy/warmup.py): the sums
are NumPy's pairwise sums, in NumPy's order, and the distances those of the
kernel rows (`_kernels.pxd`).
"""
import numpy as np

from libc.math cimport NAN, isfinite
from libc.stdlib cimport free, malloc
from libc.string cimport memcmp, memcpy

from okl._core._kernels cimport (
    GAUSSIAN, LAPLACIAN, MATERN, KernelSpec, cvalues_from, kernel_spec, okl_dots, okl_l1dists,
    okl_sqdists, spec_params,
)

WARMUP = C_WARMUP       # events the warm-ups last (okl._numpy.warmup.WARMUP)
cdef double CWARMUP = C_WARMUP
ROUNDING = 1e-24        # a variance below ROUNDING mean^2 is the rounding of equal entries
cdef double CROUNDING = ROUNDING


cdef double cpairwise_sum(const double* a, Py_ssize_t n) noexcept nogil:
    """sum(a[:n]) in NumPy's order (its pairwise summation), so that a sum here is the
    twin's to the last bit."""
    cdef Py_ssize_t i, j, n2
    cdef double res
    cdef double r[8]
    if n < 8:
        res = 0.0
        for i in range(n):
            res += a[i]
        return res
    if n <= 128:
        for j in range(8):
            r[j] = a[j]
        i = 8
        while i < n - (n % 8):
            for j in range(8):
                r[j] += a[i + j]
            i += 8
        res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
        while i < n:
            res += a[i]
            i += 1
        return res
    n2 = n // 2
    n2 -= n2 % 8
    return cpairwise_sum(a, n2) + cpairwise_sum(a + n2, n - n2)


cdef inline double cspread(double var, double mean) noexcept nogil:
    """var, or 0 when it is only the rounding of equal entries."""
    return var if var > CROUNDING * mean * mean else 0.0


cdef bint cmoments_add(Moments* m, const double* x, Py_ssize_t d, double* work) noexcept nogil:
    """Take the row x (d entries) into the moments (Welford's update of the mean and the sum
    of squared deviations of all entries, shifted by the first entry seen); a row whose
    squares overflow does not count.  True when it counted."""
    cdef Py_ssize_t j
    cdef double n = m.rows * d, shift = m.shift, row_mean, delta, m2, mean
    if m.rows == 0.0:
        shift = x[0] if isfinite(x[0]) else 0.0
    for j in range(d):
        work[j] = x[j] - shift
    row_mean = cpairwise_sum(work, d) / d
    delta = row_mean - m.mean
    for j in range(d):
        work[j] = (work[j] - row_mean) * (work[j] - row_mean)
    m2 = m.m2 + cpairwise_sum(work, d) + delta * delta * n * d / (n + d)
    mean = m.mean + delta * d / (n + d)
    if not (isfinite(m2) and isfinite(mean)):
        return False
    m.m2, m.mean, m.rows, m.shift = m2, mean, m.rows + 1.0, shift
    return True


cdef inline bint cmoves(double rows) noexcept nogil:
    """The width follows the moments after `rows` rows: at 1, 2, 3, 5, 8, 12, ... rows and at
    the warm-up's end (`okl._numpy.warmup.moves`)."""
    cdef Py_ssize_t r = <Py_ssize_t>rows, k = 1
    while k < r:
        k += (k + 1) // 2
    return r == C_WARMUP or (k == r and r < C_WARMUP)


cdef double cmoments_gamma(const Moments* m, Py_ssize_t d, double factor) noexcept nogil:
    """``factor / (d Var)`` of the rows taken; factor / d before a second row and 1.0 after
    when Var is 0."""
    cdef double var = cspread(m.m2 / (m.rows * d), m.mean + m.shift) if m.rows else 0.0
    if var > 0.0:
        return factor / (d * var)
    return factor / d if m.rows <= 1.0 else 1.0


cdef class Width:
    """gamma="scale"'s warm-up: the moments of the rows taken and the width they give.

    Parameters
    ----------
    n_features : int
    factor : float
        The learner's width factor (1, or `okl._gamma.LOCAL_FACTOR`).
    moments : sequence of 4 floats or None
        [rows, mean, m2, shift] as the learner keeps them (`_width_moments`); None: no
        row yet.
    gamma : float
        The width now (the learner's gamma_).
    """

    def __init__(self, Py_ssize_t n_features, double factor, moments=None, double gamma=NAN):
        self.n_features, self.factor = n_features, factor
        if moments is None:
            self.moments.rows = self.moments.mean = self.moments.m2 = self.moments.shift = 0.0
        else:
            self.moments.rows, self.moments.mean, self.moments.m2 = moments[:3]
            self.moments.shift = moments[3] if len(moments) > 3 else 0.0
        self.gamma = gamma if gamma == gamma else factor / n_features
        self.warming = self.moments.rows < CWARMUP
        self.work = np.empty(max(n_features, 1))

    cdef bint cadd(self, const double* x) noexcept nogil:
        """Take the row x; True when the width moved (only at the rows of `cmoves`)."""
        cdef double gamma
        cmoments_add(&self.moments, x, self.n_features, &self.work[0])
        self.warming = self.moments.rows < CWARMUP
        if not cmoves(self.moments.rows):
            return False
        gamma = cmoments_gamma(&self.moments, self.n_features, self.factor)
        if gamma != self.gamma:
            self.gamma = gamma
            return True
        return False

    def add(self, const double[::1] x):
        """Take the row x; True when the width moved."""
        if x.shape[0] != self.n_features:
            raise ValueError(f"x has {x.shape[0]} entries, the width {self.n_features}.")
        return self.cadd(&x[0])

    def sequence(self, const double[:, ::1] X, const double[::1] weight=None):
        """The width of every row of X and after them: (gamma (n + 1,), end).

        Row i is learned with gamma[i] and then, if its weight is not 0 and the warm-up
        is on, taken; gamma[n] is the width after the chunk.  `end` is the number of rows
        after which the warm-up ended (-1: it goes on).  The moments advance through X."""
        cdef Py_ssize_t i, n = X.shape[0], end = -1
        cdef bint weighted = weight is not None
        if X.shape[1] != self.n_features or (weight is not None and weight.shape[0] != n):
            raise ValueError("X and weight do not match the width's rows.")
        out = np.empty(n + 1)
        cdef double[::1] gamma = out
        with nogil:
            for i in range(n):
                gamma[i] = self.gamma
                if self.warming and (not weighted or weight[i] != 0.0):
                    self.cadd(&X[i, 0])
                    if not self.warming:
                        end = i + 1
            gamma[n] = self.gamma
        return out, end

    def state(self):
        """[rows, mean, m2, shift] (the learner's `_width_moments`)."""
        return [self.moments.rows, self.moments.mean, self.moments.m2, self.moments.shift]


def moments_after(moments, const double[::1] x):
    """The learner's `_width_moments` [rows, mean, m2, shift] once the row x is taken, as a
    new list: `Width`'s moments after ``add(x)``, without a Width (a warm-up event's
    bookkeeping, docs/krls.md, section 8)."""
    cdef Moments m
    cdef Py_ssize_t d = x.shape[0]
    cdef double* work
    if d == 0:
        raise ValueError("x has no entries.")
    m.rows, m.mean, m.m2 = moments[0], moments[1], moments[2]
    m.shift = moments[3] if len(moments) > 3 else 0.0
    work = <double*> malloc(d * sizeof(double))
    if work == NULL:
        raise MemoryError()
    cmoments_add(&m, &x[0], d, work)
    free(work)
    return [m.rows, m.mean, m.m2, m.shift]


cdef inline void cdistances(const KernelSpec* k, const double* x, const double* C,
                            Py_ssize_t n, Py_ssize_t d, double* out) noexcept nogil:
    """out[i] = the distance of C[i] and x the kernel's values are of (`ckernel_row`)."""
    if n == 0:
        return
    if k.kind == GAUSSIAN or k.kind == MATERN:
        okl_sqdists(n, d, C, x, out)
    elif k.kind == LAPLACIAN:
        okl_l1dists(n, d, C, x, out)
    else:
        okl_dots(n, d, C, x, out)


cdef inline Py_ssize_t cpacked(Py_ssize_t j) noexcept nogil:
    """Where row j of the packed distances starts (it holds the j distances to 0..j-1)."""
    return j * (j - 1) // 2


cdef class KernelMean:
    """eta="scaled"'s kbar during the first `WARMUP` steps (docs/defaults.md, section 4).

    kbar = (S + 1) / (m (m - 1) / 2 + 1), S the sum of K over the pairs of m points at the
    model's width: the model's centres (`csync` before each step), or with `rows` the rows
    learned (`cappend` after each step taken).  The pairs' distances are kept, so a new
    width costs m (m - 1) / 2 kernel values.  `cstep_lipschitz` gives the step's M kbar;
    once WARMUP steps are taken, kbar is fixed (`final`) and `active` is False.

    Parameters
    ----------
    lipschitz : float
        M of the loss.
    kernel : dict
        The kernel's record (`okl.kernels.kernel_params`); its width is replaced by the
        one each call gives.
    n_features : int
    rows : bool
        Over the rows learned (a model on features), not the model's centres.
    points : array (m, n_features) or None
        With `rows`: the rows learned so far (the learner's `_warmup_rows`).
    total : float
        With `rows`: the sum of K over their pairs at the width `gamma` (`_warmup_sum`).
    gamma : float
        The width `total` is of.
    """

    def __init__(self, double lipschitz, kernel, Py_ssize_t n_features, bint rows=False,
                 points=None, double total=0.0, double gamma=NAN):
        cdef const double[:, ::1] P
        cdef Py_ssize_t j
        self.lipschitz, self.rows, self.n_features = lipschitz, rows, n_features
        self.spec = kernel_spec(kernel)
        self.gamma = self.spec.gamma
        self.active, self.final = True, NAN
        self.m = self.cap = self.n_pending = 0
        self.kept_m, self.total_m, self.kept_gamma = 0, -1, NAN
        self.t_synced = -2.0
        self.reserve(WARMUP + 1)
        self.total, self.total_gamma = 0.0, gamma
        if rows and points is not None and len(points):
            P = np.ascontiguousarray(points, dtype=np.float64)
            self.reserve(P.shape[0] + 1)
            for j in range(P.shape[0]):
                self.m = j + 1
                self._point(j, &P[j, 0])
            self.total = total

    cdef int reserve(self, Py_ssize_t m) except -1:
        """Room for m points."""
        cdef Py_ssize_t d = self.n_features, cap = m
        if m <= self.cap:
            return 0
        points = np.zeros((cap, d))
        dist = np.zeros(max(cap * (cap - 1) // 2, 1))
        kept = np.empty(dist.shape[0])
        if self.m:
            points[:self.m] = self._points[:self.m]
            dist[:cpacked(self.m)] = self._dist[:cpacked(self.m)]
            kept[:cpacked(self.kept_m)] = self._kept[:cpacked(self.kept_m)]
        self._points, self._dist, self._kept = points, dist, kept
        self._values = np.empty(dist.shape[0])
        cdef double[:, ::1] p = self._points
        cdef double[::1] q = self._dist, v = self._values, k = self._kept
        self.points, self.dist, self.values = &p[0, 0], &q[0], &v[0]
        self.kept = &k[0]
        self.cap = cap
        return 0

    def ensure(self, Py_ssize_t m):
        """Room for m points (a loop calls it before its steps: they cannot allocate)."""
        self.reserve(m)

    cdef void _point(self, Py_ssize_t j, const double* x) noexcept nogil:
        """Point j < m is x: its distances to the other points, in both halves."""
        cdef Py_ssize_t i, n = self.m, d = self.n_features
        if j < self.kept_m:                 # its pairs' kept values are another point's
            self.kept_m = j
        memcpy(self.points + j * d, x, d * sizeof(double))
        cdistances(&self.spec, x, self.points, n, d, self.values)
        for i in range(j):
            self.dist[cpacked(j) + i] = self.values[i]
        for i in range(j + 1, n):
            self.dist[cpacked(i) + j] = self.values[i]

    cdef void csync(self, const double* C, Py_ssize_t n, Py_ssize_t budget,
                    double t) noexcept nogil:
        """The points are the n centres C (their slot order) after t steps.  When the last
        call was at step t or t - 1 and that step could only add a centre (no budget full,
        more centres than before, the last one kept), the new ones are appended; otherwise
        every centre is compared with its point."""
        cdef Py_ssize_t j, d = self.n_features
        cdef bint grown = ((t == self.t_synced or t == self.t_synced + 1.0) and n >= self.m
                           and not (budget and self.m >= budget)
                           and (self.m == 0 or memcmp(self.points + (self.m - 1) * d,
                                                       C + (self.m - 1) * d,
                                                       d * sizeof(double)) == 0))
        self.t_synced = t
        if n < self.m:
            self.m = n
            if self.kept_m > n:
                self.kept_m = n
        if not grown:
            for j in range(self.m):
                if memcmp(self.points + j * d, C + j * d, d * sizeof(double)) != 0:
                    self._point(j, C + j * d)
        for j in range(self.m, n):
            self.m = j + 1
            self._point(j, C + j * d)

    cdef void cappend(self, const double* x) noexcept nogil:
        """With `rows`: x is learned (its kernel values join the sum at the next `cmean`)."""
        self.m += 1
        self._point(self.m - 1, x)
        self.n_pending += 1

    cdef double cmean(self, double gamma) noexcept nogil:
        """kbar of the points at the width gamma."""
        cdef Py_ssize_t j, first, m = self.m, pairs = cpacked(self.m)
        self.spec.gamma = gamma
        if self.rows and gamma == self.total_gamma:
            for j in range(m - self.n_pending, m):      # each new row's values, summed
                memcpy(self.values, self.dist + cpacked(j), j * sizeof(double))
                cvalues_from(&self.spec, j, self.values)
                self.total += cpairwise_sum(self.values, j)
        elif m >= 2 or self.rows:
            # the sum of the packed rows' sums (row j: the pairs (j, 0..j-1), summed as
            # NumPy sums them), in row order; over the centres at an unchanged width, the
            # kept values of the unchanged points' pairs serve again (a value is computed
            # alone, wherever it sits), and when only points were added the sum goes on
            # from the new rows: O(m) per new point between two widths
            if self.rows:
                memcpy(self.values, self.dist, pairs * sizeof(double))
                cvalues_from(&self.spec, pairs, self.values)
                self.total = 0.0
                for j in range(1, m):
                    self.total += cpairwise_sum(self.values + cpacked(j), j)
            else:
                if gamma != self.kept_gamma:
                    self.kept_m, self.kept_gamma = 0, gamma
                if self.kept_m == m and self.total_m == m:
                    self.n_pending = 0
                    return (self.total + 1.0) / (<double>(m * (m - 1)) / 2.0 + 1.0)
                j = cpacked(self.kept_m)
                memcpy(self.kept + j, self.dist + j, (pairs - j) * sizeof(double))
                cvalues_from(&self.spec, pairs - j, self.kept + j)
                first = self.total_m if self.kept_m == self.total_m else 0
                if first <= 0:
                    self.total, first = 0.0, 1
                for j in range(first, m):
                    self.total += cpairwise_sum(self.kept + cpacked(j), j)
                self.kept_m, self.total_m = m, m
            self.total_gamma = gamma if self.rows else NAN
        self.n_pending = 0
        if m < 2:
            return 1.0
        return (self.total + 1.0) / (<double>(m * (m - 1)) / 2.0 + 1.0)

    cdef double cstep_lipschitz(self, double gamma, double t) noexcept nogil:
        """M kbar for the next step (t steps taken); at t >= WARMUP kbar is fixed first."""
        if self.active and t >= CWARMUP:
            self.final = self.cmean(gamma)
            self.active = False
        if not self.active:
            return self.lipschitz * self.final
        return self.lipschitz * self.cmean(gamma)

    cdef double clipschitz(self, const double* C, Py_ssize_t n, Py_ssize_t budget, double gamma,
                           double t) noexcept nogil:
        """`cstep_lipschitz` of the model whose n centres are C (`csync`; rows: unused)."""
        if self.active and not self.rows:
            self.csync(C, n, budget, t)
        return self.cstep_lipschitz(gamma, t)

    cdef void cafter(self, const double* C, Py_ssize_t n, Py_ssize_t budget, double gamma,
                     double t) noexcept nogil:
        """After a step and its width: kbar is fixed at t >= WARMUP; with `rows` the sum
        follows the width now (the learner keeps it)."""
        if self.active and (self.rows or t >= CWARMUP):
            self.clipschitz(C, n, budget, gamma, t)

    def lipschitz_of(self, C, Py_ssize_t budget, double gamma, double t):
        """`cstep_lipschitz` of a model whose centres are C (None with `rows`)."""
        cdef const double[:, ::1] view
        if C is None or len(C) == 0:
            return self.clipschitz(NULL, 0, budget, gamma, t)
        view = np.ascontiguousarray(C, dtype=np.float64)
        self.reserve(view.shape[0] + 1)
        return self.clipschitz(&view[0, 0], view.shape[0], budget, gamma, t)

    def mean(self, double gamma):
        """kbar of the points now, at the width gamma."""
        return self.cmean(gamma)

    def finish(self, double gamma, double t):
        """Fix kbar when t >= WARMUP steps are taken; True when it is fixed."""
        self.cstep_lipschitz(gamma, t)
        return not self.active

    def sync(self, const double[:, ::1] C, Py_ssize_t budget=0, double t=-2.0):
        """The points are the rows of C (the centres, in slot order, after t steps)."""
        if C.shape[0] and C.shape[1] != self.n_features:
            raise ValueError("C has the wrong number of features.")
        self.reserve(C.shape[0] + 1)
        self.csync(&C[0, 0] if C.shape[0] else NULL, C.shape[0], budget, t)

    def append(self, const double[::1] x):
        """With `rows`: x is learned."""
        self.reserve(self.m + 2)
        self.cappend(&x[0])

    @property
    def n_points(self):
        return self.m

    def state(self):
        """With `rows`: (the rows learned, the sum of K over their pairs) at the width of the
        last `cmean`, as the learner keeps them (`_warmup_rows`, `_warmup_sum`); the rows are
        a view of a buffer that only grows."""
        return self._points[:self.m], self.total


cdef class Warmup:
    """What a one-event step keeps of its learner's warm-ups: the `Width` of gamma="scale"
    and the `KernelMean` of eta="scaled", each None once over.  `cload` checks them against
    the learner's attributes (rebuilt when a chunk, a restore or okl.load wrote them),
    `cstore` writes them back: gamma_, `_width_moments` (deleted at the end), and
    `kernel_mean_` once fixed (over rows: `_warmup_rows`, `_warmup_sum` before)."""

    def __init__(self, Width width=None, KernelMean kbar=None):
        self.width, self.kbar = width, kbar

    cdef int cload(self, dict attrs, double gamma) except -1:
        """Be the warm-ups of `attrs` (the learner's ``__dict__``) at the model's width."""
        cdef KernelMean k = self.kbar
        if self.width is not None:
            moments = attrs.get("_width_moments")
            if moments is None:
                self.width = None
            elif moments is not self.width_state:
                self.width = Width(self.width.n_features, self.width.factor, moments, gamma)
                self.width_state = moments
        if k is not None:
            if "kernel_mean_" in attrs:
                self.kbar = None
            elif k.rows and (attrs.get("_warmup_rows") is not self.rows_state
                             or k.total != attrs.get("_warmup_sum", 0.0)
                             or k.m != (0 if self.rows_state is None else len(self.rows_state))):
                rows = attrs.get("_warmup_rows")
                self.kbar = KernelMean(k.lipschitz, spec_params(k.spec), k.n_features, True,
                                       rows, attrs.get("_warmup_sum", 0.0), gamma)
                self.rows_state = rows
        return 0

    cdef bint cadd(self, const double* x) noexcept nogil:
        """A step of non-zero weight learned x: True when the width moved."""
        return self.width is not None and self.width.warming and self.width.cadd(x)

    cdef void cstop_width(self) noexcept:
        """The width stays from now on (the model can no longer follow it)."""
        if self.width is not None:
            self.width.warming = False

    cdef double cstore(self, dict attrs) except? -1.0:
        """Write the warm-ups on the learner; M kbar when kbar was fixed now, else NaN."""
        cdef KernelMean k = self.kbar
        cdef double fixed = NAN
        if self.width is not None:
            attrs["gamma_"] = self.width.gamma
            if self.width.warming:
                self.width_state = attrs["_width_moments"] = self.width.state()
            else:
                del attrs["_width_moments"]
                self.width = self.width_state = None
        if k is not None:
            if not k.active:
                attrs["kernel_mean_"] = k.final
                attrs.pop("_warmup_rows", None)
                attrs.pop("_warmup_sum", None)
                fixed = k.lipschitz * k.final
                self.kbar = self.rows_state = None
            elif k.rows:
                rows, total = k.state()
                self.rows_state = attrs["_warmup_rows"] = rows
                attrs["_warmup_sum"] = total
        return fixed

    @property
    def over(self):
        """Both warm-ups are over."""
        return self.width is None and self.kbar is None
