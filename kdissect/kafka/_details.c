/* The detail rows of an exchange the lane paired (kafka/_pairing.c), for a run whose table sink writes
 * more than the exchanges table: the native twin of tables/sink.py's _walked_details and of the
 * request_params row of tables/details.py, with no Exchange, KafkaMessage or row dict per exchange.
 *
 * Per exchange: both bodies decoded by the decoder's C path (decode_frame, the schema programs), both
 * walked by the table sink's detail walk (tables/_native.c, through its capsule, _native.h, with the
 * plans tables/detail_walk.py compiles per message version), which also gives the exchanges row its
 * error columns and throttle time as the sink's _walked_details does (so a response the exchange scan
 * leaves, with tagged fields, is taken here), and then, into the columns of the current piece
 * (tables/detail_walk.py's LaneParts: lists, and typed buffers for integer columns, tables/_typed.c):
 *   - the partitions rows (merged per topic-partition by the walk), in PARTITION_COLUMNS order,
 *     unless the api is cluster-state traffic (``no_partitions``);
 *   - the request_params row of an api in ``params_apis``: the request body's ``params_fields``;
 *   - the topic ids the walk learns (first name kept, as the sink keeps them);
 *   - one ``left`` tuple for an exchange with error codes, brokers or records: what the sink still
 *     builds per exchange in Python (errors rows, brokers rows, records and batches rows);
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

#include "../tables/_native.h"

static PyObject *str_throttle; /* "throttle_time_ms" */

static struct {
    PyObject *spec; /* the spec tuple, as given */
    PyObject *decode, *plan_for, *new_piece, *handed_back, *no_partitions, *params_apis, *params_fields;
    PyObject *plans; /* (api_key << 17 | version << 1 | response) -> plan, as met */
    PyObject *partitions, *errors, *request_records, *response_records, *base_offsets, *brokers; /* reused */
    const KdDetailApi *walk;
} d;

/* spec: (decode_frame, plan_for, new_piece, handed_back, no_partitions, params_apis, params_fields) */
int
details_read(PyObject *spec)
{
    if (spec == d.spec)
        return 0;
    if (d.walk == NULL && (d.walk = PyCapsule_Import(KD_DETAIL_CAPSULE, 0)) == NULL)
        return -1;
    if (str_throttle == NULL && (str_throttle = PyUnicode_InternFromString("throttle_time_ms")) == NULL)
        return -1;
    PyObject *decode, *plan_for, *new_piece, *handed_back, *no_partitions, *params_apis, *params_fields;
    if (!PyArg_ParseTuple(spec, "OOOO!O!O!O!", &decode, &plan_for, &new_piece, &PyFrozenSet_Type, &handed_back,
                          &PyFrozenSet_Type, &no_partitions, &PyFrozenSet_Type, &params_apis, &PyTuple_Type,
                          &params_fields))
        return -1;
    if (d.plans == NULL) {
        if ((d.plans = PyDict_New()) == NULL || (d.partitions = PyDict_New()) == NULL
            || (d.errors = PyList_New(0)) == NULL || (d.request_records = PyList_New(0)) == NULL
            || (d.response_records = PyList_New(0)) == NULL || (d.base_offsets = PyDict_New()) == NULL
            || (d.brokers = PyList_New(0)) == NULL)
            return -1;
    }
    PyDict_Clear(d.plans);
    Py_XSETREF(d.spec, Py_NewRef(spec));
    Py_XSETREF(d.decode, Py_NewRef(decode));
    Py_XSETREF(d.plan_for, Py_NewRef(plan_for));
    Py_XSETREF(d.new_piece, Py_NewRef(new_piece));
    Py_XSETREF(d.handed_back, Py_NewRef(handed_back));
    Py_XSETREF(d.no_partitions, Py_NewRef(no_partitions));
    Py_XSETREF(d.params_apis, Py_NewRef(params_apis));
    Py_XSETREF(d.params_fields, Py_NewRef(params_fields));
    return 0;
}

