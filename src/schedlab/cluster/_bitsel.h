/* Worker bitsets (non-negative Python ints) read in place, and the worker choice's bit selection on
 * their digits: shared by schedlab's C parts (cluster/_bits.c, schedulers/megha/_slots.c), which
 * test, count and select bits without making ints.
 *
 * CPython's layout: PyLong_SHIFT bits a digit, least significant first; that of 3.11 and that of
 * 3.12 on are chosen at compile time. */
#ifndef SCHEDLAB_BITSEL_H
#define SCHEDLAB_BITSEL_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

/* The digits of x >= 0; returns their number (0 for x == 0), -1 with an exception set. */
static inline Py_ssize_t
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

/* Whether bit ``pos`` (>= 0) of the int x >= 0 is set: 1, 0, or -1 with an exception set. */
static inline int
bit_is_set(PyObject *x, Py_ssize_t pos)
{
    const digit *d;
    Py_ssize_t n = digits_of(x, &d);
    if (n < 0)
        return -1;
    Py_ssize_t i = pos / PyLong_SHIFT;
    return i < n && (d[i] >> (pos % PyLong_SHIFT)) & 1;
}

static inline int64_t
count_bits(const digit *d, Py_ssize_t n)
{
    int64_t c = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        c += __builtin_popcount((unsigned int)d[i]);
    return c;
}

/* Index of the k-th (0-based, from the lowest) set bit; k < the number of set bits. */
static inline int64_t
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

/* random() of the stream, as a double; -1 with an exception set. */
static inline int
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

/* random_set_bit's choice on the digits d[0..n) of x > 0 (n > 0, d[n-1] != 0): the same draws of
 * random() turned into the same position as bitsets.random_set_bit_py; -1 with an exception set. */
static inline int64_t
random_position(const digit *d, Py_ssize_t n, PyObject *random)
{
    int64_t count = count_bits(d, n);
    int64_t nbits = (int64_t)(n - 1) * PyLong_SHIFT + (32 - __builtin_clz((unsigned int)d[n - 1]));
    double r;
    if (count * 8 >= nbits) {
        /* dense: rejection sampling on positions, as the Python twin */
        for (;;) {
            if (draw(random, &r) < 0)
                return -1;
            int64_t p = (int64_t)(r * (double)nbits);
            if (p < nbits && (d[p / PyLong_SHIFT] >> (p % PyLong_SHIFT)) & 1)
                return p;
        }
    }
    if (draw(random, &r) < 0)
        return -1;
    return select_bit(d, n, (int64_t)(r * (double)count));
}

#endif
