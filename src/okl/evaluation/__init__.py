"""Evaluation on streams: progressive validation with pluggable metrics; distances to targets.

One module per subject: `metrics` (running metrics), `progressive` (progressive
validation, evaluate), `recovery` (the level and delay after each change of a
drifting stream), `targets` (the theory's exact targets), `pairwise` (errors of
pairwise learners).

References
----------
See docs/algorithms.md, sections 1 (kernel ridge target, RKHS distance)
and 6.7 (ranking error).

.. [1] S. Smale and Y. Yao, "Online learning algorithms", Foundations of
   Computational Mathematics, 6(2):145-170, 2006.
.. [2] J. Lin, Y. Lei, B. Zhang and D.-X. Zhou, "Online pairwise
   learning algorithms with convex loss functions", Information
   Sciences, 406-407, 2017.
"""
from okl.evaluation.metrics import (
    Accuracy, Coverage, ErrorRate, LogLoss, MeanAbsoluteError, MeanSquaredError, PinballLoss,
    RootMeanSquaredError, RunningMetric, TrainingLoss,
)
from okl.evaluation.pairwise import pairwise_generalization_error, ranking_error
from okl.evaluation.progressive import ProgressiveResult, evaluate, progressive_validation
from okl.evaluation.recovery import Recovery, recovery
from okl.evaluation.targets import kernel_ridge_target, rkhs_distance

__all__ = ["Accuracy", "Coverage", "ErrorRate", "LogLoss", "MeanAbsoluteError",
           "MeanSquaredError", "PinballLoss", "ProgressiveResult", "Recovery",
           "RootMeanSquaredError", "RunningMetric", "TrainingLoss", "evaluate",
           "kernel_ridge_target", "pairwise_generalization_error", "progressive_validation",
           "ranking_error", "recovery", "rkhs_distance"]
