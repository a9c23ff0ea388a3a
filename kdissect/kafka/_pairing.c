/* The Kafka session's native part: a lane's frames paired into exchanges rows, no object per exchange.
 *
 * The twin of session.py's _request/_response/_answer and pairing.py's Pairer for the common case of a
 * connection framed in a lane (kafka/_framing.c): a request is read by the decoder's exchange scan
 * (decoders/_native.c scan_frame, the schema's programs: header version from api key + version) and
 * waits here; the response that answers a waiting request becomes one exchanges row (out of order when
 * it overtook older requests, which then wait as overtaken, as in the Pairer), its columns exactly
 * tables/sink.py's exchange_row, appended to the columns of the current piece (events.ExchangeRows) in
 * the lane's events, so rows and the session's events keep their order.
 *
 * Rules:
 * - Everything else leaves C *before* the frame is looked at: the pairing is handed back
 *   (pairing_stop: waiting requests replayed into the session as the frames they were, the counts of
 *   what was taken added to it) and the session takes the frame. Handed back: a frame too short for
 *   its header, an api the session must see itself (``left``: SASL, ApiVersions; from the registries),
 *   an acks=0 request of an api that may go unanswered, a correlation id already waiting, the
 *   session's bound on waiting requests reached (Options.pending_requests), a response no waiting request
 *   expects (orphans), a response that would leave more than MAX_OVERTAKEN requests overtaken (the
 *   session settles the oldest as unanswered), anything the scan leaves (undecodable, bytes after the body, a version
 *   without programs yet, tagged error codes). The lane itself hands the pairing back before it is
 *   released, so the session never misses a request.
 * - The session side effects of a taken request happen when the reference's would: its client id
 *   joins the summary's client_ids, its (api key, version) the session's pairs.
 * - A pairing starts with the requests the session's pairer held (none acks=0, none cut or warned
 *   about) in order, taken over; the overtaken ones stay with the pairer (read here, never changed), and
 *   the pairing gives back what it holds, each overtaken or not.
 * - With names (Options.exchange_topics: the live figures), each row also brings what the request's
 *   structs name (a topic, or a topic id's 16 bytes: named_topics.request_topics), every non-zero error
 *   code of the response and the (topic, topic id) pairs its structs name (named_topics.id_names), from
 *   the scan's contexts and codes, to the piece's three other lists (events.ExchangeRows); a frame the
 *   scan cannot list (more contexts or codes than it holds) is handed back. In a details run (the sink
 *   writes every table: _details.c) the response is scanned for them too, after the walk of its body, only
 *   when they may be there: the walk over the bytes declined (it declines any error code), or the body can
 *   name a topic with its id (the program says so); else its lists are empty. A request naming one topic by
 *   name, the one the connection's last such request named, shares that request's topics tuple.
 * - No Python object per cell where the column allows it: the numeric columns of events.EXCHANGE_TYPED
 *   (KIND below, the same codes) are bytearrays the row appends machine values to (int64, double, a
 *   byte per bool), never null; text and the nullable throttle time go to lists as shared references.
 * - Memory and time: at most the session's bound of waiting requests (Options.pending_requests, with the
 *   session's overtaken ones), each its frame's bytes, in a ring that grows on demand (twice what waits at
 *   most) with a set of their correlation ids; a frame costs at most a pass over its bytes and O(1) pairing
 *   work: a request's id is looked up in the set, an answer's among the first MAX_OVERTAKEN + 1 waiting (one
 *   further back hands the pairing back anyway), and taking it moves at most that many.
 */
#include "_pairing.h"

#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "../decoders/_scan.h"
#include "../tables/_typed.h"
#include "_details.h"

/* What every lane's pairing shares (one run's registries and the piece rows go to). */
enum { C_CONNECTION_ID, C_CLIENT_IP, C_CLIENT_PORT, C_BROKER_IP, C_BROKER_PORT, C_API_KEY, C_API_NAME,
       C_API_VERSION, C_CORRELATION_ID, C_CLIENT_ID, C_REQUEST_TS, C_RESPONSE_TS, C_LATENCY_MS, C_TOTAL_MS,
       C_REQUEST_BYTES, C_RESPONSE_BYTES, C_ERROR_CODE, C_ERROR_NAME, C_ERROR_COUNT, C_THROTTLE_TIME_MS,
       C_STATUS, C_OUT_OF_ORDER, C_INFERRED, C_WARNINGS, COLUMNS }; /* columns.TABLES["exchanges"] order */
/* Each column's buffer: events.EXCHANGE_TYPED's code (q: int64, d: double, ?: a byte 0 or 1), or O: a list. */
static const char KIND[COLUMNS] = {'q', 'O', 'q', 'O', 'q', 'q', 'O', 'q', 'q', 'O', 'q', 'q', 'd', 'd',
                                   'q', 'q', 'q', 'O', 'q', 'O', 'O', '?', '?', 'O'};

static struct {
    PyObject *shared; /* the tuple below, as given */
    PyObject *requests, *responses, *api_names, *error_name, *new_piece, *ok, *error;
    KeySet left, silent;
    PyObject *names;  /* error code -> error_name(code), as met */
    long long last_code; /* the last code named, and its name (NULL: none yet): a row's code is 0 nearly always */
    PyObject *last_name;
    PyObject *piece;  /* the piece rows go to while it is the last of the events */
    PyObject *parts;  /* its detail parts (a details piece), or NULL */
    PyObject *columns[COLUMNS];
    PyObject *topics, *codes, *named; /* the piece's three scan lists (held by the piece) */
    const ScanApi *scan;
} shared;

