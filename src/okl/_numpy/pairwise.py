"""Online pairwise learning (Algorithm 1) in NumPy, one step at a time: twin of _core/_pairwise.pyx.

Each function takes the same arrays as its Cython twin, updates them in place
and returns the same values, so the two engines produce the same iterates.
"""
import numpy as np

from okl._numpy.codes import Loss, Reducer
from okl._numpy.kernels import kernel_values
from okl._numpy.losses import derivative, derivative_right


def reduce(reducer, y, y_stored):
    """r(y, y_j) for every stored y_j."""
    if reducer == Reducer.SIGN:
        return np.sign(y - y_stored)
    if reducer == Reducer.DIFFERENCE:
        return y - y_stored
    return np.where(y != y_stored, 1.0, -1.0)


def slope(loss, r, a):
    """V'_-(r, a), the left derivative in a of phi(r a) (margin) or psi(a - r) (residual)."""
    if loss["kind"] < Loss.HINGE:
        return derivative(loss, a - r)
    z = r * a       # r < 0: a step left in a is a step right in z, phi's right slope
    return r * np.where(r < 0, derivative_right(loss, z), derivative(loss, z))


def _store(H, yh, m, slot, x, y):
    """Write x_t to its slot; return the new number of stored points."""
    if slot < 0:
        return m
    H[slot] = x
    yh[slot] = y
    return m + 1 if slot == m else m


def linear_chunk(H, yh, m, w, X, y, eta, slot, reducer, loss):
    """f(x, x') = w.(x - x'): (points stored, -1 or the first step that diverged)."""
    for i, x in enumerate(X):
        if m > 0:
            g = slope(loss, reduce(reducer, y[i], yh[:m]), w @ x - H[:m] @ w)
            w -= eta[i] / m * (g.sum() * x - g @ H[:m])
            if not np.all(np.isfinite(w)):
                return m, i
        m = _store(H, yh, m, slot[i], x, y[i])
    return m, -1


def linear_moments_chunk(S, origin, w, X, y, eta):
    """Squared loss, linear pair kernel, r = y - y': the average from S = sum_j z_j z_j^T."""
    d = X.shape[1]
    for i in range(len(X)):
        z = np.concatenate([[1.0], X[i] - origin[:d], [y[i] - origin[d]]])
        x, yt = z[1:d + 1], z[d + 1]
        n, S1, Sy = S[0, 0], S[0, 1:d + 1], S[0, d + 1]
        S2, Syx = S[1:d + 1, 1:d + 1], S[1:d + 1, d + 1]
        if n > 0:
            wx = w @ x
            grad = x * (n * wx - w @ S1) - S1 * wx + S2 @ w - (x * (n * yt - Sy) - yt * S1 + Syx)
            w -= eta[i] / n * grad
            if not np.all(np.isfinite(w)):
                return i
        S += np.outer(z, z)
    return -1


def metric_chunk(H, yh, m, M, X, y, eta, slot, reducer, loss):
    """f(x, x') = (x - x')^T M (x - x'): (points stored, -1 or the first step that diverged)."""
    for i, x in enumerate(X):
        if m > 0:
            D = x - H[:m]
            g = slope(loss, reduce(reducer, y[i], yh[:m]), np.einsum("jk,jk->j", D @ M, D))
            G = D.T @ (g[:, None] * D)
            M -= 0.5 * eta[i] / m * (G + G.T)
            if not np.all(np.isfinite(M)):
                return m, i
        m = _store(H, yh, m, slot[i], x, y[i])
    return m, -1


def difference_chunk(g, idx, yh, s, gram, m, X, y, eta, slot, reducer, loss, gamma=None):
    """f(x, x') = g(x) - g(x'), g a NumpyExpansion with one centre per step.

    `s` caches g(x_j) and `gram` the kernel matrix of the stored points.
    Returns (points stored, -1 or the first step that diverged).  `gamma` (n + 1,): the
    base kernel's width before each row and after the last (gamma="scale"'s warm-up), the
    caches recomputed at a new width (`difference_width`).
    """
    if gamma is None:
        return _difference_chunk(g, idx, yh, s, gram, m, X, y, eta, slot, reducer, loss)
    n = len(X)
    if len(gamma) != n + 1:
        raise ValueError("gamma gives the width of the n rows and after them.")
    for i in range(n + 1):
        difference_width(g, gamma[i], idx, s, gram, m)
        if i == n:
            break
        m, failed = _difference_chunk(g, idx, yh, s, gram, m, X[i:i + 1], y[i:i + 1],
                                      eta[i:i + 1], slot[i:i + 1], reducer, loss)
        if failed >= 0:
            return m, i
    return m, -1


def difference_width(g, gamma, idx, s, gram, m):
    """g at the width gamma; g(x_j) and k(x_j, x_l) of the m stored points recomputed from
    g's kernel rows at their centres (twin of `cdifference_width`)."""
    if gamma == g.kernel_params["gamma"]:
        return
    g.set_gamma(gamma)
    n_c = g.n_support
    for j in range(m):
        kx = g.values(g._centers[idx[j]])
        s[j] = float(g._coef[:n_c] @ kx)
        gram[j, :m] = kx[idx[:m]]


def _difference_chunk(g, idx, yh, s, gram, m, X, y, eta, slot, reducer, loss):
    k = g.kernel_params
    g.reserve(len(X))
    for i, x in enumerate(X):
        n_c = g.n_support
        kx = g.values(x)                              # k(c, x_t) for every centre c
        gx = float(g._coef[:n_c] @ kx) if n_c else 0.0
        kself = float(kernel_values(k, x[None], x)[0])                    # k(x_t, x_t)
        G = dgx = c = 0.0
        if m > 0:
            kvec = kx[idx[:m]]
            gj = slope(loss, reduce(reducer, y[i], yh[:m]), gx - s[:m])
            G, dgx = gj.sum(), gj @ kvec
            c = eta[i] / m
            s_next = s[:m] - c * (G * kvec - gram[:m, :m] @ gj)
            coef_next = g._coef[idx[:m]] + c * gj
            if not (np.all(np.isfinite(s_next)) and np.all(np.isfinite(coef_next))):
                return m, i
            s[:m] = s_next
            g._coef[idx[:m]] = coef_next
        gnew = gx - c * (G * kself - dgx)
        if not np.isfinite(gnew) or not g.add(x, -c * G):
            return m, i
        sl = slot[i]
        if sl >= 0:
            idx[sl], yh[sl], s[sl] = g.n_support - 1, y[i], gnew
            if m:
                gram[sl, :m] = kvec
                gram[:m, sl] = kvec
            gram[sl, sl] = kself
            if sl == m:
                m += 1
    return m, -1