int
in_set(PyObject *set, int key)
{
    PyObject *k = PyLong_FromLong(key);
    if (k == NULL)
        return -1;
    int found = PySet_Contains(set, k);
    Py_DECREF(k);
    return found;
}

PyObject *
details_new_piece(void)
{
    return d.new_piece;
}

int
details_left(int api_key)
{
    return in_set(d.handed_back, api_key);
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
details_decode(PyObject *request, PyObject *requests, PyObject *responses, const char *b, Py_ssize_t n,
               int api_key, int api_version, Bodies *out)
{
    *out = (Bodies){NULL, NULL};
    if (PyBytes_CheckExact(request))
        out->request = body_of(request, requests, Py_None, Py_None);
    else if ((out->request = PyObject_GetAttrString(request, "body")) == Py_None)
        Py_CLEAR(out->request);
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
}

/* The walk's plan for a message version (borrowed; plan_for asked once per version). */
static PyObject *
plan(int api_key, int api_version, int response)
{
    PyObject *id = PyLong_FromLong((long)api_key << 17 | (long)api_version << 1 | response);
    if (id == NULL)
        return NULL;
    PyObject *found = PyDict_GetItemWithError(d.plans, id);
    if (found == NULL && !PyErr_Occurred()) {
        PyObject *made = PyObject_CallFunction(d.plan_for, "iiO", api_key, api_version, response ? Py_True : Py_False);
        if (made != NULL && PyDict_SetItem(d.plans, id, made) == 0)
            found = made; /* the dict holds it */
        Py_XDECREF(made);
    }
    Py_DECREF(id);
    return found;
}

/* A list's items, leaving it empty (the reused lists). */
static PyObject *
taken(PyObject *list)
{
    PyObject *items = PyList_GetSlice(list, 0, PyList_GET_SIZE(list));
    if (items != NULL && PyList_SetSlice(list, 0, PyList_GET_SIZE(list), NULL) < 0)
        Py_CLEAR(items);
    return items;
}

static int
params_row(PyObject *columns, const Paired *x, PyObject *body)
{
    Py_ssize_t fields = PyTuple_GET_SIZE(d.params_fields);
    if (PyTuple_GET_SIZE(columns) != fields + 3) {
        PyErr_SetString(PyExc_ValueError, "request_params lists do not match params_fields");
        return -1;
    }
    PyObject *head[3] = {Py_NewRef(x->conn_id), PyLong_FromLongLong(x->correlation_id), PyLong_FromLong(x->api_key)};
    int rc = head[1] != NULL && head[2] != NULL ? 0 : -1;
    for (int k = 0; k < 3 && rc == 0; k++)
        rc = d.walk->append_cell(PyTuple_GET_ITEM(columns, k), head[k]);
    for (int k = 0; k < 3; k++)
        Py_XDECREF(head[k]);
    for (Py_ssize_t k = 0; k < fields && rc == 0; k++) {
        PyObject *v = PyDict_GetItemWithError(body, PyTuple_GET_ITEM(d.params_fields, k));
        if (v == NULL && PyErr_Occurred())
            return -1;
        rc = d.walk->append_cell(PyTuple_GET_ITEM(columns, 3 + k), v ? v : Py_None);
    }
    return rc;
}

static int
partition_rows(PyObject *columns, const Paired *x)
{
    PyObject *rows = PyDict_Values(d.partitions);
    PyObject *prefix = rows ? Py_BuildValue("(OLiOL)", x->conn_id, x->correlation_id, x->api_key, x->api_name,
                                            x->request_ts)
                            : NULL;
    PyObject *args = prefix ? PyTuple_Pack(3, columns, prefix, rows) : NULL;
    PyObject *done = args ? d.walk->append_rows(NULL, args) : NULL;
    Py_XDECREF(rows);
    Py_XDECREF(prefix);
    Py_XDECREF(args);
    if (done == NULL)
        return -1;
    Py_DECREF(done);
    return 0;
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

/* The sink's per-exchange rest: (connection_id, correlation_id, api_key, request (offset, ts), response
 * (offset, ts), errors, brokers, request records, response records, base offsets). */
static int
left_item(PyObject *left, const Paired *x)
{
    PyObject *base_offsets = PyDict_Copy(d.base_offsets);
    PyObject *item = base_offsets == NULL ? NULL
        : Py_BuildValue("(OLi(LL)(LL)NNNNN)", x->conn_id, x->correlation_id, x->api_key, x->request_offset,
                        x->request_ts, x->response_offset, x->response_ts, taken(d.errors), taken(d.brokers),
                        taken(d.request_records), taken(d.response_records), base_offsets);
    if (item == NULL)
        return -1;
    int rc = PyList_Append(left, item);
    Py_DECREF(item);
    return rc;
}

/* The reused parts start empty for the next exchange. */
static void
reset(void)
{
    PyDict_Clear(d.partitions);
    PyDict_Clear(d.base_offsets);
    PyList_SetSlice(d.errors, 0, PyList_GET_SIZE(d.errors), NULL);
    PyList_SetSlice(d.brokers, 0, PyList_GET_SIZE(d.brokers), NULL);
    PyList_SetSlice(d.request_records, 0, PyList_GET_SIZE(d.request_records), NULL);
    PyList_SetSlice(d.response_records, 0, PyList_GET_SIZE(d.response_records), NULL);
}

int
details_walk(PyObject *parts, const Paired *x, const Bodies *bodies, Outcome *out)
{
    PyObject *topics, *topics_at;
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 6 || !PyDict_Check(topics = PyTuple_GET_ITEM(parts, 2))
        || !PyList_Check(topics_at = PyTuple_GET_ITEM(parts, 5))) {
        PyErr_SetString(PyExc_TypeError, "a details piece's parts: (partitions, params, topics, left, left_at, topics_at)");
        return -1;
    }
    Py_ssize_t known = PyDict_GET_SIZE(topics);
    int no_partitions = in_set(d.no_partitions, x->api_key);
    PyObject *req_plan = plan(x->api_key, x->api_version, 0), *resp_plan = req_plan ? plan(x->api_key, x->api_version, 1)
                                                                                     : NULL;
    if (no_partitions < 0 || resp_plan == NULL)
        return -1;
    PyObject *merged = no_partitions ? NULL : d.partitions;
    int rc = d.walk->walk_body(req_plan, bodies->request, 0, merged, NULL, d.request_records, topics, NULL, NULL);
    if (rc == 0)
        rc = d.walk->walk_body(resp_plan, bodies->response, 1, merged, d.errors, d.response_records, topics,
                               d.base_offsets, d.brokers);
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
    if (rc == 0) { /* the response body's throttle_time_ms, or None */
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
    PyObject *partitions_columns, *params_columns, *topics, *left, *left_at, *topics_at;
    int rc = -1, params;
    if (!PyArg_ParseTuple(parts, "O!O!O!O!O!O!", &PyTuple_Type, &partitions_columns, &PyTuple_Type, &params_columns,
                          &PyDict_Type, &topics, &PyList_Type, &left, &PyList_Type, &left_at, &PyList_Type, &topics_at)
        || (params = in_set(d.params_apis, x->api_key)) < 0)
        goto done;
    rc = 0;
    if (PyDict_GET_SIZE(d.partitions))
        rc = partition_rows(partitions_columns, x);
    if (rc == 0 && params)
        rc = params_row(params_columns, x, bodies->request);
    if (rc == 0 && (PyList_GET_SIZE(d.errors) || PyList_GET_SIZE(d.brokers) || PyList_GET_SIZE(d.request_records)
                    || PyList_GET_SIZE(d.response_records)))
        rc = left_item(left, x) < 0 ? -1 : at_append(left_at, x->at);
done:
    reset();
    return rc;
}
