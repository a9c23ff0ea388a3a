/* The reassembly stage's native path: in-order segments of settled connections ("lanes").
 *
 * The twin of reassembler.py's feed followed by halfstream.py's hot path and the pipeline's
 * dispatch of the run, for the common segment: a connection the Python reassembler opened and
 * settled hands both its directions to a lane (lanes.py says when), and from then on a segment of
 * it that is exactly the next bytes of its direction (or a bare ACK) is taken here: the lane's
 * counters advance and the bytes go straight to the connection's RunSink (its ``data``), with no
 * StreamData and no Python frame per segment. Python (the reference) keeps everything else.
 *
 * Rules:
 * - A lane holds only what the hot path changes: per direction the delivery point (next_off,
 *   high_off), the peer's last ACK and window, the counters it advanced since adoption (segments,
 *   bytes, keep-alives) and the last RECENT_CHUNKS delivered chunks (conflicts.py compares
 *   retransmissions with them). The rest of the state stays in the Python objects, untouched while
 *   the lane owns the connection: nothing held out of order, no FIN, base known (adoption's rule).
 * - run() takes segments from a position and stops *before* the first one it does not take. A
 *   segment of no lane is left as it is; a segment of a lane that is not the hot case (SYN, FIN,
 *   RST, a hole, a retransmission, a 1-byte or padded or cut payload, an ACK that proves a loss, a
 *   zero window) first *releases* its lane: the lane's state is handed back (release() in lanes.py
 *   writes it into the Python objects) and the lane is forgotten, so the reference sees exactly the
 *   state it would have built itself. A segment at or past the idle sweep time is left to Python
 *   without releasing (the caller releases every lane: the sweep may end any of them).
 * - What a taken segment does equals the reference, in the same order: the sender's segment count,
 *   the peer's ACK and window, then the bytes delivered to the sink. What it owes the Python objects
 *   (the connection's last_ts, its place in the reassembler's least-recently-active order, the
 *   summary's last_ts) is paid once per lane before run() returns (settle()), with the values and the
 *   order the reference's per-segment updates leave: no Python code reads them during a run.
 * - A segment's lane is found by its 4-tuple in ``flows``; the last FLOW_HITS found are remembered by
 *   their address objects and ports (no key tuple hashed per segment), and forgotten whenever ``flows``
 *   changes, so a 4-tuple used again after its lane was handed back is looked up again.
 * - Memory: one lane per open connection (the reassembler's max_connections bounds them), and per
 *   direction at most RECENT_CHUNKS references to payloads of at most RECENT_CHUNK bytes; FLOW_HITS
 *   pairs of address strings.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>

#include "../kafka/_framing.h"
#include "../kafka/_pairing.h"
#include "../sources/_segment_layout.h"

#define SEQ_MASK 0xFFFFFFFFu
#define MAX_AHEAD (1u << 30) /* halfstream.MAX_AHEAD */
#define RECENT_CHUNKS 4      /* conflicts.RECENT_CHUNKS */
#define RECENT_CHUNK 4096    /* conflicts.RECENT_CHUNK */
#define F_FIN 0x01
#define F_SYN 0x02
#define F_RST 0x04
#define F_ACK 0x10

/* ---- one lane ---------------------------------------------------------------------------- */

typedef struct {
    uint32_t base;
    long long next_off, high_off;
    int has_peer_ack, has_peer_window;
    uint32_t peer_ack;
    long long peer_window;
    long long segments, bytes, keepalives; /* advanced since adoption */
    int recent_n, recent_head;             /* ring of the last delivered chunks, oldest at head */
    long long recent_off[RECENT_CHUNKS];
    PyObject *recent_data[RECENT_CHUNKS];
} Direction;

typedef struct {
    PyObject *conn_id;  /* int */
    PyObject *conn;     /* the reassembler's _Connection (its last_ts) */
    PyObject *sink;     /* the RunSink's bound data(), or None when the pipeline tracks no connection */
    PyObject *keys[2];  /* FlowKey of each direction */
    Direction dir[2];
    /* Framing (kafka/_framing.c), when the connection's Kafka state let the lane take it over: the runs
     * become frames here and go to the connection's frames() instead of data(). */
    int framed, request_dir;
    Framer framer[2];
    PyObject *frames;     /* KafkaConnection.frames */
    PyObject *summary;    /* its ConnectionSummary (last_ts) */
    PyObject *frame_type; /* framing.Frame */
    Pairing pairing;      /* the frames' pairing into exchanges rows (kafka/_pairing.c), while it is on */
    /* A lane that does not frame, of a connection that may come to allow it (a hunt that ends, a gap left
     * behind): its lane_framing(offsets), asked after each segment it delivers; NULL when framed or never. */
    PyObject *upgrade;
    /* What the run's taken segments owe the Python objects, settled before the run returns (settle()):
     * the last one's time (the connection's last_ts, and its place in the least-recently-active order by
     * ``touched``) and, when the lane frames, the latest time for the summary's last_ts. */
    PyObject *last_ts, *summary_ts; /* NULL: nothing owed */
    long long summary_max;
    Py_ssize_t touched; /* when the last one was taken, in the run's count */
} Lane;

