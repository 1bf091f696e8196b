"""Model averaging for okl learners: the average of k models and a model's divergence.

Pure functions, with no Dask: `okl.distributed.AveragedLearner` runs them on
its workers (the divergence) and on the driver (the average).  See
docs/algorithms.md, section 7.6, and docs/distributed.md, section 2.
"""
import copy

import numpy as np

from okl._kernel_learners import PointwiseMixin
from okl._core._kernels import kernel_matrix
from okl._engines import ENGINES, engine_of
from okl._numpy.pointwise import prior_offset, prior_state
from okl._pa_models import (
    FeaturePAModel, KernelMultiPAModel, KernelPAModel, LinearMultiPAModel, LinearPAModel,
)
from okl.kernels import KERNEL_PARAMS

__all__ = ["average_models", "divergence"]


# ---- the model of each kind as one object ------------------------------------------------------

def _kind(model):
    """'expansion' (f = sum a_i K(x_i, .)), 'features' (f = <w, z(x)>), 'pa-linear',
    'pa-kernel', 'pa-features' (the PA's f = <w, z(x)>) or 'fixed-centres'."""
    from okl.classification import CoefficientRegularizedClassifier
    from okl.passive_aggressive import RegularizedPAClassifier

    if isinstance(model, RegularizedPAClassifier):
        if isinstance(model._model, (LinearPAModel, LinearMultiPAModel)):
            return "pa-linear"
        return ("pa-kernel" if isinstance(model._model, (KernelPAModel, KernelMultiPAModel))
                else "pa-features")
    if getattr(model, "approximation", None) is not None:
        return "features"
    if isinstance(model, CoefficientRegularizedClassifier):
        return "fixed-centres"
    if isinstance(model, PointwiseMixin):
        return "expansion"
    raise TypeError(f"okl cannot average {type(model).__name__} models: averaging needs an "
                    "okl kernel expansion, a RegularizedPAClassifier or a "
                    "CoefficientRegularizedClassifier with given centers.")


def _age_order(state):
    """Indices of the stored centres from the oldest to the newest.

    Storage order is insertion order until a full "oldest" budget starts
    overwriting; from then on the oldest centre is at ``next_slot``.
    """
    n = len(state["coef"])
    if state["budget"] and n == state["budget"]:
        return np.roll(np.arange(n), -int(state["next_slot"]) % n)
    return np.arange(n)


def average_expansions(expansions):
    """The exact average (1/k) sum_j f_j of kernel expansions, bounded by their budget.

    The union of the centres (each worker's centres from its oldest to its
    newest, workers in order), every coefficient (scale applied) divided by
    k, identical centres merged by adding their coefficients.  The result is
    a fresh expansion of the same kernel, budget and policy, filled by adding
    the centres one by one oldest first: within the budget this is the exact
    average; beyond it the budget policy itself decides what leaves, as it
    would for one learner (the oldest centres, or the smallest |coefficients|).
    """
    states = [e.get_state() for e in expansions]
    k = len(states)
    first = states[0]
    for s in states[1:]:
        for name in ("n_features", "kernel", *KERNEL_PARAMS, "budget", "policy"):
            if s.get(name) != first.get(name):
                raise ValueError(f"the expansions differ in {name} ({first.get(name)!r} and "
                                 f"{s.get(name)!r}): only models of the same kernel average.")
    order = [_age_order(s) for s in states]
    centers = np.concatenate([s["centers"][o] for s, o in zip(states, order)]).reshape(
        -1, first["n_features"])
    coef = np.concatenate([s["scale"] * s["coef"][o] / k for s, o in zip(states, order)])
    if len(coef):
        _, index, inverse = np.unique(centers, axis=0, return_index=True, return_inverse=True)
        inverse = inverse.ravel()
        summed = np.zeros((len(index),) + coef.shape[1:])
        np.add.at(summed, inverse, coef)
        keep = np.sort(index)                             # first appearance keeps the age order
        centers, coef = centers[keep], summed[inverse[keep]]
    cls = type(expansions[0])         # empty, with the first one's kernel, budget and policy
    multi = "n_classes" in first      # a multi-output expansion (k classes): coefficient vectors
    out = cls.from_state(dict(first, scale=1.0, n_rescale=0, next_slot=0,
                              coef=np.empty((0,) + np.shape(first["coef"])[1:]),
                              centers=np.empty((0, first["n_features"])), sqnorms=np.empty(0)))
    out.reserve(len(coef))          # capped by the budget (B + 1 under MERGE: the newcomer's slot)
    for x, a in zip(centers, coef):
        out.add(np.ascontiguousarray(x), np.ascontiguousarray(a) if multi else float(a))
    return out


