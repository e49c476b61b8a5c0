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
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The digits of a non-negative int, read in place (CPython's layout: PyLong_SHIFT bits a digit,
 * least significant first); returns their number (0 for x == 0), -1 with an exception set. */
static Py_ssize_t
digits_of(PyObject *x, const digit **d)
{
    if (!PyLong_Check(x)) {
        PyErr_SetString(PyExc_TypeError, "expected an int");
        return -1;
    }
    PyLongObject *v = (PyLongObject *)x;
#if PY_VERSION_HEX >= 0x030C0000
    uintptr_t tag = v->long_value.lv_tag;
    if ((tag & _PyLong_SIGN_MASK) == 2) {
        PyErr_SetString(PyExc_ValueError, "expected a non-negative int");
        return -1;
    }
    *d = v->long_value.ob_digit;
    return (tag & _PyLong_SIGN_MASK) == 1 ? 0 : (Py_ssize_t)(tag >> _PyLong_NON_SIZE_BITS);
#else
    Py_ssize_t size = Py_SIZE(v);
    if (size < 0) {
        PyErr_SetString(PyExc_ValueError, "expected a non-negative int");
        return -1;
    }
    *d = v->ob_digit;
    return size;
#endif
}

static int64_t
count_bits(const digit *d, Py_ssize_t n)
{
    int64_t c = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        c += __builtin_popcount((unsigned int)d[i]);
    return c;
}

/* Index of the k-th (0-based, from the lowest) set bit; k < the number of set bits. */
static int64_t
select_bit(const digit *d, Py_ssize_t n, int64_t k)
{
    for (Py_ssize_t i = 0; i < n; i++) {
        int c = __builtin_popcount((unsigned int)d[i]);
        if (k < c) {
            unsigned int v = d[i];
            while (k-- > 0)
                v &= v - 1;
            return (int64_t)i * PyLong_SHIFT + __builtin_ctz(v);
        }
        k -= c;
    }
    return -1; /* not reached when k < count */
}

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

/* random() of the stream, as a double; -1 with an exception set. */
static int
draw(PyObject *random, double *r)
{
    PyObject *v = PyObject_CallNoArgs(random);
    if (v == NULL)
        return -1;
    *r = PyFloat_AsDouble(v);
    Py_DECREF(v);
    if (*r == -1.0 && PyErr_Occurred())
        return -1;
    return 0;
}

static PyObject *
random_set_bit(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "random_set_bit(x, random) takes 2 arguments");
        return NULL;
    }
    PyObject *random = args[1];
    const digit *d;
    Py_ssize_t n = digits_of(args[0], &d);
    if (n < 0)
        return NULL;
    /* the int stays alive (the caller holds it) and unchanged (ints are immutable) while random() runs */
    int64_t count = count_bits(d, n);
    if (count == 0) {
        PyErr_SetString(PyExc_ValueError, "x has no set bit");
        return NULL;
    }
    int64_t nbits = (int64_t)(n - 1) * PyLong_SHIFT + (32 - __builtin_clz((unsigned int)d[n - 1]));
    double r;
    if (count * 8 >= nbits) {
        /* dense: rejection sampling on positions, as the Python twin */
        for (;;) {
            if (draw(random, &r) < 0)
                return NULL;
            int64_t p = (int64_t)(r * (double)nbits);
            if (p < nbits && (d[p / PyLong_SHIFT] >> (p % PyLong_SHIFT)) & 1)
                return PyLong_FromLongLong(p);
        }
    }
    if (draw(random, &r) < 0)
        return NULL;
    return PyLong_FromLongLong(select_bit(d, n, (int64_t)(r * (double)count)));
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