/* A 4-tuple ``flows`` mapped to a lane entry, remembered by its address strings themselves (the sources make
 * one string object per address, cached) and its ports: a segment of a busy connection finds its lane with
 * no key tuple made, hashed and compared. */
typedef struct {
    PyObject *src, *dst; /* strong references (NULL: empty), compared by identity */
    long sport, dport;
    Py_ssize_t where;
} FlowHit;

#define FLOW_HITS 64

typedef struct {
    PyObject_HEAD
    PyObject *flows; /* FlowKey -> int (lane index * 2 + direction) */
    Lane **lanes;    /* NULL slots are free */
    Py_ssize_t size;
    FlowHit hits[FLOW_HITS]; /* emptied whenever ``flows`` changes */
    Lane **owing;            /* the lanes with something owed (Lane.last_ts), in the order first taken */
    Py_ssize_t owing_n, owing_cap, taken;
} Lanes;

static PyObject *s_ts_ns, *s_src_ip, *s_src_port, *s_dst_ip, *s_dst_port, *s_seq, *s_ack, *s_flags, *s_window,
    *s_payload, *s_payload_len, *s_last_ts;

static void
lane_free(Lane *lane)
{
    Py_XDECREF(lane->conn_id);
    Py_XDECREF(lane->conn);
    Py_XDECREF(lane->sink);
    Py_XDECREF(lane->keys[0]);
    Py_XDECREF(lane->keys[1]);
    Py_XDECREF(lane->frames);
    Py_XDECREF(lane->summary);
    Py_XDECREF(lane->frame_type);
    Py_XDECREF(lane->upgrade);
    Py_XDECREF(lane->last_ts);
    Py_XDECREF(lane->summary_ts);
    lane->pairing.events = NULL;
    pairing_clear(&lane->pairing);
    if (lane->framed)
        for (int d = 0; d < 2; d++)
            framer_clear(&lane->framer[d]);
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < lane->dir[d].recent_n; i++)
            Py_DECREF(lane->dir[d].recent_data[(lane->dir[d].recent_head + i) % RECENT_CHUNKS]);
    PyMem_Free(lane);
}

static void
recent_push(Direction *dir, long long off, PyObject *data)
{
    int slot;
    if (dir->recent_n == RECENT_CHUNKS) {
        slot = dir->recent_head;
        Py_DECREF(dir->recent_data[slot]);
        dir->recent_head = (dir->recent_head + 1) % RECENT_CHUNKS;
    } else {
        slot = (dir->recent_head + dir->recent_n) % RECENT_CHUNKS;
        dir->recent_n++;
    }
    dir->recent_off[slot] = off;
    dir->recent_data[slot] = Py_NewRef(data);
}

/* (next_off, high_off, peer_ack, peer_window, segments, bytes, keepalives, [(offset, bytes), ...]) */
static PyObject *
direction_state(const Direction *dir)
{
    PyObject *recent = PyList_New(dir->recent_n);
    if (recent == NULL)
        return NULL;
    for (int i = 0; i < dir->recent_n; i++) {
        int slot = (dir->recent_head + i) % RECENT_CHUNKS;
        PyObject *item = Py_BuildValue("(LO)", dir->recent_off[slot], dir->recent_data[slot]);
        if (item == NULL) {
            Py_DECREF(recent);
            return NULL;
        }
        PyList_SET_ITEM(recent, i, item);
    }
    PyObject *ack = dir->has_peer_ack ? PyLong_FromUnsignedLong(dir->peer_ack) : Py_NewRef(Py_None);
    PyObject *window = dir->has_peer_window ? PyLong_FromLongLong(dir->peer_window) : Py_NewRef(Py_None);
    PyObject *state = NULL;
    if (ack != NULL && window != NULL)
        state = Py_BuildValue("(LLOOLLLO)", dir->next_off, dir->high_off, ack, window, dir->segments, dir->bytes,
                              dir->keepalives, recent);
    Py_XDECREF(ack);
    Py_XDECREF(window);
    Py_DECREF(recent);
    return state;
}

/* ---- the lane table ---------------------------------------------------------------------- */

/* Every remembered flow forgotten: ``flows`` is about to change. */
static void
forget_hits(Lanes *self)
{
    for (int k = 0; k < FLOW_HITS; k++) {
        Py_CLEAR(self->hits[k].src);
        Py_CLEAR(self->hits[k].dst);
    }
}

/* Forget lane ``i``; returns (conn_id, (state of direction 0, state of direction 1), framing) with framing
 * None or (framer state of direction 0, of direction 1). The pairing is handed back first. */
