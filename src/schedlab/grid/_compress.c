/* Compression of a conservative-backfilling schedule, compiled.
 *
 * The same pass as schedlab.grid.site.ConservativeSite._compress, step for step:
 * the same freed regions, the same bounds and prunes, the same order of
 * windows tried, the same floating-point operations in the same order, so the
 * same reservations bit for bit (tests/grid/test_compiled.py runs both on the
 * same workloads and compares every reservation made). Read the Python method
 * for the why of each step; comments here only say where the two differ in
 * form.
 *
 * Why compiled: under heavy duplication a compression moves a reservation as a
 * "wave" down a queue of hundreds of jobs, one interpreted step of about 8 us
 * per moved job (reports/grid/README.md, "Speed"); 51.6 M moves in a run of the
 * paper's size cannot fit in a minute that way.
 *
 * Differences in form only:
 *  - the profile is the Python site's own `times` list and `free` bytearray,
 *    read and changed in place (no copy in or out); the masks the Python
 *    profile caches are replaced by direct scans of the bytes, which give the
 *    same answers; the caller clears the Python profile's mask cache after a
 *    pass that moved a job;
 *  - regions live in an array and lists hold their indices; a region's
 *    measured runs (size -> longest run) are a short linked list.
 *  - a queue row (reservation, seq, size, estimate, entry) held by the queue
 *    alone is given its new reservation in place instead of being rebuilt
 *    (no one else can see it: the same trick CPython's own iterators use).
 * Only sites of at most 255 processors (one byte a segment) come here; wider
 * profiles use the Python pass.
 *
 * Also here, for the submissions and clean-ups between passes: Profile.earliest,
 * Profile.add and Profile.merge on the same narrow profile (schedlab.grid.profile
 * calls them when the module was built).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

/* schedlab.grid.site._SLACK; exported as SLACK, and a test checks the two agree */
#define SLACK 1e-6
#define NONE (-1)

typedef struct {
    double a, b;
    long cap;
    double far_run;
    int is_far;
    Py_ssize_t runs; /* head of this region's measured runs, or NONE */
} Region;

typedef struct {
    long size;
    double run;
    Py_ssize_t next;
} Run;

typedef struct {
    Py_ssize_t *items;
    Py_ssize_t n, cap;
} IdList;

typedef struct {
    /* the profile */
    PyObject *times; /* list of float */
    PyObject *free;  /* bytearray */
    /* regions and their runs */
    Region *regions;
    Py_ssize_t nregions, cap_regions;
    Run *runs;
    Py_ssize_t nruns, cap_runs;
    Py_ssize_t found;
} State;

/* -- small helpers ------------------------------------------------------------------------- */

static inline double getd(PyObject *o) {
    if (PyFloat_CheckExact(o)) return PyFloat_AS_DOUBLE(o);
    return PyFloat_AsDouble(o);
}

#define T(st, k) getd(PyList_GET_ITEM((st)->times, (k)))
#define NT(st) PyList_GET_SIZE((st)->times)
#define FREE(st) ((unsigned char *)PyByteArray_AS_STRING((st)->free))

static int idlist_push(IdList *l, Py_ssize_t v) {
    if (l->n == l->cap) {
        Py_ssize_t cap = l->cap ? 2 * l->cap : 16;
        Py_ssize_t *items = PyMem_Realloc(l->items, cap * sizeof(Py_ssize_t));
        if (!items) {
            PyErr_NoMemory();
            return -1;
        }
        l->items = items;
        l->cap = cap;
    }
    l->items[l->n++] = v;
    return 0;
}

static int idlist_insert(IdList *l, Py_ssize_t at, Py_ssize_t v) {
    if (idlist_push(l, v) < 0) return -1;
    memmove(l->items + at + 1, l->items + at, (l->n - 1 - at) * sizeof(Py_ssize_t));
    l->items[at] = v;
    return 0;
}

static void idlist_remove(IdList *l, Py_ssize_t v) {
    for (Py_ssize_t k = 0; k < l->n; k++) {
        if (l->items[k] == v) {
            memmove(l->items + k, l->items + k + 1, (l->n - k - 1) * sizeof(Py_ssize_t));
            l->n--;
            return;
        }
    }
}

