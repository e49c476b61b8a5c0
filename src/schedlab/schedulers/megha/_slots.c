/* Megha's slot-mode inner loops in C: schedlab.schedulers.megha.slots' gm_take, lm_accept, lm_vacate and
 * gm_release.
 *
 * Each is the same function as its Python twin in slots.py (the reference): same arguments, the
 * same items read in the same order, the same lists, dicts and ints changed to the same values,
 * the same exceptions for malformed input. What C saves is the interpreter's dispatch over a loop
 * body of a dozen operations run once per task; the worker bitsets stay Python ints, their bits
 * tested in place (_bitsel.h) so that only a change makes a new int.
 * tests/schedulers/test_megha_slots.py checks the two against each other.
 */
#include "../../cluster/_bitsel.h"

static PyObject *ONE; /* the int 1, for 1 << pos */

/* 1 << pos for the positions of partitions of up to BIT_CACHE workers, made once: every take and
 * release of a worker needs its bit, and making a new int of pos bits each time is half the cost of
 * the operation it serves. The cache holds at most BIT_CACHE^2 / 16 bytes (1 MB for 4096). */
#define BIT_CACHE 4096
static PyObject *bit_cache[BIT_CACHE];

/* 1 << pos (pos >= 0, given also as the int pos_o), a new reference. */
static PyObject *
bit_of(Py_ssize_t pos, PyObject *pos_o)
{
    if (pos >= BIT_CACHE)
        return PyNumber_Lshift(ONE, pos_o);
    PyObject *b = bit_cache[pos];
    if (b == NULL && (b = bit_cache[pos] = PyNumber_Lshift(ONE, pos_o)) == NULL)
        return NULL;
    Py_INCREF(b);
    return b;
}

/* obj[key] as a new reference: a list's item (negative indices count from the end, as in Python) or a
 * dict's value (an LM's bitsets are a dict by partition); exact lists and dicts without the generic
 * protocol's index conversion. */
static PyObject *
item_at(PyObject *obj, PyObject *key)
{
    if (PyList_CheckExact(obj) && PyLong_CheckExact(key)) {
        Py_ssize_t i = PyLong_AsSsize_t(key);
        if (i >= 0 && i < PyList_GET_SIZE(obj)) {
            PyObject *v = PyList_GET_ITEM(obj, i);
            Py_INCREF(v);
            return v;
        }
        if (i == -1 && PyErr_Occurred())
            PyErr_Clear(); /* the generic path below raises Python's own error */
    } else if (PyTuple_CheckExact(obj) && PyLong_CheckExact(key)) {
        Py_ssize_t i = PyLong_AsSsize_t(key);
        if (i >= 0 && i < PyTuple_GET_SIZE(obj)) {
            PyObject *v = PyTuple_GET_ITEM(obj, i);
            Py_INCREF(v);
            return v;
        }
        if (i == -1 && PyErr_Occurred())
            PyErr_Clear();
    } else if (PyDict_CheckExact(obj)) {
        PyObject *v = PyDict_GetItemWithError(obj, key);
        if (v != NULL) {
            Py_INCREF(v);
            return v;
        }
        if (PyErr_Occurred())
            return NULL;
    }
    return PyObject_GetItem(obj, key);
}

/* obj[key] = value (value borrowed), as item_at reads it. */
static int
set_item_at(PyObject *obj, PyObject *key, PyObject *value)
{
    if (PyList_CheckExact(obj) && PyLong_CheckExact(key)) {
        Py_ssize_t i = PyLong_AsSsize_t(key);
        if (i >= 0 && i < PyList_GET_SIZE(obj)) {
            Py_INCREF(value);
            return PyList_SetItem(obj, i, value);
        }
        if (i == -1 && PyErr_Occurred())
            PyErr_Clear();
    } else if (PyDict_CheckExact(obj)) {
        return PyDict_SetItem(obj, key, value);
    }
    return PyObject_SetItem(obj, key, value);
}

/* Unpack exactly n items of a tuple or list (or any iterable) into borrowed references; returns
 * the object that owns them (release it after use) or NULL with the unpacking error set. */