static PyObject *
release_lane(Lanes *self, Py_ssize_t i)
{
    Lane *lane = self->lanes[i];
    lane->pairing.events = NULL; /* (waiting requests replayed make no event: the session's pairer was empty) */
    if (pairing_stop(&lane->pairing) < 0)
        return NULL;
    PyObject *s0 = direction_state(&lane->dir[0]), *s1 = s0 ? direction_state(&lane->dir[1]) : NULL;
    PyObject *framing = NULL, *result = NULL;
    if (s1 != NULL) {
        if (lane->framed) {
            PyObject *f0 = framer_state(&lane->framer[0]), *f1 = f0 ? framer_state(&lane->framer[1]) : NULL;
            framing = f1 ? Py_BuildValue("(OO)", f0, f1) : NULL;
            Py_XDECREF(f0);
            Py_XDECREF(f1);
        } else {
            framing = Py_NewRef(Py_None);
        }
    }
    if (framing != NULL)
        result = Py_BuildValue("(O(OO)O)", lane->conn_id, s0, s1, framing);
    Py_XDECREF(s0);
    Py_XDECREF(s1);
    Py_XDECREF(framing);
    if (result == NULL)
        return NULL;
    forget_hits(self);
    for (int d = 0; d < 2; d++)
        if (PyDict_DelItem(self->flows, lane->keys[d]) < 0) {
            Py_DECREF(result);
            return NULL;
        }
    self->lanes[i] = NULL;
    lane_free(lane);
    return result;
}

static int
read_direction(PyObject *state, Direction *dir)
{
    /* (base, next_off, high_off, peer_ack or None, peer_window or None) */
    PyObject *ack, *window;
    unsigned long base;
    if (!PyArg_ParseTuple(state, "kLLOO", &base, &dir->next_off, &dir->high_off, &ack, &window))
        return -1;
    dir->base = (uint32_t)base;
    dir->has_peer_ack = ack != Py_None;
    dir->peer_ack = dir->has_peer_ack ? (uint32_t)PyLong_AsUnsignedLong(ack) : 0;
    dir->has_peer_window = window != Py_None;
    dir->peer_window = dir->has_peer_window ? PyLong_AsLongLong(window) : 0;
    return PyErr_Occurred() ? -1 : 0;
}

/* framing: (frames, summary, frame_type, request_dir, min_frame, max_frame, (frame_at, sane, native_sane) per
 * direction, pairing spec or None) */
static int
read_framing(PyObject *framing, Lane *lane)
{
    PyObject *frames, *summary, *frame_type, *sane[2], *native[2], *pairing;
    long long frame_at[2], max_frame;
    int request_dir, min_frame;
    if (!PyArg_ParseTuple(framing, "OOOiiL(LOO)(LOO)O", &frames, &summary, &frame_type, &request_dir, &min_frame,
                          &max_frame, &frame_at[0], &sane[0], &native[0], &frame_at[1], &sane[1], &native[1],
                          &pairing))
        return -1;
    if (request_dir < 0 || request_dir > 1 || min_frame < 0) {
        PyErr_SetString(PyExc_ValueError, "bad request direction or frame bound");
        return -1;
    }
    for (int d = 0; d < 2; d++) {
        if (framer_init(&lane->framer[d], frame_at[d], min_frame, max_frame, sane[d], native[d]) < 0)
            goto unframed;
        lane->framer[d].pairing = &lane->pairing;
        lane->framer[d].direction = d;
    }
    if (pairing != Py_None && pairing_start(&lane->pairing, pairing, request_dir, frame_type, frames) < 0)
        goto unframed;
    lane->framed = 1;
    lane->request_dir = request_dir;
    lane->frames = Py_NewRef(frames);
    lane->summary = Py_NewRef(summary);
    lane->frame_type = Py_NewRef(frame_type);
    return 0;
unframed: /* the lane stays as it was (framer_clear frees what framer_init made, even when it failed) */
    for (int d = 0; d < 2; d++)
        framer_clear(&lane->framer[d]);
    return -1;
}

/* adopt(conn_id, conn, key0, key1, sink, state0, state1, framing or None[, upgrade]): the connection becomes a
 * lane. ``upgrade`` (a lane without framing): the connection's lane_framing, asked after each segment delivered. */
