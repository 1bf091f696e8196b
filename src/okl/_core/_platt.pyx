"""Platt's scaling learned online, one event at a time, compiled (`okl.river.OnlinePlatt`).

The rule is written out in plain Python in tests/test_river.py (`ReferencePlatt`): the
same arithmetic in the same order, and the test checks the same (A, B) to the last bit.
"""
from libc.math cimport exp, isfinite


cdef inline double csigmoid(double z) noexcept nogil:
    """1 / (1 + e^-z) without overflow."""
    cdef double e
    if z >= 0.0:
        return 1.0 / (1.0 + exp(-z))
    e = exp(z)
    return e / (1.0 + e)


cdef class OnlinePlatt:
    """P(y = positive | f) = sigmoid(A f + B), fitted online to a stream of margins.

    Platt's scaling (1999) learned one event at a time: each event's margin
    f, taken before the model learns the event (an out-of-sample score, as
    Platt's held-out set), gives one Newton step on the logistic loss of
    (A, B) against Platt's regularised target (N+ + 1) / (N+ + 2) for a
    positive label, 1 / (N- + 2) for a negative one.  The curvature is
    accumulated with a forgetting factor, so that (A, B) follow the margins of
    a model that is still learning.  Starts at (A, B) = (1, 0): sigmoid(f).

    Parameters
    ----------
    lam : float, default=1.0
        Ridge weight pulling (A, B) towards (1, 0): it damps the first steps.
    memory : float, default=1000.0
        Events the curvature remembers (forgetting factor 1 - 1 / memory).

    References
    ----------
    J. C. Platt, "Probabilistic outputs for support vector machines and
    comparisons to regularized likelihood methods", in Advances in Large
    Margin Classifiers, MIT Press, 1999.  See docs/streaming.md, "Probabilities
    of hinge models".
    """
    cdef public double lam, memory, A, B
    cdef public long long n_positive, n_negative
    cdef double h0, h1, h2          # curvature: sum of p (1 - p) (f^2, f, 1), forgetting

    def __init__(self, double lam=1.0, double memory=1000.0):
        self.lam, self.memory = lam, memory
        self.A, self.B = 1.0, 0.0
        self.h0 = self.h1 = self.h2 = 0.0
        self.n_positive = self.n_negative = 0

    @property
    def h(self):
        """The curvature [sum p (1 - p) f^2, ... f, ... 1] (with forgetting)."""
        return [self.h0, self.h1, self.h2]

    @h.setter
    def h(self, value):
        self.h0, self.h1, self.h2 = value

    cpdef double proba(self, double f):
        """P(positive | margin f)."""
        return csigmoid(self.A * f + self.B)

    cpdef learn(self, double f, bint positive, double w=1.0):
        """One weighted Newton step on the event (f, positive); a non-finite f or a weight
        <= 0 teaches nothing."""
        cdef double target, p, keep, c, ga, gb, haa, hab, hbb, det
        if not (isfinite(f) and w > 0.0):
            return
        if positive:
            target = (self.n_positive + 1.0) / (self.n_positive + 2.0)
            self.n_positive += 1
        else:
            target = 1.0 / (self.n_negative + 2.0)
            self.n_negative += 1
        p = self.proba(f)
        keep, c = 1.0 - 1.0 / self.memory, w * p * (1.0 - p)
        self.h0 = keep * self.h0 + c * f * f
        self.h1 = keep * self.h1 + c * f
        self.h2 = keep * self.h2 + c
        # a recursive Newton step: (A, B) minimised the past losses plus
        # lam / 2 ||(A, B) - (1, 0)||^2; the new loss adds its gradient, and its
        # curvature joins the Hessian of the past
        ga, gb = w * (p - target) * f, w * (p - target)
        haa, hab, hbb = self.h0 + self.lam, self.h1, self.h2 + self.lam
        det = haa * hbb - hab * hab
        self.A -= (hbb * ga - hab * gb) / det
        self.B -= (haa * gb - hab * ga) / det

    def state(self):
        """(lam, memory, A, B, h, n_positive, n_negative)."""
        return (self.lam, self.memory, self.A, self.B, self.h, self.n_positive,
                self.n_negative)

    def __reduce__(self):
        return (_rebuild, self.state())

    def __eq__(self, other):
        return type(other) is type(self) and self.state() == other.state()


def _rebuild(lam, memory, A, B, h, n_positive, n_negative):
    platt = OnlinePlatt(lam, memory)
    platt.A, platt.B, platt.h = A, B, h
    platt.n_positive, platt.n_negative = n_positive, n_negative
    return platt