static PyObject *
unpack(PyObject *item, Py_ssize_t n, PyObject **out)
{
    PyObject *fast = PySequence_Fast(item, "cannot unpack a non-iterable object");
    if (fast == NULL)
        return NULL;
    Py_ssize_t got = PySequence_Fast_GET_SIZE(fast);
    if (got != n) {
        if (got < n)
            PyErr_Format(PyExc_ValueError, "not enough values to unpack (expected %zd, got %zd)", n, got);
        else
            PyErr_Format(PyExc_ValueError, "too many values to unpack (expected %zd)", n);
        Py_DECREF(fast);
        return NULL;
    }
    PyObject **items = PySequence_Fast_ITEMS(fast);
    for (Py_ssize_t k = 0; k < n; k++)
        out[k] = items[k];
    return fast;
}

/* The bit position pos_o as a C integer, or -1 with Python's error for 1 << pos_o set. */
static Py_ssize_t
position(PyObject *pos_o)
{
    if (!PyLong_Check(pos_o)) {
        PyErr_Format(PyExc_TypeError, "unsupported operand type(s) for <<: 'int' and '%.100s'", Py_TYPE(pos_o)->tp_name);
        return -1;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(pos_o);
    if (pos == -1 && PyErr_Occurred())
        return -1;
    if (pos < 0) {
        PyErr_SetString(PyExc_ValueError, "negative shift count");
        return -1;
    }
    return pos;
}

/* seq[index] with bit pos set (value 1: seq[index] | 1 << pos) or cleared (value 0: seq[index] & ~(1 << pos)),
 * a new int only when the bit changes; *bit caches 1 << pos. */
static int
put_bit_at(PyObject *seq, PyObject *index, Py_ssize_t pos, PyObject *pos_o, PyObject **bit, int value)
{
    PyObject *x = item_at(seq, index);
    if (x == NULL)
        return -1;
    int set = bit_is_set(x, pos);
    if (set < 0 || set == value) {
        Py_DECREF(x);
        return set < 0 ? -1 : 0;
    }
    if (*bit == NULL && (*bit = bit_of(pos, pos_o)) == NULL) {
        Py_DECREF(x);
        return -1;
    }
    PyObject *y = PyNumber_Xor(x, *bit);
    Py_DECREF(x);
    if (y == NULL)
        return -1;
    int rc = set_item_at(seq, index, y);
    Py_DECREF(y);
    return rc;
}

/* Whether the task mask t asks for a constraint the machine mask m lacks (t & ~m): 1, 0 or -1. */
static int
lacks(PyObject *t, PyObject *m)
{
    int ot = 0, om = 0;
    long long tv = PyLong_Check(t) ? PyLong_AsLongLongAndOverflow(t, &ot) : (ot = 1, 0);
    long long mv = PyLong_Check(m) ? PyLong_AsLongLongAndOverflow(m, &om) : (om = 1, 0);
    if (!ot && !om)
        return (tv & ~mv) != 0;
    if (PyErr_Occurred())
        return -1;
    /* wider than 64 bits, or not ints: Python's own operators */
    PyObject *inv = PyNumber_Invert(m);
    if (inv == NULL)
        return -1;
    PyObject *r = PyNumber_And(t, inv);
    Py_DECREF(inv);
    if (r == NULL)
        return -1;
    int truth = PyObject_IsTrue(r);
    Py_DECREF(r);
    return truth;
}

static int
check_args(const char *name, Py_ssize_t nargs, Py_ssize_t want)
{
    if (nargs == want)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments (%zd given)", name, want, nargs);
    return -1;
}

/* step(item, ctx) for each item of the iterable items, stopping at the first that fails: 0, or -1 with
 * the exception set (the three per-group functions below differ only in their step). */
static int
each_item(PyObject *items, int (*step)(PyObject *item, void *ctx), void *ctx)
{
    PyObject *it = PyObject_GetIter(items);
    if (it == NULL)
        return -1;
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        int rc = step(item, ctx);
        Py_DECREF(item);
        if (rc < 0) {
            Py_DECREF(it);
            return -1;
        }
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

struct accept_ctx {
    PyObject *avail, *tmask, *masks, *order, *running, *gm, *accepted, *rejected, *taken;
};

/* lm_accept's step: one (tid, p, pos) item of a launch request, accepted or rejected. */
static int
accept_one(PyObject *item, void *ctx_)
{
    struct accept_ctx *c = ctx_;
    PyObject *f[3], *bit = NULL, *row = NULL, *w = NULL, *x = NULL, *t = NULL, *m = NULL, *y = NULL;
    PyObject *where = NULL, *now = NULL, *pair = NULL;
    int rc = -1;
    PyObject *fast = unpack(item, 3, f);
    if (fast == NULL)
        return -1;
    PyObject *tid = f[0], *p = f[1], *pos_o = f[2];
    Py_ssize_t pos = position(pos_o);
    if (pos < 0 || (bit = bit_of(pos, pos_o)) == NULL)
        goto done;
    if ((row = item_at(c->order, p)) == NULL || (w = item_at(row, pos_o)) == NULL || (x = item_at(c->avail, p)) == NULL)
        goto done;
    int free_ = bit_is_set(x, pos), lack = 1;
    if (free_ < 0)
        goto done;
    if (free_ && ((t = item_at(c->tmask, tid)) == NULL || (m = item_at(c->masks, w)) == NULL || (lack = lacks(t, m)) < 0))
        goto done;
    if (!free_ || lack) {
        rc = PyList_Append(c->rejected, item);
        goto done;
    }
    if ((y = PyNumber_Xor(x, bit)) == NULL || set_item_at(c->avail, p, y) < 0)
        goto done;
    if ((where = PyTuple_Pack(3, p, pos_o, c->gm)) == NULL || PyDict_SetItem(c->running, tid, where) < 0)
        goto done;
    PyObject *before = PyDict_GetItemWithError(c->taken, p); /* borrowed */
    if (before == NULL && PyErr_Occurred())
        goto done;
    now = before == NULL ? (Py_INCREF(bit), bit) : PyNumber_Or(before, bit);
    if (now == NULL || PyDict_SetItem(c->taken, p, now) < 0)
        goto done;
    if ((pair = PyTuple_Pack(2, tid, w)) == NULL)
        goto done;
    rc = PyList_Append(c->accepted, pair);
done:
    Py_DECREF(fast);
    Py_XDECREF(bit);
    Py_XDECREF(row);
    Py_XDECREF(w);
    Py_XDECREF(x);
    Py_XDECREF(t);
    Py_XDECREF(m);
    Py_XDECREF(y);
    Py_XDECREF(where);
    Py_XDECREF(now);
    Py_XDECREF(pair);
    return rc;
}

/* lm_accept(items, avail, tmask, machine_masks, order, running, gm, accepted, rejected) -> taken */
static PyObject *
lm_accept(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_args("lm_accept", nargs, 9) < 0)
        return NULL;
    struct accept_ctx c = {args[1], args[2], args[3], args[4], args[5], args[6], args[7], args[8], NULL};
    if (!PyDict_Check(c.running) || !PyList_Check(c.accepted) || !PyList_Check(c.rejected)) {
        PyErr_SetString(PyExc_TypeError, "lm_accept: running must be a dict, accepted and rejected lists");
        return NULL;
    }
    if ((c.taken = PyDict_New()) == NULL)
        return NULL;
    if (each_item(args[0], accept_one, &c) < 0) {
        Py_DECREF(c.taken);
        return NULL;
    }
    return c.taken;
}

struct vacate_ctx {
    PyObject *running, *avail, *noted, *base;
};

/* lm_vacate's step: one finished (tid, worker) leaves running; its worker is free and noted for its GM. */
static int
vacate_one(PyObject *item, void *ctx_)
{
    struct vacate_ctx *c = ctx_;
    PyObject *tid = NULL, *entry = NULL, *fast = NULL, *bit = NULL, *j = NULL, *row = NULL, *f[3];
    int rc = -1;
    if ((tid = PySequence_GetItem(item, 0)) == NULL)
        goto done;
    entry = PyDict_GetItemWithError(c->running, tid); /* running.pop(tid) */
    if (entry == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetObject(PyExc_KeyError, tid);
        goto done;
    }
    Py_INCREF(entry);
    if (PyDict_DelItem(c->running, tid) < 0 || (fast = unpack(entry, 3, f)) == NULL)
        goto done;
    Py_ssize_t pos = position(f[1]);
    if (pos < 0 || put_bit_at(c->avail, f[0], pos, f[1], &bit, 1) < 0)
        goto done;
    if ((j = PyNumber_Subtract(f[0], c->base)) == NULL || (row = item_at(c->noted, j)) == NULL)
        goto done;
    rc = put_bit_at(row, f[2], pos, f[1], &bit, 1);
done:
    Py_XDECREF(tid);
    Py_XDECREF(entry);
    Py_XDECREF(fast);
    Py_XDECREF(bit);
    Py_XDECREF(j);
    Py_XDECREF(row);
    return rc;
}

/* lm_vacate(group, running, avail, noted, base) -> None */
static PyObject *
lm_vacate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_args("lm_vacate", nargs, 5) < 0)
        return NULL;
    struct vacate_ctx c = {args[1], args[2], args[3], args[4]};
    if (!PyDict_Check(c.running)) {
        PyErr_SetString(PyExc_TypeError, "lm_vacate: running must be a dict");
        return NULL;
    }
    if (each_item(args[0], vacate_one, &c) < 0)
        return NULL;
    Py_RETURN_NONE;
}

