/* The detail rows of an exchange the lane paired (kafka/_pairing.c), for a run whose table sink writes
 * more than the exchanges table: the native twin of tables/sink.py's _walked_details and of the
 * request_params row of tables/details.py, with no Exchange, KafkaMessage or row dict per exchange.
 *
 * Per exchange: both frames walked in their bytes by the table sink's detail walk (tables/_walk_bytes.c,
 * through its capsule, _native.h, with the plans tables/detail_walk.py compiles per message version and
 * the decoder's programs), no body built; where that walk declines (an error code, tagged fields, a
 * broker... its header says which), both bodies decoded by the decoder's C path (decode_frame) and walked
 * by the walk over decoded bodies (tables/_native.c) with the same plans. The walk also gives the exchanges row its
 * error columns and throttle time as the sink's _walked_details does (so a response the exchange scan
 * leaves, with tagged fields, is taken here), and then, into the columns of the current piece
 * (tables/detail_walk.py's LaneParts: lists, and typed buffers for integer columns, tables/_typed.c):
 *   - the partitions rows (merged per topic-partition by the walk: the bytes walk's as machine values,
 *     tables/_part_rows.c, written by its rows_emit), in PARTITION_COLUMNS order, unless the api is
 *     cluster-state traffic (``no_partitions``);
 *   - the request_params row of an api in ``params_apis``: the request body's ``params_fields``;
 *   - the topic ids the walk learns (first name kept, as the sink keeps them);
 *   - one ``left`` tuple for an exchange with error codes, brokers or records that the sink reads (the
 *     spec's ``reads``): what the sink still builds per exchange (errors rows, brokers rows, records and
 *     batches rows); records not read are not collected, their bytes never copied;
 *   - for each topic id learned and each ``left`` tuple, the index of the segment that completed the
 *     exchange in the lanes' run (``topics_at``, ``left_at``): what an engine that places what these
 *     teach in capture order (the Spark tasks, engines/partition.py) reads, feeding segments in batches.
 *
 * Rules:
 * - Nothing here is per API: which apis go back to the session (``handed_back``: those whose detail
 *   tables read whole bodies, group_events, txn_events, metadata_partitions), which have no
 *   partitions rows and which a request_params row are sets from the registries, given in the spec.
 * - A frame the decoder's C path leaves (None) hands the pairing back before anything changes: the
 *   session then decodes it and reports what Python reports.
 * - Memory and time: one exchange's bodies at a time; the walk's own bounds (MAX_DEPTH, the plan).
 */
#include "_details.h"

#include <string.h>

#include "../tables/_native.h"

static PyObject *str_throttle; /* "throttle_time_ms" */
static PyObject *want_throttle; /* (str_throttle,): what the bytes walk reads of a response's top level */

#define RECENT 64
typedef struct {
    long id;
    PyObject *plan;
} Recent;

static struct {
    PyObject *spec; /* the spec tuple, as given */
    PyObject *decode, *plan_for, *new_piece, *params_fields;
    KeySet handed_back, no_partitions, params_apis;
    int reads_errors, reads_brokers, reads_records; /* what the sink reads of a left tuple */
    PyObject *plans; /* (api_key << 17 | version << 1 | response) -> plan, as met */
    Recent recent[RECENT]; /* the plans met, by id (borrowed from plans) */
    PyObject *partitions, *errors, *request_records, *response_records, *base_offsets, *brokers; /* reused */
    PartRows rows; /* the bytes walk's partition rows (tables/_part_rows.h; reused) */
    PyObject *learned; /* the topic ids the bytes walk learned, first name kept (reused) */
    const KdDetailApi *walk;
} d;

/* spec: (decode_frame, plan_for, new_piece, handed_back, no_partitions, params_apis, params_fields,
 * (errors, brokers, records): whether the sink reads each of a left tuple) */