static Py_ssize_t new_region(State *st, double a, double b, long cap) {
    if (st->nregions == st->cap_regions) {
        Py_ssize_t cap_r = st->cap_regions ? 2 * st->cap_regions : 64;
        Region *r = PyMem_Realloc(st->regions, cap_r * sizeof(Region));
        if (!r) {
            PyErr_NoMemory();
            return NONE;
        }
        st->regions = r;
        st->cap_regions = cap_r;
    }
    Region *g = &st->regions[st->nregions];
    g->a = a;
    g->b = b;
    g->cap = cap;
    g->far_run = 0.0;
    g->is_far = 0;
    g->runs = NONE;
    return st->nregions++;
}

/* The run recorded for `size` in region `g`, or NULL. */
static Run *get_run(State *st, Py_ssize_t g, long size) {
    for (Py_ssize_t k = st->regions[g].runs; k != NONE; k = st->runs[k].next) {
        if (st->runs[k].size == size) return &st->runs[k];
    }
    return NULL;
}

static int set_run(State *st, Py_ssize_t g, long size, double run) {
    Run *found = get_run(st, g, size);
    if (found) {
        found->run = run;
        return 0;
    }
    if (st->nruns == st->cap_runs) {
        Py_ssize_t cap = st->cap_runs ? 2 * st->cap_runs : 256;
        Run *r = PyMem_Realloc(st->runs, cap * sizeof(Run));
        if (!r) {
            PyErr_NoMemory();
            return -1;
        }
        st->runs = r;
        st->cap_runs = cap;
    }
    Run *r = &st->runs[st->nruns];
    r->size = size;
    r->run = run;
    r->next = st->regions[g].runs;
    st->regions[g].runs = st->nruns++;
    return 0;
}