def _pa_features(model):
    """The `FeaturePAModel` of a RegularizedPAClassifier with an approximation (None: NOGD's
    exact phase)."""
    return model if isinstance(model, FeaturePAModel) else model.features


def _feature_weights(feature_models):
    """The weight vectors of fixed-size feature models that share one feature map
    (`FeatureModel`s of the pointwise learners or `FeaturePAModel`s of the PA; None is a
    Nystroem model still in its exact phase)."""
    for f in feature_models:
        if f is None or f.linear is None:
            raise ValueError(
                "a Nystroem model averages once it holds its n_components landmarks, a random "
                "feature model with gamma='scale' after its 100-event warm-up; this one is "
                "still in its exact phase. Learn more events before averaging.")
        a, b = feature_models[0].fmap.get_state(), f.fmap.get_state()
        if a.keys() != b.keys() or not all(np.array_equal(a[key], b[key]) for key in a):
            raise ValueError(
                "the feature models use different feature maps (random features need the same "
                "random_state and a numeric gamma; Nystroem landmarks differ between workers), "
                "so their weights cannot be averaged. Use approximation='fourier' with one "
                "random_state and a number as gamma.")
    return [np.asarray(f.linear.coef if isinstance(f, FeaturePAModel) else f.linear.coef_,
                       dtype=np.float64) for f in feature_models]


def average_features(feature_models):
    """The average of fixed-size feature models on one map: the mean weight vector."""
    weights = _feature_weights(feature_models)     # refuses a model in its exact phase
    out = copy.deepcopy(feature_models[0])
    out.linear.set_coef(sum(weights) / len(feature_models))
    return out


# ---- the average of k estimators ---------------------------------------------------------------

