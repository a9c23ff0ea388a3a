/* Detail rows of an exchange, straight from its decoded bodies: the native part of
 * tables/sink.py's partitions/errors/records stage and of decoders/entities.py's walk.
 *
 * Nothing here knows about any Kafka API. A plan is compiled once per message version from the
 * schema table (tables/detail_walk.py: one member per field, with the flags the walk needs) and
 * walk(plan, body, ...) visits a decoded body the way entities.walk does — every struct instance,
 * outermost first, its context (topic, topic id, partition, group) inherited by nested structs —
 * without building an Entry per struct. Instead it fills what the sink reads from the entries:
 *
 *   - partitions: (topic or topic id, partition) -> row list (see the P_* slots), merged over
 *     the request's and the response's walks exactly as TableSink._partition_rows merges;
 *   - errors: one tuple per non-zero error code, in wire order (the errors table is rare);
 *   - records: one tuple per non-empty ``records`` field (topic, topic id, partition, bytes,
 *     the struct's aborted_transactions);
 *   - topics: topic id -> name (what _learn_topic_ids learns);
 *   - base_offsets: (topic, partition) -> base offset (produce_base_offsets);
 *   - brokers: the structs (as decoded) with both a ``host`` and a ``port`` scalar (_broker_rows).
 *
 * append_rows(columns, prefix, rows) then appends rows to a table's column lists (a prefix
 * shared by the exchange's rows, then each row's own values): no dict per row; a column given as a
 * bytearray gets typed cells (_typed.c), no Python object per cell.
 *
 * Both are also exported to other extensions through the capsule _C_API (_native.h): the
 * connection engine, once it builds exchanges in C, walks their bodies per exchange the same way.
 *
 * Rules: recursion follows the plan (the schema's nesting), never the data, bounded by MAX_DEPTH;
 * a value of an unexpected type is treated as the Python reference treats it (isinstance checks
 * mirrored); a body that is not a dict yields nothing. The plan is trusted (only plan_of builds
 * one); the bodies are not (the decoder's output from wire bytes). Every reference taken is
 * released on every path; values found are borrowed from the body, which outlives the call.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "_native.h"
#include "_walk.h"
#include "_codes.h"
#include "_record_rows.h"
#include "_spans.h"
#include "_typed.h"

#define MAX_DEPTH WALK_MAX_DEPTH

static PyObject *uuid_type;       /* uuid.UUID */
static PyObject *error_name_func; /* error_codes.error_name */
static PyObject *error_names;     /* its answers, by code (ints only, at most MAX_NAMES) */
#define MAX_NAMES 1024
static PyObject *str_int, *str_dot;
PyObject *walk_aborted_key; /* "aborted_transactions" (_walk.h) */

typedef struct {
    PyObject *topic, *topic_id, *partition, *group; /* borrowed; NULL when unknown */
} Context;

/* error_name(code), asked once per code (a partition row per Produce answer names its code, mostly 0). */
PyObject *
walk_error_name(PyObject *code)
{
    PyObject *name = PyLong_CheckExact(code) ? PyDict_GetItemWithError(error_names, code) : NULL;
    if (name != NULL)
        return Py_NewRef(name);
    if (PyErr_Occurred() || (name = PyObject_CallOneArg(error_name_func, code)) == NULL)
        return NULL;
    if (PyLong_CheckExact(code) && PyDict_GET_SIZE(error_names) < MAX_NAMES &&
        PyDict_SetItem(error_names, code, name) < 0)
        Py_CLEAR(name);
    return name;
}

static long long last_code;
static PyObject *last_name; /* walk_code_name's: last_code's name, or NULL (emptied by setup) */

PyObject *
walk_code_name(long long code)
{
    if (last_name != NULL && code == last_code)
        return Py_NewRef(last_name);
    PyObject *v = PyLong_FromLongLong(code);
    PyObject *name = v ? walk_error_name(v) : NULL;
    Py_XDECREF(v);
    if (name != NULL) {
        Py_XSETREF(last_name, Py_NewRef(name));
        last_code = code;
    }
    return name;
}

