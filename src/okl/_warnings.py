"""Warnings shown once per estimator, and the sizes past which a model warns.

Models that grow without bound warn once when they pass a size that slows
every step or fills memory (`warn_size`), naming the option that bounds them.
"""
import warnings
import weakref

from okl._locks import GUARD


class SizeWarning(UserWarning):
    """A model passed a size that makes every step slow or fills memory."""


# centres x features of a model without a bound: one step reads them all (4M
# multiply-adds: a millisecond or more per step, e.g. 84 000 centres of 50 features)
EXPANSION_WORK = 2 ** 22
# bytes of the Gram matrix cached by PairwiseLearner(pair_kernel="difference")
# (256 MiB: about 5 800 stored points)
GRAM_BYTES = 2 ** 28

_WARNED = weakref.WeakKeyDictionary()


def warn_once(estimator, key, message, category=UserWarning, stacklevel=4):
    """Warn `message` the first time `key` comes up for `estimator` (a warning turned
    into an error counts only once it has been shown)."""
    with GUARD:
        if key in _WARNED.get(estimator, ()):
            return
    warnings.warn(message, category, stacklevel=stacklevel)
    with GUARD:
        _WARNED.setdefault(estimator, set()).add(key)


def warn_size(estimator, key, size, limit, message):
    """Warn once per estimator (per `key`) when `size` reaches `limit`."""
    if size >= limit:
        warn_once(estimator, key, message, SizeWarning, stacklevel=6)