def average_models(models):
    """The average of fitted okl models of the same class and parameters, a new estimator.

    Parameters
    ----------
    models : sequence of fitted estimators
        OnlineKernelRegressor, OnlineKernelClassifier, RegularizedPAClassifier
        (linear, kernel, or with an approximation: one feature map, so one
        ``random_state`` or shared Nystroem landmarks) or
        CoefficientRegularizedClassifier with given ``centers``; all of one
        class, with equal parameters and classes.

    Returns
    -------
    estimator
        A fitted estimator of the same class predicting (1/k) sum_j f_j(x):
        kernel expansions are the union of the centres with every coefficient
        divided by k (identical centres merged; a budget bounds the union with
        the expansion's own policy), linear weights are averaged.  Its ``t_``
        is the sum of the models' ``t_`` (the events behind the average), its
        ``ck2_`` the largest, its ``eta_`` / ``lam_`` those of the model that
        has seen the most events, so that ``partial_fit`` continues the
        step-size schedule of one learner that had seen every event.
        Counters (``n_updates_``, ``n_infeasible_``) are summed; an offset
        ``intercept_`` is averaged (the prior-shift offset of
        ``fit_intercept="prior"`` pools the models' means, weighted by their
        counts, and is read from them).

    References
    ----------
    .. [1] R. McDonald, K. Hall and G. Mann, "Distributed training strategies
       for the structured perceptron", NAACL HLT 2010, pp. 456-464.
    .. [2] M. Kamp, S. Bothe, M. Boley and M. Mock, "Communication-efficient
       distributed online learning with kernels", ECML PKDD 2016, LNCS 9852,
       pp. 805-819.
    """
    models = list(models)
    if not models:
        raise ValueError("average_models needs at least one fitted model.")
    cls = type(models[0])
    params = models[0].get_params(deep=False)
    for m in models:
        if (type(m).__module__, type(m).__qualname__) != (cls.__module__, cls.__qualname__):
            raise TypeError(f"average_models needs models of one class; got {cls.__name__} and "
                            f"{type(m).__name__}.")
        if not hasattr(m, "t_"):
            raise ValueError(f"average_models needs fitted models; a {cls.__name__} is not.")
        if repr(m.get_params(deep=False)) != repr(params):
            raise ValueError("average_models needs models with equal parameters; "
                             f"{m.get_params(deep=False)} differs from {params}.")
        if m.__dict__.get("gamma_") != models[0].__dict__.get("gamma_"):
            raise ValueError(
                f"the models' kernel widths differ (gamma_ {models[0].__dict__.get('gamma_')} "
                f"and {m.__dict__.get('gamma_')}): gamma='scale' takes each model's width from "
                "its own events, and functions of different widths do not average. Pass a "
                "number as gamma (e.g. the gamma_ of a model fitted on a sample).")
        if hasattr(m, "classes_") and not np.array_equal(m.classes_, models[0].classes_):
            raise ValueError(f"the models' classes differ ({models[0].classes_.tolist()} and "
                             f"{m.classes_.tolist()}).")
    kind = _kind(models[0])
    k = len(models)
    lead = max(models, key=lambda m: m.t_)                   # the most advanced schedule
    out = copy.deepcopy(lead)
    out.t_ = int(sum(m.t_ for m in models))
    if hasattr(lead, "ck2_"):
        out.ck2_ = max(m.ck2_ for m in models)
    if "intercept_" in lead.__dict__:                          # the offset b averages too
        b = np.mean([m.__dict__.get("intercept_", 0.0) for m in models], axis=0)
        out.intercept_ = b if np.ndim(b) else float(b)         # one per class (multiclass)
    if "_prior_state" in lead.__dict__:         # the prior-shift offset: the models' means pooled
        states = np.array([prior_state(m.__dict__.get("_prior_state")) for m in models])
        n, means = states[:, 0], states[:, 1:]
        pooled = means.T @ n / n.sum() if n.sum() > 0 else means.mean(axis=0)
        out._prior_state = (float(n.sum()), *(float(v) for v in pooled))
        out.intercept_ = prior_offset(out._prior_state)
    for name in ("n_updates_", "n_infeasible_"):
        if hasattr(lead, name):
            setattr(out, name, int(sum(getattr(m, name) for m in models)))
    if kind == "expansion":
        out._expansion = average_expansions([m._engine_expansion() for m in models])
        out.n_support_ = int(out._expansion.n_support)
    elif kind == "features":
        out._expansion = average_features([m._expansion for m in models])
    elif kind == "pa-kernel" and isinstance(lead._model, KernelMultiPAModel):
        expansion = average_expansions([m._model._on(m.engine) for m in models])
        out._model = KernelMultiPAModel(expansion)
        out._model.sq_norm = out._model.exact_sq_norm()     # docs/multiclass-pa.md
    elif kind == "pa-kernel":
        expansion = average_expansions([m._model._on(m.engine) for m in models])
        out._model = KernelPAModel(expansion)
        out._model.sq_norm = float(expansion.sq_norm())
    elif kind == "pa-linear" and isinstance(lead._model, LinearMultiPAModel):
        W = sum(m._model.coef for m in models) / k          # k >= 3 classes: W (k, d)
        out._model = LinearMultiPAModel(*W.shape)
        out._model.raw = np.ascontiguousarray(W, dtype=np.float64)
        out._model.sq_norm = _pa_sq_norm(W)
    elif kind == "pa-features":         # the mean weight vector on the shared feature map
        w = sum(_feature_weights([_pa_features(m._model) for m in models])) / k
        linear = _pa_features(out._model).linear
        w = np.array(w, dtype=np.float64)    # (k, D) for k >= 3 classes, ||f||^2 = 2 ||W||^2
        linear.raw, linear.scale = w, 1.0
        linear.sq_norm = _pa_sq_norm(w)
    elif kind == "pa-linear":
        w = sum(m._model.coef for m in models) / k
        out._model = LinearPAModel(len(w))
        out._model.raw = np.array(w, dtype=np.float64)
        out._model.sq_norm = float(w @ w)
    else:                                                    # fixed-centres
        if models[0].centers is None:
            raise ValueError(
                "CoefficientRegularizedClassifier(centers=None) takes its centres from each "
                "worker's own stream, so the workers' models have different centres and their "
                "coefficients cannot be averaged. Pass the same centers to every worker.")
        states = [m._engine_expansion().get_state() for m in models]
        state = dict(states[0])
        state["coef"] = sum(s["scale"] * s["coef"] for s in states) / k
        state["scale"], state["n_rescale"] = 1.0, 0
        out._expansion = type(models[0]._engine_expansion()).from_state(state)
        if "_coef_matrix" in lead.__dict__:                  # k >= 3 classes: A (m, k)
            out._coef_matrix = sum(m._coef_matrix for m in models) / k
        out.kappa_max_ = max(m.kappa_max_ for m in models)
        out.norm_bound_ = max(m.norm_bound_ for m in models)
    return out


