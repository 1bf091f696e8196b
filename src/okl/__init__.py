"""okl: online kernel learning with a typed-Cython core.

`okl.streams` is the former name of `okl.synth`, kept as an alias.
"""
from importlib.metadata import version

from okl import (
    evaluation, kernels, losses, pipeline, preprocessing, projections, schedules, stream, streams,
    synth,
)
from okl._persist import ModelFileError, load, save
from okl.classification import CoefficientRegularizedClassifier, OnlineKernelClassifier
from okl.krls import KernelRLSRegressor
from okl.multikernel import MultiKernelClassifier, MultiKernelRegressor
from okl.pairwise import PairwiseLearner
from okl.passive_aggressive import RegularizedPAClassifier
from okl.regression import OnlineKernelRegressor

__version__ = version("okl")     # set once, in meson.build's project()

__all__ = [
    "CoefficientRegularizedClassifier",
    "KernelRLSRegressor",
    "ModelFileError",
    "MultiKernelClassifier",
    "MultiKernelRegressor",
    "OnlineKernelClassifier",
    "OnlineKernelRegressor",
    "PairwiseLearner",
    "RegularizedPAClassifier",
    "evaluation",
    "kernels",
    "load",
    "losses",
    "pipeline",
    "preprocessing",
    "projections",
    "save",
    "schedules",
    "stream",
    "synth",
]