int
details_read(PyObject *spec)
{
    if (spec == d.spec)
        return 0;
    if (d.walk == NULL && (d.walk = PyCapsule_Import(KD_DETAIL_CAPSULE, 0)) == NULL)
        return -1;
    if (str_throttle == NULL && (str_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL)
        return -1;
    if (want_throttle == NULL && (want_throttle = PyTuple_Pack(1, str_throttle)) == NULL)
        return -1;
    PyObject *decode, *plan_for, *new_piece, *handed_back, *no_partitions, *params_apis, *params_fields;
    int errors, brokers, records;
    if (!PyArg_ParseTuple(spec, "OOOO!O!O!O!(ppp)", &decode, &plan_for, &new_piece, &PyFrozenSet_Type, &handed_back,
                          &PyFrozenSet_Type, &no_partitions, &PyFrozenSet_Type, &params_apis, &PyTuple_Type,
                          &params_fields, &errors, &brokers, &records))
        return -1;
    static KeySet sets[3]; /* (read whole before the shared state changes: lanes share it) */
    if (keyset_read(&sets[0], handed_back) < 0 || keyset_read(&sets[1], no_partitions) < 0
        || keyset_read(&sets[2], params_apis) < 0)
        return -1;
    if (d.plans == NULL) {
        if ((d.plans = PyDict_New()) == NULL || (d.partitions = PyDict_New()) == NULL
            || (d.errors = PyList_New(0)) == NULL || (d.request_records = PyList_New(0)) == NULL
            || (d.response_records = PyList_New(0)) == NULL || (d.base_offsets = PyDict_New()) == NULL
            || (d.brokers = PyList_New(0)) == NULL || (d.learned = PyDict_New()) == NULL)
            return -1;
    }
    PyDict_Clear(d.plans);
    memset(d.recent, 0, sizeof d.recent);
    Py_XSETREF(d.spec, Py_NewRef(spec));
    d.handed_back = sets[0];
    d.no_partitions = sets[1];
    d.params_apis = sets[2];
    Py_XSETREF(d.decode, Py_NewRef(decode));
    Py_XSETREF(d.plan_for, Py_NewRef(plan_for));
    Py_XSETREF(d.new_piece, Py_NewRef(new_piece));
    Py_XSETREF(d.params_fields, Py_NewRef(params_fields));
    d.reads_errors = errors;
    d.reads_brokers = brokers;
    d.reads_records = records;
    return 0;
}

int
keyset_read(KeySet *set, PyObject *frozenset)
{
    memset(set->bits, 0, sizeof set->bits);
    PyObject *it = PyObject_GetIter(frozenset), *item;
    if (it == NULL)
        return -1;
    while ((item = PyIter_Next(it)) != NULL) {
        long key = PyLong_AsLong(item);
        Py_DECREF(item);
        if (key < 0 || key >= KEYSET_KEYS) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a set of api keys holds a key outside 0..32767");
            break;
        }
        set->bits[key >> 3] |= (unsigned char)(1 << (key & 7));
    }
    Py_DECREF(it);
    return PyErr_Occurred() ? -1 : 0;
}

PyObject *
details_new_piece(void)
{
    return d.new_piece;
}

int
details_left(int api_key)
{
    return keyset_has(&d.handed_back, api_key);
}

/* The walk's plan for a message version (borrowed; plan_for asked once per version, the answer held by
 * d.plans and remembered in d.recent, a direct-mapped cache by id, emptied with d.plans). */