static PyObject *
lanes_adopt(Lanes *self, PyObject *args)
{
    PyObject *conn_id, *conn, *keys[2], *sink, *states[2], *framing, *upgrade = Py_None;
    Py_ssize_t i;
    if (!PyArg_ParseTuple(args, "OOO!O!OO!O!O|O", &conn_id, &conn, &PyTuple_Type, &keys[0], &PyTuple_Type, &keys[1],
                          &sink, &PyTuple_Type, &states[0], &PyTuple_Type, &states[1], &framing, &upgrade))
        return NULL;
    Lane *lane = PyMem_Calloc(1, sizeof(Lane));
    if (lane == NULL)
        return PyErr_NoMemory();
    if (read_direction(states[0], &lane->dir[0]) < 0 || read_direction(states[1], &lane->dir[1]) < 0
        || (framing != Py_None && read_framing(framing, lane) < 0)) {
        lane_free(lane);
        return NULL;
    }
    for (i = 0; i < self->size && self->lanes[i] != NULL; i++)
        ;
    if (i == self->size) {
        Py_ssize_t size = self->size ? self->size * 2 : 64;
        Lane **grown = PyMem_Realloc(self->lanes, (size_t)size * sizeof(Lane *));
        if (grown == NULL) {
            lane_free(lane);
            return PyErr_NoMemory();
        }
        for (Py_ssize_t k = self->size; k < size; k++)
            grown[k] = NULL;
        self->lanes = grown;
        self->size = size;
    }
    forget_hits(self);
    for (int d = 0; d < 2; d++) {
        PyObject *where = PyLong_FromSsize_t(i * 2 + d);
        if (where == NULL || PyDict_SetItem(self->flows, keys[d], where) < 0) {
            Py_XDECREF(where);
            if (d == 1)
                PyDict_DelItem(self->flows, keys[0]);
            lane_free(lane);
            return NULL;
        }
        Py_DECREF(where);
    }
    lane->conn_id = Py_NewRef(conn_id);
    lane->conn = Py_NewRef(conn);
    lane->sink = Py_NewRef(sink);
    lane->upgrade = framing == Py_None && upgrade != Py_None ? Py_NewRef(upgrade) : NULL;
    lane->keys[0] = Py_NewRef(keys[0]);
    lane->keys[1] = Py_NewRef(keys[1]);
    self->lanes[i] = lane;
    Py_RETURN_NONE;
}

/* release_all() -> [(conn_id, states), ...]: every lane handed back (idle sweep, eviction, end of input). */
static PyObject *
lanes_release_all(Lanes *self, PyObject *unused)
{
    PyObject *out = PyList_New(0);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < self->size; i++) {
        if (self->lanes[i] == NULL)
            continue;
        PyObject *state = release_lane(self, i);
        if (state == NULL || PyList_Append(out, state) < 0) {
            Py_XDECREF(state);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(state);
    }
    return out;
}

/* ---- one segment ------------------------------------------------------------------------- */

typedef struct {
    long long ts, payload_len, window;
    unsigned long seq, ack, flags;
    PyObject *payload; /* borrowed from the segment's attribute (held by the caller's reference) */
} Segment;

enum { TAKE = 0, RELEASE = 1, SWEEP = 2, FAILED = -1 };

/* Whether the reference would take its hot path for this segment of ``lane`` sent in direction ``d``
 * (and, on a framed lane, keep both directions in sync with no event but frames). */
static int
judge(Lane *lane, int d, const Segment *s, int has_sweep, long long next_sweep)
{
    const Direction *me = &lane->dir[d], *peer = &lane->dir[d ^ 1];
    if (has_sweep && s->ts >= next_sweep)
        return SWEEP;
    if (s->flags & (F_SYN | F_FIN | F_RST))
        return RELEASE;
    if (s->flags & F_ACK) { /* peer.acknowledge: only an ACK that proves no loss */
        uint32_t gap = ((uint32_t)s->ack - peer->base - (uint32_t)peer->next_off) & SEQ_MASK;
        if (gap != 0 && gap <= MAX_AHEAD && gap != 1)
            return RELEASE;
    }
    if (s->payload_len != PyBytes_GET_SIZE(s->payload))
        return RELEASE; /* link padding or a snap-length cut */
    if (s->payload_len == 0)
        return me->has_peer_window && me->peer_window == 0 ? RELEASE : TAKE; /* zero-window probing */
    if (s->payload_len == 1)
        return RELEASE;
    if (((uint32_t)s->seq - me->base - (uint32_t)me->next_off) & SEQ_MASK)
        return RELEASE;
    if (!lane->framed)
        return TAKE;
    Py_ssize_t frames;
    int ok = framer_check(&lane->framer[d], (const unsigned char *)PyBytes_AS_STRING(s->payload),
                          PyBytes_GET_SIZE(s->payload), &frames);
    if (ok < 0)
        return FAILED;
    /* A response whose request is not pending makes the session doubt the request direction's
     * unfinished frame: only the Python splitter can, so it must hold that frame. */
    if (!ok || (frames && d != lane->request_dir && framer_pending(&lane->framer[lane->request_dir])))
        return RELEASE;
    return TAKE;
}