static uint16_t be16(const char *s) { return (uint16_t)((unsigned char)s[0] << 8 | (unsigned char)s[1]); }
static int32_t be32(const char *s) { return (int32_t)((uint32_t)be16(s) << 16 | be16(s + 2)); }

/* shared: (request programs, response programs, api names by key, left apis, silent-if-acks0 apis,
 * error_name, new_piece, "ok", "error") */
static int
read_shared(PyObject *t)
{
    if (t == shared.shared)
        return 0;
    if (shared.scan == NULL && (shared.scan = PyCapsule_Import(SCAN_CAPSULE, 0)) == NULL)
        return -1;
    PyObject *r, *q, *names, *left, *silent, *error_name, *new_piece, *ok, *error;
    if (!PyArg_ParseTuple(t, "O!O!O!O!O!OOUU", &PyDict_Type, &q, &PyDict_Type, &r, &PyList_Type, &names,
                          &PyFrozenSet_Type, &left, &PyFrozenSet_Type, &silent, &error_name, &new_piece, &ok, &error))
        return -1;
    static KeySet left_keys, silent_keys; /* (read whole before the shared state changes: lanes share it) */
    PyObject *cache = NULL;
    if (keyset_read(&left_keys, left) < 0 || keyset_read(&silent_keys, silent) < 0 || (cache = PyDict_New()) == NULL)
        return -1;
    shared.left = left_keys;
    shared.silent = silent_keys;
    Py_XSETREF(shared.shared, Py_NewRef(t));
    Py_XSETREF(shared.requests, Py_NewRef(q));
    Py_XSETREF(shared.responses, Py_NewRef(r));
    Py_XSETREF(shared.api_names, Py_NewRef(names));
    Py_XSETREF(shared.error_name, Py_NewRef(error_name));
    Py_XSETREF(shared.new_piece, Py_NewRef(new_piece));
    Py_XSETREF(shared.ok, Py_NewRef(ok));
    Py_XSETREF(shared.error, Py_NewRef(error));
    Py_XSETREF(shared.names, cache);
    Py_CLEAR(shared.last_name);
    Py_CLEAR(shared.piece);
    return 0;
}

/* -- the waiting requests: a ring in arrival order and a set of their correlation ids ------------ */

#define EMPTY_ID LLONG_MIN /* (an id is an int32) */

/* The k-th oldest request waiting. */
static Waiting *
waiting_at(const Pairing *p, Py_ssize_t k)
{
    return &p->waiting[(p->head + k) & (p->cap - 1)];
}

/* Where the id is in the set, or the empty slot it would take (the set is never full). */
static Py_ssize_t
id_slot(const Pairing *p, long long id)
{
    size_t mask = (size_t)(2 * p->cap - 1), k = (size_t)((uint32_t)id * 2654435761u) & mask;
    while (p->ids[k] != EMPTY_ID && p->ids[k] != id)
        k = (k + 1) & mask;
    return (Py_ssize_t)k;
}

static int
id_waits(const Pairing *p, long long id)
{
    return p->cap && p->ids[id_slot(p, id)] == id;
}

/* Out of the set, the ids after it in its probe run moved back (linear probing without tombstones). */
static void
id_remove(Pairing *p, long long id)
{
    size_t mask = (size_t)(2 * p->cap - 1), hole = (size_t)id_slot(p, id);
    for (size_t k = (hole + 1) & mask; p->ids[k] != EMPTY_ID; k = (k + 1) & mask) {
        size_t home = (size_t)((uint32_t)p->ids[k] * 2654435761u) & mask;
        if (((k - home) & mask) >= ((k - hole) & mask)) { /* its home is not between the hole and it */
            p->ids[hole] = p->ids[k];
            hole = k;
        }
    }
    p->ids[hole] = EMPTY_ID;
}

/* Room for at least ``need`` requests: the ring copied oldest first into one of twice the size, the set
 * rebuilt. 0, or -1 with MemoryError. */
static int
waiting_reserve(Pairing *p, Py_ssize_t need)
{
    if (need <= p->cap)
        return 0;
    Py_ssize_t cap = p->cap ? p->cap : 16;
    while (cap < need)
        cap *= 2;
    Waiting *ring = PyMem_New(Waiting, (size_t)cap);
    long long *ids = PyMem_New(long long, (size_t)(2 * cap));
    if (ring == NULL || ids == NULL) {
        PyMem_Free(ring);
        PyMem_Free(ids);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < p->count; k++)
        ring[k] = *waiting_at(p, k);
    for (Py_ssize_t k = 0; k < 2 * cap; k++)
        ids[k] = EMPTY_ID;
    PyMem_Free(p->waiting);
    PyMem_Free(p->ids);
    p->waiting = ring;
    p->ids = ids;
    p->cap = cap;
    p->head = 0;
    for (Py_ssize_t k = 0; k < p->count; k++)
        ids[id_slot(p, ring[k].correlation_id)] = ring[k].correlation_id;
    return 0;
}