struct release_ctx {
    PyObject *where, *reserved, *avail, *freed;
};

/* gm_release's step: one finished (tid, worker)'s place is freed: out of reserved, into avail. */
static int
release_one(PyObject *item, void *ctx_)
{
    struct release_ctx *c = ctx_;
    PyObject *w = NULL, *place = NULL, *fast = NULL, *bit = NULL, *f[2];
    int rc = -1;
    if ((w = PySequence_GetItem(item, 1)) == NULL || (place = item_at(c->where, w)) == NULL)
        goto done;
    if (PyList_Append(c->freed, place) < 0 || (fast = unpack(place, 2, f)) == NULL)
        goto done;
    Py_ssize_t pos = position(f[1]);
    if (pos < 0 || put_bit_at(c->reserved, f[0], pos, f[1], &bit, 0) < 0)
        goto done;
    rc = put_bit_at(c->avail, f[0], pos, f[1], &bit, 1);
done:
    Py_XDECREF(w);
    Py_XDECREF(place);
    Py_XDECREF(fast);
    Py_XDECREF(bit);
    return rc;
}

/* gm_release(group, where, reserved, avail, freed) -> None */
static PyObject *
gm_release(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_args("gm_release", nargs, 5) < 0)
        return NULL;
    struct release_ctx c = {args[1], args[2], args[3], args[4]};
    if (!PyList_Check(c.freed)) {
        PyErr_SetString(PyExc_TypeError, "gm_release: freed must be a list");
        return NULL;
    }
    if (each_item(args[0], release_one, &c) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* The position gm_take gives a task among the candidates d[0..n) (n > 0, d[n-1] != 0): the highest
 * (min-constraints order) without draw, else random_set_bit's with the stream's random method draw;
 * -1 with an exception set. */
static int64_t
choose(const digit *d, Py_ssize_t n, PyObject *draw)
{
    if (draw == Py_None)
        return (int64_t)(n - 1) * PyLong_SHIFT + (31 - __builtin_clz((unsigned int)d[n - 1]));
    return random_position(d, n, draw);
}

/* Take bit pos of partition p in a GM's view: avail[p] ^= bit, reserved[p] |= bit; (p, pos) or NULL. */
static PyObject *
take(PyObject *avail, PyObject *reserved, PyObject *p, PyObject *a, int64_t pos)
{
    PyObject *pos_o = PyLong_FromLongLong(pos), *bit = NULL, *y = NULL, *result = NULL;
    if (pos_o == NULL || (bit = bit_of((Py_ssize_t)pos, pos_o)) == NULL || (y = PyNumber_Xor(a, bit)) == NULL)
        goto done;
    if (set_item_at(avail, p, y) < 0 || put_bit_at(reserved, p, (Py_ssize_t)pos, pos_o, &bit, 1) < 0)
        goto done;
    result = PyTuple_Pack(2, p, pos_o);
done:
    Py_XDECREF(pos_o);
    Py_XDECREF(bit);
    Py_XDECREF(y);
    return result;
}

/* gm_take(mask, el, eligible_at, groups, rr, avail, reserved, draw) -> (p, pos) | None */
static PyObject *
gm_take(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    if (check_args("gm_take", nargs, 8) < 0)
        return NULL;
    PyObject *mask = args[0], *el = args[1], *eligible_at = args[2], *groups = args[3], *rr = args[4];
    PyObject *avail = args[5], *reserved = args[6], *draw = args[7];
    PyObject *gfast = PySequence_Fast(groups, "gm_take: groups must be a sequence");
    if (gfast == NULL)
        return NULL;
    PyObject *result = NULL;
    digit small[256], *buf = small;
    Py_ssize_t buf_size = 256;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(gfast); k++) {
        PyObject *pair[2];
        PyObject *pfast = unpack(PySequence_Fast_GET_ITEM(gfast, k), 2, pair);
        if (pfast == NULL)
            goto fail;
        PyObject *g = pair[0], *group = pair[1];
        PyObject *start = item_at(rr, g);
        Py_ssize_t i = start == NULL ? -1 : PyNumber_AsSsize_t(start, PyExc_IndexError);
        Py_XDECREF(start);
        Py_ssize_t n = PyObject_Length(group);
        if ((i == -1 && PyErr_Occurred()) || n < 0) {
            Py_DECREF(pfast);
            goto fail;
        }
        for (Py_ssize_t step = 0; step < n; step++) {
            PyObject *p = PySequence_GetItem(group, i), *e = NULL, *a = NULL;
            int found = 0;
            if (p == NULL)
                goto walk_fail;
            i = i + 1 == n ? 0 : i + 1;
            if ((e = item_at(el, p)) == NULL)
                goto walk_fail;
            if (e == Py_None) {
                Py_DECREF(e);
                if ((e = PyObject_CallFunctionObjArgs(eligible_at, el, mask, p, NULL)) == NULL)
                    goto walk_fail;
            }
            if ((a = item_at(avail, p)) == NULL)
                goto walk_fail;
            const digit *da, *de;
            Py_ssize_t na = digits_of(a, &da), ne = digits_of(e, &de);
            if (na < 0 || ne < 0)
                goto walk_fail;
            Py_ssize_t m = na < ne ? na : ne;
            while (m > 0 && !(da[m - 1] & de[m - 1]))
                m--;
            if (m > 0) {
                found = 1;
                if (m > buf_size) {
                    digit *bigger = buf == small ? PyMem_Malloc(m * sizeof(digit)) : PyMem_Realloc(buf, m * sizeof(digit));
                    if (bigger == NULL) {
                        PyErr_NoMemory();
                        goto walk_fail;
                    }
                    buf = bigger;
                    buf_size = m;
                }
                for (Py_ssize_t j = 0; j < m; j++)
                    buf[j] = da[j] & de[j];
                PyObject *next = PyLong_FromSsize_t(i);
                int rc = next == NULL ? -1 : set_item_at(rr, g, next);
                Py_XDECREF(next);
                int64_t pos = rc < 0 ? -1 : choose(buf, m, draw);
                if (pos < 0)
                    goto walk_fail;
                result = take(avail, reserved, p, a, pos);
                if (result == NULL)
                    goto walk_fail;
            }
            Py_DECREF(p);
            Py_DECREF(e);
            Py_DECREF(a);
            if (found) {
                Py_DECREF(pfast);
                goto done;
            }
            continue;
        walk_fail:
            Py_XDECREF(p);
            Py_XDECREF(e);
            Py_XDECREF(a);
            Py_DECREF(pfast);
            goto fail;
        }
        Py_DECREF(pfast);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (buf != small)
        PyMem_Free(buf);
    Py_DECREF(gfast);
    return result;
fail:
    if (buf != small)
        PyMem_Free(buf);
    Py_DECREF(gfast);
    return NULL;
}

static PyMethodDef methods[] = {
    {"lm_accept", (PyCFunction)(void (*)(void))lm_accept, METH_FASTCALL,
     "lm_accept(items, avail, tmask, machine_masks, order, running, gm, accepted, rejected) -> taken: "
     "an LM's validation of a launch request (slots.lm_accept_py)."},
    {"lm_vacate", (PyCFunction)(void (*)(void))lm_vacate, METH_FASTCALL,
     "lm_vacate(group, running, avail, noted, base): an LM frees finished tasks' workers (slots.lm_vacate_py)."},
    {"gm_release", (PyCFunction)(void (*)(void))gm_release, METH_FASTCALL,
     "gm_release(group, where, reserved, avail, freed): a GM frees its finished tasks' workers in its view "
     "(slots.gm_release_py)."},
    {"gm_take", (PyCFunction)(void (*)(void))gm_take, METH_FASTCALL,
     "gm_take(mask, el, eligible_at, groups, rr, avail, reserved, draw) -> (p, pos) | None: a GM's search "
     "of its view for a task's worker, and its taking (slots.gm_take_py)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_slots", "Megha's slot-mode inner loops in C.", -1, methods};

PyMODINIT_FUNC
PyInit__slots(void)
{
    ONE = PyLong_FromLong(1);
    if (ONE == NULL)
        return NULL;
    return PyModule_Create(&module);
}