/* bisect.bisect_left / bisect_right on the times list, from index lo. */
static Py_ssize_t bisect_left_t(State *st, double x, Py_ssize_t lo) {
    Py_ssize_t hi = NT(st);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (T(st, mid) < x) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

static Py_ssize_t bisect_right_t(State *st, double x, Py_ssize_t lo) {
    Py_ssize_t hi = NT(st);
    while (lo < hi) {
        Py_ssize_t mid = (lo + hi) / 2;
        if (x < T(st, mid)) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* -- profile queries (Profile.max_free, longest_run, earliest_move) ------------------------- */

static long max_free(State *st, double a, double b) {
    Py_ssize_t i = bisect_right_t(st, a, 0) - 1;
    Py_ssize_t j = bisect_left_t(st, b, i);
    unsigned char *free = FREE(st);
    if (j <= i) return free[i];
    unsigned char m = 0;
    for (Py_ssize_t k = i; k < j; k++)
        if (free[k] > m) m = free[k];
    return m;
}

static double longest_run(State *st, double a, double b, long size) {
    unsigned char *free = FREE(st);
    Py_ssize_t n = NT(st);
    Py_ssize_t k = bisect_right_t(st, a, 0) - 1;
    Py_ssize_t last = bisect_left_t(st, b, 0);
    if (free[k] >= size) {
        while (k > 0 && free[k - 1] >= size) k--; /* mask.rfind(0, 0, k) + 1 */
    } else {
        while (k < last && free[k] < size) k++; /* mask.find(1, k, last) */
        if (k >= last) return 0.0;
    }
    double best = 0.0;
    for (;;) {
        Py_ssize_t end = k;
        while (end < n && free[end] >= size) end++; /* mask.find(0, k) */
        if (end == n) return INFINITY;
        double len = T(st, end) - T(st, k);
        if (len > best) best = len;
        k = end;
        while (k < last && free[k] < size) k++; /* mask.find(1, end, last) */
        if (k >= last) return best;
    }
}

/* Profile.earliest_move; returns 1 and sets *out (and st->found) when a start was found. */
static int earliest_move(State *st, double lo, double a, double hi, long size, double claim, double duration,
                         double *out) {
    unsigned char *free = FREE(st);
    Py_ssize_t n = NT(st);
    Py_ssize_t j = bisect_left_t(st, a, 0) - 1;
    double start;
    if (j >= 0 && free[j] >= size) {
        Py_ssize_t k = j;
        while (k > 0 && free[k - 1] >= size) k--; /* mask.rfind(0, 0, j) + 1 */
        start = T(st, k);
        if (start < lo) {
            start = lo;
            j = bisect_right_t(st, lo, k) - 1;
        } else {
            j = k;
        }
    } else {
        start = a;
        if (j + 1 < n && T(st, j + 1) == a) j += 1;
    }
    if (start >= hi) return 0;
    for (;;) {
        if (free[j] < size) {
            while (j < n && free[j] < size) j++;
            if (j == n) return 0;
            start = T(st, j);
            if (start >= hi) return 0;
        }
        double end = start + duration;
        if (end > claim) end = claim;
        Py_ssize_t k = j;
        while (k < n && free[k] >= size) k++;
        if (k == n || T(st, k) >= end) {
            st->found = j;
            *out = start;
            return 1;
        }
        j = k;
    }
}

/* -- profile update (Profile.shift) --------------------------------------------------------- */

/* Make `t` a breakpoint at index i (a new segment copying the one before) unless it is one. */
static int ensure_breakpoint(State *st, Py_ssize_t i, double t, Py_ssize_t *n) {
    if (i < *n && T(st, i) == t) return 0;
    PyObject *f = PyFloat_FromDouble(t);
    if (!f) return -1;
    int rc = PyList_Insert(st->times, i, f);
    Py_DECREF(f);
    if (rc < 0) return -1;
    if (PyByteArray_Resize(st->free, *n + 1) < 0) return -1;
    unsigned char *free = FREE(st);
    memmove(free + i + 1, free + i, *n - i);
    free[i] = free[i - 1];
    *n += 1;
    return 0;
}

static long shift(State *st, double old, double new, double duration, long size, Py_ssize_t at, int *err) {
    double p1 = new + duration;
    double p2 = old;
    if (p1 > p2) {
        double x = p1;
        p1 = p2;
        p2 = x;
    }
    double p3 = old + duration;
    Py_ssize_t n = NT(st);
    Py_ssize_t i0 = at < 0 ? bisect_left_t(st, new, 0) : (T(st, at) == new ? at : at + 1);
    if (ensure_breakpoint(st, i0, new, &n) < 0) goto fail;
    Py_ssize_t i1 = bisect_left_t(st, p1, i0);
    if (ensure_breakpoint(st, i1, p1, &n) < 0) goto fail;
    Py_ssize_t i2 = bisect_left_t(st, p2, i1);
    if (ensure_breakpoint(st, i2, p2, &n) < 0) goto fail;
    Py_ssize_t i3 = bisect_left_t(st, p3, i2);
    if (ensure_breakpoint(st, i3, p3, &n) < 0) goto fail;
    unsigned char *free = FREE(st);
    for (Py_ssize_t k = i0; k < i1; k++) free[k] = (unsigned char)(free[k] - size);
    if (i3 <= i2) return free[i2];
    long cap = 0;
    for (Py_ssize_t k = i2; k < i3; k++) {
        free[k] = (unsigned char)(free[k] + size);
        if (free[k] > cap) cap = free[k];
    }
    return cap;
fail:
    *err = 1;
    return 0;
}

/* -- regions (_add_region) ------------------------------------------------------------------ */

static Py_ssize_t add_region(State *st, IdList *regions, double a, double b, long cap) {
    Region *R = st->regions;
    if (regions->n == 0 || R[regions->items[regions->n - 1]].b < a) {
        Py_ssize_t g = new_region(st, a, b, cap);
        if (g == NONE || idlist_push(regions, g) < 0) return NONE;
        return g;
    }
    Py_ssize_t j = regions->n;
    while (j && R[regions->items[j - 1]].a > b) j--;
    Py_ssize_t i = j;
    while (i && R[regions->items[i - 1]].b >= a) {
        i--;
        Region *merged = &R[regions->items[i]];
        if (merged->a < a) a = merged->a;
        if (merged->b > b) b = merged->b;
        if (merged->cap > cap) cap = merged->cap;
        merged->cap = 0;
    }
    Py_ssize_t g = new_region(st, a, b, cap); /* may move st->regions */
    if (g == NONE) return NONE;
    /* regions[i:j] = [g] */
    if (j == i) {
        if (idlist_insert(regions, i, g) < 0) return NONE;
    } else {
        regions->items[i] = g;
        memmove(regions->items + i + 1, regions->items + j, (regions->n - j) * sizeof(Py_ssize_t));
        regions->n -= j - i - 1;
    }
    return g;
}

/* A region's run for `size`, measured (and recorded) if not yet known; NAN on error. */
static double run_of(State *st, Py_ssize_t g, long size) {
    Run *r = get_run(st, g, size);
    if (r) return r->run;
    double run = longest_run(st, st->regions[g].a, st->regions[g].b, size);
    if (set_run(st, g, size, run) < 0) return NAN;
    return run;
}

/* -- the pass ------------------------------------------------------------------------------- */

static PyObject *str_reservation;

/* (r1, seq1) > (r2, seq2) for queue items; seqs are distinct ints. */
static int item_after(PyObject *item, double r2, PyObject *seq2, int *err) {
    double r1 = getd(PyTuple_GET_ITEM(item, 0));
    if (r1 != r2) return r1 > r2;
    int c = PyObject_RichCompareBool(PyTuple_GET_ITEM(item, 1), seq2, Py_GT);
    if (c < 0) *err = 1;
    return c > 0;
}

PyDoc_STRVAR(compress_doc,
             "compress(queue, times, free, now, lo, hi, on_reserve) -> moves\n\n"
             "ConservativeSite._compress on a site's queue and narrow profile (times list, free bytearray), "
             "in place. Returns the number of jobs moved.");

static PyObject *compress(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 7) {
        PyErr_SetString(PyExc_TypeError, "compress takes 7 arguments");
        return NULL;
    }
    PyObject *queue = args[0];
    State st = {0};
    st.times = args[1];
    st.free = args[2];
    double now = PyFloat_AsDouble(args[3]);
    double lo = PyFloat_AsDouble(args[4]);
    double hi = PyFloat_AsDouble(args[5]);
    PyObject *on_reserve = args[6];
    if (PyErr_Occurred()) return NULL;
    if (!PyList_CheckExact(queue) || !PyList_CheckExact(st.times) || !PyByteArray_CheckExact(st.free)) {
        PyErr_SetString(PyExc_TypeError, "compress needs a list queue, a list of times and a bytearray of free counts");
        return NULL;
    }
    if (PyList_GET_SIZE(st.times) != PyByteArray_GET_SIZE(st.free) || PyList_GET_SIZE(st.times) == 0) {
        PyErr_SetString(PyExc_ValueError, "times and free differ in length");
        return NULL;
    }
    st.found = 0;
    IdList regions = {0}, far = {0}, pending = {0}, scratch = {0};
    long moves = 0;
    int err = 0;

    Py_ssize_t n = PyList_GET_SIZE(queue);
    /* bisect_right(queue, (lo, inf)): the first job reserved after lo */
    Py_ssize_t i = 0;
    {
        Py_ssize_t a = 0, b = n;
        while (a < b) {
            Py_ssize_t mid = (a + b) / 2;
            PyObject *item = PyList_GET_ITEM(queue, mid);
            if (!PyTuple_CheckExact(item) || PyTuple_GET_SIZE(item) != 5) {
                PyErr_SetString(PyExc_TypeError, "queue items must be (reservation, seq, size, estimate, entry)");
                goto error;
            }
            if (lo < getd(PyTuple_GET_ITEM(item, 0))) b = mid;
            else a = mid + 1;
        }
        i = a;
    }
    if (i == n) return PyLong_FromLong(0); /* no job reserved after the freed processors */
    Py_ssize_t g0 = new_region(&st, lo, hi, max_free(&st, lo, hi));
    if (g0 == NONE || idlist_push(&regions, g0) < 0 || idlist_push(&pending, g0) < 0) goto error;
    long far_cap = 0;
    long max_cap = st.regions[g0].cap;
    double horizon = -INFINITY;
    double run1 = -INFINITY;
    while (i < n) {
        /* Most jobs are passed over at the first tests: read the size first (a small int, shared
           and hot in cache) and the job's other fields only when it could move. */
        PyObject *row = PyList_GET_ITEM(queue, i);
        i++;
        if (!PyTuple_CheckExact(row) || PyTuple_GET_SIZE(row) != 5) {
            PyErr_SetString(PyExc_TypeError, "queue items must be (reservation, seq, size, estimate, entry)");
            goto error;
        }
        long size = PyLong_AsLong(PyTuple_GET_ITEM(row, 2));
        if (size == -1 && PyErr_Occurred()) goto error;
        if (size > max_cap) continue;
        double r = getd(PyTuple_GET_ITEM(row, 0));
        double d = getd(PyTuple_GET_ITEM(row, 3));
        if ((r == -1.0 || d == -1.0) && PyErr_Occurred()) goto error;
        PyObject *seq = PyTuple_GET_ITEM(row, 1);
        PyObject *e = PyTuple_GET_ITEM(row, 4);
        if (r > horizon) {
            if (pending.n && d > run1) {
                scratch.n = 0;
                for (Py_ssize_t k = 0; k < pending.n; k++) {
                    Py_ssize_t g = pending.items[k];
                    long cap = st.regions[g].cap;
                    if (cap < size) {
                        if (cap && idlist_push(&scratch, g) < 0) goto error;
                        continue;
                    }
                    double run = run_of(&st, g, 1);
                    if (isnan(run)) goto error;
                    if (run + SLACK > run1) run1 = run + SLACK;
                    if (st.regions[g].b + run + SLACK > horizon) horizon = st.regions[g].b + run + SLACK;
                }
                IdList swap = pending;
                pending = scratch;
                scratch = swap;
            }
            if (r > horizon && d > run1) continue;
        }
        double best = r;
        Py_ssize_t used = NONE;
        int graduated = 0;
        for (Py_ssize_t k = 0; k < regions.n; k++) {
            Py_ssize_t g = regions.items[k];
            double a = st.regions[g].a;
            if (a >= r) break;
            if (st.regions[g].cap < size) continue;
            double b = st.regions[g].b;
            double gap = r - b;
            if (gap > SLACK) {
                double run = run_of(&st, g, 1);
                if (isnan(run)) goto error;
                if (gap > run + SLACK) {
                    graduated = 1;
                    if (d > run + SLACK) continue;
                }
                if (size != 1) {
                    run = run_of(&st, g, size);
                    if (isnan(run)) goto error;
                    if (d > run + SLACK && gap > run + SLACK) continue;
                }
            }
            double lo_t = a - d > now ? a - d : now;
            if (b > best) b = best;
            if (lo_t < b) {
                double t;
                if (earliest_move(&st, lo_t, a, b, size, r, d, &t)) {
                    best = t;
                    used = g;
                }
            }
        }
        if (size <= far_cap) {
            for (Py_ssize_t k = 0; k < far.n; k++) {
                Py_ssize_t g = far.items[k];
                if (d > st.regions[g].far_run) break;
                if (st.regions[g].cap < size) continue;
                double run = run_of(&st, g, size);
                if (isnan(run)) goto error;
                if (d > run + SLACK) continue;
                double a = st.regions[g].a;
                double b = st.regions[g].b < best ? st.regions[g].b : best;
                double lo_t = a - d > now ? a - d : now;
                double t;
                if (lo_t < b && earliest_move(&st, lo_t, a, b, size, r, d, &t)) {
                    best = t;
                    used = g;
                } else if (run != INFINITY) {
                    if (set_run(&st, g, size, longest_run(&st, a, st.regions[g].b, size)) < 0) goto error;
                }
            }
        }
        if (graduated) {
            Py_ssize_t kept = 0;
            for (Py_ssize_t k = 0; k < regions.n; k++) {
                Py_ssize_t g = regions.items[k];
                Run *run = get_run(&st, g, 1);
                Region *R = &st.regions[g];
                if (run && R->a < r && r - R->b > run->run + SLACK) {
                    R->far_run = run->run + SLACK;
                    R->is_far = 1;
                    if (R->cap > far_cap) far_cap = R->cap;
                    /* insort(far, region, key=-far_run): after every region with a run as long */
                    Py_ssize_t a = 0, b = far.n;
                    while (a < b) {
                        Py_ssize_t mid = (a + b) / 2;
                        if (-R->far_run < -st.regions[far.items[mid]].far_run) b = mid;
                        else a = mid + 1;
                    }
                    if (idlist_insert(&far, a, g) < 0) goto error;
                } else {
                    regions.items[kept++] = g;
                }
            }
            regions.n = kept;
        }
        if (best == r) continue;
        double t = best;
        long cap = shift(&st, r, t, d, size, st.found, &err);
        if (err) goto error;
        Region *U = &st.regions[used];
        if (t <= U->a && (t + d < r ? t + d : r) >= U->b) U->cap -= size;
        else U->cap = max_free(&st, U->a, U->b);
        if (!U->cap) idlist_remove(U->is_far ? &far : &regions, used);
        /* e.reservation = t; the queue item replaced, moved up past the jobs now reserved after it */
        PyObject *tf = PyFloat_FromDouble(t);
        if (!tf) goto error;
        if (PyObject_SetAttr(e, str_reservation, tf) < 0) {
            Py_DECREF(tf);
            goto error;
        }
        Py_ssize_t k = i - 1;
        PyObject **ob = ((PyListObject *)queue)->ob_item;
        PyObject *item;
        if (Py_REFCNT(row) == 1) {
            /* Held by the queue alone, so no one can see it change: give it the new reservation
               in place rather than allocate a new row (a job moves once per pass). */
            PyObject *prev = PyTuple_GET_ITEM(row, 0);
            Py_INCREF(tf);
            PyTuple_SET_ITEM(row, 0, tf);
            Py_DECREF(prev);
            item = row;
        } else {
            item = PyTuple_Pack(5, tf, seq, PyTuple_GET_ITEM(row, 2), PyTuple_GET_ITEM(row, 3), e);
            if (!item) {
                Py_DECREF(tf);
                goto error;
            }
        }
        /* `seq` and `e` stay alive: `item` holds them */
        int after = k ? item_after(ob[k - 1], t, seq, &err) : 0;
        Py_ssize_t to = k;
        if (!err && after) {
            /* insort(queue, item, hi=k) after removing queue[k]: the first of queue[:k] after it */
            Py_ssize_t a = 0, b = k;
            while (a < b) {
                Py_ssize_t mid = (a + b) / 2;
                int c = item_after(ob[mid], t, seq, &err);
                if (err) break;
                if (c) b = mid;
                else a = mid + 1;
            }
            to = a;
        }
        if (err) {
            if (item != row) Py_DECREF(item);
            Py_DECREF(tf);
            goto error;
        }
        memmove(ob + to + 1, ob + to, (k - to) * sizeof(PyObject *));
        ob[to] = item;
        if (item != row) Py_DECREF(row);
        moves++;
        if (on_reserve != Py_None) {
            PyObject *res = PyObject_CallFunctionObjArgs(on_reserve, e, tf, NULL);
            if (!res) {
                Py_DECREF(tf);
                goto error;
            }
            Py_DECREF(res);
        }
        Py_DECREF(tf);
        double fa = t + d > r ? t + d : r;
        double fb = r + d;
        if (fa < fb) {
            Py_ssize_t g = add_region(&st, &regions, fa, fb, cap);
            if (g == NONE) goto error;
            if (cap > max_cap) max_cap = cap;
            if (idlist_push(&pending, g) < 0) goto error;
        }
    }
    PyMem_Free(st.regions);
    PyMem_Free(st.runs);
    PyMem_Free(regions.items);
    PyMem_Free(far.items);
    PyMem_Free(pending.items);
    PyMem_Free(scratch.items);
    return PyLong_FromLong(moves);
error:
    PyMem_Free(st.regions);
    PyMem_Free(st.runs);
    PyMem_Free(regions.items);
    PyMem_Free(far.items);
    PyMem_Free(pending.items);
    PyMem_Free(scratch.items);
    return NULL;
}

/* Profile.earliest and Profile.add, for the submissions between passes. */

/* The (times, free, x, y, z) arguments of earliest and add: checks them and points `st` at the profile. */
static int open_profile(const char *name, PyObject *const *args, Py_ssize_t nargs, State *st) {
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "%s takes 5 arguments", name);
        return -1;
    }
    PyObject *times = args[0], *free = args[1];
    st->times = times;
    st->free = free;
    if (!PyList_CheckExact(times) || !PyByteArray_CheckExact(free)) {
        PyErr_SetString(PyExc_TypeError, "a narrow profile is a list of times and a bytearray of free counts");
        return -1;
    }
    if (PyList_GET_SIZE(times) != PyByteArray_GET_SIZE(free) || PyList_GET_SIZE(times) == 0) {
        PyErr_SetString(PyExc_ValueError, "times and free differ in length");
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(earliest_doc,
             "earliest(times, free, now, size, duration) -> float\n\n"
             "Profile.earliest on a narrow profile: the earliest t >= now with `size` free on [t, t + duration).");

static PyObject *earliest(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    State st = {0};
    if (open_profile("earliest", args, nargs, &st) < 0) return NULL;
    double now = PyFloat_AsDouble(args[2]);
    long size = PyLong_AsLong(args[3]);
    double duration = PyFloat_AsDouble(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (duration <= 0) return PyFloat_FromDouble(now);
    unsigned char *free = FREE(&st);
    Py_ssize_t n = NT(&st);
    Py_ssize_t j = bisect_right_t(&st, now, 0) - 1;
    if (j < 0) {
        PyErr_SetString(PyExc_ValueError, "now lies before the profile's first breakpoint");
        return NULL;
    }
    double start = now;
    for (;;) {
        if (free[j] < size) {
            while (j < n && free[j] < size) j++;
            if (j == n) {
                PyErr_Format(PyExc_ValueError, "no room for %ld processors at any time", size);
                return NULL;
            }
            start = T(&st, j);
        }
        Py_ssize_t k = j;
        while (k < n && free[k] >= size) k++;
        if (k == n || T(&st, k) >= start + duration) return PyFloat_FromDouble(start);
        j = k;
    }
}

PyDoc_STRVAR(add_doc,
             "add(times, free, start, end, delta)\n\n"
             "Profile.add on a narrow profile, in place: `delta` more free processors on [start, end).");

static PyObject *add(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    State st = {0};
    if (open_profile("add", args, nargs, &st) < 0) return NULL;
    double start = PyFloat_AsDouble(args[2]);
    double end = PyFloat_AsDouble(args[3]);
    long delta = PyLong_AsLong(args[4]);
    if (PyErr_Occurred()) return NULL;
    if (!(end > start)) Py_RETURN_NONE;
    Py_ssize_t n = NT(&st);
    Py_ssize_t i = bisect_left_t(&st, start, 0);
    if (i == 0 && T(&st, 0) != start) {
        PyErr_SetString(PyExc_ValueError, "start lies before the profile's first breakpoint");
        return NULL;
    }
    if (ensure_breakpoint(&st, i, start, &n) < 0) return NULL;
    Py_ssize_t j = bisect_left_t(&st, end, i);
    if (ensure_breakpoint(&st, j, end, &n) < 0) return NULL;
    unsigned char *free = FREE(&st);
    for (Py_ssize_t k = i; k < j; k++) {
        long v = free[k] + delta;
        if (v < 0 || v > 255) {
            PyErr_Format(PyExc_ValueError, "adding %ld would leave %ld free processors at a breakpoint", delta, v);
            return NULL;
        }
    }
    for (Py_ssize_t k = i; k < j; k++) free[k] = (unsigned char)(free[k] + delta);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(merge_doc,
             "merge(times, free)\n\n"
             "Profile.merge on a narrow profile, in place: drop the breakpoints where the free count does not change.");

static PyObject *merge(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 2 || !PyList_CheckExact(args[0]) || !PyByteArray_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "merge needs a list of times and a bytearray of free counts");
        return NULL;
    }
    PyObject *times = args[0], *free_obj = args[1];
    Py_ssize_t n = PyList_GET_SIZE(times);
    if (n != PyByteArray_GET_SIZE(free_obj) || n == 0) {
        PyErr_SetString(PyExc_ValueError, "times and free differ in length");
        return NULL;
    }
    unsigned char *free = (unsigned char *)PyByteArray_AS_STRING(free_obj);
    PyObject **ob = ((PyListObject *)times)->ob_item;
    Py_ssize_t m = 1;
    for (Py_ssize_t k = 1; k < n; k++) {
        if (free[k] != free[k - 1]) {
            /* kept: moves down over the dropped ones, whose references the slice deletion below
               releases once they have all been moved to the end */
            PyObject *x = ob[m];
            ob[m] = ob[k];
            ob[k] = x;
            free[m] = free[k];
            m++;
        }
    }
    if (m < n) {
        if (PyList_SetSlice(times, m, n, NULL) < 0) return NULL;
        if (PyByteArray_Resize(free_obj, m) < 0) return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"compress", (PyCFunction)(void (*)(void))compress, METH_FASTCALL, compress_doc},
    {"merge", (PyCFunction)(void (*)(void))merge, METH_FASTCALL, merge_doc},
    {"earliest", (PyCFunction)(void (*)(void))earliest, METH_FASTCALL, earliest_doc},
    {"add", (PyCFunction)(void (*)(void))add, METH_FASTCALL, add_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_compress",
    "Compiled compression pass of conservative backfilling (schedlab.grid.site).", -1, methods,
};

PyMODINIT_FUNC PyInit__compress(void) {
    str_reservation = PyUnicode_InternFromString("reservation");
    if (!str_reservation) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    if (PyModule_AddObject(m, "SLACK", PyFloat_FromDouble(SLACK)) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