static PyObject *
plan(int api_key, int api_version, int response)
{
    long id = (long)api_key << 17 | (long)api_version << 1 | response;
    Recent *r = &d.recent[(unsigned long)id % RECENT];
    if (r->plan != NULL && r->id == id)
        return r->plan;
    PyObject *key = PyLong_FromLong(id);
    if (key == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(d.plans, key);
    if (found == NULL && !PyErr_Occurred()) {
        PyObject *made = PyObject_CallFunction(d.plan_for, "iiO", api_key, api_version, response ? Py_True : Py_False);
        if (made != NULL && PyDict_SetItem(d.plans, key, made) == 0)
            found = made; /* the dict holds it */
        Py_XDECREF(made);
    }
    Py_DECREF(key);
    if (found != NULL)
        *r = (Recent){id, found};
    return found;
}

/* The reused parts start empty for the next exchange. */
static void
reset(void)
{
    PyObject *dicts[] = {d.partitions, d.base_offsets, d.learned};
    PyObject *lists[] = {d.errors, d.brokers, d.request_records, d.response_records};
    for (size_t k = 0; k < sizeof dicts / sizeof *dicts; k++)
        if (PyDict_GET_SIZE(dicts[k]))
            PyDict_Clear(dicts[k]);
    for (size_t k = 0; k < sizeof lists / sizeof *lists; k++)
        if (PyList_GET_SIZE(lists[k]))
            PyList_SetSlice(lists[k], 0, PyList_GET_SIZE(lists[k]), NULL);
    if (d.rows.n)
        d.walk->rows_clear(&d.rows);
}

/* Both frames walked in their bytes into the reused parts: 1, 0 (declined: the parts left empty), -1. */
static int
walked(PyObject *request, Py_ssize_t request_at, PyObject *requests, PyObject *responses, const char *b, Py_ssize_t n,
       int api_key, int api_version, Bodies *out)
{
    if (!PyBytes_CheckExact(request) || PyTuple_GET_SIZE(d.params_fields) > MAX_PARAMS)
        return 0;
    int no_partitions = keyset_has(&d.no_partitions, api_key), params = keyset_has(&d.params_apis, api_key);
    PyObject *req_plan = plan(api_key, api_version, 0);
    PyObject *resp_plan = req_plan ? plan(api_key, api_version, 1) : NULL;
    if (resp_plan == NULL)
        return -1;
    PartRows *merged = no_partitions ? NULL : &d.rows;
    int rc = d.walk->walk_bytes(req_plan, requests, (const unsigned char *)PyBytes_AS_STRING(request) + request_at,
                                PyBytes_GET_SIZE(request) - request_at, api_key, api_version, 0, merged,
                                d.reads_records ? d.request_records : NULL, d.learned, NULL, 0,
                                params ? d.params_fields : NULL, out->params);
    if (rc == 1) {
        rc = d.walk->walk_bytes(resp_plan, responses, (const unsigned char *)b, n, api_key, api_version, 1, merged,
                                d.reads_records ? d.response_records : NULL, d.learned,
                                d.reads_records ? d.base_offsets : NULL, d.reads_brokers, want_throttle, &out->throttle);
        if (rc != 1)
            for (int k = 0; k < MAX_PARAMS; k++)
                Py_CLEAR(out->params[k]);
    }
    if (rc != 1) {
        reset();
        return rc;
    }
    out->walked = 1;
    return 1;
}

/* decode_frame(frame, programs, api_key, api_version, False)["body"], or NULL with no error when the C
 * path leaves the frame to Python. A new reference. */
static PyObject *
body_of(PyObject *frame, PyObject *programs, PyObject *key, PyObject *version)
{
    PyObject *args[5] = {frame, programs, key, version, Py_False};
    PyObject *decoded = PyObject_Vectorcall(d.decode, args, 5, NULL);
    if (decoded == NULL || decoded == Py_None) {
        Py_XDECREF(decoded);
        return NULL;
    }
    PyObject *body = PyDict_Check(decoded) ? PyDict_GetItemString(decoded, "body") : NULL;
    Py_XINCREF(body);
    Py_DECREF(decoded);
    return body;
}

int
details_decode(PyObject *request, Py_ssize_t request_at, PyObject *requests, PyObject *responses, const char *b,
               Py_ssize_t n, int api_key, int api_version, Bodies *out)
{
    memset(out, 0, sizeof *out);
    int rc = walked(request, request_at, requests, responses, b, n, api_key, api_version, out);
    if (rc != 0)
        return rc;
    if (PyBytes_CheckExact(request)) { /* (decoded as bytes of their own) */
        PyObject *frame = request_at ? PyBytes_FromStringAndSize(PyBytes_AS_STRING(request) + request_at,
                                                                 PyBytes_GET_SIZE(request) - request_at)
                                     : Py_NewRef(request);
        out->request = frame ? body_of(frame, requests, Py_None, Py_None) : NULL;
        Py_XDECREF(frame);
    } else if ((out->request = PyObject_GetAttrString(request, "body")) == Py_None) {
        Py_CLEAR(out->request);
    }
    if (out->request == NULL || !PyDict_Check(out->request)) {
        details_clear(out);
        return PyErr_Occurred() ? -1 : 0;
    }
    PyObject *frame = PyBytes_FromStringAndSize(b, n), *key = PyLong_FromLong(api_key),
             *version = PyLong_FromLong(api_version);
    if (frame != NULL && key != NULL && version != NULL)
        out->response = body_of(frame, responses, key, version);
    Py_XDECREF(frame);
    Py_XDECREF(key);
    Py_XDECREF(version);
    if (out->response == NULL) {
        details_clear(out);
        return PyErr_Occurred() ? -1 : 0;
    }
    return 1;
}

void
details_clear(Bodies *bodies)
{
    Py_CLEAR(bodies->request);
    Py_CLEAR(bodies->response);
    Py_CLEAR(bodies->throttle);
    for (int k = 0; k < MAX_PARAMS; k++)
        Py_CLEAR(bodies->params[k]);
}

void
details_drop(Bodies *bodies)
{
    details_clear(bodies);
    reset();
}

/* A reused list's or dict's items, leaving it empty: itself when it holds some (a new empty one takes its
 * place, nothing copied), else a new empty one. A new reference, NULL on error (*part unchanged). */
static PyObject *
taken(PyObject **part)
{
    int dict = PyDict_Check(*part);
    PyObject *fresh = dict ? PyDict_New() : PyList_New(0);
    if (fresh == NULL || (dict ? PyDict_GET_SIZE(*part) : PyList_GET_SIZE(*part)) == 0)
        return fresh;
    PyObject *full = *part;
    *part = fresh;
    return full;
}

/* An exchange's integer cells its detail rows share, made once for all of them (new references). */
typedef struct {
    PyObject *correlation_id, *api_key, *request_ts;
} Shared;

/* The request_params row: the request body's params_fields (as the bytes walk read them, or from the body). */
static int
params_row(PyObject *columns, const Paired *x, const Shared *c, const Bodies *bodies)
{
    Py_ssize_t fields = PyTuple_GET_SIZE(d.params_fields);
    if (PyTuple_GET_SIZE(columns) != fields + 3) {
        PyErr_SetString(PyExc_ValueError, "request_params lists do not match params_fields");
        return -1;
    }
    PyObject *head[3] = {x->conn_id, c->correlation_id, c->api_key};
    int rc = 0;
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = d.walk->append_cell(PyTuple_GET_ITEM(columns, k), head[k]);
    for (Py_ssize_t k = 0; k < fields && rc == 0; k++) {
        PyObject *v = bodies->walked ? bodies->params[k]
                                     : PyDict_GetItemWithError(bodies->request, PyTuple_GET_ITEM(d.params_fields, k));
        if (v == NULL && PyErr_Occurred())
            return -1;
        rc = d.walk->append_cell(PyTuple_GET_ITEM(columns, 3 + k), v ? v : Py_None);
    }
    return rc;
}

/* The merged partition rows, each after the exchange's PARTITION_PREFIX cells, into the partitions columns:
 * the bytes walk's rows (machine values, tables/_part_rows.c) when it took the exchange, else the body walk's
 * row lists (as append_rows would, with no tuple per exchange). Lengths are checked before anything is
 * appended. */
static int
partition_rows(PyObject *columns, const Paired *x, const Shared *c, int walked)
{
    enum { PREFIX = 5 };
    Py_ssize_t pos = 0, ncol = PyTuple_GET_SIZE(columns);
    PyObject *key, *row;
    while (!walked && PyDict_Next(d.partitions, &pos, &key, &row))
        if (!PyList_CheckExact(row) || PyList_GET_SIZE(row) + PREFIX != ncol) {
            PyErr_SetString(PyExc_ValueError, "a partition row's values do not fill the partitions columns");
            return -1;
        }
    PyObject *prefix[PREFIX] = {x->conn_id, c->correlation_id, c->api_key, x->api_name, c->request_ts};
    if (walked)
        return d.walk->rows_emit(&d.rows, columns, prefix, PREFIX);
    int rc = 0;
    for (pos = 0; rc == 0 && PyDict_Next(d.partitions, &pos, &key, &row);)
        for (Py_ssize_t k = 0; rc == 0 && k < ncol; k++)
            rc = d.walk->append_cell(PyTuple_GET_ITEM(columns, k),
                                     k < PREFIX ? prefix[k] : PyList_GET_ITEM(row, k - PREFIX));
    return rc;
}

/* The index of the segment an item came in, appended to a piece's left_at or topics_at: 0 or -1. */
static int
at_append(PyObject *list, Py_ssize_t at)
{
    PyObject *index = PyLong_FromSsize_t(at);
    int rc = index == NULL ? -1 : PyList_Append(list, index);
    Py_XDECREF(index);
    return rc;
}

/* (offset, ts), a new reference; ``ts`` given (borrowed) when the caller has it as an int, else NULL. */
static PyObject *
place(long long offset, long long ts, PyObject *ts_int)
{
    PyObject *pair = PyTuple_New(2), *a = PyLong_FromLongLong(offset),
             *b = ts_int ? Py_NewRef(ts_int) : PyLong_FromLongLong(ts);
    if (pair == NULL || a == NULL || b == NULL) {
        Py_XDECREF(pair);
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(pair, 0, a);
    PyTuple_SET_ITEM(pair, 1, b);
    return pair;
}

/* The sink's per-exchange rest: (connection_id, correlation_id, api_key, request (offset, ts), response
 * (offset, ts), errors, brokers, request records, response records, base offsets). */
static int
left_item(PyObject *left, const Paired *x, const Shared *c)
{
    enum { N = 10 };
    PyObject *item = PyTuple_New(N);
    if (item == NULL)
        return -1;
    PyObject *v[N] = {Py_NewRef(x->conn_id), Py_NewRef(c->correlation_id), Py_NewRef(c->api_key),
                      place(x->request_offset, x->request_ts, c->request_ts),
                      place(x->response_offset, x->response_ts, NULL),
                      taken(&d.errors), taken(&d.brokers), taken(&d.request_records), taken(&d.response_records),
                      taken(&d.base_offsets)};
    int rc = 0;
    for (int k = 0; k < N; k++) {
        rc |= v[k] == NULL ? -1 : 0;
        PyTuple_SET_ITEM(item, k, v[k]);
    }
    if (rc == 0)
        rc = PyList_Append(left, item);
    Py_DECREF(item);
    return rc;
}

/* Whether the sink reads anything of the exchange's left tuple (else none is made). */
static int
left_read(void)
{
    return (d.reads_errors && PyList_GET_SIZE(d.errors)) || (d.reads_brokers && PyList_GET_SIZE(d.brokers))
           || (d.reads_records && (PyList_GET_SIZE(d.request_records) || PyList_GET_SIZE(d.response_records)));
}

/* The topic ids the bytes walk learned into the piece's, first name kept. 0 or -1. */
static int
learn(PyObject *topics)
{
    Py_ssize_t pos = 0;
    PyObject *id, *name;
    while (PyDict_Next(d.learned, &pos, &id, &name))
        if (PyDict_SetDefault(topics, id, name) == NULL)
            return -1;
    return 0;
}

/* A details piece's parts, (partitions columns, params columns, topics, left, left_at, topics_at), checked
 * (as PyArg_ParseTuple's "O!O!O!O!O!O!" would, per exchange without its cost) into p: 0, or -1. */
#define N_PARTS 6
static int
parts_of(PyObject *parts, PyObject **p)
{
    static PyTypeObject *const types[N_PARTS] = {&PyTuple_Type, &PyTuple_Type, &PyDict_Type,
                                                 &PyList_Type, &PyList_Type, &PyList_Type};
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != N_PARTS)
        goto wrong;
    for (int k = 0; k < N_PARTS; k++)
        if (!PyObject_TypeCheck(p[k] = PyTuple_GET_ITEM(parts, k), types[k]))
            goto wrong;
    return 0;
wrong:
    PyErr_SetString(PyExc_TypeError, "a details piece's parts: (partitions, params, topics, left, left_at, topics_at)");
    return -1;
}

int
details_walk(PyObject *parts, const Paired *x, const Bodies *bodies, Outcome *out)
{
    PyObject *p[N_PARTS];
    if (parts_of(parts, p) < 0)
        return -1;
    PyObject *topics = p[2], *topics_at = p[5];
    Py_ssize_t known = PyDict_GET_SIZE(topics);
    int rc = 0;
    if (bodies->walked) {
        rc = learn(topics);
    } else {
        int no_partitions = keyset_has(&d.no_partitions, x->api_key);
        PyObject *req_plan = plan(x->api_key, x->api_version, 0),
                 *resp_plan = req_plan ? plan(x->api_key, x->api_version, 1) : NULL;
        if (resp_plan == NULL)
            return -1;
        PyObject *merged = no_partitions ? NULL : d.partitions;
        rc = d.walk->walk_body(req_plan, bodies->request, 0, merged, NULL, d.reads_records ? d.request_records : NULL,
                               topics, NULL, NULL);
        if (rc == 0)
            rc = d.walk->walk_body(resp_plan, bodies->response, 1, merged, d.errors,
                                   d.reads_records ? d.response_records : NULL, topics, d.base_offsets, d.brokers);
    }
    /* each topic id the walk learned: the segment it came in (the dict only grows, in insertion order) */
    for (Py_ssize_t k = known; rc == 0 && k < PyDict_GET_SIZE(topics); k++)
        rc = at_append(topics_at, x->at);
    *out = (Outcome){0, PyList_GET_SIZE(d.errors), NULL};
    if (rc == 0 && out->errors) { /* (path, key, code, ...) */
        PyObject *first = PyList_GET_ITEM(d.errors, 0);
        out->first_error = PyTuple_Check(first) && PyTuple_GET_SIZE(first) > 2
                               ? PyLong_AsLongLong(PyTuple_GET_ITEM(first, 2)) : -1;
        rc = PyErr_Occurred() ? -1 : 0;
    }
    if (rc == 0 && bodies->walked) {
        out->throttle = Py_NewRef(bodies->throttle);
    } else if (rc == 0) { /* the response body's throttle_time_ms, or None */
        out->throttle = PyDict_GetItemWithError(bodies->response, str_throttle);
        rc = out->throttle == NULL && PyErr_Occurred() ? -1 : 0;
        out->throttle = Py_NewRef(out->throttle ? out->throttle : Py_None);
    }
    if (rc < 0) {
        Py_CLEAR(out->throttle);
        reset();
    }
    return rc;
}

int
details_emit(PyObject *parts, const Paired *x, const Bodies *bodies)
{
    PyObject *p[N_PARTS]; /* (partitions columns, params columns, topics, left, left_at, topics_at) */
    int params = keyset_has(&d.params_apis, x->api_key), left = left_read(), rc = parts_of(parts, p);
    Py_ssize_t rows = bodies->walked ? d.rows.n : PyDict_GET_SIZE(d.partitions);
    Shared c = {NULL, NULL, NULL};
    if (rc == 0 && (rows || params || left)) {
        c = (Shared){PyLong_FromLongLong(x->correlation_id), PyLong_FromLong(x->api_key),
                     PyLong_FromLongLong(x->request_ts)};
        rc = c.correlation_id && c.api_key && c.request_ts ? 0 : -1;
    }
    if (rc == 0 && rows)
        rc = partition_rows(p[0], x, &c, bodies->walked);
    if (rc == 0 && params)
        rc = params_row(p[1], x, &c, bodies);
    if (rc == 0 && left)
        rc = left_item(p[3], x, &c) < 0 ? -1 : at_append(p[4], x->at);
    Py_XDECREF(c.correlation_id);
    Py_XDECREF(c.api_key);
    Py_XDECREF(c.request_ts);
    reset();
    return rc;
}
