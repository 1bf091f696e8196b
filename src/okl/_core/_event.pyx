"""Dict events as rows: one pass in C over a stream event's features (okl._rows)."""
cimport numpy as cnp

from cpython.dict cimport PyDict_Next, PyDict_Size
from cpython.float cimport PyFloat_AS_DOUBLE, PyFloat_CheckExact
from cpython.long cimport PyLong_CheckExact
from cpython.object cimport PyObject

cnp.import_array()


def dict_row(dict x, tuple keys):
    """The values of dict `x` as a float64 row, when its keys are `keys` in that order and
    every value is a Python float or int; None otherwise (the caller takes the general path).

    One pass in C: the common stream event, every feature in the first event's order.
    """
    cdef cnp.npy_intp d = len(keys)
    cdef Py_ssize_t i = 0, pos = 0
    cdef PyObject* key
    cdef PyObject* value
    cdef object expected
    if PyDict_Size(x) != d:
        return None
    row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
    cdef double* out = <double*>cnp.PyArray_DATA(<cnp.ndarray>row)
    while PyDict_Next(x, &pos, &key, &value):
        expected = keys[i]
        if key is not <PyObject*>expected and not (<object>key == expected):
            return None
        if PyFloat_CheckExact(<object>value):
            out[i] = PyFloat_AS_DOUBLE(<object>value)
        elif PyLong_CheckExact(<object>value):
            out[i] = <double><object>value
        else:
            return None
        i += 1
    return row


def array_row(object x, cnp.npy_intp d):
    """`x` as a new C-contiguous float64 row of `d` values, when it is a list of Python floats
    or ints, or a 1-D float32 / float64 array of any stride (a row of a Fortran-ordered X);
    None otherwise (the caller takes the general path, which names what is wrong).

    One pass in C, for the rows a stream hands `learn_one` besides a ready float64 row.
    """
    cdef cnp.npy_intp i, stride
    cdef char* data
    cdef object value
    cdef double* out
    cdef cnp.ndarray a
    if type(x) is list:
        if len(<list>x) != d or d == 0:
            return None
        row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
        out = <double*>cnp.PyArray_DATA(<cnp.ndarray>row)
        for i in range(d):
            value = (<list>x)[i]
            if PyFloat_CheckExact(value):
                out[i] = PyFloat_AS_DOUBLE(value)
            elif PyLong_CheckExact(value) and -2 ** 53 <= value <= 2 ** 53:
                out[i] = <double>value
            else:
                return None
        return row
    if type(x) is not cnp.ndarray:
        return None
    a = <cnp.ndarray>x
    if (cnp.PyArray_NDIM(a) != 1 or cnp.PyArray_DIM(a, 0) != d or d == 0
            or not cnp.PyArray_ISNOTSWAPPED(a) or not cnp.PyArray_ISALIGNED(a)):
        return None
    stride, data = cnp.PyArray_STRIDE(a, 0), <char*>cnp.PyArray_DATA(a)
    if cnp.PyArray_TYPE(a) == cnp.NPY_DOUBLE:
        row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
        out = <double*>cnp.PyArray_DATA(<cnp.ndarray>row)
        for i in range(d):
            out[i] = (<double*>(data + i * stride))[0]
        return row
    if cnp.PyArray_TYPE(a) == cnp.NPY_FLOAT:
        row = cnp.PyArray_EMPTY(1, &d, cnp.NPY_DOUBLE, 0)
        out = <double*>cnp.PyArray_DATA(<cnp.ndarray>row)
        for i in range(d):
            out[i] = (<float*>(data + i * stride))[0]
        return row
    return None