/* A request waits, the newest (room reserved). */
static void
waiting_push(Pairing *p, Waiting w)
{
    p->ids[id_slot(p, w.correlation_id)] = w.correlation_id;
    *waiting_at(p, p->count++) = w;
}

/* The k-th oldest request, answered, goes (its references released): the older ones move up one. */
static void
waiting_remove(Pairing *p, Py_ssize_t k)
{
    Waiting *w = waiting_at(p, k);
    id_remove(p, w->correlation_id);
    Py_XDECREF(w->data);
    Py_XDECREF(w->message);
    Py_XDECREF(w->topics);
    Py_DECREF(w->client_id);
    for (; k > 0; k--)
        *waiting_at(p, k) = *waiting_at(p, k - 1);
    p->head = (p->head + 1) & (p->cap - 1);
    p->count--;
}

/* spec: (shared, limit, (client ip, port), (broker ip, port), conn_id, client_ids, pairs, resume, names, waiting,
 * details, held)
 * with waiting [(correlation_id, api_key, api_version, offset, ts_first, ts_last, size, client_id, message,
 * topics)], oldest first, none overtaken (those stay in the pairer: held): at most ``limit`` (the session's
 * Options.pending_requests, which bounds its pairer too); topics: a tuple with names, else None; details: the
 * sink's lane spec (tables/detail_walk.py lane_spec), or None; held: the session pairer's overtaken requests (a
 * dict by correlation id), read, never changed here. */
int
pairing_start(Pairing *p, PyObject *spec, int request_dir, PyObject *frame_type, PyObject *frames)
{
    PyObject *t, *conn_id, *client_ids, *pairs, *resume, *waiting, *details, *held;
    Py_ssize_t limit;
    int names;
    PyObject *client_ip, *client_port, *broker_ip, *broker_port;
    if (p->on) {
        PyErr_SetString(PyExc_RuntimeError, "a lane's pairing started twice");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "O!n(OO)(OO)OO!O!OpO!OO!", &PyTuple_Type, &t, &limit, &client_ip, &client_port,
                          &broker_ip, &broker_port, &conn_id, &PyList_Type, &client_ids, &PyDict_Type, &pairs, &resume,
                          &names, &PyList_Type, &waiting, &details, &PyDict_Type, &held)
        || read_shared(t) < 0 || (details != Py_None && details_read(details) < 0))
        return -1;
    if (limit < 1) {
        PyErr_SetString(PyExc_ValueError, "pending_requests must be positive");
        return -1;
    }
    if (PyList_GET_SIZE(waiting) > limit) {
        PyErr_SetString(PyExc_ValueError, "more requests waiting than a native pairing holds");
        return -1;
    }
    long long conn = PyLong_AsLongLong(conn_id), client_port_n = -1, broker_port_n = -1;
    if ((conn == -1 && PyErr_Occurred()) || ((client_port_n = PyLong_AsLongLong(client_port)) == -1 && PyErr_Occurred())
        || ((broker_port_n = PyLong_AsLongLong(broker_port)) == -1 && PyErr_Occurred()))
        return -1; /* (a lane pairs only connections whose endpoints are known) */
    pairing_clear(p);
    p->conn = conn;
    p->client_port_n = client_port_n;
    p->broker_port_n = broker_port_n;
    if (waiting_reserve(p, PyList_GET_SIZE(waiting)) < 0)
        return -1;
    for (Py_ssize_t k = 0; k < PyList_GET_SIZE(waiting); k++) {
        Waiting w = {0};
        PyObject *client_id, *message, *topics;
        if (!PyArg_ParseTuple(PyList_GET_ITEM(waiting, k), "LiiLLLLOOO", &w.correlation_id, &w.api_key,
                              &w.api_version, &w.offset, &w.ts_first, &w.ts_last, &w.size, &client_id, &message,
                              &topics)) {
            pairing_clear(p);
            return -1;
        }
        if (names && !PyTuple_CheckExact(topics)) {
            PyErr_SetString(PyExc_TypeError, "a waiting request's topics are a tuple");
            pairing_clear(p);
            return -1;
        }
        w.client_id = Py_NewRef(client_id);
        w.message = Py_NewRef(message);
        w.topics = names ? Py_NewRef(topics) : NULL;
        waiting_push(p, w);
    }
    p->on = 1;
    p->details = details != Py_None;
    p->names = names;
    p->request_dir = request_dir;
    p->limit = limit;
    p->conn_id = Py_NewRef(conn_id);
    p->client_ip = Py_NewRef(client_ip);
    p->client_port = Py_NewRef(client_port);
    p->broker_ip = Py_NewRef(broker_ip);
    p->broker_port = Py_NewRef(broker_port);
    p->client_ids = Py_NewRef(client_ids);
    p->pairs = Py_NewRef(pairs);
    p->resume = Py_NewRef(resume);
    p->frame_type = Py_NewRef(frame_type);
    p->frames = Py_NewRef(frames);
    p->held = Py_NewRef(held);
    return 0;
}

