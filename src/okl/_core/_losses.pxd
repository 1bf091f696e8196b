# Losses: the enum (the single source of truth for loss codes) and the inline
# value / left-derivative functions.  Residual losses take u = f(x) - y,
# margin losses take m = y f(x).  Every formula is written so that no
# intermediate overflows for |u|, |m| up to 1e300.
from libc.math cimport NAN, exp, log1p, fabs, pow


cpdef enum Loss:
    # residual losses V(u), u = f(x) - y
    SQUARED = 0               # u^2 / 2
    ABSOLUTE = 1              # |u|
    EPSILON_INSENSITIVE = 2   # (|u| - eps)_+
    PINBALL = 3               # Yang's V^tau_eps
    HUBER = 4                 # u^2/2 if |u| <= delta else delta (|u| - delta/2)
    POWER = 5                 # |u|^p, p >= 1
    # margin losses phi(m), m = y f(x)
    HINGE = 10                # (1 - m)_+
    SQUARED_HINGE = 11        # (1 - m)_+^2
    LOGISTIC = 12             # log(1 + e^-m)
    LEAST_SQUARES = 13        # (1 - m)^2
    EXPONENTIAL = 14          # e^-m


cdef struct LossSpec:
    Loss kind
    double tau      # pinball quantile
    double eps      # tube half-width (epsilon_insensitive, pinball)
    double delta    # huber threshold
    double p        # power


cdef inline bint cis_margin(Loss kind) noexcept nogil:
    return kind >= HINGE


cdef inline double closs(const LossSpec* L, double z) noexcept nogil:
    """Loss value at z (u for residual losses, m for margin losses)."""
    cdef double a
    if L.kind == SQUARED:
        return 0.5 * z * z
    if L.kind == ABSOLUTE:
        return fabs(z)
    if L.kind == EPSILON_INSENSITIVE:
        a = fabs(z) - L.eps
        return a if a > 0.0 else 0.0
    if L.kind == PINBALL:
        if z > L.eps:
            return (1.0 - L.tau) * (z - L.eps)
        if z <= -L.eps:
            return -L.tau * (z + L.eps)
        return 0.0
    if L.kind == HUBER:
        a = fabs(z)
        if a <= L.delta:
            return 0.5 * z * z
        return L.delta * (a - 0.5 * L.delta)
    if L.kind == POWER:
        return pow(fabs(z), L.p)
    if L.kind == HINGE:
        return 1.0 - z if z < 1.0 else 0.0
    if L.kind == SQUARED_HINGE:
        a = 1.0 - z if z < 1.0 else 0.0
        return a * a
    if L.kind == LOGISTIC:
        # log(1 + e^-m) = log1p(e^-m) for m > 0, -m + log1p(e^m) otherwise
        if z > 0.0:
            return log1p(exp(-z))
        return -z + log1p(exp(z))
    if L.kind == LEAST_SQUARES:
        return (1.0 - z) * (1.0 - z)
    if L.kind == EXPONENTIAL:   # inf past the double range; C raises no warning
        return exp(-z)
    return NAN                  # an unknown code: every caller reports the NaN


cdef inline double cdloss(const LossSpec* L, double z) noexcept nogil:
    """Left derivative of the loss at z; at a kink, the slope on the left."""
    cdef double e
    if L.kind == SQUARED:
        return z
    if L.kind == ABSOLUTE:
        return 1.0 if z > 0.0 else -1.0
    if L.kind == EPSILON_INSENSITIVE:
        if z > L.eps:
            return 1.0
        if z <= -L.eps:
            return -1.0
        return 0.0
    if L.kind == PINBALL:
        if z > L.eps:
            return 1.0 - L.tau
        if z <= -L.eps:
            return -L.tau
        return 0.0
    if L.kind == HUBER:
        if z > L.delta:
            return L.delta
        if z < -L.delta:
            return -L.delta
        return z
    if L.kind == POWER:
        if z > 0.0:
            return L.p * pow(z, L.p - 1.0)
        if L.p == 1.0:
            return -1.0
        return -L.p * pow(-z, L.p - 1.0)
    if L.kind == HINGE:
        return -1.0 if z <= 1.0 else 0.0
    if L.kind == SQUARED_HINGE:
        return -2.0 * (1.0 - z) if z < 1.0 else 0.0
    if L.kind == LOGISTIC:
        # -1 / (1 + e^m), evaluated on the side where the exponential is <= 1
        if z > 0.0:
            e = exp(-z)
            return -e / (1.0 + e)
        return -1.0 / (1.0 + exp(z))
    if L.kind == LEAST_SQUARES:
        return -2.0 * (1.0 - z)
    if L.kind == EXPONENTIAL:
        return -exp(-z)
    return NAN


cdef inline double cdloss_right(const LossSpec* L, double z) noexcept nogil:
    """Right derivative of the loss at z: the left one except at a kink."""
    if L.kind == HINGE and z == 1.0:
        return 0.0
    if (L.kind == ABSOLUTE or (L.kind == POWER and L.p == 1.0)) and z == 0.0:
        return 1.0
    if (L.kind == EPSILON_INSENSITIVE or L.kind == PINBALL) and (z == L.eps or z == -L.eps):
        if z == L.eps:
            return 1.0 if L.kind == EPSILON_INSENSITIVE else 1.0 - L.tau
        return 0.0
    return cdloss(L, z)


cdef inline double cgradient(const LossSpec* L, double y, double f) noexcept nogil:
    """dV/df of one prediction f of target y: V'_-(f - y), or y phi'_-(y f) for a margin loss."""
    if cis_margin(L.kind):
        return y * cdloss(L, y * f)
    return cdloss(L, f - y)