/* A taken segment's time, owed to the connection (and, framing, to its summary) until settle(). */
static int
owe(Lanes *self, Lane *lane, const Segment *s, PyObject *ts)
{
    if (lane->last_ts == NULL) {
        if (self->owing_n == self->owing_cap) {
            Py_ssize_t cap = self->owing_cap ? self->owing_cap * 2 : 16;
            Lane **grown = PyMem_Realloc(self->owing, (size_t)cap * sizeof(Lane *));
            if (grown == NULL) {
                PyErr_NoMemory();
                return -1;
            }
            self->owing = grown;
            self->owing_cap = cap;
        }
        self->owing[self->owing_n++] = lane;
    }
    Py_XSETREF(lane->last_ts, Py_NewRef(ts));
    lane->touched = self->taken++;
    if (lane->framed && lane->sink != Py_None && s->payload_len > 0
        && (lane->summary_ts == NULL || s->ts > lane->summary_max)) {
        Py_XSETREF(lane->summary_ts, Py_NewRef(ts));
        lane->summary_max = s->ts;
    }
    return 0;
}

static int
by_touched(const void *a, const void *b)
{
    Py_ssize_t x = (*(Lane *const *)a)->touched, y = (*(Lane *const *)b)->touched;
    return (x > y) - (x < y);
}

/* What the taken segments owe, paid as the reference pays it per segment: each connection's last_ts its last
 * segment's time, the connections moved to the end of the least-recently-active order in the order of their
 * last segments (``move_to_end``), each summary's last_ts raised to its latest time (a max, so Python's own
 * raises in between commute). Nothing in Python reads these while a run takes segments: the frames and the
 * pairing's hand-backs reach only the Kafka session, which raises the summary's time the same way. 0 or -1. */
static int
settle(Lanes *self, PyObject *move_to_end)
{
    int rc = 0;
    if (self->owing_n > 1) /* (qsort of no array is undefined, even of nothing) */
        qsort(self->owing, (size_t)self->owing_n, sizeof(Lane *), by_touched);
    for (Py_ssize_t k = 0; k < self->owing_n; k++) {
        Lane *lane = self->owing[k];
        PyObject *ts = lane->last_ts, *summary_ts = lane->summary_ts;
        lane->last_ts = lane->summary_ts = NULL;
        if (rc == 0 && PyObject_SetAttr(lane->conn, s_last_ts, ts) < 0)
            rc = -1;
        PyObject *moved = rc == 0 ? PyObject_CallOneArg(move_to_end, lane->conn_id) : NULL;
        if (moved == NULL)
            rc = -1;
        Py_XDECREF(moved);
        if (rc == 0 && summary_ts != NULL) { /* summary.last_ts = max(summary.last_ts, ts) */
            PyObject *last = PyObject_GetAttr(lane->summary, s_last_ts);
            int later = last == NULL ? -1 : PyObject_RichCompareBool(summary_ts, last, Py_GT);
            Py_XDECREF(last);
            if (later < 0 || (later && PyObject_SetAttr(lane->summary, s_last_ts, summary_ts) < 0))
                rc = -1;
        }
        Py_DECREF(ts);
        Py_XDECREF(summary_ts);
    }
    self->owing_n = 0;
    return rc;
}

/* The connection's frames(direction, frames, asks) (session_frames): returns 1 when the connection left what a
 * lane may frame, 0 if not, -1 on error. A pairing spec (not None) starts the lane's pairing again. */
static int
deliver_frames(Lane *lane, int d, PyObject *frames, PyObject *out)
{
    PyObject *pairing = NULL; /* (asked for only when the lane's pairing is off: a spec takes the waiting over) */
    int left = session_frames(lane->frames, d, frames, out, lane->pairing.on ? NULL : &pairing);
    if (left >= 0 && pairing != NULL && pairing != Py_None
        && pairing_start(&lane->pairing, pairing, lane->request_dir, lane->frame_type, lane->frames) < 0)
        left = -1;
    Py_XDECREF(pairing);
    return left;
}

/* A lane that does not frame asks its connection, after each segment delivered, whether a lane may frame it from
 * here on (lane_framing at the directions' next bytes: a hunt ended, a gap's cut frame left behind); if so it
 * frames from the next segment, as if adopted now, instead of leaving every later frame to the Python splitter.
 * 0 or -1. */
static int
frame_from_here(Lane *lane)
{
    PyObject *offsets = Py_BuildValue("(LL)", lane->dir[0].next_off, lane->dir[1].next_off);
    PyObject *framing = offsets != NULL ? PyObject_CallOneArg(lane->upgrade, offsets) : NULL;
    Py_XDECREF(offsets);
    if (framing == NULL)
        return -1;
    int rc = framing == Py_None ? 0 : read_framing(framing, lane);
    if (rc == 0 && lane->framed)
        Py_CLEAR(lane->upgrade);
    Py_DECREF(framing);
    return rc;
}

/* The reference's effects of a taken segment (index ``at`` of the run's list), in its order; appends the sink's
 * events to ``out``. Returns 0, 1 when the lane must be handed back after it (its connection left the common
 * case), -1. */
