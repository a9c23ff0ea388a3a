/* The Kafka framing stage's native part: one direction of a native lane, cut into frames in sync.
 *
 * The twin of framing.py's FrameSplitter in sync (``_whole_frames``, then ``_buffered`` and
 * ``_next_frame`` on the bytes left), for a direction that stays in sync: every size field in
 * [min_frame, max_frame], every frame head the direction's validator calls sane. A run that
 * would make the splitter do anything else (a desync, so hunting) is refused by framer_check
 * before anything changes, and the lane hands the direction back to the Python splitter
 * (FrameSplitter.adopt), which then takes the run itself.
 *
 * Rules:
 * - The same checks at the same moments as the reference: a frame's size when its 4 bytes are
 *   there, its head (``Validator.sane``) when the first min(size, 64) bytes are: checked here when
 *   the validator states its rule as data (``native_sane``: a request's api key and version against
 *   the registry's table, and its client id length; a response's correlation id against the
 *   requests the lane's pairing holds, while it holds all of them, else its size against the
 *   orphan bound), else called in Python (it may read the pairer); a frame whose head passed is not looked at again until its
 *   last byte arrives (the reference's ``_wait_until``), and then checked again, as the reference
 *   does. ``sane`` has no side effects, so framer_check may call it before a refusal.
 * - The frames equal the reference's: offset of the size field, the bytes after it, ts_first the
 *   capture time of the run holding the size field, ts_last the one that completed the frame.
 * - The runs holding tail bytes are remembered as the reference remembers its chunks (a run whose
 *   start completed whole frames counts from the byte after them), so a hand-back gives the
 *   splitter the chunk edges and times its hunting would read.
 * - Each frame goes to the lane's pairing first (kafka/_pairing.c), while it is on; what it does not
 *   take becomes a Frame for the session, in order.
 * - Memory: the tail holds one frame being assembled, never a byte past its end (a run that completes it
 *   goes on framing from the run itself): max_frame + 4 bytes at most, the reference's bound in sync,
 *   and room for no byte that has not arrived; and its runs' (start, ts). A tail left empty keeps at
 *   most KEPT_ROOM of room.
 */
#include "_framing.h"

#include <stdint.h>
#include <string.h>

#define HEAD_BYTES 64 /* framing.py: what sane() sees of a frame */
#define FIRST_ROOM 256 /* a tail's first room */
#define AHEAD 32 /* a tail's room is at most this many times the bytes it holds */
#define KEPT_ROOM (64 << 10) /* the most room a tail keeps while it holds nothing */

int
framer_init(Framer *f, long long frame_at, int min_frame, long long max_frame, PyObject *sane, PyObject *native)
{
    memset(f, 0, sizeof *f);
    f->frame_at = frame_at;
    f->min_frame = min_frame;
    f->max_frame = max_frame;
    f->sane = Py_NewRef(sane);
    if (native == Py_None)
        return 0;
    const char *kind;
    PyObject *rule;
    if (!PyArg_ParseTuple(native, "sO", &kind, &rule))
        return -1;
    if (!strcmp(kind, "response")) {
        f->max_orphan = PyLong_AsLongLong(rule);
        if (f->max_orphan == -1 && PyErr_Occurred())
            return -1;
        f->sane_kind = SANE_RESPONSE;
        return 0;
    }
    if (strcmp(kind, "request") || !PyList_Check(rule)) {
        PyErr_SetString(PyExc_ValueError, "native_sane() is ('request', [version per key]) or ('response', bound)");
        return -1;
    }
    Py_ssize_t n = PyList_GET_SIZE(rule);
    if ((f->sane_versions = PyMem_Malloc(n ? (size_t)n : 1)) == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long v = PyLong_AsLong(PyList_GET_ITEM(rule, k));
        if ((v == -1 && PyErr_Occurred()) || v < -1 || v > 127) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a sane version out of range");
            return -1;
        }
        f->sane_versions[k] = (signed char)v;
    }
    f->sane_keys = n;
    f->sane_kind = SANE_REQUEST;
    return 0;
}

void
framer_clear(Framer *f)
{
    PyMem_Free(f->tail);
    PyMem_Free(f->chunk_start);
    PyMem_Free(f->chunk_ts);
    PyMem_Free(f->sane_versions);
    f->sane_versions = NULL;
    Py_CLEAR(f->sane);
    f->tail = NULL;
    f->chunk_start = f->chunk_ts = NULL;
    f->tail_len = f->tail_cap = f->chunks = f->chunk_cap = 0;
}

/* Byte ``i`` of the tail followed by ``data``. */
static inline unsigned char
byte_at(const Framer *f, const unsigned char *data, Py_ssize_t i)
{
    return i < f->tail_len ? f->tail[i] : data[i - f->tail_len];
}

static inline long long
size_at(const Framer *f, const unsigned char *data, Py_ssize_t i)
{
    uint32_t v = (uint32_t)byte_at(f, data, i) << 24 | (uint32_t)byte_at(f, data, i + 1) << 16
                 | (uint32_t)byte_at(f, data, i + 2) << 8 | byte_at(f, data, i + 3);
    return (int32_t)v;
}