void
pairing_clear(Pairing *p)
{
    for (Py_ssize_t k = 0; k < p->count; k++) {
        Waiting *w = waiting_at(p, k);
        Py_XDECREF(w->data);
        Py_XDECREF(w->message);
        Py_XDECREF(w->topics);
        Py_DECREF(w->client_id);
    }
    PyMem_Free(p->waiting);
    PyMem_Free(p->ids);
    PyMem_Free(p->cid_bytes);
    PyMem_Free(p->topic_bytes);
    Py_CLEAR(p->conn_id);
    Py_CLEAR(p->client_ip);
    Py_CLEAR(p->client_port);
    Py_CLEAR(p->broker_ip);
    Py_CLEAR(p->broker_port);
    Py_CLEAR(p->client_ids);
    Py_CLEAR(p->pairs);
    Py_CLEAR(p->resume);
    Py_CLEAR(p->frame_type);
    Py_CLEAR(p->frames);
    Py_CLEAR(p->held);
    Py_CLEAR(p->cid_text);
    Py_CLEAR(p->one_topic);
    PyObject *events = p->events;
    int left = p->left; /* (read by the lane after the segment) */
    memset(p, 0, sizeof *p);
    p->events = events;
    p->left = left;
}

/* A waiting request's frame bytes (a new reference): its data, or the frame cut from the payload it keeps. */
static PyObject *
frame_bytes(const Waiting *w)
{
    return w->data_at ? PyBytes_FromStringAndSize(PyBytes_AS_STRING(w->data) + w->data_at, (Py_ssize_t)w->size)
                      : Py_NewRef(w->data);
}

PyObject *
frame_new(PyObject *frame_type, long long offset, PyObject *payload, long long ts_first, long long ts_last)
{
    PyObject *args[4] = {PyLong_FromLongLong(offset), payload, PyLong_FromLongLong(ts_first),
                         PyLong_FromLongLong(ts_last)};
    PyObject *frame = NULL;
    if (args[0] != NULL && args[1] != NULL && args[2] != NULL && args[3] != NULL)
        frame = PyObject_Vectorcall(frame_type, args, 4, NULL);
    for (int k = 0; k < 4; k++)
        Py_XDECREF(args[k]);
    return frame;
}

int
pairing_stop(Pairing *p)
{
    if (!p->on)
        return 0;
    PyObject *frames = PyList_New(p->count), *counts = PyTuple_New(COUNTS), *events = NULL;
    if (frames == NULL || counts == NULL)
        goto done;
    for (int k = 0; k < COUNTS; k++) {
        PyObject *v = PyLong_FromLongLong(p->counts[k]);
        if (v == NULL)
            goto done;
        PyTuple_SET_ITEM(counts, k, v);
    }
    for (Py_ssize_t k = 0; k < p->count; k++) {
        Waiting *w = waiting_at(p, k);
        PyObject *frame = w->message ? Py_NewRef(w->message)
                                     : frame_new(p->frame_type, w->offset, frame_bytes(w), w->ts_first, w->ts_last);
        PyObject *item = frame ? Py_BuildValue("(NO)", frame, k < p->overtaken ? Py_True : Py_False) : NULL;
        if (item == NULL)
            goto done;
        PyList_SET_ITEM(frames, k, item);
    }
    events = PyObject_CallFunctionObjArgs(p->resume, counts, frames, NULL);
    if (events != NULL && !PyList_CheckExact(events)) {
        PyErr_SetString(PyExc_TypeError, "resume_pairing() returns a list");
        Py_CLEAR(events);
    }
    if (events != NULL && PyList_GET_SIZE(events)) {
        if (p->events == NULL) {
            PyErr_SetString(PyExc_RuntimeError, "waiting requests replayed into the session made events");
            Py_CLEAR(events);
        } else if (PyList_SetSlice(p->events, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, events) < 0) {
            Py_CLEAR(events);
        }
    }
done:
    Py_XDECREF(frames);
    Py_XDECREF(counts);
    if (events == NULL)
        return -1;
    Py_DECREF(events);
    pairing_clear(p);
    return 0;
}

/* -- requests ---------------------------------------------------------------------------------- */

static PyObject *
client_id_of(Pairing *p, const char *b, const Scan *s)
{
    int null = !s->found[SLOT_CLIENT_ID] || s->value[SLOT_CLIENT_ID] < 0;
    Py_ssize_t n = null ? 0 : (Py_ssize_t)s->value[SLOT_CLIENT_ID];
    const char *text = b + s->at[SLOT_CLIENT_ID];
    if (p->cid_text != NULL && null == p->cid_null && n == p->cid_len && (null || !memcmp(text, p->cid_bytes, n)))
        return Py_NewRef(p->cid_text);
    PyObject *v = null ? Py_NewRef(Py_None) : PyUnicode_DecodeUTF8(text, n, "replace");
    if (v == NULL)
        return NULL;
    if (!null) { /* a new client id: the session learns it (summary.client_ids) */
        int known = PySequence_Contains(p->client_ids, v);
        if (known < 0 || (!known && PyList_Append(p->client_ids, v) < 0)) {
            Py_DECREF(v);
            return NULL;
        }
    }
    char *copy = PyMem_Realloc(p->cid_bytes, n ? (size_t)n : 1);
    if (copy == NULL) {
        Py_DECREF(v);
        return PyErr_NoMemory();
    }
    memcpy(copy, text, (size_t)n);
    p->cid_bytes = copy;
    p->cid_len = n;
    p->cid_null = null;
    Py_XSETREF(p->cid_text, Py_NewRef(v));
    return v;
}