static int
take(Lanes *self, Lane *lane, int d, const Segment *s, Py_ssize_t at, PyObject *ts, PyObject *out)
{
    Direction *me = &lane->dir[d], *peer = &lane->dir[d ^ 1];
    if (owe(self, lane, s, ts) < 0)
        return -1;
    me->segments++;
    if (s->flags & F_ACK) {
        peer->has_peer_ack = peer->has_peer_window = 1;
        peer->peer_ack = (uint32_t)s->ack;
        peer->peer_window = s->window;
    }
    if (s->payload_len == 0) {
        uint32_t sent = (me->base + (uint32_t)(me->high_off > me->next_off ? me->high_off : me->next_off)) & SEQ_MASK;
        if ((uint32_t)s->seq == ((sent - 1) & SEQ_MASK))
            me->keepalives++;
        return 0;
    }
    long long off = me->next_off;
    if (s->payload_len <= RECENT_CHUNK)
        recent_push(me, off, s->payload);
    me->bytes += s->payload_len;
    me->next_off = me->high_off = off + s->payload_len;
    if (lane->sink == Py_None)
        return 0;
    if (lane->framed) {
        PyObject *frames = NULL; /* (made when the pairing leaves a frame to the session) */
        lane->pairing.events = out;
        lane->pairing.at = at;
        int rc = framer_take(&lane->framer[d], s->payload, off, s->ts, lane->frame_type, &frames);
        lane->pairing.events = NULL;
        if (rc == 0 && frames != NULL && PyList_GET_SIZE(frames))
            rc = deliver_frames(lane, d, frames, out);
        if (rc == 0 && lane->pairing.left) /* an orphan answer took the connection out of the common case */
            rc = 1;
        lane->pairing.left = 0;
        Py_XDECREF(frames);
        return rc;
    }
    PyObject *direction = PyLong_FromLong(d), *offset = PyLong_FromLongLong(off), *events = NULL;
    if (direction != NULL && offset != NULL) {
        PyObject *call[4] = {direction, offset, s->payload, ts};
        events = PyObject_Vectorcall(lane->sink, call, 4, NULL);
    }
    Py_XDECREF(direction);
    Py_XDECREF(offset);
    if (events == NULL)
        return -1;
    int rc = 0;
    if (PyList_CheckExact(events)) {
        if (PyList_GET_SIZE(events))
            rc = PyList_SetSlice(out, PY_SSIZE_T_MAX, PY_SSIZE_T_MAX, events);
    } else {
        PyErr_SetString(PyExc_TypeError, "a RunSink's data() returns a list");
        rc = -1;
    }
    Py_DECREF(events);
    return rc == 0 && lane->upgrade != NULL ? frame_from_here(lane) : rc;
}

static SegmentLayout layout; /* TcpSegment's (sources/_segment_layout.h): its fields read in their slots */

/* Field ``i`` of a segment, whose attribute is ``name`` (a new reference, or NULL with an exception set). */
static inline PyObject *
field(PyObject *obj, int i, PyObject *name)
{
    if ((PyObject *)Py_TYPE(obj) != layout.type && segment_layout(&layout, (PyObject *)Py_TYPE(obj)) < 0)
        return NULL;
    PyObject *v = layout.direct ? *segment_slot(&layout, obj, i) : NULL;
    return v != NULL ? Py_NewRef(v) : PyObject_GetAttr(obj, name);
}

/* An int field's value; one that is no int or beyond int64 makes the segment unusual (not an exception: the
 * overflow-reporting conversion, which for a capture time's three digits costs a fifth of PyLong_AsLongLong's). */
static long long
int_field(PyObject *v, int *unusual)
{
    int overflow = 0;
    long long x = PyLong_CheckExact(v) ? PyLong_AsLongLongAndOverflow(v, &overflow) : 0;
    *unusual |= !PyLong_CheckExact(v) || overflow;
    return overflow ? 0 : x;
}

/* Reads a segment's fields: 0, or 1 when one is not what the sources build (the reference takes it), -1 on error. */
static int
read_segment(PyObject *obj, Segment *s, PyObject **ts)
{
    PyObject *v;
    int unusual = 0;
    long long x;
#define READ(i, name, field_, low)                                                                               \
    if ((v = field(obj, i, name)) == NULL)                                                                       \
        return -1;                                                                                               \
    x = int_field(v, &unusual);                                                                                  \
    unusual |= x < (low); /* (an unsigned field's negative value) */                                             \
    s->field_ = x < (low) ? 0 : x;                                                                               \
    Py_DECREF(v);
    READ(SF_SEQ, s_seq, seq, 0)
    READ(SF_ACK, s_ack, ack, 0)
    READ(SF_FLAGS, s_flags, flags, 0)
    READ(SF_WINDOW, s_window, window, LLONG_MIN)
    READ(SF_PAYLOAD_LEN, s_payload_len, payload_len, LLONG_MIN)
#undef READ
    if ((*ts = field(obj, SF_TS_NS, s_ts_ns)) == NULL)
        return -1;
    s->ts = int_field(*ts, &unusual);
    if ((s->payload = field(obj, SF_PAYLOAD, s_payload)) == NULL)
        return -1;
    Py_DECREF(s->payload); /* the segment holds it */
    unusual |= !PyBytes_CheckExact(s->payload);
    return unusual || s->seq > SEQ_MASK || s->ack > SEQ_MASK;
}

