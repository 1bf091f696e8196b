"""Stream events as rows: one pass in C over a dict's, a list's or a strided row's values
(okl._rows, and the one-event steps' row buffer, okl._core._pointwise.Events.crow)."""
cimport numpy as cnp

from cpython.dict cimport PyDict_Next, PyDict_Size
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.object cimport PyObject
from cpython.unicode cimport PyUnicode_CheckExact
from libc.math cimport fabs, isfinite, sqrt
from libc.string cimport memcmp
cimport cython

cnp.import_array()


cdef extern from "Python.h":
    Py_ssize_t PyUnicode_GET_LENGTH(PyObject*)
    int PyUnicode_KIND(PyObject*)
    void* PyUnicode_DATA(PyObject*)


cdef extern from *:
    """
    /* The version of a dict (PEP 509): CPython gives each dict a new one, unique in the
       interpreter, when it is made and at every change.  The field is deprecated from
       3.12 and gone in 3.14: there dict_version returns 0, which matches nothing. */
    #if PY_VERSION_HEX < 0x030E0000 && !defined(Py_GIL_DISABLED) && !defined(PYPY_VERSION)
    #if defined(__GNUC__)
    #pragma GCC diagnostic push
    #pragma GCC diagnostic ignored "-Wdeprecated-declarations"
    #endif
    static inline unsigned long long okl_dict_version(PyObject* d) {
        return (unsigned long long)((PyDictObject*)d)->ma_version_tag;
    }
    #if defined(__GNUC__)
    #pragma GCC diagnostic pop
    #endif
    #else
    static inline unsigned long long okl_dict_version(PyObject* d) { (void)d; return 0; }
    #endif
    """
    unsigned long long okl_dict_version(PyObject* d) noexcept


cdef unsigned long long dict_version(dict x) noexcept:
    """x's version (PEP 509): another dict, or x after any change, has another; 0 where
    CPython does not keep one."""
    return okl_dict_version(<PyObject*>x)


cdef inline bint same_str(PyObject* a, PyObject* b) noexcept:
    """a and b are exact str objects of the same characters (compared in place: no Python
    code runs; kind 0 is a legacy string not yet ready, declined)."""
    cdef Py_ssize_t n
    if not (PyUnicode_CheckExact(<object>a) and PyUnicode_CheckExact(<object>b)):
        return False
    n = PyUnicode_GET_LENGTH(a)
    return (n == PyUnicode_GET_LENGTH(b) and PyUnicode_KIND(a) == PyUnicode_KIND(b)
            and PyUnicode_KIND(a) != 0
            and memcmp(PyUnicode_DATA(a), PyUnicode_DATA(b), n * PyUnicode_KIND(a)) == 0)


cdef int cdict_into(dict x, tuple keys, double* out) except -1:
    """The values of dict `x` into out[:len(keys)] (1), when its keys are `keys` in that order
    and every value is a Python float or int; 0 otherwise, after writing part of out.

    No Python code runs: a key that is not the very object of `keys` compares as an exact
    str, and anything else declines (the caller may hold a buffer it reuses)."""
    cdef Py_ssize_t i = 0, pos = 0, d = len(keys)
    cdef PyObject* key
    cdef PyObject* value
    cdef PyObject* expected
    if PyDict_Size(x) != d:
        return 0
    while PyDict_Next(x, &pos, &key, &value):
        expected = <PyObject*>keys[i]
        if key != expected and not same_str(key, expected):
            return 0
        if PyFloat_CheckExact(<object>value):
            out[i] = PyFloat_AS_DOUBLE(<object>value)
        elif PyLong_CheckExact(<object>value) and -2 ** 53 <= <object>value <= 2 ** 53:
            out[i] = <double><object>value
        else:
            return 0
        i += 1
    return 1