static int
learn_pair(Pairing *p, int key, int version)
{
    int id = key << 16 | version;
    for (int k = 0; k < p->seen_n; k++)
        if (p->seen[k] == id)
            return 0;
    PyObject *pair = Py_BuildValue("(ii)", key, version);
    if (pair == NULL)
        return -1;
    PyObject *had = PyDict_SetDefault(p->pairs, pair, Py_None);
    Py_DECREF(pair);
    if (had == NULL)
        return -1;
    if (p->seen_n < (int)(sizeof p->seen / sizeof p->seen[0]))
        p->seen[p->seen_n++] = id;
    return 0;
}

/* -- names (with Options.exchange_topics) ------------------------------------------------------- */

static int
nil_id(const char *id)
{
    static const char nil[16];
    return !memcmp(id, nil, 16);
}

/* What the request's structs name, each once: a topic, else a topic id's 16 bytes (not the nil id). A request
 * naming one topic by name, as the last one did, shares its tuple (a producer names its topic in every request:
 * no text decoded, no tuple made, and the figures count one object). */
static PyObject *
topics_of(Pairing *p, const char *b, const Scan *s)
{
    const Named *one = s->nnamed == 1 && s->named[0].topic >= 0 ? &s->named[0] : NULL;
    if (one != NULL && p->one_topic != NULL && one->topic_len == p->topic_len
        && !memcmp(b + one->topic, p->topic_bytes, (size_t)one->topic_len))
        return Py_NewRef(p->one_topic);
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    for (int k = 0; k < s->nnamed; k++) {
        const Named *n = &s->named[k];
        if (n->topic < 0 && (n->id < 0 || nil_id(b + n->id)))
            continue;
        PyObject *v = n->topic >= 0 ? PyUnicode_DecodeUTF8(b + n->topic, n->topic_len, "replace")
                                    : PyBytes_FromStringAndSize(b + n->id, 16);
        int known = v == NULL ? -1 : PySequence_Contains(found, v);
        if (known < 0 || (!known && PyList_Append(found, v) < 0)) {
            Py_XDECREF(v);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(v);
    }
    Py_SETREF(found, PyList_AsTuple(found));
    if (one != NULL && found != NULL) {
        char *copy = PyMem_Realloc(p->topic_bytes, one->topic_len ? (size_t)one->topic_len : 1);
        if (copy == NULL) {
            Py_DECREF(found);
            return PyErr_NoMemory();
        }
        memcpy(copy, b + one->topic, (size_t)one->topic_len);
        p->topic_bytes = copy;
        p->topic_len = one->topic_len;
        Py_XSETREF(p->one_topic, Py_NewRef(found));
    }
    return found;
}

/* The (topic, topic id's 16 bytes) pairs the response's structs name (not the nil id). */
static PyObject *
named_of(const char *b, const Scan *s)
{
    PyObject *found = PyList_New(0);
    if (found == NULL)
        return NULL;
    for (int k = 0; k < s->nnamed; k++) {
        const Named *n = &s->named[k];
        if (n->topic < 0 || n->id < 0 || nil_id(b + n->id))
            continue;
        PyObject *pair = Py_BuildValue("(Ny#)", PyUnicode_DecodeUTF8(b + n->topic, n->topic_len, "replace"),
                                       b + n->id, (Py_ssize_t)16);
        if (pair == NULL || PyList_Append(found, pair) < 0) {
            Py_XDECREF(pair);
            Py_DECREF(found);
            return NULL;
        }
        Py_DECREF(pair);
    }
    Py_SETREF(found, PyList_AsTuple(found));
    return found;
}

static PyObject *
codes_of(const Scan *s)
{
    PyObject *codes = PyTuple_New(s->ncodes);
    for (int k = 0; codes != NULL && k < s->ncodes; k++) {
        PyObject *v = PyLong_FromLongLong(s->codes[k]);
        if (v == NULL)
            Py_CLEAR(codes);
        else
            PyTuple_SET_ITEM(codes, k, v);
    }
    return codes;
}

/* Whether a response of this api version can name a topic with its id (its body holds both kinds of field): in a
 * details run with names, the one the walk over its bytes took (no error code) is scanned only then. 1, 0, -1. */
static int
names_ids(int api_key, int api_version)
{
    static PyObject *last_programs; /* (borrowed: only compared) */
    static int last_key, last_version, last;
    if (shared.responses == last_programs && api_key == last_key && api_version == last_version)
        return last;
    const KdNode *header, *body;
    int rc = shared.scan->frame_roots(shared.responses, api_key, api_version, &header, &body);
    if (rc <= 0) /* (none: the walk took no frame of it) */
        return rc < 0 ? -1 : 1;
    last = (body->within & (F_TOPIC | F_TOPIC_ID)) == (F_TOPIC | F_TOPIC_ID);
    last_programs = shared.responses;
    last_key = api_key;
    last_version = api_version;
    return last;
}

/* Whether the session holds an overtaken request of this correlation id: 1, 0, -1 on error. */
static int
held(const Pairing *p, long long correlation_id)
{
    if (PyDict_GET_SIZE(p->held) == 0)
        return 0;
    PyObject *key = PyLong_FromLongLong(correlation_id);
    int found = key != NULL ? PyDict_Contains(p->held, key) : -1;
    Py_XDECREF(key);
    return found;
}

/* 1 taken, 0 left to the session, -1 error */
static int
request(Pairing *p, long long offset, const char *b, Py_ssize_t n, PyObject *payload, long long ts_first,
        long long ts_last)
{
    if (n < 8 || p->count + PyDict_GET_SIZE(p->held) >= p->limit)
        return 0;
    int key = (int16_t)be16(b), version = (int16_t)be16(b + 2);
    long long cid = be32(b + 4);
    if (keyset_has(&shared.left, key) || (p->details && details_left(key)))
        return 0;
    if (id_waits(p, cid))
        return 0;
    int reused = held(p, cid);
    if (reused)
        return reused < 0 ? -1 : 0;
    Scan s;
    int ok = shared.scan->scan_frame(shared.requests, (const unsigned char *)b, n, key, version, p->names, &s);
    if (ok <= 0)
        return ok;
    if (s.found[SLOT_ACKS] && s.value[SLOT_ACKS] == 0) {
        if (keyset_has(&shared.silent, key))
            return 0;
    }
    /* the frame's bytes wait as the payload holding them when it holds nothing else */
    int keep = payload != NULL;
    if (waiting_reserve(p, p->count + 1) < 0)
        return -1;
    PyObject *client_id = client_id_of(p, b, &s), *data = NULL, *topics = NULL;
    if (client_id == NULL || learn_pair(p, key, version) < 0 || (p->names && (topics = topics_of(p, b, &s)) == NULL)
        || (data = keep ? Py_NewRef(payload) : PyBytes_FromStringAndSize(b, n)) == NULL) {
        Py_XDECREF(client_id);
        Py_XDECREF(topics);
        return -1;
    }
    waiting_push(p, (Waiting){cid, offset, ts_first, ts_last, n, key, version, data, NULL, client_id, topics,
                              keep ? 4 : 0});
    return 1;
}

/* -- responses: the row ------------------------------------------------------------------------- */

/* The piece rows go to: the current one if it is still the last of the events (and of the kind wanted: with
 * detail parts or not), else a new one there. */
static int
piece_ready(PyObject *events, int details)
{
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (shared.piece != NULL && n && PyList_GET_ITEM(events, n - 1) == shared.piece && (shared.parts != NULL) == details)
        return 0;
    PyObject *made = PyObject_CallNoArgs(details ? details_new_piece() : shared.new_piece), *piece, *columns;
    if (made == NULL)
        return -1;
    if (!PyTuple_Check(made) || PyTuple_GET_SIZE(made) != (details ? 9 : 3)
        || !PyTuple_Check(columns = PyTuple_GET_ITEM(made, 1)) || PyTuple_GET_SIZE(columns) != COLUMNS
        || !PyArg_ParseTuple(PyTuple_GET_ITEM(made, 2), "O!O!O!", &PyList_Type, &shared.topics, &PyList_Type,
                             &shared.codes, &PyList_Type, &shared.named)) {
        PyErr_Clear();
        PyErr_SetString(PyExc_TypeError,
                        "new_piece() returns (piece, a list per exchanges column, three lists[, details parts])");
        Py_DECREF(made);
        return -1;
    }
    piece = PyTuple_GET_ITEM(made, 0);
    for (int k = 0; k < COLUMNS; k++)
        if (KIND[k] == 'O' ? !PyList_CheckExact(PyTuple_GET_ITEM(columns, k))
                           : !PyByteArray_CheckExact(PyTuple_GET_ITEM(columns, k))) {
            PyErr_SetString(PyExc_TypeError, "new_piece() columns are lists, bytearrays where typed");
            Py_DECREF(made);
            return -1;
        }
    PyObject *parts = details ? PyTuple_GetSlice(made, 3, 9) : NULL;
    if (details && parts == NULL) {
        Py_DECREF(made);
        return -1;
    }
    Py_XSETREF(shared.piece, Py_NewRef(piece));
    Py_XSETREF(shared.parts, parts);
    for (int k = 0; k < COLUMNS; k++)
        shared.columns[k] = PyTuple_GET_ITEM(columns, k); /* held by the piece */
    Py_DECREF(made);
    return PyList_Append(events, piece);
}

static PyObject *
error_name_of(long long code)
{
    if (shared.last_name != NULL && code == shared.last_code)
        return Py_NewRef(shared.last_name);
    PyObject *k = PyLong_FromLongLong(code);
    if (k == NULL)
        return NULL;
    PyObject *name = Py_XNewRef(PyDict_GetItemWithError(shared.names, k));
    if (name == NULL && !PyErr_Occurred() && (name = PyObject_CallOneArg(shared.error_name, k)) != NULL
        && PyDict_SetItem(shared.names, k, name) < 0)
        Py_CLEAR(name);
    Py_DECREF(k);
    if (name != NULL) {
        Py_XSETREF(shared.last_name, Py_NewRef(name));
        shared.last_code = code;
    }
    return name;
}

static int
put_int(int k, long long v)
{
    int64_t x = v;
    return typed_put(shared.columns[k], &x, sizeof x);
}

static int
put_double(int k, double v)
{
    return typed_put(shared.columns[k], &v, sizeof v);
}

static int
put_bool(int k, int v)
{
    char x = v ? 1 : 0;
    return typed_put(shared.columns[k], &x, 1);
}

static int
row(Pairing *p, const Waiting *w, int overtook, long long resp_first, long long resp_last, const char *b,
    Py_ssize_t resp_size, const Outcome *o, const Scan *s)
{
    if (piece_ready(p->events, p->details) < 0)
        return -1;
    PyObject *api_name = w->api_key < PyList_GET_SIZE(shared.api_names) ? PyList_GET_ITEM(shared.api_names, w->api_key)
                                                                          : Py_None;
    PyObject *error_name = error_name_of(o->first_error);
    if (error_name == NULL)
        return -1;
    enum { OBJECTS = 8 }; /* the list columns' cells (borrowed), in column order */
    static const int object_column[OBJECTS] = {C_CLIENT_IP, C_BROKER_IP, C_API_NAME, C_CLIENT_ID, C_ERROR_NAME,
                                               C_THROTTLE_TIME_MS, C_STATUS, C_WARNINGS};
    PyObject *cells[OBJECTS] = {p->client_ip, p->broker_ip, api_name, w->client_id, error_name, o->throttle,
                                o->errors ? shared.error : shared.ok, Py_None};
    int rc = 0;
    if (put_int(C_CONNECTION_ID, p->conn) || put_int(C_CLIENT_PORT, p->client_port_n)
        || put_int(C_BROKER_PORT, p->broker_port_n) || put_int(C_API_KEY, w->api_key)
        || put_int(C_API_VERSION, w->api_version) || put_int(C_CORRELATION_ID, w->correlation_id)
        || put_int(C_REQUEST_TS, w->ts_first) || put_int(C_RESPONSE_TS, resp_first)
        || put_double(C_LATENCY_MS, (double)(resp_first - w->ts_last) / 1e6)
        || put_double(C_TOTAL_MS, (double)(resp_last - w->ts_first) / 1e6)
        || put_int(C_REQUEST_BYTES, w->size + 4) || put_int(C_RESPONSE_BYTES, resp_size + 4)
        || put_int(C_ERROR_CODE, o->first_error) || put_int(C_ERROR_COUNT, o->errors)
        || put_bool(C_OUT_OF_ORDER, overtook) || put_bool(C_INFERRED, 0))
        rc = -1; /* (on a failure the run fails: the piece is not consumed) */
    for (int k = 0; k < OBJECTS && rc == 0; k++)
        rc = PyList_Append(shared.columns[object_column[k]], cells[k]);
    Py_DECREF(error_name);
    if (rc == 0 && p->names) { /* (not scanned: a response with no error code that names no topic id) */
        PyObject *codes = s ? codes_of(s) : PyTuple_New(0), *named = s ? named_of(b, s) : PyTuple_New(0);
        if (codes == NULL || named == NULL || PyList_Append(shared.topics, w->topics) < 0
            || PyList_Append(shared.codes, codes) < 0 || PyList_Append(shared.named, named) < 0)
            rc = -1;
        Py_XDECREF(codes);
        Py_XDECREF(named);
    }
    return rc;
}

/* Where the waiting request a response answers is (k-th oldest), when among the first MAX_OVERTAKEN + 1 (the
 * usual: the oldest); FURTHER when it waits further back (the answer hands the pairing back: it would leave more
 * than MAX_OVERTAKEN overtaken); -1 when none waits for it. */
#define FURTHER (-2)
static Py_ssize_t
find(const Pairing *p, long long correlation_id)
{
    Py_ssize_t near = p->count < MAX_OVERTAKEN + 1 ? p->count : MAX_OVERTAKEN + 1;
    for (Py_ssize_t k = 0; k < near; k++)
        if (waiting_at(p, k)->correlation_id == correlation_id)
            return k;
    return near < p->count && id_waits(p, correlation_id) ? FURTHER : -1;
}

int
pairing_waits(const Pairing *p, long long correlation_id)
{
    return !p->on ? 0 : id_waits(p, correlation_id) ? 1 : held(p, correlation_id);
}

int
session_frames(PyObject *frames_of, int d, PyObject *frames, PyObject *out, PyObject **pairing)
{
    PyObject *direction = PyLong_FromLong(d), *result = NULL;
    if (direction != NULL) {
        PyObject *call[3] = {direction, frames, pairing != NULL ? Py_True : Py_False};
        result = PyObject_Vectorcall(frames_of, call, 3, NULL);
        Py_DECREF(direction);
    }
    if (result == NULL)
        return -1;
    PyObject *events;
    if (!PyTuple_CheckExact(result) || PyTuple_GET_SIZE(result) != 3
        || !PyList_CheckExact(events = PyTuple_GET_ITEM(result, 0))) {
        Py_DECREF(result);
        PyErr_SetString(PyExc_TypeError, "frames() returns (events, settled, pairing)");
        return -1;
    }
    int left = PyList_GET_SIZE(events) ? PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, events) : 0;
    if (left == 0)
        left = PyObject_Not(PyTuple_GET_ITEM(result, 1));
    if (left >= 0 && pairing != NULL)
        *pairing = Py_NewRef(PyTuple_GET_ITEM(result, 2));
    Py_DECREF(result);
    return left;
}

