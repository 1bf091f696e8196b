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