static inline int
int16_at(const Framer *f, const unsigned char *data, Py_ssize_t i)
{
    return (int16_t)(byte_at(f, data, i) << 8 | byte_at(f, data, i + 1));
}

/* sane(head, size) for the frame whose size field is at ``i``: 1, 0, or -1 on error. */
static int
ask_sane(const Framer *f, const unsigned char *data, Py_ssize_t i, long long size)
{
    if (f->sane_kind == SANE_REQUEST) { /* validators.py RequestValidator.sane */
        if (size < 8)
            return 0;
        int key = int16_at(f, data, i + 4), version = int16_at(f, data, i + 6);
        if (key < 0 || key >= f->sane_keys || version < 0 || version > f->sane_versions[key])
            return 0;
        int client_id = size < 10 ? 0 : int16_at(f, data, i + 12);
        return -1 <= client_id && client_id <= size - 10;
    }
    if (f->sane_kind == SANE_RESPONSE && f->pairing != NULL && f->pairing->on) { /* ResponseValidator.sane */
        long long correlation_id = size_at(f, data, i + 4);
        int waits = pairing_waits(f->pairing, correlation_id);
        return waits < 0 ? -1 : waits || size <= f->max_orphan;
    }
    Py_ssize_t n = size < HEAD_BYTES ? (Py_ssize_t)size : HEAD_BYTES;
    PyObject *head = PyBytes_FromStringAndSize(NULL, n);
    if (head == NULL)
        return -1;
    char *h = PyBytes_AS_STRING(head);
    for (Py_ssize_t k = 0; k < n; k++)
        h[k] = (char)byte_at(f, data, i + 4 + k);
    PyObject *args[2] = {head, PyLong_FromLongLong(size)}, *verdict = NULL;
    if (args[1] != NULL)
        verdict = PyObject_Vectorcall(f->sane, args, 2, NULL);
    Py_DECREF(head);
    Py_XDECREF(args[1]);
    if (verdict == NULL)
        return -1;
    int ok = PyObject_IsTrue(verdict);
    Py_DECREF(verdict);
    return ok;
}

int
framer_check(Framer *f, const unsigned char *data, Py_ssize_t n, Py_ssize_t *frames)
{
    Py_ssize_t total = f->tail_len + n, pos = 0, count = 0;
    *frames = 0;
    if (f->tail_len && f->waiting_end && f->waiting_end > f->frame_at + total)
        return 1; /* still inside the frame being assembled */
    while (total - pos >= 4) {
        long long size = size_at(f, data, pos);
        if (size < f->min_frame || size > f->max_frame)
            return 0; /* the reference desyncs */
        long long head_end = pos + 4 + (size < HEAD_BYTES ? size : HEAD_BYTES);
        if (head_end > total)
            break;
        int ok = ask_sane(f, data, pos, size);
        if (ok <= 0)
            return ok; /* -1: error; 0: the reference desyncs */
        if (pos + 4 + size > total)
            break;
        pos += 4 + (Py_ssize_t)size;
        count++;
    }
    *frames = count;
    return 1;
}

/* Room in the tail for ``need`` bytes of a frame ending at ``end`` (``need`` while its size field is not all there):
 * up to AHEAD times the bytes held, and up to the frame's end, so a frame spanning many runs gets its room in one or
 * two steps, not copied at every doubling; a size field alone reserves little (the reference holds what arrived). */
static int
grow_tail(Framer *f, Py_ssize_t need, Py_ssize_t end)
{
    if (need <= f->tail_cap)
        return 0;
    Py_ssize_t size = need < FIRST_ROOM / AHEAD ? FIRST_ROOM : need * AHEAD;
    if (size > end)
        size = end;
    unsigned char *grown = PyMem_Realloc(f->tail, (size_t)size);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    f->tail = grown;
    f->tail_cap = size;
    return 0;
}

/* Copies into the tail the bytes of ``data`` (``n``) up to the end of the frame the tail starts (all of them while its
 * size field is not there): how many were taken, or -1. framer_check vetted every size field first. */
static Py_ssize_t
fill_tail(Framer *f, const char *data, Py_ssize_t n)
{
    Py_ssize_t taken = n, end = f->tail_len + n;
    if (end >= 4) {
        long long size = size_at(f, (const unsigned char *)data, 0);
        if (size < 0 || size > f->max_frame) {
            PyErr_SetString(PyExc_RuntimeError, "framer_take given bytes framer_check did not approve");
            return -1;
        }
        end = 4 + (Py_ssize_t)size;
        if (end - f->tail_len < n)
            taken = end - f->tail_len;
    }
    if (grow_tail(f, f->tail_len + taken, end) < 0)
        return -1;
    memcpy(f->tail + f->tail_len, data, (size_t)taken);
    f->tail_len += taken;
    return taken;
}

/* After a frame left the tail empty: a big room is given back (an idle direction holds no frame's room; most
 * connections are idle most of the time). */
static void
tail_emptied(Framer *f)
{
    f->tail_len = f->chunks = 0;
    if (f->tail_cap > KEPT_ROOM) {
        PyMem_Free(f->tail);
        f->tail = NULL;
        f->tail_cap = 0;
    }
}