/* The lane entry (index * 2 + direction) of a segment's 4-tuple, or -1 (none), -2 (error). */
static Py_ssize_t
lookup(Lanes *self, PyObject *obj)
{
    PyObject *names[4] = {s_src_ip, s_src_port, s_dst_ip, s_dst_port}, *v[4];
    const int fields[4] = {SF_SRC_IP, SF_SRC_PORT, SF_DST_IP, SF_DST_PORT};
    for (int k = 0; k < 4; k++)
        if ((v[k] = field(obj, fields[k], names[k])) == NULL) {
            while (k--)
                Py_DECREF(v[k]);
            return -2;
        }
    FlowHit *hit = NULL;
    long sport = -1, dport = -1;
    if (PyUnicode_CheckExact(v[0]) && PyUnicode_CheckExact(v[2]) && PyLong_CheckExact(v[1]) && PyLong_CheckExact(v[3])
        && (sport = PyLong_AsLong(v[1])) >= 0 && (dport = PyLong_AsLong(v[3])) >= 0) {
        uintptr_t h = ((uintptr_t)v[0] >> 4) * 31u ^ ((uintptr_t)v[2] >> 4) ^ (uintptr_t)sport * 131u ^ (uintptr_t)dport;
        hit = &self->hits[h % FLOW_HITS];
        if (hit->src == v[0] && hit->dst == v[2] && hit->sport == sport && hit->dport == dport) {
            for (int k = 0; k < 4; k++)
                Py_DECREF(v[k]);
            return hit->where;
        }
    }
    if (PyErr_Occurred()) /* a port beyond a long: no hit, the dict decides */
        PyErr_Clear();
    PyObject *key = PyTuple_New(4);
    if (key == NULL) {
        for (int k = 0; k < 4; k++)
            Py_DECREF(v[k]);
        return -2;
    }
    for (int k = 0; k < 4; k++)
        PyTuple_SET_ITEM(key, k, v[k]);
    PyObject *found = PyDict_GetItemWithError(self->flows, key);
    Py_ssize_t where = found == NULL ? (PyErr_Occurred() ? -2 : -1) : PyLong_AsSsize_t(found);
    if (where >= 0 && hit != NULL) {
        Py_XSETREF(hit->src, Py_NewRef(v[0]));
        Py_XSETREF(hit->dst, Py_NewRef(v[2]));
        hit->sport = sport;
        hit->dport = dport;
        hit->where = where;
    }
    Py_DECREF(key);
    return where;
}

/* ``at`` appended to ``ats`` until it is ``length`` long: 0 or -1. */
static int
mark(PyObject *ats, Py_ssize_t at, Py_ssize_t length)
{
    if (PyList_GET_SIZE(ats) >= length)
        return 0;
    PyObject *index = PyLong_FromSsize_t(at);
    int rc = index == NULL ? -1 : 0;
    while (rc == 0 && PyList_GET_SIZE(ats) < length)
        rc = PyList_Append(ats, index);
    Py_XDECREF(index);
    return rc;
}

/* run(segments, start, out, next_sweep, move_to_end[, ats]) -> (index, released, before):
 * takes segments from ``start`` until one it does not take, or until a taken one made its connection
 * leave the common case. With ``before`` True, ``index`` is the segment not taken (len(segments) when
 * all were) and ``released`` its lane, handed back, or None (no lane, or the sweep is due); with
 * ``before`` False, the segments before ``index`` were taken and ``released`` is the lane the last one
 * left, handed back after it. With ``ats`` (a list as long as ``out``), the index of the segment each
 * event came in is appended for each event appended to ``out``. */