cdef int carray_into(object x, cnp.npy_intp d, double* out) except -1:
    """`x` into out[:d] (1), when it is a list of `d` Python floats or ints, or a 1-D
    float32 / float64 array of `d` values and any stride (a row of a Fortran-ordered X);
    0 otherwise, after writing part of out.  No Python code runs."""
    cdef cnp.npy_intp i, stride
    cdef char* data
    cdef object value
    cdef cnp.ndarray a
    if type(x) is list:
        if len(<list>x) != d or d == 0:
            return 0
        for i in range(d):
            value = (<list>x)[i]
            if PyFloat_CheckExact(value):
                out[i] = PyFloat_AS_DOUBLE(value)
            elif PyLong_CheckExact(value) and -2 ** 53 <= value <= 2 ** 53:
                out[i] = <double>value
            else:
                return 0
        return 1
    if type(x) is not cnp.ndarray:
        return 0
    a = <cnp.ndarray>x
    if (cnp.PyArray_NDIM(a) != 1 or cnp.PyArray_DIM(a, 0) != d or d == 0
            or not cnp.PyArray_ISNOTSWAPPED(a) or not cnp.PyArray_ISALIGNED(a)):
        return 0
    stride, data = cnp.PyArray_STRIDE(a, 0), <char*>cnp.PyArray_DATA(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE:
        for i in range(d):
            out[i] = (<double*>(data + i * stride))[0]
        return 1
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT:
        for i in range(d):
            out[i] = (<float*>(data + i * stride))[0]
        return 1
    return 0


def dict_row(dict x, tuple keys):
    """The values of dict `x` as a new float64 row, when its keys are `keys` in that order
    and every value is a Python float or int; None otherwise (the caller takes the general
    path).  One pass in C: the common stream event, every feature in the first event's order.
    """
    cdef cnp.npy_intp d = len(keys)
    row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    return row if cdict_into(x, keys, <double*>cnp.PyArray_DATA(<cnp.ndarray>row)) else None


def array_row(object x, cnp.npy_intp d):
    """`x` as a new C-contiguous float64 row of `d` values, when it is a list of Python floats
    or ints, or a 1-D float32 / float64 array of any stride (a row of a Fortran-ordered X);
    None otherwise (the caller takes the general path, which names what is wrong).

    One pass in C, for the rows a stream hands `learn_one` besides a ready float64 row.
    """
    if d < 0:
        return None
    row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    return row if carray_into(x, d, <double*>cnp.PyArray_DATA(<cnp.ndarray>row)) else None


cdef inline bint _is_row(object a, cnp.npy_intp d):
    return (type(a) is cnp.ndarray and cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.NPY_DOUBLE
            and cnp.PyArray_NDIM(<cnp.ndarray>a) == 1 and cnp.PyArray_DIM(<cnp.ndarray>a, 0) == d
            and cnp.PyArray_IS_C_CONTIGUOUS(<cnp.ndarray>a))


cdef inline double* _data(object a):
    return <double*>cnp.PyArray_DATA(<cnp.ndarray>a)


@cython.cdivision(True)
def welford_row(object row, object mean, object m2, double n, bint with_mean, bint with_std,
                double largest, double tiny):
    """`okl.preprocessing.OnlineStandardScaler`'s Welford update with one row, then the row
    standardized, in one pass: (mean, m2, var, scale, z) as new rows (scale None without
    with_std), the same floats as its NumPy update then transform (n counts the row).

    None, changing nothing, when a value of the row is NaN, inf or beyond +-largest, when an
    M2 is not finite, or when an argument is not a C-contiguous float64 row of one width:
    the caller's NumPy path then names what is wrong.
    """
    if type(row) is not cnp.ndarray:
        return None
    cdef cnp.npy_intp i, d = cnp.PyArray_SIZE(<cnp.ndarray>row)
    if not (_is_row(row, d) and _is_row(mean, d) and _is_row(m2, d)):
        return None
    cdef const double* r = _data(row)
    for i in range(d):
        if not fabs(r[i]) <= largest:           # NaN fails too
            return None
    new_mean = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    new_m2 = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    var = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    scale = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0) if with_std else None
    z = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    cdef const double* mu = _data(mean)
    cdef const double* q = _data(m2)
    cdef double* mu1 = _data(new_mean)
    cdef double* q1 = _data(new_m2)
    cdef double* v = _data(var)
    cdef double* s = _data(scale) if with_std else NULL
    cdef double* out = _data(z)
    cdef double delta, m, sd
    for i in range(d):
        delta = r[i] - mu[i]
        m = mu[i] + delta / n
        mu1[i] = m
        q1[i] = q[i] + delta * (r[i] - m)
        if not isfinite(q1[i]):
            return None
        v[i] = q1[i] / n
        out[i] = r[i] - m if with_mean else r[i]
        if with_std:
            sd = sqrt(v[i])
            if sd < tiny:
                sd = 1.0
            s[i] = sd
            out[i] = out[i] / sd
    return new_mean, new_m2, var, scale, z


@cython.cdivision(True)
def standardized_row(object row, object mean, object scale, bint with_mean, bint with_std):
    """(row - mean) / scale as a new row, as `okl.preprocessing.OnlineStandardScaler`
    transforms; None when a value of the row is not finite or an argument is not a
    C-contiguous float64 row of one width (the caller's NumPy path then names it)."""
    if type(row) is not cnp.ndarray:
        return None
    cdef cnp.npy_intp i, d = cnp.PyArray_SIZE(<cnp.ndarray>row)
    if not (_is_row(row, d) and _is_row(mean, d) and (not with_std or _is_row(scale, d))):
        return None
    cdef const double* r = _data(row)
    for i in range(d):
        if not isfinite(r[i]):
            return None
    z = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    cdef const double* mu = _data(mean)
    cdef const double* s = _data(scale) if with_std else NULL
    cdef double* out = _data(z)
    for i in range(d):
        out[i] = r[i] - mu[i] if with_mean else r[i]
        if with_std:
            out[i] = out[i] / s[i]
    return z
