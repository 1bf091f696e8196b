"""The projections of _core/_projections.pyx in NumPy: same algorithms, same results.

Each function returns the projected point, or None when the constraint set is
empty; inputs are float64 1-D arrays (validated by okl.projections).
"""
import numpy as np

MAX_ITER = 100
FACE_RTOL = 1e-12
EPS = np.finfo(np.float64).eps


def shrink(u, top, delta):
    """Soft threshold S_mu(u) = sign(u) max(|u| - mu, 0) for mu = top - delta,
    as delta - (top - |u|) (exact for |u| near top)."""
    m = delta - (top - np.abs(u))
    return np.where(m > 0, np.copysign(np.maximum(m, 0.0), u), 0.0)


def simplex_threshold(s, z):
    """(top, delta): theta = top - delta solves sum_i max(s_i - theta, 0) = z
    (Duchi et al. 2008), from the deficits top - s_i; top = max(s)."""
    top = s.max()
    if z <= 0:
        return top, 0.0
    t = np.sort(top - s)
    cum = np.cumsum(t)
    j = np.arange(1, len(t) + 1)
    rho = max(1, np.count_nonzero(j * t - cum < z))
    return top, (z + cum[rho - 1]) / rho


def l1_threshold(u, beta):
    """(top, delta) with ||S_mu(u)||_1 = beta for mu = top - delta, or (0, 0) when
    ||u||_1 <= beta."""
    mags = np.abs(u[u != 0])
    if mags.sum() <= beta:
        return 0.0, 0.0
    return simplex_threshold(mags, beta)


def l2_ball(v, beta):
    norm = np.linalg.norm(v)
    return v * (beta / norm) if norm > beta else v.copy()


def l1_ball(v, beta):
    return shrink(v, *l1_threshold(v, beta))


def halfspace_l2_coefs(vv, av, aa, b, beta):
    """(cv, ca) with w = cv v + ca a the closest point to v in {a.w >= b, ||w||_2 <= beta},
    or None when that set is empty (Shen-Dietterich Lemma 3.2 for any b; b and beta
    are never squared)."""
    norm_a = np.sqrt(aa)
    if b > beta * norm_a:
        return None
    norm_v = np.sqrt(vv)
    shrink = 1.0 if norm_v <= beta else beta / norm_v
    if shrink * av >= b:                       # the ball alone
        return shrink, 0.0
    A = vv * aa - av * av
    gap = beta * norm_a - b
    sqrt_B = np.sqrt(max(gap, 0.0)) * np.sqrt(beta * norm_a + b)
    if av < b and np.sqrt(max(A, 0.0)) <= sqrt_B:  # the halfspace alone
        return 1.0, (b - av) / aa
    if gap <= 0:                               # a single point
        return 0.0, b / aa
    Z = max(np.sqrt(max(A, 0.0)) / sqrt_B, 1.0)  # both active
    return 1.0 / Z, (b - av / Z) / aa


def halfspace_l2_ball(v, a, b, beta):
    coefs = halfspace_l2_coefs(v @ v, a @ v, a @ a, b, beta)
    return None if coefs is None else coefs[0] * v + coefs[1] * a


def segment(v, a, tau, b, beta):
    """(g, (top, delta), slope, size): g(tau) = a.w - b for w the L1-ball projection
    of v + tau a, its threshold mu = top - delta, the slope of g on tau's linear
    piece, and the rounding scale of g."""
    u = v + tau * a
    mu = l1_threshold(u, beta)
    if mu[0] == 0.0:
        return a @ u - b, mu, a @ a, abs(b) + np.abs(a * u).sum()
    w = shrink(u, *mu)
    S = w != 0
    w = w[S]
    sa = np.where(u[S] > 0, a[S], -a[S]).sum()
    k = np.count_nonzero(S)
    slope = max(a[S] @ a[S] - sa * sa / k, 0.0) if k else 0.0
    return a[S] @ w - b, mu, slope, abs(b) + np.abs(a[S] * w).sum()


def halfspace_l1_ball(v, a, b, beta):
    amax = np.abs(a).max()
    tol = FACE_RTOL * beta * amax
    if b > beta * amax + tol:
        return None
    tau = 0.0
    g, mu, slope, size = segment(v, a, tau, b, beta)
    if g < 0 and b >= beta * amax - tol:
        # the face w_j = beta sign(a_j) p_j on J = argmax |a_j|, p in the simplex
        J = np.abs(a) == amax
        c = np.copysign(v[J], a[J]) / beta
        top, delta = simplex_threshold(c, 1.0)
        w = np.zeros_like(v)
        w[J] = np.copysign(beta * np.maximum(delta - (top - c), 0.0), a[J])
        return w
    if g < 0:
        lo, hi, step = 0.0, np.inf, np.inf
        for _ in range(MAX_ITER):
            newton = tau - g / slope if slope > 0 else np.inf
            prev_step = step
            if hi == np.inf:
                tau = newton if newton < np.inf else 2.0 * lo + beta / amax
                step = np.inf
            elif lo < newton < hi and 2.0 * abs(newton - tau) <= prev_step:
                step, tau = abs(newton - tau), newton      # Newton, while its steps halve
            else:
                step = 0.5 * (hi - lo)                      # else bisection
                tau = lo + step
            g, mu, slope, size = segment(v, a, tau, b, beta)
            if abs(g) <= 8 * EPS * max(size, slope * tau):
                break
            if g < 0:
                lo = tau
            else:
                hi = tau
            if hi < np.inf and hi - lo <= 4 * EPS * hi:
                break
    return shrink(v + tau * a, *mu)


def truncate_smallest(w, sigma):
    """Zero the smallest |w_j| (ties: lower j first) while their squares sum below sigma."""
    w = w.copy()
    order = np.argsort(np.abs(w), kind="stable")
    prefix = np.cumsum(w[order] ** 2)
    w[order[:np.count_nonzero(prefix < sigma)]] = 0.0
    return w
