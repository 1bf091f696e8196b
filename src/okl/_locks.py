"""One call at a time: a re-entrant lock per estimator, kept outside it.

`locked(estimator)` serialises the calls that read or write a model; two
threads calling partial_fit on one estimator get the result of one serial
order, and two estimators learn in two threads at once.  The lock lives
outside the estimator, so pickling and cloning never see it.  It is a
`okl._core._lock.ReentrantLock`, which the compiled one-event steps take in C.  `VALIDATED`
holds the parameter values each estimator was last validated with (okl._base); a copy of
an estimator validated with its current values is validated too, so that it predicts on
the compiled one-event path at once.

`LockedState` makes every copy of an estimator a state between two calls: pickling,
`copy.deepcopy`, `get_params` (hence `sklearn.base.clone`) and `set_params` take the
lock, and okl.save (okl._persist) gathers what it writes under it.  A call that holds
the lock (partial_fit, learn_one, fit) is one step of the model's history: a copy made
by another thread waits for it to end, never sees half of it.
"""
import copy
import functools
import operator
import threading
import weakref

from okl._core._lock import ReentrantLock

_LOCKS = weakref.WeakKeyDictionary()
VALIDATED = weakref.WeakKeyDictionary()
GUARD = threading.Lock()        # held only while a lock or a record is looked up
_VALIDATED_KEY = "_params_validated"    # in a copied state: the copy is validated too


def locked(estimator):
    """The re-entrant lock of `estimator` (a context manager)."""
    with GUARD:
        lock = _LOCKS.get(estimator)
        if lock is None:
            lock = _LOCKS[estimator] = ReentrantLock()
    return lock


def share(owner, other, fresh=False):
    """Give `other` the lock of `owner` when `other` has none yet: one lock then serialises
    both (a wrapper and the learner it owns take it once per call, the learner's own taking
    a count).  True when they share one.  A lock already looked up is replaced only for a
    `fresh` object (built by the caller, which alone holds it: a clone, a loaded copy) that
    has not kept it for its one-event calls; else a thread may hold it."""
    with GUARD:
        lock = _LOCKS.get(owner)
        if lock is None:
            lock = _LOCKS[owner] = ReentrantLock()
        theirs = _LOCKS.get(other)
        if theirs is None or (fresh and theirs is not lock
                              and "_one_event_state" not in getattr(other, "__dict__", ())):
            theirs = _LOCKS[other] = lock
    return theirs is lock


_PARAM_GETTERS = {}


def param_values(estimator):
    """The parameter values of `estimator`, as one tuple (one C call per estimator)."""
    cls = type(estimator)
    getter = _PARAM_GETTERS.get(cls)
    if getter is None:
        names = tuple(cls._get_param_names())
        getter = _PARAM_GETTERS[cls] = (operator.attrgetter(*names) if len(names) > 1
                                        else lambda est: (getattr(est, names[0]),))
    return getter(estimator)


def validated(estimator):
    """True when every parameter is the very object `estimator` was last validated with."""
    seen = VALIDATED.get(estimator)
    now = param_values(estimator)
    return seen is not None and len(seen) == len(now) and all(map(operator.is_, seen, now))


def mark_validated(estimator):
    """Remember the parameter values `estimator` was validated with (`validated`)."""
    VALIDATED[estimator] = param_values(estimator)


def serialised(method):
    """Run `method` under the estimator's lock (readers wait for a running partial_fit)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with locked(self):
            return method(self, *args, **kwargs)
    return wrapper


class LockedState:
    """Copies see a state between two calls: `__getstate__` (pickle), `__deepcopy__`,
    `get_params` and `set_params` run under the estimator's lock (`locked`).

    Pickling copies the state under the lock (a deep copy: the models a call changes in
    place are copied there, not when the pickler reaches them later), then pickles the
    copy.  The lock is re-entrant, so a save or a pickle from inside a locked call (a
    callback of the same thread) does not wait; an estimator holding others (a pipeline's
    steps, a wrapper's inner learner) takes its own lock, then theirs, the order its calls
    take them in.
    """

    __slots__ = ()
    _uncopied = ()      # attributes that are caches of a class: never copied nor pickled

    def _copied_state(self, memo):
        with locked(self):
            state = copy.deepcopy({k: v for k, v in self.__dict__.items()
                                   if k not in self._uncopied}, memo)
            if validated(self):
                state[_VALIDATED_KEY] = True
            return state

    def __setstate__(self, state):
        state = dict(state)
        valid = state.pop(_VALIDATED_KEY, False)
        parent = getattr(super(), "__setstate__", None)
        if parent is None:
            self.__dict__.update(state)
        else:
            parent(state)
        if valid:
            mark_validated(self)

    def __getstate__(self):
        return self._copied_state({id(self): self})

    def __deepcopy__(self, memo):
        cls = type(self)
        new = cls.__new__(cls)
        memo[id(self)] = new
        new.__setstate__(self._copied_state(memo))
        return new

    def get_params(self, deep=True):
        with locked(self):
            return super().get_params(deep)

    def set_params(self, **params):
        with locked(self):
            return super().set_params(**params)