static int
add_chunk(Framer *f, long long start, long long ts)
{
    if (f->chunks == f->chunk_cap) {
        Py_ssize_t size = f->chunk_cap ? f->chunk_cap * 2 : 16;
        long long *starts = PyMem_Realloc(f->chunk_start, (size_t)size * sizeof *starts);
        if (starts == NULL)
            goto no_memory;
        f->chunk_start = starts;
        long long *times = PyMem_Realloc(f->chunk_ts, (size_t)size * sizeof *times);
        if (times == NULL)
            goto no_memory;
        f->chunk_ts = times;
        f->chunk_cap = size;
    }
    f->chunk_start[f->chunks] = start;
    f->chunk_ts[f->chunks] = ts;
    f->chunks++;
    return 0;
no_memory:
    PyErr_NoMemory();
    return -1;
}

/* The frame at ``offset`` (``size`` bytes at ``bytes``; ``payload``: the run's bytes when they are just this frame and
 * its size field, else NULL) to the lane's pairing, else a Frame appended to ``*out`` (made on the first). */
static int
emit(Framer *f, PyObject *frame_type, long long offset, const char *bytes, Py_ssize_t size, PyObject *payload,
     long long ts_first, long long now, PyObject **out)
{
    if (f->pairing != NULL && f->pairing->on) {
        int taken = pairing_frame(f->pairing, f->direction, offset, bytes, size, payload, ts_first, now);
        if (taken)
            return taken < 0 ? -1 : 0;
    }
    PyObject *frame = frame_new(frame_type, offset, PyBytes_FromStringAndSize(bytes, size), ts_first, now);
    if (frame == NULL || (*out == NULL && (*out = PyList_New(0)) == NULL)) {
        Py_XDECREF(frame);
        return -1;
    }
    int rc = PyList_Append(*out, frame);
    Py_DECREF(frame);
    return rc;
}

/* The waiting_end of the frame at the tail's start: its end once its head passed, else 0. */
static void
set_waiting(Framer *f)
{
    f->waiting_end = 0;
    if (f->tail_len < 4)
        return;
    long long size = size_at(f, NULL, 0);
    if (4 + (size < HEAD_BYTES ? size : HEAD_BYTES) <= f->tail_len)
        f->waiting_end = f->frame_at + 4 + size;
}

int
framer_take(Framer *f, PyObject *data, long long offset, long long now, PyObject *frame_type, PyObject **out)
{
    const char *d = PyBytes_AS_STRING(data);
    Py_ssize_t n = PyBytes_GET_SIZE(data), pos = 0;
    long long rest_from = -1; /* where the run's unframed rest counts from as a chunk (-1: the byte after its frames) */
    if (f->tail_len) { /* _buffered then _next_frame: the run joins the tail up to the end of the tail's frame */
        if (add_chunk(f, offset, now) < 0 || (pos = fill_tail(f, d, n)) < 0)
            return -1;
        if (f->tail_len < 4 || f->tail_len < 4 + size_at(f, NULL, 0)) {
            set_waiting(f);
            return 0;
        }
        /* (ts_first: the first run's, which holds the size field) */
        if (emit(f, frame_type, f->frame_at, (const char *)f->tail + 4, f->tail_len - 4, NULL, f->chunk_ts[0], now,
                 out) < 0)
            return -1;
        f->frame_at += f->tail_len;
        tail_emptied(f);
        rest_from = offset; /* (the reference keeps this run as a chunk from its start) */
    }
    /* _whole_frames: frames cut from the run itself */
    while (n - pos >= 4) {
        long long size = size_at(f, (const unsigned char *)d + pos, 0);
        if (pos + 4 + size > n)
            break;
        PyObject *just = pos == 0 && 4 + size == n ? data : NULL;
        if (emit(f, frame_type, offset + pos, d + pos + 4, (Py_ssize_t)size, just, now, now, out) < 0)
            return -1;
        pos += 4 + (Py_ssize_t)size;
    }
    f->frame_at = offset + pos;
    if (pos == n)
        return 0;
    if (add_chunk(f, rest_from >= 0 ? rest_from : f->frame_at, now) < 0 || fill_tail(f, d + pos, n - pos) < 0)
        return -1;
    set_waiting(f);
    return 0;
}

PyObject *
framer_state(const Framer *f)
{
    PyObject *chunks = PyList_New(f->chunks);
    if (chunks == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < f->chunks; k++) {
        PyObject *item = Py_BuildValue("(LL)", f->chunk_start[k], f->chunk_ts[k]);
        if (item == NULL) {
            Py_DECREF(chunks);
            return NULL;
        }
        PyList_SET_ITEM(chunks, k, item);
    }
    PyObject *waiting = f->waiting_end ? PyLong_FromLongLong(f->waiting_end) : Py_NewRef(Py_None);
    PyObject *state = waiting ? Py_BuildValue("(Ly#NN)", f->frame_at, f->tail ? (const char *)f->tail : "", f->tail_len, chunks,
                                              waiting)
                              : NULL;
    if (state == NULL && waiting == NULL)
        Py_DECREF(chunks);
    return state;
}
