/* Header decode and pairing of a native lane's frames, into exchanges rows (see _pairing.c). */
#ifndef KDISSECT_PAIRING_H
#define KDISSECT_PAIRING_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

typedef struct {
    long long correlation_id, offset, ts_first, ts_last, size;
    int api_key, api_version;
    PyObject *data;      /* the frame's bytes: replayed into the session on a hand-back; or NULL and */
    PyObject *message;   /* the session's KafkaMessage, a request its pairer held when the pairing started */
    PyObject *client_id; /* str or None */
    PyObject *topics;    /* with names: what its structs name (ExchangeRows.topics' item); else NULL */
    Py_ssize_t data_at;  /* where the frame's bytes start in data: 0, or 4 when data is the segment's payload that
                          * holds just the frame and its size field (kept as it is, not copied) */
} Waiting;

#define MAX_OVERTAKEN 32 /* pairing.py's MAX_OVERTAKEN: an answer that would leave more overtaken goes to the session */

enum { FRAMES_TO_BROKER, BYTES_TO_BROKER, FRAMES_TO_CLIENT, BYTES_TO_CLIENT, CUT_0, CUT_1, COUNTS };

typedef struct {
    int on, request_dir;
    int details;                       /* the run writes detail tables too: rows from the bodies (_details.c) */
    int names;                         /* rows also bring topics, codes and named ids (Options.exchange_topics) */
    PyObject *events;                  /* where rows and replayed events go (set before each run's frames) */
    Py_ssize_t at;                     /* the index of the segment being taken in the run's list (set with events):
                                        * what a details piece's left_at and topics_at record */
    Waiting *waiting;                  /* requests in arrival order (the overtaken ones first): a ring of ``cap``
                                        * (a power of two, grown on demand), the oldest at ``head`` */
    Py_ssize_t head, cap, count, limit; /* limit: Options.pending_requests, these and the session's held ones */
    long long *ids;                    /* the waiting correlation ids, a set (open addressing, 2 * cap slots) */
    Py_ssize_t overtaken;              /* the first ``overtaken`` requests waiting were overtaken: a later one was
                                        * answered first (pairing.py's _overtaken) */
    PyObject *conn_id, *client_ip, *client_port, *broker_ip, *broker_port, *client_ids, *pairs, *resume,
        *frame_type;
    PyObject *frames; /* the session's frames(direction, frames, asks): where an orphan answer goes, the pairing on */
    PyObject *held;   /* the session's overtaken requests by correlation id (Pairer.overtaken), which stay there:
                       * older than every request here, answered there (as orphans here), counted in the bounds */
    int left;         /* the session said, taking an orphan, that a lane may no longer frame the connection */
    long long conn, client_port_n, broker_port_n; /* conn_id and the ports, for the typed columns */
    PyObject *cid_text; /* the last client id met, and its bytes */
    char *cid_bytes;
    Py_ssize_t cid_len;
    int cid_null;
    PyObject *one_topic; /* with names: the last request naming one topic by name, its topics tuple, and its bytes */
    char *topic_bytes;
    Py_ssize_t topic_len;
    long long counts[COUNTS]; /* what the frames taken here add to the session: see resume_pairing */
    int seen[64], seen_n;     /* (api_key << 16 | version) already added to the session's pairs */
} Pairing;

/* spec: KafkaConnection.lane_pairing()'s tuple (its names flag; its last item the sink's details spec, or None); 0,
 * or -1 with an exception. */
int pairing_start(Pairing *p, PyObject *spec, int request_dir, PyObject *frame_type, PyObject *frames);
/* One frame of direction ``d`` (offset of its size field, its bytes, capture times; ``payload``: the segment's payload
 * when it holds just this frame and its size field, or NULL): 1 taken (a request waits, or an exchange row was added),
 * 2 given to the session here (an orphan answer: the pairing stays on), 0 not (the pairing was handed back first: the
 * caller gives the frame to the session), -1 error. */
int pairing_frame(Pairing *p, int d, long long offset, const char *b, Py_ssize_t n, PyObject *payload,
                  long long ts_first, long long ts_last);
/* A Frame (kafka/framing.py) as the reference makes it: frame_type(offset, payload, ts_first, ts_last). Steals
 * ``payload`` (NULL: its error is already set). A new reference, or NULL with an exception. */
PyObject *frame_new(PyObject *frame_type, long long offset, PyObject *payload, long long ts_first, long long ts_last);
/* Hand the pairing back to the session (waiting requests replayed, counts added); its events go to
 * p->events, or, with p->events NULL, must be none. 0 or -1. */
int pairing_stop(Pairing *p);
void pairing_clear(Pairing *p);
/* The session's frames(direction, frames, asks) -> (events, settled, pairing) called, its events appended to
 * ``out``: 1 when the connection left what a lane may frame, 0 if not, -1 on error; with ``pairing`` not NULL
 * (asks: the session then takes its pairer's waiting requests over into the spec), *pairing is its pairing spec
 * or None (a new reference, on success). */
int session_frames(PyObject *frames_of, int d, PyObject *frames, PyObject *out, PyObject **pairing);
/* Whether a request with this correlation id waits here or in the session's overtaken ones: 1, 0, or -1 on error. */
int pairing_waits(const Pairing *p, long long correlation_id);

#endif
