"""The engine table: each loop and model of the compiled engine beside its NumPy twin.

An estimator's `engine` parameter names a row; everything else looks its
pieces up here, so a new piece or a new engine is added in one place.  The
NumPy twins (`okl._numpy`) take the same arguments and give the same iterates
(docs/algorithms.md, "Two engines").
"""
from types import SimpleNamespace

from okl._core import _coefreg, _evidence, _krls, _multiclass, _pa, _pairwise, _pointwise
from okl._core._expansion import KernelExpansion
from okl._core._linear import LinearModel, MultiLinearModel
from okl._core._multiexpansion import MultiExpansion
from okl._core._multikernel import MultiKernel
from okl._core._warmup import KernelMean, Width
from okl._numpy import coefreg, krls, multiclass, pa, pairwise, pointwise
from okl._numpy.expansion import NumpyExpansion
from okl._numpy.kernels import gram_base
from okl._numpy.linear import NumpyLinearModel, NumpyMultiLinearModel
from okl._numpy.multiexpansion import NumpyMultiExpansion
from okl._numpy.multikernel import NumpyMultiKernel
from okl._numpy.warmup import KernelMean as NumpyKernelMean, Width as NumpyWidth

ENGINES = {
    "cython": SimpleNamespace(expansion=KernelExpansion, linear=LinearModel,
                              pointwise=_pointwise.fit_chunk, coefreg=_coefreg.fit_chunk,
                              coefreg_multi=_coefreg.fit_multi_chunk,
                              pa_kernel=_pa.fit_kernel, pa_multi_kernel=_pa.fit_multi_kernel,
                              pairwise=_pairwise,
                              multi_expansion=MultiExpansion, multiclass=_multiclass.fit_chunk,
                              multi_linear=MultiLinearModel,
                              multikernel=MultiKernel, prior_offsets=_pointwise.prior_offsets,
                              krls=_krls.KRLSModel, krls_chunk=_krls.fit_chunk,
                              rls_features=_krls.RLSFeatures,
                              log_evidences=_evidence.log_evidences,
                              gram_base=_evidence.gram_base,
                              width=Width, kernel_mean=KernelMean),
    "numpy": SimpleNamespace(expansion=NumpyExpansion, linear=NumpyLinearModel,
                             pointwise=pointwise.fit_chunk, coefreg=coefreg.fit_chunk,
                             coefreg_multi=coefreg.fit_multi_chunk,
                             pa_kernel=pa.fit_kernel, pa_multi_kernel=pa.fit_multi_kernel,
                             pairwise=pairwise,
                             multi_expansion=NumpyMultiExpansion, multiclass=multiclass.fit_chunk,
                             multi_linear=NumpyMultiLinearModel,
                             multikernel=NumpyMultiKernel, prior_offsets=pointwise.prior_offsets,
                             krls=krls.NumpyKRLS, krls_chunk=krls.fit_chunk,
                             rls_features=krls.NumpyRLSFeatures,
                             log_evidences=krls.log_evidences, gram_base=gram_base,
                             width=NumpyWidth, kernel_mean=NumpyKernelMean),
}


def engine_of(model):
    """The name of the engine whose expansion or linear model `model` is."""
    for name, engine in ENGINES.items():
        if isinstance(model, (engine.expansion, engine.linear, engine.multi_expansion,
                              engine.multi_linear)):
            return name
    raise TypeError(f"{type(model).__name__} belongs to no engine")