/* An answer no waiting request expects goes to the session as the frame it is, the pairing staying on: the
 * session's pairer is empty while the pairing holds its requests, so it finds none either and holds the answer
 * for the orphans' inference, as the reference does (whose splitter holds no unfinished request then: the lane
 * is released before such an answer). 2, or -1 on error. */
static int
orphan(Pairing *p, long long offset, const char *b, Py_ssize_t n, long long ts_first, long long ts_last)
{
    PyObject *frame = frame_new(p->frame_type, offset, PyBytes_FromStringAndSize(b, n), ts_first, ts_last);
    PyObject *list = frame ? PyList_New(1) : NULL;
    if (list == NULL) {
        Py_XDECREF(frame);
        return -1;
    }
    PyList_SET_ITEM(list, 0, frame);
    int left = session_frames(p->frames, p->request_dir ^ 1, list, p->events, NULL);
    Py_DECREF(list);
    if (left < 0)
        return -1;
    p->left = left;
    return 2;
}

static int
response(Pairing *p, long long offset, const char *b, Py_ssize_t n, long long ts_first, long long ts_last)
{
    if (n < 4)
        return 0;
    Py_ssize_t k = find(p, be32(b));
    if (k == -1)
        return p->left ? 0 : orphan(p, offset, b, n, ts_first, ts_last);
    Py_ssize_t ahead = p->overtaken, before = PyDict_GET_SIZE(p->held); /* the overtaken ones here, the session's */
    if (k == FURTHER || (k >= ahead && before + k > MAX_OVERTAKEN)) /* (the session settles the oldest) */
        return 0;
    Waiting *w = waiting_at(p, k);
    if (keyset_has(&shared.left, w->api_key) || (p->details && details_left(w->api_key)))
        return 0;
    /* the row's outcome: from the exchange scan, or in a details run from the walk of the decoded bodies */
    Scan s;
    int scanned = !p->details;
    if (scanned) {
        int ok = shared.scan->scan_frame(shared.responses, (const unsigned char *)b, n, w->api_key, w->api_version,
                                         p->names, &s);
        if (ok <= 0)
            return ok;
    }
    Outcome out = {0, 0, NULL};
    Bodies bodies = {NULL, NULL};
    PyObject *api_name = w->api_key < PyList_GET_SIZE(shared.api_names) ? PyList_GET_ITEM(shared.api_names, w->api_key)
                                                                          : Py_None;
    Paired x = {p->conn_id, api_name, w->correlation_id, w->api_key, w->api_version, w->offset, w->ts_first, offset,
                ts_first, p->at};
    if (p->details) {
        int ok = details_decode(w->data ? w->data : w->message, w->data_at, shared.requests, shared.responses, b, n,
                                w->api_key, w->api_version, &bodies);
        if (ok <= 0)
            return ok;
        /* with names, the scan lists the response's error codes and named ids: none where the walk over its bytes
         * took it (it declines any error code) and its version names no topic with its id */
        int scan = !p->names ? 0 : bodies.walked ? names_ids(w->api_key, w->api_version) : 1;
        if (scan != 0) {
            ok = scan < 0 ? -1 : shared.scan->scan_frame(shared.responses, (const unsigned char *)b, n, w->api_key,
                                                         w->api_version, 1, &s);
            if (ok <= 0) {
                details_drop(&bodies);
                return ok;
            }
            scanned = 1;
        }
        if (piece_ready(p->events, 1) < 0 || details_walk(shared.parts, &x, &bodies, &out) < 0) {
            details_clear(&bodies);
            return -1;
        }
    } else {
        out = (Outcome){s.first_error, s.errors,
                        s.found[SLOT_THROTTLE] ? PyLong_FromLongLong(s.value[SLOT_THROTTLE]) : Py_NewRef(Py_None)};
        if (out.throttle == NULL)
            return -1;
    }
    /* Pairer.take: an overtaken request answered after the first of them, or an answer that overtakes requests
     * still waiting in order, which then wait as overtaken (those an earlier answer overtook do not count) */
    int overtook = k < ahead ? k > 0 || before > 0 : k > ahead;
    int rc = row(p, w, overtook, ts_first, ts_last, b, n, &out, scanned ? &s : NULL);
    if (p->details && details_emit(shared.parts, &x, &bodies) < 0)
        rc = -1;
    Py_DECREF(out.throttle);
    details_clear(&bodies);
    if (rc < 0)
        return -1;
    p->counts[FRAMES_TO_CLIENT]++;
    p->counts[BYTES_TO_CLIENT] += n + 4;
    if (w->message == NULL) { /* (a request taken over from the session was counted there) */
        p->counts[FRAMES_TO_BROKER]++;
        p->counts[BYTES_TO_BROKER] += w->size + 4;
    }
    waiting_remove(p, k);
    p->overtaken = k < ahead ? ahead - 1 : k; /* (those before k, when it was not overtaken, are now) */
    return 1;
}

int
pairing_frame(Pairing *p, int d, long long offset, const char *b, Py_ssize_t n, PyObject *payload, long long ts_first,
              long long ts_last)
{
    if (!p->on)
        return 0;
    int rc = d == p->request_dir ? request(p, offset, b, n, payload, ts_first, ts_last)
                                   : response(p, offset, b, n, ts_first, ts_last);
    if (rc == 1)
        p->counts[CUT_0 + d]++;
    else if (rc == 0 && pairing_stop(p) < 0)
        return -1;
    return rc;
}
