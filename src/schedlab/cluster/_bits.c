/* The worker choice's bit selection in C: schedlab.cluster.bitsets' kth_set_bit and random_set_bit.
 *
 * Each is the same function as its Python twin in bitsets.py, draw for draw: random_set_bit calls
 * the stream's random() as often and turns each draw into a position the same way (a double
 * product truncated toward zero, as int() does), so a run gives the same results either way
 * (tests/cluster/test_bits_compiled.py checks them against each other). What C saves is the
 * Python pass's allocations: every shift of a worker bitset of 10^3-10^5 bits makes a new int,
 * and the rank search makes a dozen of them; here the int's digits are read in place (CPython's
 * layout of 3.11 and of 3.12 on, chosen at compile time) and counted there.
 */
#include "_bitsel.h"

static PyObject *
kth_set_bit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "kth_set_bit(x, k) takes 2 arguments");
        return NULL;
    }
    long long k = PyLong_AsLongLong(args[1]);
    if (k == -1 && PyErr_Occurred())
        return NULL;
    const digit *d;
    Py_ssize_t n = digits_of(args[0], &d);
    if (n < 0)
        return NULL;
    int64_t total = count_bits(d, n);
    if (k < 0 || k >= total) {
        PyErr_Format(PyExc_ValueError, "x has %lld set bits, no bit number %lld", (long long)total, k);
        return NULL;
    }
    return PyLong_FromLongLong(select_bit(d, n, k));
}

static PyObject *
random_set_bit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "random_set_bit(x, random) takes 2 arguments");
        return NULL;
    }
    const digit *d;
    Py_ssize_t n = digits_of(args[0], &d);
    if (n < 0)
        return NULL;
    if (n == 0) {
        PyErr_SetString(PyExc_ValueError, "x has no set bit");
        return NULL;
    }
    /* the int stays alive (the caller holds it) and unchanged (ints are immutable) while random() runs */
    int64_t p = random_position(d, n, args[1]);
    return p < 0 ? NULL : PyLong_FromLongLong(p);
}

static PyMethodDef methods[] = {
    {"kth_set_bit", (PyCFunction)(void (*)(void))kth_set_bit, METH_FASTCALL,
     "kth_set_bit(x, k): index of the k-th (0-based, from the lowest) set bit of x."},
    {"random_set_bit", (PyCFunction)(void (*)(void))random_set_bit, METH_FASTCALL,
     "random_set_bit(x, random): a uniformly random set bit of x > 0, drawn with random() as bitsets.random_set_bit."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bits", "The worker choice's bit selection in C.", -1, methods};

PyMODINIT_FUNC
PyInit__bits(void)
{
    return PyModule_Create(&module);
}
