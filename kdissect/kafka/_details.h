/* The detail rows of an exchange the lane paired, for a run that writes more than the exchanges table
 * (see _details.c). */
#ifndef KDISSECT_DETAILS_H
#define KDISSECT_DETAILS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#define MAX_PARAMS 16 /* request_params fields read from the bytes (more: the bodies are decoded) */

/* An exchange's decoded bodies (new references), from details_decode; or, when the walk over the frames'
 * bytes took it (``walked``: no bodies), the request_params values and the throttle time it read. */
typedef struct {
    PyObject *request, *response;
    int walked;
    PyObject *throttle, *params[MAX_PARAMS];
} Bodies;

/* What the rows of one paired exchange share (borrowed). */
typedef struct {
    PyObject *conn_id, *api_name;
    long long correlation_id;
    int api_key, api_version;
    long long request_offset, request_ts, response_offset, response_ts;
    Py_ssize_t at; /* the segment that completed it: its index in the lanes' run (Pairing.at) */
} Paired;

/* spec: the table sink's lane spec (tables/detail_walk.py lane_spec); 0 or -1. Read once per spec. */
int details_read(PyObject *spec);
/* A frozenset of api keys from a spec, read once with it: membership is then a bit test (api keys are int16 on the
 * wire; a negative one is in no set). The pairing's sets are KeySets too. */
#define KEYSET_KEYS 32768
typedef struct {
    unsigned char bits[KEYSET_KEYS / 8];
} KeySet;
/* 0, or -1 with an exception (a member that is no api key). */
int keyset_read(KeySet *set, PyObject *frozenset);
static inline int
keyset_has(const KeySet *set, int key)
{
    return key >= 0 && key < KEYSET_KEYS && set->bits[key >> 3] >> (key & 7) & 1;
}
/* The spec's new_piece: () -> (piece, exchanges lists, (topics, codes, named), partitions lists, request_params
 * lists, topic ids, left, left_at, topics_at); borrowed. */
PyObject *details_new_piece(void);
/* Whether exchanges of this api are handed back to the session in a details run. */
int details_left(int api_key);
/* Both frames walked in their bytes (tables/_walk_bytes.c), or where that walk declines, both bodies decoded
 * by the decoder's C path: 1 (``out`` set), 0 (it leaves the frame to Python: hand the pairing back), -1.
 * ``request`` is bytes holding the request's frame from ``request_at`` on (0, or 4: the payload that held just it and
 * its size field), or the session's KafkaMessage (its body). */
int details_decode(PyObject *request, Py_ssize_t request_at, PyObject *requests, PyObject *responses, const char *b,
                   Py_ssize_t n, int api_key, int api_version, Bodies *out);
/* What the exchanges row takes from the walk: the first non-zero error code, how many, the response's
 * throttle_time_ms (a new reference, None when absent). */
typedef struct {
    long long first_error, errors;
    PyObject *throttle;
} Outcome;

/* Both bodies walked (``parts``: what new_piece gave after the exchanges lists; the topic ids learned go
 * to its topics), the exchanges row's outcome set: 0, or -1 (nothing kept). details_emit must follow. */
int details_walk(PyObject *parts, const Paired *x, const Bodies *bodies, Outcome *out);
/* The walked exchange's rows into the piece's detail parts: 0 or -1. */
int details_emit(PyObject *parts, const Paired *x, const Bodies *bodies);
void details_clear(Bodies *bodies);
/* A decoded exchange given up before details_walk (the frame handed back): its bodies and the walk's scratch. */
void details_drop(Bodies *bodies);

#endif