# ---- divergence from the reference model (dynamic averaging) -----------------------------------

def divergence(model, reference):
    """||f - f_ref||^2: the squared RKHS distance (kernel models) or ||w - w_ref||^2 (linear),
    plus (b - b_ref)^2 for a learned offset.

    Computed where the two models are, from kernel evaluations over the union
    of their centres: the expansion sum_i a_i K(x_i, .) - sum_l b_l K(z_l, .)
    has the squared norm c^T K c.
    """
    kind = _kind(model)
    # an offset b is a coordinate of the model too: ||(f, b)||^2 = ||f||_K^2 + b^2
    offset = float(np.sum((np.asarray(model.__dict__.get("intercept_", 0.0))
                           - reference.__dict__.get("intercept_", 0.0)) ** 2))
    return offset + _function_divergence(model, reference, kind)


def _pa_sq_norm(w):
    """||w||^2 of a PA's weights; 2 ||W||_F^2 for k >= 3 classes (docs/multiclass-pa.md)."""
    return float(np.sum(w * w)) * (2.0 if w.ndim == 2 else 1.0)


def _function_divergence(model, reference, kind):
    if kind == "features":
        w, w_ref = _feature_weights([model._expansion, reference._expansion])
        return float((w - w_ref) @ (w - w_ref))
    if kind == "pa-features":
        w, w_ref = _feature_weights([_pa_features(model._model), _pa_features(reference._model)])
        return _pa_sq_norm(w - w_ref)
    if kind == "pa-linear":
        return _pa_sq_norm(model._model.coef - reference._model.coef)
    if kind == "pa-kernel":
        mine, ref = model._model.expansion, reference._model.expansion
    else:
        mine, ref = model._engine_expansion(), reference._engine_expansion()
    if kind == "fixed-centres":
        C, c = np.ascontiguousarray(mine.centers_), mine.coef_ - ref.coef_
        return float(max(c @ kernel_matrix(C, C, mine.kernel_params) @ c, 0.0))
    a, b = mine.get_state(), ref.get_state()
    state = dict(a, budget=0, next_slot=0, scale=1.0, n_rescale=0,
                 centers=np.concatenate([a["centers"], b["centers"]]).reshape(-1, a["n_features"]),
                 coef=np.concatenate([a["scale"] * a["coef"], -b["scale"] * b["coef"]]),
                 sqnorms=np.concatenate([a["sqnorms"], b["sqnorms"]]))
    engine = ENGINES[engine_of(mine)]
    cls = engine.multi_expansion if "n_classes" in a else engine.expansion    # k classes
    return float(max(cls.from_state(state).sq_norm(), 0.0))

