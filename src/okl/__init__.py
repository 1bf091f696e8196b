"""okl: online kernel learning with a typed-Cython core."""
from okl._persist import ModelFileError, load, save
from okl.classification import CoefficientRegularizedClassifier, OnlineKernelClassifier
from okl.pairwise import PairwiseLearner
from okl.passive_aggressive import RegularizedPAClassifier
from okl.regression import OnlineKernelRegressor

__version__ = "0.1.0"

__all__ = [
    "CoefficientRegularizedClassifier",
    "ModelFileError",
    "OnlineKernelClassifier",
    "OnlineKernelRegressor",
    "PairwiseLearner",
    "RegularizedPAClassifier",
    "load",
    "save",
]