static PyObject *
lanes_run(Lanes *self, PyObject *args)
{
    PyObject *segments, *out, *sweep, *move_to_end, *ats = Py_None;
    Py_ssize_t i, n;
    long long next_sweep = 0;
    if (!PyArg_ParseTuple(args, "O!nO!OO|O", &PyList_Type, &segments, &i, &PyList_Type, &out, &sweep, &move_to_end,
                          &ats))
        return NULL;
    if (ats != Py_None && !PyList_CheckExact(ats)) {
        PyErr_SetString(PyExc_TypeError, "run: ats must be a list or None");
        return NULL;
    }
    int has_sweep = sweep != Py_None, overflow = 0;
    if (has_sweep) { /* a sweep beyond 64 bits is after every segment a lane takes (their times fit) */
        next_sweep = PyLong_AsLongLongAndOverflow(sweep, &overflow);
        if (overflow)
            next_sweep = overflow > 0 ? LLONG_MAX : LLONG_MIN;
        else if (next_sweep == -1 && PyErr_Occurred())
            return NULL;
    }
    n = PyList_GET_SIZE(segments);
    if (i < 0)
        i = 0;
    Py_ssize_t release = -1; /* the lane to hand back, when the loop ends on one */
    int before = 1, failed = 0;
    for (; i < n; i++) {
        PyObject *obj = PyList_GET_ITEM(segments, i), *ts = NULL;
        Segment s;
        Py_ssize_t where = lookup(self, obj);
        if (where == -2) {
            failed = 1;
            break;
        }
        if (where < 0 || where / 2 >= self->size || self->lanes[where / 2] == NULL)
            break;
        Lane *lane = self->lanes[where / 2];
        int d = (int)(where % 2);
        Py_INCREF(obj); /* the sink may drop the caller's list entries; keep the segment alive */
        int unusual = read_segment(obj, &s, &ts);
        int verdict = unusual < 0 ? FAILED : unusual ? RELEASE : judge(lane, d, &s, has_sweep, next_sweep);
        int rc = verdict == TAKE ? take(self, lane, d, &s, i, ts, out) : 0;
        Py_XDECREF(ts);
        Py_DECREF(obj);
        if (verdict == FAILED || rc < 0 || (ats != Py_None && mark(ats, i, PyList_GET_SIZE(out)) < 0)) {
            failed = 1;
            break;
        }
        if (verdict == SWEEP)
            break;
        if (verdict == RELEASE || rc == 1) {
            release = where / 2;
            before = verdict == RELEASE;
            break;
        }
    }
    if (failed) { /* the run raises: what it owes is dropped (the caller stops) */
        for (Py_ssize_t k = 0; k < self->owing_n; k++) {
            Py_CLEAR(self->owing[k]->last_ts);
            Py_CLEAR(self->owing[k]->summary_ts);
        }
        self->owing_n = 0;
        return NULL;
    }
    if (settle(self, move_to_end) < 0)
        return NULL;
    if (release < 0)
        return Py_BuildValue("(nOO)", i, Py_None, Py_True);
    PyObject *released = release_lane(self, release);
    return released ? Py_BuildValue("(nNO)", before ? i : i + 1, released, before ? Py_True : Py_False) : NULL;
}

static Py_ssize_t
lanes_len(Lanes *self)
{
    Py_ssize_t n = 0;
    for (Py_ssize_t i = 0; i < self->size; i++)
        n += self->lanes[i] != NULL;
    return n;
}

/* ---- the type and the module ------------------------------------------------------------- */

static PyObject *
lanes_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Lanes *self = (Lanes *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->flows = PyDict_New();
    if (self->flows == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void
lanes_dealloc(Lanes *self)
{
    for (Py_ssize_t i = 0; i < self->size; i++)
        if (self->lanes[i] != NULL)
            lane_free(self->lanes[i]);
    PyMem_Free(self->lanes);
    PyMem_Free(self->owing);
    forget_hits(self);
    Py_XDECREF(self->flows);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef lanes_methods[] = {
    {"adopt", (PyCFunction)lanes_adopt, METH_VARARGS,
     "adopt(conn_id, conn, key0, key1, sink, state0, state1, framing[, upgrade]): a settled connection becomes a "
     "lane."},
    {"run", (PyCFunction)lanes_run, METH_VARARGS,
     "run(segments, start, out, next_sweep, move_to_end[, ats]) -> (index, released or None, before)."},
    {"release_all", (PyCFunction)lanes_release_all, METH_NOARGS, "Every lane handed back: [(conn_id, states)]."},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods lanes_as_sequence = {.sq_length = (lenfunc)lanes_len};

static PyTypeObject LanesType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kdissect.reassembly._native.Lanes",
    .tp_basicsize = sizeof(Lanes),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Settled connections whose in-order segments are taken natively.",
    .tp_new = lanes_new,
    .tp_dealloc = (destructor)lanes_dealloc,
    .tp_methods = lanes_methods,
    .tp_as_sequence = &lanes_as_sequence,
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "kdissect.reassembly._native", "Native path of the reassembly stage.", -1, NULL,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    struct {
        PyObject **slot;
        const char *text;
    } names[] = {{&s_ts_ns, "ts_ns"},     {&s_src_ip, "src_ip"},   {&s_src_port, "src_port"},
                 {&s_dst_ip, "dst_ip"},   {&s_dst_port, "dst_port"}, {&s_seq, "seq"},
                 {&s_ack, "ack"},         {&s_flags, "flags"},     {&s_window, "window"},
                 {&s_payload, "payload"}, {&s_payload_len, "payload_len"}, {&s_last_ts, "last_ts"}};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if ((*names[k].slot = PyUnicode_InternFromString(names[k].text)) == NULL)
            return NULL;
    if (PyType_Ready(&LanesType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Lanes", (PyObject *)&LanesType) < 0
        || PyModule_AddIntConstant(m, "MAX_OVERTAKEN", MAX_OVERTAKEN) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
