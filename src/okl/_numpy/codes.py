"""The integer codes of kernels, losses, budget policies, steps and rules, in pure Python.

The NumPy engine reads them here, so it runs without the compiled module;
the Cython enums (`_core/*.pxd`, `_core/*.pyx`) carry the same names and
values, which tests/test_engines.py pins.
"""
from enum import IntEnum

# the kernel and loss codes live beside their formulas, so a new kernel or loss is written in
# one NumPy file
from okl._numpy.kernels import Kernel  # noqa: F401
from okl._numpy.losses import Loss  # noqa: F401


class BudgetPolicy(IntEnum):
    OLDEST = 0
    SMALLEST = 1
    MERGE = 2


class Prune(IntEnum):
    SIGNIFICANCE = 0    # KRLS-T: the centre whose removal costs the least squared error
    OLDEST = 1          # a sliding window
    FREEZE = 2          # a full dictionary takes no centre (the Nystroem approximation)


class StepSize(IntEnum):
    AUTO = 0      # 1 / (lam_t + L C_K^2), times t^-eta_decay
    POWER = 1     # eta t^-eta_decay
    GIVEN = 2     # one step size per row
    SCALED = 3    # AUTO times max(1, the mean |y_s - b_{s+1}| of the steps before)


class Detector(IntEnum):
    NONE = 0          # no change detection
    PAGE_HINKLEY = 1  # Page-Hinkley's test on the step's own loss (docs/drift.md)


class Offset(IntEnum):
    FIXED = 0     # b does not learn (fit_intercept=False)
    MEAN = 1      # the running mean of the targets
    STEP = 2      # the gradient step b - eta_t w_t g_t


class Reducer(IntEnum):
    SIGN = 0
    DIFFERENCE = 1
    DISSIMILAR = 2


class Event(IntEnum):
    PASSIVE = 0
    UPDATED = 1
    INFEASIBLE = 2


class Regularization(IntEnum):
    NONE = 0
    OBJECTIVE = 1
    L2 = 2
    L1 = 3


class Variant(IntEnum):
    PA = 0
    PA_I = 1
    PA_II = 2


class MulticlassLoss(IntEnum):
    HINGE = 0       # Crammer-Singer: (1 - (s_y - max_{j != y} s_j))_+
    LOGISTIC = 1    # softmax cross-entropy: logsumexp(s) - s_y