typedef struct {
    PyObject *key;   /* member key, or NULL for an array index */
    Py_ssize_t index;
} Step;

typedef struct {
    int response;
    PyObject *partitions, *errors, *records, *topics, *base_offsets, *brokers; /* NULL: not wanted */
    Step path[MAX_DEPTH];
    int depth;
} Walk;

/* The entry path "a.b[0].c" of the struct being visited (entities._walk's path). */
static PyObject *path_of(Walk *w)
{
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (int i = 0; i < w->depth; i++) {
        PyObject *s;
        if (w->path[i].key != NULL) {
            s = i ? PyUnicode_Concat(str_dot, w->path[i].key) : Py_NewRef(w->path[i].key);
        } else {
            s = PyUnicode_FromFormat("[%zd]", w->path[i].index);
        }
        if (s == NULL || PyList_Append(parts, s) < 0) {
            Py_XDECREF(s);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(s);
    }
    PyObject *empty = PyUnicode_New(0, 0);
    PyObject *out = empty ? PyUnicode_Join(empty, parts) : NULL;
    Py_XDECREF(empty);
    Py_DECREF(parts);
    return out;
}

int
walk_is_uuid(PyObject *v)
{
    return uuid_type != NULL && PyObject_TypeCheck(v, (PyTypeObject *)uuid_type);
}

/* The partition row for a struct's key, created with its topic/partition when new (borrowed). */
static PyObject *
walk_partition_row(PyObject *partitions, PyObject *topic, PyObject *topic_id, PyObject *partition)
{
    PyObject *first = (topic != NULL && PyUnicode_GET_LENGTH(topic) > 0) ? topic
                                                                         : (topic_id != NULL ? topic_id : Py_None);
    PyObject *key = PyTuple_Pack(2, first, partition);
    if (key == NULL)
        return NULL;
    PyObject *row = PyDict_GetItemWithError(partitions, key);
    if (row == NULL && !PyErr_Occurred()) {
        row = PyList_New(P_SLOTS);
        if (row != NULL) {
            for (Py_ssize_t i = 0; i < P_SLOTS; i++)
                PyList_SET_ITEM(row, i, Py_NewRef(Py_None));
            PyList_SetItem(row, P_TOPIC, Py_NewRef(topic ? topic : Py_None));
            PyList_SetItem(row, P_TOPIC_ID, Py_NewRef(topic_id ? topic_id : Py_None));
            PyList_SetItem(row, P_PARTITION, Py_NewRef(partition));
            if (PyDict_SetItem(partitions, key, row) < 0)
                Py_CLEAR(row);
            else
                Py_DECREF(row); /* the dict holds it */
        }
    }
    Py_DECREF(key);
    return row;
}

/* The i-th member of ``members`` and its value in the decoded struct ``value``, for the walk's loops over
 * members: 1 with *flags and *v (borrowed) set, 0 to pass it by (``want`` not 0 and its flags hold none of
 * it, or they hold some of ``skip``, or the struct lacks it), -1 on error. */
static int
member_at(PyObject *members, Py_ssize_t i, PyObject *value, long want, long skip, long *flags, PyObject **v)
{
    PyObject *m = PyTuple_GET_ITEM(members, i);
    *flags = PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
    if ((want && !(*flags & want)) || (*flags & skip))
        return 0;
    *v = PyDict_GetItemWithError(value, PyTuple_GET_ITEM(m, 0));
    if (*v != NULL)
        return 1;
    return PyErr_Occurred() ? -1 : 0;
}

/* One scalar of a struct folded into its partition row (TableSink._partition_rows's loop body): a value
 * slot's first value, the response's error code and its name, the records' size. */
static int
walk_merge_value(PyObject *row, long flags, long slot, PyObject *v, int response)
{
    if (slot >= 0 && PyList_GET_ITEM(row, P_VALUES + slot) == Py_None)
        PyList_SetItem(row, P_VALUES + slot, Py_NewRef(v));
    if (response && (flags & M_ERROR_CODE)) {
        PyObject *name = walk_error_name(v);
        if (name == NULL)
            return -1;
        PyList_SetItem(row, P_ERROR_CODE, Py_NewRef(v));
        PyList_SetItem(row, P_ERROR_NAME, name);
    }
    if ((flags & M_RECORDS) && PyBytes_Check(v)) {
        PyObject *size = PyLong_FromSsize_t(PyBytes_GET_SIZE(v));
        if (size == NULL)
            return -1;
        PyList_SetItem(row, P_RECORDS_BYTES + response, size);
    }
    return 0;
}

static int merge_partition(Walk *w, Context *ctx, PyObject *members, PyObject *value)
{
    PyObject *row = walk_partition_row(w->partitions, ctx->topic, ctx->topic_id, ctx->partition);
    if (row == NULL)
        return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(members);
    for (Py_ssize_t i = 0; i < n; i++) {
        long flags;
        PyObject *v;
        int found = member_at(members, i, value, 0, M_STRUCT | M_ARRAY, &flags, &v);
        if (found < 0)
            return -1;
        if (found && walk_merge_value(row, flags, PyLong_AsLong(PyTuple_GET_ITEM(PyTuple_GET_ITEM(members, i), 3)), v,
                                      w->response) < 0)
            return -1;
    }
    return 0;
}

/* topic id -> topic, first name kept (TableSink._learn_topic_ids); the nil id names nothing. */
int
walk_learn_topic(PyObject *topics, PyObject *topic, PyObject *topic_id)
{
    PyObject *number = PyObject_GetAttr(topic_id, str_int);
    if (number == NULL)
        return -1;
    int nonzero = PyObject_IsTrue(number);
    Py_DECREF(number);
    if (nonzero <= 0)
        return nonzero;
    PyObject *found = PyDict_SetDefault(topics, topic_id, topic);
    return found == NULL ? -1 : 0;
}

static int add_error(Walk *w, Context *ctx, PyObject *key, PyObject *code, PyObject *message)
{
    PyObject *path = path_of(w);
    if (path == NULL)
        return -1;
    PyObject *row = Py_BuildValue("(NOOOOOOO)", path, key, code, ctx->topic ? ctx->topic : Py_None,
                                  ctx->topic_id ? ctx->topic_id : Py_None,
                                  ctx->partition ? ctx->partition : Py_None, ctx->group ? ctx->group : Py_None,
                                  message ? message : Py_None);
    if (row == NULL)
        return -1;
    int rc = PyList_Append(w->errors, row);
    Py_DECREF(row);
    return rc;
}

static int add_records(Walk *w, Context *ctx, PyObject *raw, PyObject *value)
{
    PyObject *aborted = PyDict_GetItemWithError(value, walk_aborted_key);
    if (aborted == NULL && PyErr_Occurred())
        return -1;
    PyObject *row = PyTuple_Pack(5, ctx->topic ? ctx->topic : Py_None, ctx->topic_id ? ctx->topic_id : Py_None,
                                 ctx->partition ? ctx->partition : Py_None, raw, aborted ? aborted : Py_None);
    if (row == NULL)
        return -1;
    int rc = PyList_Append(w->records, row);
    Py_DECREF(row);
    return rc;
}

static int walk_struct(Walk *w, PyObject *members, PyObject *value, const Context *parent);

static int walk_child(Walk *w, PyObject *m, PyObject *v, const Context *ctx)
{
    long flags = PyLong_AsLong(PyTuple_GET_ITEM(m, 1));
    PyObject *child = PyTuple_GET_ITEM(m, 2);
    if (w->depth >= MAX_DEPTH) {
        PyErr_SetString(PyExc_RecursionError, "schema nesting deeper than the walk's bound");
        return -1;
    }
    Step *step = &w->path[w->depth++];
    step->key = PyTuple_GET_ITEM(m, 0);
    int rc = 0;
    if (!(flags & M_ARRAY)) {
        rc = walk_struct(w, child, v, ctx);
    } else if (PyList_Check(v)) {
        if (w->depth >= MAX_DEPTH) {
            PyErr_SetString(PyExc_RecursionError, "schema nesting deeper than the walk's bound");
            w->depth--;
            return -1;
        }
        Step *item = &w->path[w->depth++];
        item->key = NULL;
        for (Py_ssize_t i = 0; rc == 0 && i < PyList_GET_SIZE(v); i++) {
            item->index = i;
            PyObject *element = Py_NewRef(PyList_GET_ITEM(v, i));
            rc = walk_struct(w, child, element, ctx);
            Py_DECREF(element);
        }
        w->depth--;
    }
    w->depth--;
    return rc;
}

static int walk_struct(Walk *w, PyObject *members, PyObject *value, const Context *parent)
{
    if (!PyDict_Check(value))
        return 0;
    Context ctx = {parent->topic, parent->topic_id, NULL, parent->group};
    PyObject *message = NULL;
    int has_partition = 0, host_port = 0;
    Py_ssize_t n = PyTuple_GET_SIZE(members);
    /* Scalars first: the struct's context is complete before anything reads it. */
    for (Py_ssize_t i = 0; i < n; i++) {
        long flags;
        PyObject *v;
        int found = member_at(members, i, value, 0, M_STRUCT | M_ARRAY, &flags, &v);
        if (found < 0)
            return -1;
        if (!found)
            continue;
        if ((flags & M_TOPIC_NAME) && PyUnicode_Check(v))
            ctx.topic = v;
        else if ((flags & M_GROUP_ID) && PyUnicode_Check(v))
            ctx.group = v;
        else if ((flags & M_TOPIC_ID) && walk_is_uuid(v))
            ctx.topic_id = v;
        else if ((flags & M_PARTITION) && PyLong_Check(v) && ctx.partition == NULL) {
            ctx.partition = v;
            has_partition = 1;
        }
        if (flags & M_ERROR_MESSAGE)
            message = v;
        host_port |= flags & (M_HOST | M_PORT);
    }
    if (w->brokers != NULL && host_port == (M_HOST | M_PORT) && PyList_Append(w->brokers, value) < 0)
        return -1;
    if (w->topics != NULL && ctx.topic != NULL && ctx.topic_id != NULL && walk_learn_topic(w->topics, ctx.topic, ctx.topic_id) < 0)
        return -1;
    if (has_partition && w->partitions != NULL && (ctx.topic != NULL || ctx.topic_id != NULL)
        && merge_partition(w, &ctx, members, value) < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        long flags;
        PyObject *v;
        int found = member_at(members, i, value, M_ERROR | M_RECORDS | M_BASE_OFFSET, M_STRUCT | M_ARRAY, &flags, &v);
        if (found < 0)
            return -1;
        if (!found)
            continue;
        if ((flags & M_ERROR) && w->errors != NULL) {
            int set = PyObject_IsTrue(v);
            if (set < 0 || (set && add_error(w, &ctx, PyTuple_GET_ITEM(PyTuple_GET_ITEM(members, i), 0), v, message) < 0))
                return -1;
        }
        if ((flags & M_RECORDS) && w->records != NULL && PyBytes_Check(v) && PyBytes_GET_SIZE(v) > 0
            && add_records(w, &ctx, v, value) < 0)
            return -1;
        if ((flags & M_BASE_OFFSET) && w->base_offsets != NULL && has_partition) {
            PyObject *zero = PyLong_FromLong(0);
            int ge = zero ? PyObject_RichCompareBool(v, zero, Py_GE) : -1;
            Py_XDECREF(zero);
            if (ge < 0)
                return -1;
            if (ge) {
                PyObject *key = PyTuple_Pack(2, ctx.topic ? ctx.topic : Py_None, ctx.partition);
                int rc = key ? PyDict_SetItem(w->base_offsets, key, v) : -1;
                Py_XDECREF(key);
                if (rc < 0)
                    return -1;
            }
        }
    }
    /* Then the nested structs, in member order, each with this struct's context. */
    for (Py_ssize_t i = 0; i < n; i++) {
        long flags;
        PyObject *v;
        int found = member_at(members, i, value, M_STRUCT, 0, &flags, &v);
        if (found < 0)
            return -1;
        if (!found)
            continue;
        if (v == Py_None)
            continue;
        Py_INCREF(v);
        int rc = walk_child(w, PyTuple_GET_ITEM(members, i), v, &ctx);
        Py_DECREF(v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static PyObject *or_null(PyObject *o)
{
    return o == Py_None ? NULL : o;
}

/* One body's walk, for Python (walk below) and for C callers (the capsule, _native.h). */
static int walk_body(PyObject *plan, PyObject *body, int response, PyObject *partitions, PyObject *errors,
                     PyObject *records, PyObject *topics, PyObject *base_offsets, PyObject *brokers)
{
    Walk w = {response, partitions, errors, records, topics, base_offsets, brokers, {{0}}, 0};
    if (!PyTuple_Check(plan) || (w.partitions && !PyDict_Check(w.partitions)) || (w.errors && !PyList_Check(w.errors))
        || (w.records && !PyList_Check(w.records)) || (w.topics && !PyDict_Check(w.topics))
        || (w.base_offsets && !PyDict_Check(w.base_offsets)) || (w.brokers && !PyList_Check(w.brokers))) {
        PyErr_SetString(PyExc_TypeError,
                        "walk: a plan tuple; partitions/topics/base_offsets are dicts, errors/records/brokers lists");
        return -1;
    }
    if (uuid_type == NULL || error_name_func == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "walk: setup() was not called");
        return -1;
    }
    Context root = {NULL, NULL, NULL, NULL};
    return walk_struct(&w, plan, body, &root);
}

static PyObject *walk(PyObject *self, PyObject *args)
{
    PyObject *plan, *body, *partitions, *errors, *records, *topics, *base_offsets, *brokers;
    int response;
    if (!PyArg_ParseTuple(args, "OOpOOOOOO:walk", &plan, &body, &response, &partitions, &errors, &records, &topics,
                          &base_offsets, &brokers))
        return NULL;
    if (walk_body(plan, body, response, or_null(partitions), or_null(errors), or_null(records), or_null(topics),
                  or_null(base_offsets), or_null(brokers)) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* append_rows(columns, prefix, rows): columns[i] gets prefix[i] for each row, then row[j] goes to
 * columns[len(prefix) + j]. Lengths are checked once, before anything is appended. */
static PyObject *append_rows(PyObject *self, PyObject *args)
{
    PyObject *columns, *prefix, *rows;
    if (!PyArg_ParseTuple(args, "O!O!O:append_rows", &PyTuple_Type, &columns, &PyTuple_Type, &prefix, &rows))
        return NULL;
    PyObject *seq = PySequence_Fast(rows, "append_rows: rows is a sequence");
    if (seq == NULL)
        return NULL;
    Py_ssize_t k = PyTuple_GET_SIZE(prefix), ncol = PyTuple_GET_SIZE(columns), nrow = PySequence_Fast_GET_SIZE(seq);
    if (!typed_columns(columns)) {
        PyErr_SetString(PyExc_TypeError, "append_rows: every column is a list or a bytearray");
        goto fail;
    }
    for (Py_ssize_t r = 0; r < nrow; r++) {
        PyObject *row = PySequence_Fast_GET_ITEM(seq, r);
        if (!(PyList_Check(row) || PyTuple_Check(row)) || k + PySequence_Fast_GET_SIZE(row) != ncol) {
            PyErr_SetString(PyExc_ValueError, "append_rows: a row's values do not fill the columns");
            goto fail;
        }
    }
    for (Py_ssize_t r = 0; r < nrow; r++) {
        PyObject *row = PySequence_Fast_GET_ITEM(seq, r);
        for (Py_ssize_t c = 0; c < ncol; c++) {
            PyObject *v = c < k ? PyTuple_GET_ITEM(prefix, c) : PySequence_Fast_GET_ITEM(row, c - k);
            if (typed_append(PyTuple_GET_ITEM(columns, c), v) < 0)
                goto fail;
        }
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
fail:
    Py_DECREF(seq);
    return NULL;
}

static PyObject *setup(PyObject *self, PyObject *args)
{
    PyObject *uuid, *names;
    if (!PyArg_ParseTuple(args, "OO:setup", &uuid, &names))
        return NULL;
    if (!PyType_Check(uuid) || !PyCallable_Check(names)) {
        PyErr_SetString(PyExc_TypeError, "setup(uuid.UUID, error_name)");
        return NULL;
    }
    PyObject *cache = PyDict_New();
    if (cache == NULL)
        return NULL;
    Py_XSETREF(uuid_type, Py_NewRef(uuid));
    Py_XSETREF(error_name_func, Py_NewRef(names));
    Py_XSETREF(error_names, cache);
    Py_CLEAR(last_name);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"setup", setup, METH_VARARGS, "setup(uuid.UUID, error_name): the types and names the walk reads."},
    {"walk", walk, METH_VARARGS,
     "walk(plan, body, response, partitions, errors, records, topics, base_offsets, brokers): one body."},
    {"walk_frame", walk_frame, METH_VARARGS,
     "walk_frame(plan, programs, frame, api_key, api_version, response, partitions, records, topics, base_offsets, "
     "brokers, want) -> wanted values | None: walk over a frame's bytes (see _walk_bytes.c)."},
    {"append_rows", append_rows, METH_VARARGS, "append_rows(columns, prefix, rows): rows into column lists (or typed buffers: _typed.c)."},
    {"record_rows", record_rows, METH_VARARGS,
     "record_rows(spec, located, cut, arena, prefix, base_offsets, fetch, batches, target): a message's records "
     "and batches rows, or None (see _record_rows.c)."},
    {"codes", category_codes, METH_O,
     "codes(values) -> (int32 codes, nulls, distinct): a category column's (see _codes.c)."},
    {"bools", typed_bools, METH_O,
     "bools(values) -> bytes or None: a bool column's list as a byte per value (see _typed.c)."},
    {"spans", binary_spans, METH_VARARGS,
     "spans(values, text) -> (data, int64 ends, nulls) or None: a text or bytes column's (see _spans.c)."},
    {"lane_records", lane_records, METH_VARARGS,
     "lane_records(spec, left, start, cut, arena, batches, target, errors, brokers, allowance): the records and "
     "batches rows of a lane's left exchanges from start on (see _record_rows.c)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "kdissect.tables._native",
                                    "Detail rows of an exchange from its decoded bodies (see tables/detail_walk.py).",
                                    -1, methods};

static KdDetailApi c_api = {walk_body, append_rows, typed_append, walk_bytes, part_rows_emit, part_rows_clear};

PyMODINIT_FUNC PyInit__native(void)
{
    str_int = PyUnicode_InternFromString("int");
    walk_aborted_key = PyUnicode_InternFromString("aborted_transactions");
    str_dot = PyUnicode_InternFromString(".");
    if (str_int == NULL || walk_aborted_key == NULL || str_dot == NULL)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    PyObject *capsule = PyCapsule_New(&c_api, KD_DETAIL_CAPSULE, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "_C_API", capsule) < 0) {
        Py_XDECREF(capsule);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
