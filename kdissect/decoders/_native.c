/* Interpreter for the decode programs built by kdissect/decoders/program.py.
 *
 * Nothing here knows about any Kafka API: a Program is a tree of nodes compiled once from a
 * resolved schema (one node per field: element kind, flags, key, min element size, tag,
 * members). Calling a Program as program(b, p, L) walks that tree over the bytes and builds
 * the same dicts, lists and values as the generated Python decoder, returning (dict, end).
 *
 * The cycle collector is paused while a result is built, and only what can never join a cycle
 * is untracked: dicts whose values are all untracked (CPython re-tracks a dict as soon as a
 * container is stored in it) and UUIDs (immutable). Lists stay tracked, primitive ones too: a
 * list is never re-tracked, so a caller who stored containers in an untracked list could build
 * a cycle the collector would never free.
 *
 * Every length is checked against the bytes left before anything is allocated for it. When
 * the bytes break a rule (or hold something this interpreter does not represent, such as a
 * varlong wider than 64 bits), the Program hands the same arguments to its Python fallback,
 * so results and errors (with field paths) are exactly the Python decoder's. decode_frame runs a
 * header program and a body program over a whole frame in one call (api.py's path for frames);
 * what it cannot decode cleanly it returns None for, and api.py decodes and reports as before.
 *
 * v2_records is records.py's magic 2 record loop (decompressed records -> Record tuples), under
 * the same rules: it reports failure and removes what it appended, and records.py reruns the
 * Python loop on that batch, so warnings and error positions are the Python loop's. v2_columns
 * reads records with the same code but writes them into column buffers (offsets, timestamps,
 * lengths and payload bytes end to end), for the records table; it returns None where v2_records
 * would fail, and the caller decodes that batch into Record tuples instead.
 *
 * For the native pairing, scan_frame (offered in a capsule, see _scan.h) reads what the exchanges
 * row needs of a whole frame, building nothing ("scanning").
 *
 * For hunting (a framer looking for a frame boundary after lost bytes): walk_frame says whether
 * a frame decodes exactly by following the same programs and rules without building anything,
 * within a budget of steps, and size_fields finds where candidate size fields start.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "_scan.h"
#include "_records.h"

#define SLOT_OF(flags) ((flags) >> 8 & 0xF) /* program.py's SLOT_SHIFT: a SCANNED field's slot, 0 if none */
#define MAX_DEPTH 64 /* schema nesting bound: decoding recursion follows the program, not the data */

typedef KdNode Node; /* _scan.h: shared with the readers in place (read_api) */

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    Node root;
    PyObject *fallback;
} Program;

static PyTypeObject ProgramType;
static PyObject *Error;          /* malformed or unrepresentable input: the caller falls back */
static PyObject *uuid_type;      /* uuid.UUID */
static PyObject *safe_unknown;   /* uuid.SafeUUID.unknown */
static PyObject *str_int, *str_is_safe, *str_unknown_tags, *str_header, *str_body, *empty_tuple;

static const Py_ssize_t FIXED_SIZE[K_COUNT] = {1, 1, 2, 2, 4, 4, 8, 8, 16};

/* ---- reading ---------------------------------------------------------------------------- */

typedef struct {
    const unsigned char *b;
    Py_ssize_t p;
} Cursor;

static void *
fail(const char *why)
{
    PyErr_SetString(Error, why);
    return NULL;
}

static inline uint16_t be16(const unsigned char *s) { return (uint16_t)((s[0] << 8) | s[1]); }
static inline uint32_t be32(const unsigned char *s)
{
    return ((uint32_t)s[0] << 24) | ((uint32_t)s[1] << 16) | ((uint32_t)s[2] << 8) | s[3];
}
static inline uint64_t be64(const unsigned char *s) { return ((uint64_t)be32(s) << 32) | be32(s + 4); }

/* Unsigned LEB128 of at most max_bytes bytes (5 or 10), as wire.read_uvarint: 0, or -1 on bad
 * bytes, or WIDE for a value beyond 64 bits (which the Python decoder reads as a big int). */
#define WIDE (-2)
static int
read_uvar(Cursor *c, Py_ssize_t L, int max_bytes, uint64_t *out)
{
    uint64_t result = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (c->p >= L) {
            fail("varint runs past the end");
            return -1;
        }
        unsigned char byte = c->b[c->p++];
        if (shift == 63 && (byte & 0x7E)) {
            fail("varint wider than 64 bits");
            return WIDE;
        }
        result |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            *out = result;
            return 0;
        }
        shift += 7;
    }
    fail("varint too long");
    return -1;
}

/* A length: compact = unsigned varint minus one, else a signed int16 / int32. */
static int
read_len(Cursor *c, Py_ssize_t L, int compact, int wide, long long *out)
{
    if (compact) {
        uint64_t v;
        if (read_uvar(c, L, 5, &v) < 0)
            return -1;
        *out = (long long)v - 1;
        return 0;
    }
    Py_ssize_t size = wide ? 4 : 2;
    if (c->p + size > L) {
        fail("length runs past the end");
        return -1;
    }
    *out = wide ? (long long)(int32_t)be32(c->b + c->p) : (long long)(int16_t)be16(c->b + c->p);
    c->p += size;
    return 0;
}

/* After a length: 1 = null (nullable and exactly -1), 0 = a value follows, -1 = error. */
static int
null_length(long long n, int nullable)
{
    if (n >= 0)
        return 0;
    if (nullable && n == -1)
        return 1;
    fail("null or negative length");
    return -1;
}

static PyObject *
make_uuid(const unsigned char *s)
{
    PyObject *value = _PyLong_FromByteArray(s, 16, 0, 0);
    if (value == NULL)
        return NULL;
    PyObject *u = ((PyTypeObject *)uuid_type)->tp_new((PyTypeObject *)uuid_type, empty_tuple, NULL);
    if (u == NULL || PyObject_GenericSetAttr(u, str_int, value) < 0 ||
        PyObject_GenericSetAttr(u, str_is_safe, safe_unknown) < 0) {
        Py_XDECREF(u);
        Py_DECREF(value);
        return NULL;
    }
    Py_DECREF(value);
    PyObject_GC_UnTrack(u); /* immutable, holds an int and an enum member: never in a cycle */
    return u;
}

static inline PyObject *
fixed_value(int kind, const unsigned char *s)
{
    switch (kind) {
    case K_BOOL: return PyBool_FromLong(s[0] != 0);
    case K_INT8: return PyLong_FromLong((int8_t)s[0]);
    case K_INT16: return PyLong_FromLong((int16_t)be16(s));
    case K_UINT16: return PyLong_FromLong(be16(s));
    case K_INT32: return PyLong_FromLong((int32_t)be32(s));
    case K_UINT32: return PyLong_FromUnsignedLong(be32(s));
    case K_INT64: return PyLong_FromLongLong((int64_t)be64(s));
    case K_FLOAT64: return PyFloat_FromDouble(PyFloat_Unpack8((const char *)s, 0));
    default: return make_uuid(s);
    }
}

/* n numbers of a fixed-width kind (not UUIDs) from s into the new list's slots, one loop per
 * kind; a failed allocation leaves its slot NULL (list dealloc skips it) and an error set. */
static void
fixed_values(int kind, const unsigned char *s, Py_ssize_t n, PyObject *list)
{
#define FILL(size, expr)                                                                                         \
    for (Py_ssize_t i = 0; i < n; i++, s += (size))                                                            \
        PyList_SET_ITEM(list, i, (expr));                                                                      \
    return
    switch (kind) {
    case K_INT32: FILL(4, PyLong_FromLong((int32_t)be32(s)));
    case K_INT64: FILL(8, PyLong_FromLongLong((int64_t)be64(s)));
    case K_INT16: FILL(2, PyLong_FromLong((int16_t)be16(s)));
    default: FILL(FIXED_SIZE[kind], fixed_value(kind, s));
    }
#undef FILL
}

static PyObject *decode_value(Cursor *c, Py_ssize_t L, const Node *nd);

static PyObject *
decode_string(Cursor *c, Py_ssize_t L, const Node *nd, int nullable)
{
    long long n;
    if (read_len(c, L, nd->flags & F_COMPACT, nd->kind != K_STRING, &n) < 0)
        return NULL;
    int null = null_length(n, nullable);
    if (null < 0)
        return NULL;
    if (null)
        Py_RETURN_NONE;
    if (n > L - c->p)
        return fail("string or bytes run past the end");
    const char *s = (const char *)c->b + c->p;
    c->p += (Py_ssize_t)n;
    if (nd->kind != K_STRING)
        return PyBytes_FromStringAndSize(s, (Py_ssize_t)n);
    PyObject *text = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, NULL);
    if (text == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear(); /* bad UTF-8 is shown replaced, as the Python decoder does */
        text = PyUnicode_DecodeUTF8(s, (Py_ssize_t)n, "replace");
    }
    return text;
}

/* An array's length, then its list: 1 with *out a list of *count slots for the caller to fill,
 * 0 with *out finished (None, or a list of fixed-width numbers), -1 on error. Not recursive, so
 * the compiler can inline it into decode_struct. */
static inline int
array_start(Cursor *c, Py_ssize_t L, const Node *nd, PyObject **out, Py_ssize_t *count)
{
    long long n;
    if (read_len(c, L, nd->flags & F_COMPACT, 1, &n) < 0)
        return -1;
    int null = null_length(n, nd->flags & F_NULLABLE);
    if (null < 0)
        return -1;
    if (null) {
        *out = Py_NewRef(Py_None);
        return 0;
    }
    if (n * (nd->min_elem ? nd->min_elem : 1) > L - c->p) { /* empty elements: the Python decoder decides */
        fail("array cannot fit in the bytes left");
        return -1;
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL)
        return -1;
    *out = list;
    if (nd->kind >= K_UUID) {
        *count = (Py_ssize_t)n;
        return 1;
    }
    fixed_values(nd->kind, c->b + c->p, (Py_ssize_t)n, list); /* all n fit: min_elem is their width */
    c->p += (Py_ssize_t)n * FIXED_SIZE[nd->kind];
    if (!PyErr_Occurred())
        return 0;
    Py_DECREF(list);
    return -1;
}

/* The tagged-field section: -1 on error, else 1 when every value stored is untracked. */
static int
decode_tags(Cursor *c, Py_ssize_t L, const Node *nd, PyObject *dict)
{
    int atomic = 1;
    uint64_t count, tag, size;
    if (read_uvar(c, L, 5, &count) < 0)
        return -1;
    for (uint64_t i = 0; i < count; i++) {
        if (read_uvar(c, L, 5, &tag) < 0 || read_uvar(c, L, 5, &size) < 0)
            return -1;
        if ((long long)size > L - c->p) {
            fail("tagged field runs past the end");
            return -1;
        }
        Py_ssize_t end = c->p + (Py_ssize_t)size;
        const Node *known = NULL;
        for (Py_ssize_t k = 0; k < nd->ntagged; k++) {
            if ((uint64_t)nd->tagged[k].tag == tag) {
                known = &nd->tagged[k];
                break;
            }
        }
        if (known != NULL) {
            PyObject *v = decode_value(c, end, known);
            if (v == NULL)
                return -1;
            if (c->p != end) {
                Py_DECREF(v);
                fail("tagged field has unread bytes");
                return -1;
            }
            if (atomic && known->container && PyObject_GC_IsTracked(v))
                atomic = 0;
            int rc = PyDict_SetItem(dict, known->key, v);
            Py_DECREF(v);
            if (rc < 0)
                return -1;
            continue;
        }
        atomic = 0; /* a list of (tag, bytes) tuples */
        PyObject *list = PyDict_GetItemWithError(dict, str_unknown_tags); /* borrowed */
        if (list == NULL) {
            if (PyErr_Occurred())
                return -1;
            list = PyList_New(0);
            if (list == NULL)
                return -1;
            int rc = PyDict_SetItem(dict, str_unknown_tags, list);
            Py_DECREF(list);
            if (rc < 0)
                return -1;
        }
        PyObject *item = Py_BuildValue("(Ky#)", (unsigned long long)tag, c->b + c->p, (Py_ssize_t)size);
        if (item == NULL)
            return -1;
        int rc = PyList_Append(list, item);
        Py_DECREF(item);
        if (rc < 0)
            return -1;
        c->p = end;
    }
    return atomic;
}

/* Containers are tracked parents first. Left to CPython, a dict is tracked when its first
 * container is stored, i.e. after its children, and a collection that finds a result in the
 * young generation (as the next allocation of a caller holding it triggers) would then move
 * nearly every object of the tree to the tentatively unreachable list and back, since only the
 * root is referenced from outside. Lists are tracked as they are created, before their items,
 * so tracking a dict of containers when it is created (and the frame's result dict before the
 * header and body) lets that collection find each object reachable before it reaches it. */

/* Structs of at most this many regular fields start from an empty dict: CPython's smallest table
 * holds 5 entries and comes from its free lists, which is cheaper than copying a layout. */
#define SMALL_STRUCT 5

/* A struct: a new dict, or a copy of its layout dict (keys already placed, nothing to resize), filled in.
 * The dict is left untracked by the collector when every value is untracked: CPython tracks
 * a dict as soon as a GC-able value is stored, and re-tracks it if a container is stored
 * later, so this only spares the collector work. */
static PyObject *
decode_struct(Cursor *c, Py_ssize_t L, const Node *nd)
{
    PyObject *dict = nd->nregular <= SMALL_STRUCT ? PyDict_New() : PyDict_Copy(nd->layout);
    if (dict == NULL)
        return NULL;
    if (nd->holds_containers && !PyObject_GC_IsTracked(dict))
        PyObject_GC_Track(dict); /* before its members: see "parents first" above */
    int atomic = 1;
    for (Py_ssize_t i = 0; i < nd->nregular; i++) {
        const Node *m = &nd->regular[i];
        PyObject *v;
        if (m->kind < K_UUID && !(m->flags & F_ARRAY)) { /* a number, read here: most fields are */
            if (FIXED_SIZE[m->kind] > L - c->p) {
                fail("fixed-width field runs past the end");
                goto error;
            }
            v = fixed_value(m->kind, c->b + c->p);
            c->p += FIXED_SIZE[m->kind];
        }
        else if (m->kind < K_UUID) { /* an array of numbers */
            Py_ssize_t unused;
            if (array_start(c, L, m, &v, &unused) < 0)
                goto error;
        }
        else if (m->kind >= K_STRING && m->kind <= K_RECORDS && !(m->flags & F_ARRAY))
            v = decode_string(c, L, m, m->flags & F_NULLABLE);
        else
            v = decode_value(c, L, m);
        if (v == NULL)
            goto error;
        if (atomic && m->container && PyObject_GC_IsTracked(v)) /* a list, or a struct holding one */
            atomic = 0;
        int rc = PyDict_SetItem(dict, m->key, v);
        Py_DECREF(v);
        if (rc < 0)
            goto error;
    }
    if (nd->flags & F_FLEXIBLE && c->p < L && c->b[c->p] == 0)
        c->p++; /* no tagged fields, as in nearly every struct */
    else if (nd->flags & F_FLEXIBLE) {
        int tags = decode_tags(c, L, nd, dict);
        if (tags < 0)
            goto error;
        atomic &= tags;
    }
    if (atomic && PyObject_GC_IsTracked(dict))
        PyObject_GC_UnTrack(dict);
    return dict;
error:
    Py_DECREF(dict);
    return NULL;
}

/* One element (not an array); `nullable` is the field's own flag, false inside arrays. */
static PyObject *
decode_element(Cursor *c, Py_ssize_t L, const Node *nd, int nullable)
{
    int kind = nd->kind;
    if (kind <= K_UUID) {
        Py_ssize_t size = FIXED_SIZE[kind];
        if (size > L - c->p)
            return fail("fixed-width field runs past the end");
        PyObject *v = fixed_value(kind, c->b + c->p);
        c->p += size;
        return v;
    }
    uint64_t u;
    switch (kind) {
    case K_VARINT:
    case K_VARLONG:
        if (read_uvar(c, L, kind == K_VARINT ? 5 : 10, &u) < 0)
            return NULL;
        return PyLong_FromLongLong((long long)(u >> 1) ^ -(long long)(u & 1));
    case K_UVARINT:
        if (read_uvar(c, L, 5, &u) < 0)
            return NULL;
        return PyLong_FromUnsignedLongLong(u);
    case K_STRUCT:
        if (nullable) {
            if (c->p >= L)
                return fail("struct marker runs past the end");
            if ((int8_t)c->b[c->p++] < 0)
                Py_RETURN_NONE;
        }
        return decode_struct(c, L, nd);
    default:
        return decode_string(c, L, nd, nullable);
    }
}

static PyObject *
decode_array(Cursor *c, Py_ssize_t L, const Node *nd)
{
    PyObject *list;
    Py_ssize_t n;
    int fill = array_start(c, L, nd, &list, &n);
    if (fill <= 0)
        return fill < 0 ? NULL : list;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *v = decode_element(c, L, nd, 0);
        if (v == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, i, v);
    }
    return list;
}

static PyObject *
decode_value(Cursor *c, Py_ssize_t L, const Node *nd)
{
    if (nd->flags & F_ARRAY)
        return decode_array(c, L, nd);
    return decode_element(c, L, nd, nd->flags & F_NULLABLE);
}

/* ---- walking: does it decode, without building it ------------------------------------------
 *
 * Hunting proves a candidate frame by whether it decodes exactly, and a capture can hold a
 * candidate at every few bytes, each claiming up to megabytes: building values for each one
 * (only to drop them) made hunting through crafted frame heads a hundred times slower than
 * decoding. A walk follows the same program and the same rules as decode_struct, building
 * nothing, and pays one step of a budget per field, array element and tagged field, so the
 * caller bounds what all its proofs cost. A walk ends at the struct's end, or with one of: */
enum { W_BAD = -1, W_SPENT = -2, W_UNDECIDED = -3 }; /* decode fails / budget spent / Python decides */

static int walk_struct(Cursor *c, Py_ssize_t L, const Node *nd, Py_ssize_t *left);

static inline int
walk_status(int rc)
{
    return rc == WIDE ? W_UNDECIDED : rc < 0 ? W_BAD : 0;
}

static int
walk_string(Cursor *c, Py_ssize_t L, const Node *nd, int nullable)
{
    long long n;
    if (read_len(c, L, nd->flags & F_COMPACT, nd->kind != K_STRING, &n) < 0)
        return W_BAD;
    int null = null_length(n, nullable);
    if (null)
        return null < 0 ? W_BAD : 0;
    if (n > L - c->p)
        return W_BAD;
    c->p += (Py_ssize_t)n; /* any bytes decode: bad UTF-8 is shown replaced */
    return 0;
}

static int
walk_element(Cursor *c, Py_ssize_t L, const Node *nd, int nullable, Py_ssize_t *left)
{
    uint64_t unused;
    switch (nd->kind) {
    case K_VARINT:
    case K_VARLONG:
    case K_UVARINT:
        return walk_status(read_uvar(c, L, nd->kind == K_VARLONG ? 10 : 5, &unused));
    case K_STRUCT:
        if (nullable) {
            if (c->p >= L)
                return W_BAD;
            if ((int8_t)c->b[c->p++] < 0)
                return 0;
        }
        return walk_struct(c, L, nd, left);
    case K_STRING:
    case K_BYTES:
    case K_RECORDS:
        return walk_string(c, L, nd, nullable);
    default:
        if (FIXED_SIZE[nd->kind] > L - c->p)
            return W_BAD;
        c->p += FIXED_SIZE[nd->kind];
        return 0;
    }
}

/* An array's element count, read and vetted: 1 (``*n`` elements follow), 0 (a null array: nothing
 * follows), or W_BAD / W_UNDECIDED (more elements than bytes left: bad, or for elements that may be
 * empty, the Python decoder decides). */
static int
array_count(Cursor *c, Py_ssize_t L, const Node *nd, long long *n)
{
    if (read_len(c, L, nd->flags & F_COMPACT, 1, n) < 0)
        return W_BAD;
    int null = null_length(*n, nd->flags & F_NULLABLE);
    if (null)
        return null < 0 ? W_BAD : 0;
    if (*n * (nd->min_elem ? nd->min_elem : 1) > L - c->p)
        return nd->min_elem ? W_BAD : W_UNDECIDED;
    return 1;
}

static int
walk_array(Cursor *c, Py_ssize_t L, const Node *nd, Py_ssize_t *left)
{
    long long n;
    int counted = array_count(c, L, nd, &n);
    if (counted <= 0)
        return counted;
    if (nd->kind <= K_UUID) { /* fixed width: min_elem is their width, and they all fit */
        c->p += (Py_ssize_t)n * FIXED_SIZE[nd->kind];
        return 0;
    }
    for (long long i = 0; i < n; i++) {
        if (--*left < 0)
            return W_SPENT;
        int rc = walk_element(c, L, nd, 0, left);
        if (rc)
            return rc;
    }
    return 0;
}

static inline int
walk_value(Cursor *c, Py_ssize_t L, const Node *nd, Py_ssize_t *left)
{
    return nd->flags & F_ARRAY ? walk_array(c, L, nd, left) : walk_element(c, L, nd, nd->flags & F_NULLABLE, left);
}

static int
walk_tags(Cursor *c, Py_ssize_t L, const Node *nd, Py_ssize_t *left)
{
    uint64_t count, tag, size;
    if (read_uvar(c, L, 5, &count) < 0)
        return W_BAD;
    for (uint64_t i = 0; i < count; i++) {
        if (--*left < 0)
            return W_SPENT;
        if (read_uvar(c, L, 5, &tag) < 0 || read_uvar(c, L, 5, &size) < 0 || (long long)size > L - c->p)
            return W_BAD;
        Py_ssize_t end = c->p + (Py_ssize_t)size;
        for (Py_ssize_t k = 0; k < nd->ntagged; k++) {
            if ((uint64_t)nd->tagged[k].tag == tag) {
                int rc = walk_value(c, end, &nd->tagged[k], left);
                if (rc)
                    return rc;
                if (c->p != end)
                    return W_BAD;
                break;
            }
        }
        c->p = end; /* an unknown tag's bytes are kept as they are */
    }
    return 0;
}

static int
walk_struct(Cursor *c, Py_ssize_t L, const Node *nd, Py_ssize_t *left)
{
    if ((*left -= nd->nregular + 1) < 0)
        return W_SPENT;
    for (Py_ssize_t i = 0; i < nd->nregular; i++) {
        int rc = walk_value(c, L, &nd->regular[i], left);
        if (rc)
            return rc;
    }
    if (!(nd->flags & F_FLEXIBLE))
        return 0;
    if (c->p < L && c->b[c->p] == 0) {
        c->p++; /* no tagged fields */
        return 0;
    }
    return walk_tags(c, L, nd, left);
}

/* The Error the readers shared with decoding set on bad bytes, cleared where a scan or a read in place declines
 * instead (a test first: most fields set none, and clearing costs a call per field). */
static inline void
clear_error(void)
{
    if (PyErr_Occurred())
        PyErr_Clear();
}

/* ---- scanning --------------------------------------------------------------------------- */

/* For the native pairing (the exchanges row without a decoded message): a walk that also reads the
 * top-level fields of program.py's SCANNED slots and every scalar error code (F_ERROR), counting the
 * non-zero ones and keeping the first in the order entities.walk lists them: a struct's own fields
 * (in field order) before its members' structs (in field order, array items in order). Tagged error
 * codes (a tagged field's own or inside a tagged struct) and tagged slot fields would need the walk's
 * field order: the scan leaves those frames to Python (W_UNDECIDED), as it does anything walk leaves; a
 * tagged struct with nothing the scan reads in it (Fetch v16's node_endpoints, which brokers send even
 * empty; a partition's current_leader) is walked over (Node.within says what a field holds).
 * Asked for names (the live figures), it also lists every non-zero code in that order (a struct's own
 * codes inserted before its members', which the walk met first) and the distinct (topic, topic id)
 * contexts of the structs (F_TOPIC, F_TOPIC_ID; a struct inherits its parent's and lists its own
 * before its members do: named_topics.py is the reference). A topic field after a member struct (no
 * schema has one) or more contexts or codes than a Scan holds leave the frame to Python. */
typedef struct {
    long long first, count;
} Errors;

static int scan_struct(Cursor *c, Py_ssize_t L, const Node *nd, int top, Scan *out, Errors *e, Named ctx);

/* v, the next of a struct's own codes, at codes[at]: before the codes its members listed (0, or -1: full) */
static int
add_code(Scan *out, int at, long long v)
{
    if (out->ncodes == SCAN_CODES)
        return -1;
    memmove(&out->codes[at + 1], &out->codes[at], (size_t)(out->ncodes - at) * sizeof out->codes[0]);
    out->codes[at] = v;
    out->ncodes++;
    return 0;
}

static int
same_named(const unsigned char *b, const Named *x, const Named *y)
{
    if ((x->topic < 0) != (y->topic < 0) || (x->id < 0) != (y->id < 0))
        return 0;
    if (x->topic >= 0 && (x->topic_len != y->topic_len || memcmp(b + x->topic, b + y->topic, (size_t)x->topic_len)))
        return 0;
    return x->id < 0 || !memcmp(b + x->id, b + y->id, 16);
}

/* A struct's context listed unless it has none or is listed already (0, or -1: full) */
static int
list_named(const unsigned char *b, Scan *out, const Named *ctx)
{
    if (ctx->topic < 0 && ctx->id < 0)
        return 0;
    for (int k = 0; k < out->nnamed; k++)
        if (same_named(b, &out->named[k], ctx))
            return 0;
    if (out->nnamed == SCAN_NAMED)
        return -1;
    out->named[out->nnamed++] = *ctx;
    return 0;
}

static int
scan_element(Cursor *c, Py_ssize_t L, const Node *nd, int nullable, Scan *out, Errors *e, Named ctx)
{
    if (nd->kind != K_STRUCT) {
        Py_ssize_t left = PY_SSIZE_T_MAX;
        return walk_element(c, L, nd, nullable, &left);
    }
    if (nullable) {
        if (c->p >= L)
            return W_BAD;
        if ((int8_t)c->b[c->p++] < 0)
            return 0;
    }
    return scan_struct(c, L, nd, 0, out, e, ctx);
}

static int
scan_member(Cursor *c, Py_ssize_t L, const Node *nd, int top, Scan *out, Errors *own, Errors *children, Named *ctx,
            int mark)
{
    if (!(nd->flags & F_ARRAY)) {
        Py_ssize_t at = c->p;
        int rc = scan_element(c, L, nd, nd->flags & F_NULLABLE, out, children, *ctx);
        if (rc)
            return rc;
        int slot = top ? SLOT_OF(nd->flags) : 0;
        long long v = 0;
        if (nd->flags & F_ERROR || slot) {
            switch (nd->kind) {
            case K_INT8: v = (int8_t)c->b[at]; break;
            case K_INT16: v = (int16_t)be16(c->b + at); break;
            case K_INT32: v = (int32_t)be32(c->b + at); break;
            case K_STRING: break;
            default: return W_UNDECIDED;
            }
        }
        if (nd->flags & F_ERROR && nd->kind != K_STRING && v) {
            if (!own->count)
                own->first = v;
            if (out->names && add_code(out, mark + (int)own->count, v) < 0)
                return W_UNDECIDED;
            own->count++;
        }
        if (out->names && nd->flags & F_TOPIC) { /* (read again: walk_string checked it; null: inherited) */
            Cursor again = {c->b, at};
            long long n = -1;
            read_len(&again, L, nd->flags & F_COMPACT, 0, &n);
            if (n >= 0) {
                ctx->topic = again.p;
                ctx->topic_len = (Py_ssize_t)n;
            }
        }
        if (out->names && nd->flags & F_TOPIC_ID)
            ctx->id = at;
        if (slot && slot < SLOTS) {
            out->found[slot] = 1;
            if (nd->kind == K_STRING) { /* (read again: walk_string checked it) */
                Cursor again = {c->b, at};
                long long n = -1;
                read_len(&again, L, nd->flags & F_COMPACT, 0, &n);
                out->at[slot] = again.p;
                v = n < 0 ? -1 : n;
            }
            out->value[slot] = v;
        }
        return 0;
    }
    if (nd->kind != K_STRUCT) {
        Py_ssize_t left = PY_SSIZE_T_MAX;
        return walk_array(c, L, nd, &left);
    }
    long long n;
    int counted = array_count(c, L, nd, &n);
    if (counted <= 0)
        return counted;
    for (long long i = 0; i < n; i++) {
        int rc = scan_struct(c, L, nd, 0, out, children, *ctx);
        if (rc)
            return rc;
    }
    return 0;
}

static int
scan_struct(Cursor *c, Py_ssize_t L, const Node *nd, int top, Scan *out, Errors *e, Named ctx)
{
    Errors own = {0, 0}, children = {0, 0};
    int mark = out->ncodes, listed = 0;
    for (Py_ssize_t i = 0; i < nd->nregular; i++) {
        const Node *m = &nd->regular[i];
        if (out->names && !listed && m->kind == K_STRUCT) { /* its context is complete: listed before its members' */
            if (list_named(c->b, out, &ctx) < 0)
                return W_UNDECIDED;
            listed = 1;
        } else if (out->names && listed && m->flags & (F_TOPIC | F_TOPIC_ID)) {
            return W_UNDECIDED;
        }
        int rc = scan_member(c, L, m, top, out, &own, &children, &ctx, mark);
        if (rc)
            return rc;
    }
    for (Py_ssize_t k = 0; k < nd->ntagged; k++) { /* tagged fields the row reads: the walk's order */
        const Node *t = &nd->tagged[k];
        if (t->within & F_ERROR || (top && SLOT_OF(t->flags)) || (out->names && t->within & (F_TOPIC | F_TOPIC_ID)))
            goto tagged;
    }
    if (nd->flags & F_FLEXIBLE) {
        Py_ssize_t left = PY_SSIZE_T_MAX;
        if (c->p < L && c->b[c->p] == 0)
            c->p++;
        else {
            int rc = walk_tags(c, L, nd, &left);
            if (rc)
                return rc;
        }
    }
    goto done;
tagged:
    if (nd->flags & F_FLEXIBLE) {
        if (c->p >= L || c->b[c->p] != 0)
            return W_UNDECIDED;
        c->p++;
    }
done:
    if (out->names && !listed && list_named(c->b, out, &ctx) < 0)
        return W_UNDECIDED;
    if (!e->count)
        e->first = own.count ? own.first : children.first;
    e->count += own.count + children.count;
    return 0;
}

/* The header's and the body's programs of (api_key, api_version) in ``programs`` (FRAME_PROGRAMS[kind]):
 * 1, 0 (none, or not Programs), -1. */
static int
frame_roots(PyObject *programs, int api_key, int api_version, const KdNode **header, const KdNode **body)
{
    if (api_key < 0 || api_version < 0)
        return 0;
    PyObject *id = PyLong_FromLong((long)api_key << 16 | api_version);
    if (id == NULL)
        return -1;
    PyObject *pair = PyDict_GetItemWithError(programs, id); /* borrowed */
    Py_DECREF(id);
    if (pair == NULL)
        return PyErr_Occurred() ? -1 : 0;
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 || !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 0), &ProgramType)
        || !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 1), &ProgramType))
        return 0;
    *header = &((Program *)PyTuple_GET_ITEM(pair, 0))->root;
    *body = &((Program *)PyTuple_GET_ITEM(pair, 1))->root;
    return 1;
}

static int
scan_frame(PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key, int api_version, int names,
           Scan *out)
{
    memset(out, 0, sizeof *out);
    out->names = names;
    const KdNode *header, *body;
    int found = frame_roots(programs, api_key, api_version, &header, &body);
    if (found <= 0)
        return found;
    Cursor c = {b, 0};
    Errors e = {0, 0};
    Named none = {-1, 0, -1};
    int rc = scan_struct(&c, L, header, 1, out, &e, none);
    if (rc == 0)
        rc = scan_struct(&c, L, body, 1, out, &e, none);
    clear_error(); /* the readers shared with decoding set an Error on bad bytes */
    out->first_error = e.first;
    out->errors = e.count;
    return rc == 0 && c.p == L;
}

/* ---- reading in place -----------------------------------------------------------------
 *
 * For a walk over a frame's bytes that reads a few fields and skips the rest (the table sink's detail walk,
 * tables/_walk_bytes.c, through the scan capsule): the same readers and rules as decode_frame, one field at a
 * time. Whatever decoding would fail on, or leave to the Python decoder, declines, with no exception left. */

static int
skip_field(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd)
{
    Cursor c = {b, *p};
    Py_ssize_t left = PY_SSIZE_T_MAX;
    int rc = walk_value(&c, L, nd, &left);
    clear_error(); /* (the readers shared with decoding set an Error on bad bytes) */
    *p = c.p;
    return rc ? W_BAD : 0;
}

static PyObject *
field_value(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd)
{
    Cursor c = {b, *p};
    PyObject *v = decode_value(&c, L, nd);
    *p = c.p;
    if (v == NULL && PyErr_ExceptionMatches(Error))
        PyErr_Clear();
    return v;
}

static int
field_span(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, Py_ssize_t *at, Py_ssize_t *n)
{
    Cursor c = {b, *p};
    long long size;
    if (nd->kind < K_STRING || nd->kind > K_RECORDS || nd->flags & F_ARRAY
        || read_len(&c, L, nd->flags & F_COMPACT, nd->kind != K_STRING, &size) < 0) {
        clear_error();
        return W_BAD;
    }
    int null = null_length(size, nd->flags & F_NULLABLE);
    clear_error();
    if (null < 0 || (!null && size > L - c.p))
        return W_BAD;
    *at = c.p;
    *n = null ? -1 : (Py_ssize_t)size;
    *p = null ? c.p : c.p + (Py_ssize_t)size;
    return 1;
}

static int
field_items(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, long long *n)
{
    if (nd->kind != K_STRUCT)
        return W_BAD;
    Cursor c = {b, *p};
    int rc;
    if (nd->flags & F_ARRAY) {
        rc = array_count(&c, L, nd, n);
        clear_error();
    } else if (!(nd->flags & F_NULLABLE)) {
        *n = 1;
        rc = 1;
    } else if (c.p >= L) {
        rc = W_BAD;
    } else {
        rc = (int8_t)c.b[c.p++] < 0 ? 0 : 1;
        *n = rc;
    }
    *p = c.p;
    return rc;
}

static int
field_integer(const unsigned char *b, Py_ssize_t L, Py_ssize_t *p, const KdNode *nd, long long *v)
{
    Cursor c = {b, *p};
    const unsigned char *s = b + c.p;
    uint64_t u;
    if (nd->flags & F_ARRAY || nd->kind == K_BOOL || nd->kind == K_FLOAT64 || nd->kind == K_UUID)
        return W_BAD;
    if (nd->kind < K_VARINT && FIXED_SIZE[nd->kind] > L - c.p) /* (decode_element's check) */
        return W_BAD;
    switch (nd->kind) {
    case K_INT8: *v = (int8_t)s[0]; break;
    case K_INT16: *v = (int16_t)be16(s); break;
    case K_UINT16: *v = be16(s); break;
    case K_INT32: *v = (int32_t)be32(s); break;
    case K_UINT32: *v = be32(s); break;
    case K_INT64: *v = (int64_t)be64(s); break;
    case K_VARINT:
    case K_VARLONG:
    case K_UVARINT:
        if (read_uvar(&c, L, nd->kind == K_VARLONG ? 10 : 5, &u) < 0) {
            clear_error();
            return W_BAD;
        }
        *v = nd->kind == K_UVARINT ? (long long)u : (long long)(u >> 1) ^ -(long long)(u & 1);
        *p = c.p;
        return 1;
    default:
        return W_BAD;
    }
    *p = c.p + FIXED_SIZE[nd->kind];
    return 1;
}

static ScanApi scan_api = {scan_frame, frame_roots, skip_field, field_value, field_span, field_items, field_integer};

/* scan(b, programs, api_key, api_version[, names]) -> (slots found, values, first error, errors) | None: the
 * scan of a whole frame, for tests; with names also ((topic bytes | None, topic id bytes | None)..., codes). */
static PyObject *
scan(PyObject *module, PyObject *args)
{
    Py_buffer buf;
    PyObject *programs;
    int key, version, names = 0;
    if (!PyArg_ParseTuple(args, "y*O!ii|p", &buf, &PyDict_Type, &programs, &key, &version, &names))
        return NULL;
    Scan s;
    int rc = scan_frame(programs, buf.buf, buf.len, key, version, names, &s);
    PyObject *out = NULL, *named = NULL, *codes = NULL;
    if (rc <= 0) {
        out = rc < 0 ? NULL : Py_NewRef(Py_None);
        goto done;
    }
    out = Py_BuildValue("((iii)(LLL)LL)", s.found[1], s.found[2], s.found[3], s.value[1], s.value[2], s.value[3],
                        s.first_error, s.errors);
    if (out == NULL || !names)
        goto done;
    const char *b = buf.buf;
    if ((named = PyTuple_New(s.nnamed)) == NULL || (codes = PyTuple_New(s.ncodes)) == NULL)
        goto fail;
    for (int k = 0; k < s.nnamed; k++) {
        const Named *n = &s.named[k];
        PyObject *item = Py_BuildValue("(NN)",
                                       n->topic < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(b + n->topic, n->topic_len),
                                       n->id < 0 ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(b + n->id, 16));
        if (item == NULL)
            goto fail;
        PyTuple_SET_ITEM(named, k, item);
    }
    for (int k = 0; k < s.ncodes; k++) {
        PyObject *v = PyLong_FromLongLong(s.codes[k]);
        if (v == NULL)
            goto fail;
        PyTuple_SET_ITEM(codes, k, v);
    }
    out = Py_BuildValue("(NNN)", out, named, codes); /* (N: the three references pass to it, or are dropped) */
    named = codes = NULL;
    goto done;
fail:
    Py_CLEAR(out);
done:
    Py_XDECREF(named);
    Py_XDECREF(codes);
    PyBuffer_Release(&buf);
    return out;
}

/* ---- magic 2 records -------------------------------------------------------------------- */

/* A zig-zag varint of at most max_bytes bytes (5: int, 10: long) that must end before L. */
static inline int
read_zigzag(Cursor *c, Py_ssize_t L, int max_bytes, int64_t *out)
{
    if (c->p < L && c->b[c->p] < 0x80) { /* nearly every varint in a record is one byte */
        unsigned char v = c->b[c->p++];
        *out = (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
        return 0;
    }
    uint64_t u;
    if (read_uvar(c, L, max_bytes, &u) < 0)
        return -1;
    *out = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* A nullable payload's size (negative: null), then its bytes, skipped: they must end before L. */
static int
skip_payload(Cursor *c, Py_ssize_t L, int64_t *size, Py_ssize_t *at)
{
    if (read_zigzag(c, L, 5, size) < 0)
        return -1;
    *at = c->p;
    if (*size >= 0) {
        if (*size > L - c->p) {
            fail("payload overruns the record");
            return -1;
        }
        c->p += (Py_ssize_t)*size;
    }
    return 0;
}

/* A payload located by skip_payload, as None or bytes (at most `cut` of them). */
static PyObject *
payload_object(const unsigned char *b, int64_t size, Py_ssize_t at, Py_ssize_t cut)
{
    if (size < 0)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)b + at, size <= cut ? (Py_ssize_t)size : cut);
}

typedef struct {
    PyTypeObject *type; /* the Record namedtuple (object path) */
    int64_t base_offset, base_ts;
    PyObject *append_ts; /* None: create time (base + delta) */
    int64_t append_ms;   /* append_ts as a C integer (column path) */
    Py_ssize_t cut;
} RecordContext;

/* One record's fields up to its header count, located and checked against the record's end. */
typedef struct {
    int64_t length, ts_delta, offset_delta, key_size, value_size, offset, ts;
    Py_ssize_t key_at, value_at, end;
    unsigned char attrs;
} RecordSpan;

/* Reads a record's length, attributes, deltas, key and value; the cursor is left on its headers. */
static int
record_fields(Cursor *c, Py_ssize_t end, const RecordContext *ctx, RecordSpan *r)
{
    r->ts = 0;
    if (read_zigzag(c, end, 5, &r->length) < 0)
        return -1;
    if (r->length < 6 || r->length > end - c->p) { /* attributes, 2 deltas, key, value, header count */
        fail("record length overruns the batch");
        return -1;
    }
    r->end = c->p + (Py_ssize_t)r->length;
    r->attrs = c->b[c->p++];
    if (read_zigzag(c, r->end, 10, &r->ts_delta) < 0 || read_zigzag(c, r->end, 5, &r->offset_delta) < 0)
        return -1;
    if (__builtin_add_overflow(ctx->base_offset, r->offset_delta, &r->offset) ||
        (ctx->append_ts == Py_None && __builtin_add_overflow(ctx->base_ts, r->ts_delta, &r->ts))) {
        fail("offset or timestamp wider than 64 bits");
        return -1;
    }
    return skip_payload(c, r->end, &r->key_size, &r->key_at) < 0 ||
                   skip_payload(c, r->end, &r->value_size, &r->value_at) < 0
               ? -1
               : 0;
}

/* A record's header count, each header taking at least two of the bytes before L. */
static int
header_count(Cursor *c, Py_ssize_t L, int64_t *count)
{
    if (read_zigzag(c, L, 5, count) < 0)
        return -1;
    if (*count < 0 || *count > (L - c->p) >> 1) {
        fail("header count overruns the record");
        return -1;
    }
    return 0;
}

typedef struct {
    Py_ssize_t key_at, key_len, value_at;
    int64_t value_size;
} HeaderSpan;

static int
next_header(Cursor *c, Py_ssize_t L, HeaderSpan *h)
{
    int64_t n;
    if (read_zigzag(c, L, 5, &n) < 0)
        return -1;
    if (n < 0 || n > L - c->p) {
        fail("header key overruns the record");
        return -1;
    }
    h->key_at = c->p;
    h->key_len = (Py_ssize_t)n;
    c->p += (Py_ssize_t)n;
    return skip_payload(c, L, &h->value_size, &h->value_at);
}

/* A header key as str. A key that is not UTF-8 fails: the Python loop escapes it and warns. */
static PyObject *
header_key(const unsigned char *b, const HeaderSpan *h)
{
    PyObject *key = PyUnicode_DecodeUTF8((const char *)b + h->key_at, h->key_len, NULL);
    if (key == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
        PyErr_Clear();
        fail("header key is not UTF-8");
    }
    return key;
}

/* A 2-tuple taking over both references; NULL (both released) when either is NULL or on failure. */
static PyObject *
pair_of(PyObject *a, PyObject *b)
{
    PyObject *t = a != NULL && b != NULL ? PyTuple_New(2) : NULL;
    if (t == NULL) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    PyTuple_SET_ITEM(t, 0, a);
    PyTuple_SET_ITEM(t, 1, b);
    return t;
}

/* The headers of a record ending at L, as a tuple of (str, bytes | None) tuples. */
static PyObject *
record_headers(Cursor *c, Py_ssize_t L, Py_ssize_t cut)
{
    int64_t count;
    if (header_count(c, L, &count) < 0)
        return NULL;
    PyObject *headers = PyTuple_New((Py_ssize_t)count);
    if (headers == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < (Py_ssize_t)count; i++) {
        HeaderSpan h;
        PyObject *pair = next_header(c, L, &h) < 0 ? NULL
                         : pair_of(header_key(c->b, &h), payload_object(c->b, h.value_size, h.value_at, cut));
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyTuple_SET_ITEM(headers, i, pair);
    }
    return headers;
}

/* Sets a Record field from a new reference; returns -1 (and fails) when it is NULL. */
static inline int
set_field(PyObject *rec, Py_ssize_t i, PyObject *v)
{
    if (v == NULL)
        return -1;
    PyTuple_SET_ITEM(rec, i, v);
    return 0;
}

/* One record at the cursor: a Record (tracked, as tuple.__new__ makes it) or NULL. */
static PyObject *
decode_record(Cursor *c, Py_ssize_t end, const RecordContext *ctx)
{
    RecordSpan r;
    if (record_fields(c, end, ctx, &r) < 0)
        return NULL;
    PyObject *headers = record_headers(c, r.end, ctx->cut);
    if (headers == NULL)
        return NULL;
    if (c->p != r.end) {
        Py_DECREF(headers);
        return fail("record fields do not fill its length");
    }
    PyObject *rec = ctx->type->tp_alloc(ctx->type, 12);
    if (rec == NULL) {
        Py_DECREF(headers);
        return NULL;
    }
    PyTuple_SET_ITEM(rec, 4, headers);
    if (set_field(rec, 0, PyLong_FromLongLong(r.offset)) < 0 ||
        set_field(rec, 1, ctx->append_ts == Py_None ? PyLong_FromLongLong(r.ts) : Py_NewRef(ctx->append_ts)) < 0 ||
        set_field(rec, 2, payload_object(c->b, r.key_size, r.key_at, ctx->cut)) < 0 ||
        set_field(rec, 3, payload_object(c->b, r.value_size, r.value_at, ctx->cut)) < 0 ||
        set_field(rec, 5, PyLong_FromLongLong(r.key_size)) < 0 ||
        set_field(rec, 6, PyLong_FromLongLong(r.value_size)) < 0 || set_field(rec, 7, PyLong_FromLong(r.attrs)) < 0 ||
        set_field(rec, 8, PyLong_FromLongLong(r.length)) < 0 ||
        set_field(rec, 9, PyLong_FromLongLong(r.offset_delta)) < 0 ||
        set_field(rec, 10, PyLong_FromLongLong(r.ts_delta)) < 0) {
        Py_DECREF(rec); /* unset items are NULL, which tuple dealloc skips */
        return NULL;
    }
    PyTuple_SET_ITEM(rec, 11, Py_NewRef(Py_None));
    return rec;
}

/* v2_records(buf, p, end, records, Record, base_offset, base_ts, append_ts, cut) -> bool
 *
 * Appends the Record of each record in buf[p:end] to the list `records`, as records.py's
 * _v2_records does. False when the bytes break a rule or hold something this loop leaves to
 * Python (a varint wider than 64 bits, a header key that is not UTF-8): the records appended
 * are removed again, and the caller runs the Python loop, which reports where and why. */
static PyObject *
v2_records(PyObject *module, PyObject *args)
{
    PyObject *buf, *records;
    Py_ssize_t p, end;
    RecordContext ctx;
    long long base_offset, base_ts;
    if (!PyArg_ParseTuple(args, "OnnO!O!LLOn:v2_records", &buf, &p, &end, &PyList_Type, &records,
                          &PyType_Type, &ctx.type, &base_offset, &base_ts, &ctx.append_ts, &ctx.cut))
        return NULL;
    if (!PyType_IsSubtype(ctx.type, &PyTuple_Type) || ctx.type->tp_itemsize != sizeof(PyObject *)) {
        PyErr_SetString(PyExc_TypeError, "v2_records needs a tuple subclass for its records");
        return NULL;
    }
    if (!PyBytes_CheckExact(buf) || p < 0 || p > end || end > PyBytes_GET_SIZE(buf) || ctx.cut < 0)
        Py_RETURN_FALSE; /* Python's slices would be of another type, or Python decides */
    ctx.base_offset = base_offset;
    ctx.base_ts = base_ts;
    Py_ssize_t before = PyList_GET_SIZE(records);
    Cursor c = {(const unsigned char *)PyBytes_AS_STRING(buf), p};
    int gc_was_enabled = PyGC_Disable(); /* records hold no cycles: see decode's note */
    int ok = 1;
    while (c.p < end) {
        PyObject *rec = decode_record(&c, end, &ctx);
        if (rec == NULL || PyList_Append(records, rec) < 0) {
            Py_XDECREF(rec);
            ok = 0;
            break;
        }
        Py_DECREF(rec);
    }
    if (gc_was_enabled)
        PyGC_Enable();
    if (ok)
        Py_RETURN_TRUE;
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    int redo = type == Error;
    if (PyList_SetSlice(records, before, PyList_GET_SIZE(records), NULL) < 0 || redo) {
        Py_XDECREF(type); /* a failure to cut back is the error reported */
        Py_XDECREF(value);
        Py_XDECREF(traceback);
        if (redo && !PyErr_Occurred())
            Py_RETURN_FALSE;
    }
    else
        PyErr_Restore(type, value, traceback);
    return NULL;
}

/* ---- magic 2 records as columns --------------------------------------------------------- */

/* The buffers v2_columns returns, in this order (native byte order; lengths -1 for null). */
enum {
    COL_OFFSET,       /* int64 per record: base offset + delta */
    COL_TIMESTAMP,    /* int64 per record: ms, base + delta or the append time */
    COL_KEY_SIZE,     /* int32 per record: the wire size (negative: null) */
    COL_VALUE_SIZE,   /* int32 per record */
    COL_KEY_LEN,      /* int32 per record: bytes kept, -1 for null */
    COL_KEY,          /* the kept key bytes, end to end */
    COL_VALUE_LEN,    /* int32 per record */
    COL_VALUE,        /* the kept value bytes */
    COL_HEADERS,      /* int32 per record: its header count */
    COL_HEADER_KEY_LEN, /* int32 per header: UTF-8 bytes of its key */
    COL_HEADER_KEY,   /* the header keys' bytes */
    COL_HEADER_VALUE_LEN, /* int32 per header: bytes kept, -1 for null */
    COL_HEADER_VALUE, /* the kept header value bytes */
    COL_COUNT
};

/* A column being filled: a bytes object of its own (`len` bytes used of its size, cut to `len` at
 * the end), or, appending to a caller's column (v2_columns' `into`), a bytearray grown as needed
 * (`len` bytes used; cut back to `len` at the end, to where it started on failure). */
typedef struct {
    PyObject *bytes;
    Py_ssize_t len;
    PyObject *into;  /* the caller's bytearray, or NULL */
    Py_ssize_t from; /* its length before this call */
} Buf;

/* put's every case: its own bytes object, an arena column to grow. */
static int
put_any(Buf *b, const void *s, Py_ssize_t n)
{
    if (n == 0)
        return 0; /* (an empty payload into a buffer not yet allocated: no object to copy into) */
    if (b->into != NULL) {
        PyByteArrayObject *a = (PyByteArrayObject *)b->into;
        if (!into_room(a, b->len + n) && n > Py_SIZE(a) - b->len) {
            /* Past the room allocated, or an exported bytearray (which PyByteArray_Resize refuses):
             * half as much again as needed. */
            Py_ssize_t need = b->len + n;
            if (need > PY_SSIZE_T_MAX / 3) {
                PyErr_NoMemory();
                return -1;
            }
            if (PyByteArray_Resize(b->into, need + need / 2) < 0)
                return -1; /* (BufferError while the bytearray is exported: the caller starts new ones) */
        }
        memcpy(a->ob_start + b->len, s, (size_t)n); /* (not PyByteArray_AS_STRING: "" while its size is 0) */
        b->len += n;
        return 0;
    }
    Py_ssize_t cap = b->bytes == NULL ? 0 : PyBytes_GET_SIZE(b->bytes);
    if (n > cap - b->len) {
        cap = cap ? cap : 256;
        while (cap - b->len < n)
            cap *= 2; /* what is put is never more than the input's bytes, so this cannot overflow */
        if (b->bytes == NULL ? (b->bytes = PyBytes_FromStringAndSize(NULL, cap)) == NULL
                             : _PyBytes_Resize(&b->bytes, cap) < 0)
            return -1;
    }
    memcpy(PyBytes_AS_STRING(b->bytes) + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

/* `n` bytes to a column: inline where they fit the room an arena column has (nearly every value of a
 * chatty capture's records), else put_any. 0, or -1 with an exception set. */
static inline int
put(Buf *b, const void *s, Py_ssize_t n)
{
    if (b->into == NULL || n == 0 || !into_room((PyByteArrayObject *)b->into, b->len + n))
        return put_any(b, s, n);
    memcpy(((PyByteArrayObject *)b->into)->ob_start + b->len, s, (size_t)n);
    b->len += n;
    return 0;
}

static inline int put_i64(Buf *b, int64_t v) { return put(b, &v, 8); }

/* An int32 column value; wider values are left to Python (its columns turn them into nulls). */
static inline int
put_i32(Buf *b, int64_t v)
{
    if (v < INT32_MIN || v > INT32_MAX) {
        fail("size wider than 32 bits");
        return -1;
    }
    int32_t w = (int32_t)v;
    return put(b, &w, 4);
}

/* A located payload: its kept length (-1: null) and its kept bytes. */
static int
put_payload(Buf *lens, Buf *data, const unsigned char *b, int64_t size, Py_ssize_t at, Py_ssize_t cut)
{
    if (size < 0)
        return put_i32(lens, -1);
    Py_ssize_t kept = size <= cut ? (Py_ssize_t)size : cut;
    return put_i32(lens, kept) < 0 || put(data, b + at, kept) < 0 ? -1 : 0;
}

static int
is_ascii(const unsigned char *s, Py_ssize_t n)
{
    unsigned char any = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        any |= s[i];
    return any < 0x80;
}

/* One record at the cursor, appended to the column buffers (partly, on failure). (Inline: the loop
 * of column_records, per record.) */
static inline __attribute__((always_inline)) int
column_record(Cursor *c, Py_ssize_t end, const RecordContext *ctx, Buf *col)
{
    RecordSpan r;
    int64_t count;
    if (record_fields(c, end, ctx, &r) < 0 || header_count(c, r.end, &count) < 0)
        return -1;
    for (int64_t i = 0; i < count; i++) {
        HeaderSpan h;
        if (next_header(c, r.end, &h) < 0)
            return -1;
        if (!is_ascii(c->b + h.key_at, h.key_len)) { /* check it decodes, as the object path does */
            PyObject *key = header_key(c->b, &h);
            if (key == NULL)
                return -1;
            Py_DECREF(key);
        }
        if (put_i32(&col[COL_HEADER_KEY_LEN], h.key_len) < 0 ||
            put(&col[COL_HEADER_KEY], c->b + h.key_at, h.key_len) < 0 ||
            put_payload(&col[COL_HEADER_VALUE_LEN], &col[COL_HEADER_VALUE], c->b, h.value_size, h.value_at,
                        ctx->cut) < 0)
            return -1;
    }
    if (c->p != r.end) {
        fail("record fields do not fill its length");
        return -1;
    }
    return put_i64(&col[COL_OFFSET], r.offset) < 0 ||
                   put_i64(&col[COL_TIMESTAMP], ctx->append_ts == Py_None ? r.ts : ctx->append_ms) < 0 ||
                   put_i32(&col[COL_KEY_SIZE], r.key_size) < 0 || put_i32(&col[COL_VALUE_SIZE], r.value_size) < 0 ||
                   put_payload(&col[COL_KEY_LEN], &col[COL_KEY], c->b, r.key_size, r.key_at, ctx->cut) < 0 ||
                   put_payload(&col[COL_VALUE_LEN], &col[COL_VALUE], c->b, r.value_size, r.value_at, ctx->cut) < 0 ||
                   put_i32(&col[COL_HEADERS], count) < 0
               ? -1
               : 0;
}

/* The context of a call's records (its append time read as a C integer) and its bounds checked:
 * 1, 0 where v2_columns gives None, or -1 with an exception set. */
static int
context_of(RecordContext *ctx, PyObject *buf, Py_ssize_t p, Py_ssize_t end, long long base_offset,
           long long base_ts, PyObject *append_ts, Py_ssize_t cut)
{
    *ctx = (RecordContext){NULL, base_offset, base_ts, append_ts, 0, cut};
    if (!PyBytes_CheckExact(buf) || p < 0 || p > end || end > PyBytes_GET_SIZE(buf) || cut < 0)
        return 0;
    if (append_ts != Py_None) {
        int overflow;
        ctx->append_ms = PyLong_Check(append_ts) ? PyLong_AsLongLongAndOverflow(append_ts, &overflow) : 0;
        if (!PyLong_Check(append_ts) || overflow)
            return 0;
        if (ctx->append_ms == -1 && PyErr_Occurred())
            return -1;
    }
    return 1;
}

/* The records in buf[p:end] appended to `col`: their count, or -1 (an exception set; the columns
 * partly written). */
static Py_ssize_t
column_records(PyObject *buf, Py_ssize_t p, Py_ssize_t end, const RecordContext *ctx, Buf *col)
{
    Cursor c = {(const unsigned char *)PyBytes_AS_STRING(buf), p};
    Py_ssize_t count = 0;
    for (; c.p < end; count++)
        if (column_record(&c, end, ctx, col) < 0)
            return -1;
    return count;
}

/* v2_columns with `into` (the capsule's v2_into, _records.h): the records appended to an arena's 13
 * bytearrays; their count, -2 where v2_columns gives None (the arena as it was), -1 with an exception
 * set. A call per batch (one record, on chatty traffic): its columns are set up field by field, only
 * the ones written are sized again, and the count is no Python int. */
static Py_ssize_t
v2_into(PyObject *buf, Py_ssize_t p, Py_ssize_t end, long long base_offset, long long base_ts, PyObject *append_ts,
        Py_ssize_t cut, PyObject *into)
{
    RecordContext ctx;
    int ok = context_of(&ctx, buf, p, end, base_offset, base_ts, append_ts, cut);
    if (ok <= 0)
        return ok == 0 ? -2 : -1;
    if (!PyTuple_CheckExact(into) || PyTuple_GET_SIZE(into) != COL_COUNT) {
        PyErr_SetString(PyExc_TypeError, "v2_columns: into must be a tuple of 13 bytearrays");
        return -1;
    }
    Buf col[COL_COUNT];
    for (int i = 0; i < COL_COUNT; i++) {
        PyObject *a = PyTuple_GET_ITEM(into, i);
        if (!PyByteArray_CheckExact(a)) {
            PyErr_SetString(PyExc_TypeError, "v2_columns: into must be a tuple of 13 bytearrays");
            return -1;
        }
        col[i] = (Buf){NULL, PyByteArray_GET_SIZE(a), a, PyByteArray_GET_SIZE(a)};
    }
    Py_ssize_t count = column_records(buf, p, end, &ctx, col);
    for (int i = 0; i < COL_COUNT; i++)
        if (col[i].len != col[i].from) /* (a column not written keeps its size, and its trailing null) */
            into_size(col[i].into, count < 0 ? col[i].from : col[i].len);
    if (count < 0 && PyErr_ExceptionMatches(Error)) {
        PyErr_Clear();
        return -2;
    }
    return count;
}

/* The records in buf[p:end] as columns: see v2_columns. */
static PyObject *
columns_of(PyObject *buf, Py_ssize_t p, Py_ssize_t end, long long base_offset, long long base_ts,
           PyObject *append_ts, Py_ssize_t cut, PyObject *into)
{
    if (into != Py_None) {
        Py_ssize_t count = v2_into(buf, p, end, base_offset, base_ts, append_ts, cut, into);
        return count == -2 ? Py_NewRef(Py_None) : count < 0 ? NULL : PyLong_FromSsize_t(count);
    }
    RecordContext ctx;
    int ok = context_of(&ctx, buf, p, end, base_offset, base_ts, append_ts, cut);
    if (ok <= 0)
        return ok == 0 ? Py_NewRef(Py_None) : NULL;
    Buf col[COL_COUNT] = {{0}};
    PyObject *out = column_records(buf, p, end, &ctx, col) < 0 ? NULL : PyTuple_New(COL_COUNT);
    for (int i = 0; out != NULL && i < COL_COUNT; i++) {
        if (col[i].bytes == NULL ? (col[i].bytes = PyBytes_FromStringAndSize(NULL, 0)) == NULL
                                 : _PyBytes_Resize(&col[i].bytes, col[i].len) < 0)
            Py_CLEAR(out);
        else
            PyTuple_SET_ITEM(out, i, Py_NewRef(col[i].bytes));
    }
    for (int i = 0; i < COL_COUNT; i++)
        Py_XDECREF(col[i].bytes);
    if (out == NULL && PyErr_ExceptionMatches(Error)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return out;
}

/* v2_columns(buf, p, end, base_offset, base_ts, append_ts, cut, into=None) -> tuple of bytes | int | None
 *
 * The records in buf[p:end] as column buffers (see COL_*), a handful of bytes objects per call
 * and none per record. None under v2_records' rules for False (and for an append time that is
 * not an int64): the caller decodes the batch the other way. With `into`, a tuple of COL_COUNT
 * bytearrays, the records are appended to those instead (the records table's arena: consecutive
 * batches end to end, so the table's columns need no joining) and the count of records is
 * returned; on None they are cut back to their lengths before the call. */
static PyObject *
v2_columns(PyObject *module, PyObject *args)
{
    PyObject *buf, *into = Py_None, *append_ts;
    Py_ssize_t p, end, cut;
    long long base_offset, base_ts;
    if (!PyArg_ParseTuple(args, "OnnLLOn|O:v2_columns", &buf, &p, &end, &base_offset, &base_ts, &append_ts,
                          &cut, &into))
        return NULL;
    return columns_of(buf, p, end, base_offset, base_ts, append_ts, cut, into);
}

/* ---- CRC-32C of a record batch ----------------------------------------------------------
 *
 * records.py checks each magic 2 batch's CRC-32C; the crc32c package is the Python path's (and the
 * reference the tests compare with). Here the same checksum (Castagnoli polynomial, reflected,
 * initial and final value all ones) is computed with the SSE 4.2 instruction where the processor
 * has it, else eight bytes at a time by table: the crc32c package's import alone cost about as
 * much as checking every batch of a record-heavy capture. */

#define CRC32C_POLY 0x82F63B78u
static uint32_t crc_table[8][256];

static void
crc32c_init(void)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++)
            crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xFF];
}

static uint32_t
crc32c_table(uint32_t crc, const unsigned char *s, Py_ssize_t n)
{
    for (; n >= 8; s += 8, n -= 8) {
        uint32_t lo = crc ^ ((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24);
        crc = crc_table[7][lo & 0xFF] ^ crc_table[6][lo >> 8 & 0xFF] ^ crc_table[5][lo >> 16 & 0xFF] ^
              crc_table[4][lo >> 24] ^ crc_table[3][s[4]] ^ crc_table[2][s[5]] ^ crc_table[1][s[6]] ^
              crc_table[0][s[7]];
    }
    while (n-- > 0)
        crc = (crc >> 8) ^ crc_table[0][(crc ^ *s++) & 0xFF];
    return crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define CRC32C_HARDWARE 1
__attribute__((target("sse4.2"))) static uint32_t
crc32c_sse42(uint32_t crc, const unsigned char *s, Py_ssize_t n)
{
    uint64_t c = crc;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, s, 8); /* (unaligned: a batch starts anywhere in its frame) */
        c = __builtin_ia32_crc32di(c, word);
    }
    crc = (uint32_t)c;
    while (n-- > 0)
        crc = __builtin_ia32_crc32qi(crc, *s++);
    return crc;
}
#endif

static int crc_hardware; /* set at import: whether the processor has the CRC32 instruction */

/* The capsule's crc32c (_records.h): a batch's CRC-32C, the way crc32c() computes it. */
static uint32_t
crc_of(const unsigned char *s, Py_ssize_t n)
{
#ifdef CRC32C_HARDWARE
    if (crc_hardware)
        return crc32c_sse42(0xFFFFFFFFu, s, n) ^ 0xFFFFFFFFu;
#endif
    return crc32c_table(0xFFFFFFFFu, s, n) ^ 0xFFFFFFFFu;
}

static RecordsApi records_api = {v2_into, crc_of};

/* crc32c(data, portable=False) -> int: the CRC-32C of a bytes-like object, as crc32c.crc32c gives it
 * (portable: by table even where the instruction is there, so tests check both ways). */
static PyObject *
crc32c(PyObject *module, PyObject *args)
{
    Py_buffer view;
    int portable = 0;
    if (!PyArg_ParseTuple(args, "y*|p:crc32c", &view, &portable))
        return NULL;
    uint32_t crc;
    Py_BEGIN_ALLOW_THREADS
#ifdef CRC32C_HARDWARE
    crc = crc_hardware && !portable ? crc32c_sse42(0xFFFFFFFFu, view.buf, view.len)
                                    : crc32c_table(0xFFFFFFFFu, view.buf, view.len);
#else
    crc = crc32c_table(0xFFFFFFFFu, view.buf, view.len);
#endif
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc ^ 0xFFFFFFFFu);
}

/* ---- hunting's scan --------------------------------------------------------------------- */

/* size_fields(b, start, stop, least, most, heads) -> list[int]
 *
 * The positions i in [start, stop), with 8 bytes of b from i, where a 4-byte big-endian size
 * field (signed: never below 0) between least and most starts and the 4 bytes after it, as a
 * big-endian number, are in the set heads (None: any): where a framer hunting for a frame
 * boundary has candidates. A regular expression did this at a Python call per match, which
 * through zeros, or crafted heads claiming more than is buffered, is a call for nearly every byte. */
static PyObject *
size_fields(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "size_fields(b, start, stop, least, most, heads)");
        return NULL;
    }
    PyObject *heads = args[5];
    if (heads != Py_None && !PyAnySet_Check(heads)) {
        PyErr_SetString(PyExc_TypeError, "size_fields: heads must be a set or None");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]), stop = PyLong_AsSsize_t(args[2]);
    long long least = PyLong_AsLongLong(args[3]), most = PyLong_AsLongLong(args[4]);
    PyObject *out = PyErr_Occurred() ? NULL : PyList_New(0);
    if (out == NULL)
        goto done;
    const unsigned char *b = view.buf;
    if (start < 0)
        start = 0;
    if (stop > view.len - 7)
        stop = view.len - 7;
    if (least < 0)
        least = 0;
    if (most > 0x7FFFFFFF)
        most = 0x7FFFFFFF;
    unsigned char top = most < 0 ? 0 : (unsigned char)(most >> 24); /* a size's first byte above it: too big */
    for (Py_ssize_t i = start; i < stop && most >= 0; i++) {
        if (b[i] > top)
            continue;
        long long size = (long long)be32(b + i);
        if (size < least || size > most)
            continue;
        if (heads != Py_None) {
            PyObject *head = PyLong_FromUnsignedLong(be32(b + i + 4));
            int found = head == NULL ? -1 : PySet_Contains(heads, head);
            Py_XDECREF(head);
            if (found <= 0) {
                if (found == 0)
                    continue;
                Py_CLEAR(out);
                goto done;
            }
        }
        PyObject *at = PyLong_FromSsize_t(i);
        int rc = at == NULL ? -1 : PyList_Append(out, at);
        Py_XDECREF(at);
        if (rc < 0) {
            Py_CLEAR(out);
            goto done;
        }
    }
done:
    PyBuffer_Release(&view);
    return out;
}

/* ---- building programs ------------------------------------------------------------------ */

static void
node_clear(Node *nd)
{
    for (Py_ssize_t i = 0; i < nd->nregular; i++)
        node_clear(&nd->regular[i]);
    for (Py_ssize_t i = 0; i < nd->ntagged; i++)
        node_clear(&nd->tagged[i]);
    PyMem_Free(nd->regular);
    PyMem_Free(nd->tagged);
    Py_CLEAR(nd->key);
    Py_CLEAR(nd->layout);
    nd->regular = nd->tagged = NULL;
    nd->nregular = nd->ntagged = 0;
}

static int node_build(Node *nd, PyObject *spec, int depth);

static int
nodes_build(Node **out, Py_ssize_t *count, PyObject *specs, int depth)
{
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    *out = PyMem_Calloc(n ? n : 1, sizeof(Node));
    if (*out == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        *count = i + 1; /* node_clear frees what was built, even on failure */
        if (node_build(&(*out)[i], PyTuple_GET_ITEM(specs, i), depth + 1) < 0)
            return -1;
    }
    return 0;
}

/* spec = (kind, key, flags, min_elem, tag, regular_specs, tagged_specs) */
static int
node_build(Node *nd, PyObject *spec, int depth)
{
    PyObject *key, *regular, *tagged;
    if (depth > MAX_DEPTH) {
        PyErr_SetString(PyExc_ValueError, "schema nested too deeply for the native decoder");
        return -1;
    }
    if (!PyArg_ParseTuple(spec, "iUinLO!O!", &nd->kind, &key, &nd->flags, &nd->min_elem, &nd->tag,
                          &PyTuple_Type, &regular, &PyTuple_Type, &tagged))
        return -1;
    if (nd->kind < 0 || nd->kind >= K_COUNT || nd->min_elem < 0) {
        PyErr_SetString(PyExc_ValueError, "bad node in decode program");
        return -1;
    }
    Py_INCREF(key);
    PyUnicode_InternInPlace(&key);
    nd->key = key;
    nd->container = nd->flags & F_ARRAY || nd->kind == K_STRUCT;
    if (nodes_build(&nd->regular, &nd->nregular, regular, depth) < 0 ||
        nodes_build(&nd->tagged, &nd->ntagged, tagged, depth) < 0)
        return -1;
    nd->within = nd->flags & (F_ERROR | F_TOPIC | F_TOPIC_ID);
    if (nd->kind != K_STRUCT)
        return 0;
    for (Py_ssize_t i = 0; i < nd->nregular + nd->ntagged; i++) {
        const Node *m = i < nd->nregular ? &nd->regular[i] : &nd->tagged[i - nd->nregular];
        nd->holds_containers |= m->container;
        nd->within |= m->within;
    }
    nd->layout = PyDict_New();
    if (nd->layout == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < nd->nregular; i++) {
        if (PyDict_SetItem(nd->layout, nd->regular[i].key, Py_None) < 0)
            return -1;
    }
    if (PyDict_GET_SIZE(nd->layout) != nd->nregular) {
        PyErr_SetString(PyExc_ValueError, "duplicate field key in decode program");
        return -1;
    }
    return 0;
}

/* The bytes of a bytes or bytearray object, read in place (hunting proves candidates inside its
 * buffer without copying them out): 1, or 0 for any other object (*data and *size untouched). */
static int
byte_buffer(PyObject *obj, const char **data, Py_ssize_t *size)
{
    if (PyBytes_CheckExact(obj)) {
        *data = PyBytes_AS_STRING(obj);
        *size = PyBytes_GET_SIZE(obj);
        return 1;
    }
    if (PyByteArray_CheckExact(obj)) {
        *data = PyByteArray_AS_STRING(obj);
        *size = PyByteArray_GET_SIZE(obj);
        return 1;
    }
    return 0;
}

/* ---- the Program type ------------------------------------------------------------------- */

static PyObject *
program_vectorcall(PyObject *self_obj, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Program *self = (Program *)self_obj;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    /* anything but bytes or a bytearray goes to the Python decoder */
    const char *data;
    Py_ssize_t size;
    if (nargs != 3 || kwnames != NULL || !byte_buffer(args[0], &data, &size))
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    Py_ssize_t p = PyLong_AsSsize_t(args[1]);
    if (p == -1 && PyErr_Occurred())
        return NULL;
    Py_ssize_t L = PyLong_AsSsize_t(args[2]);
    if (L == -1 && PyErr_Occurred())
        return NULL;
    if (p < 0 || p > L || L > size)
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    Cursor c = {(const unsigned char *)data, p};
    /* The result tree has no cycles: collecting while it is half built only costs time
     * (thousands of dicts and lists per large response would trigger several passes). */
    int gc_was_enabled = PyGC_Disable();
    PyObject *value = decode_struct(&c, L, &self->root);
    if (gc_was_enabled)
        PyGC_Enable();
    if (value == NULL) {
        if (!PyErr_ExceptionMatches(Error))
            return NULL;
        PyErr_Clear();
        return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
    }
    return pair_of(value, PyLong_FromSsize_t(c.p));
}

/* decode_frame(b, programs, api_key, api_version, sized) -> dict | None
 *
 * A whole frame in one call: the header program, the body program where the header ends, and
 * {"header": ..., "body": ...}, with the collector paused throughout (see the note at the top).
 * api_key None: a request, whose api key and version are its first 4 bytes. programs maps
 * api_key << 16 | api_version to (header Program, body Program). sized: a leading 4-byte size
 * equal to the length after it is skipped. None for anything this path leaves to Python, which
 * then decodes the frame and reports as before: a buffer other than bytes, a version without
 * programs, bytes that do not decode, bytes after the body (a warning Python builds). */
static PyObject *
decode_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "decode_frame(b, programs: dict, api_key, api_version, sized)");
        return NULL;
    }
    int sized = PyObject_IsTrue(args[4]);
    if (sized < 0)
        return NULL;
    PyObject *frame = args[0], *programs = args[1];
    if (!PyBytes_CheckExact(frame))
        Py_RETURN_NONE;
    const unsigned char *b = (const unsigned char *)PyBytes_AS_STRING(frame);
    Py_ssize_t L = PyBytes_GET_SIZE(frame), p = 0;
    if (sized && L >= 4 && (int32_t)be32(b) == L - 4)
        p = 4;
    long api_key, api_version;
    if (args[2] == Py_None) {
        if (L - p < 4)
            Py_RETURN_NONE;
        api_key = (int16_t)be16(b + p);
        api_version = (int16_t)be16(b + p + 2);
    }
    else {
        api_key = PyLong_AsLong(args[2]);
        api_version = api_key == -1 && PyErr_Occurred() ? -1 : PyLong_AsLong(args[3]);
        if (PyErr_Occurred()) { /* not ints, or out of range: Python says what is wrong */
            PyErr_Clear();
            Py_RETURN_NONE;
        }
    }
    if (api_key < 0 || api_key > 0x7FFF || api_version < 0 || api_version > 0x7FFF)
        Py_RETURN_NONE;
    PyObject *id = PyLong_FromLong(api_key << 16 | api_version);
    if (id == NULL)
        return NULL;
    PyObject *pair = PyDict_GetItemWithError(programs, id); /* borrowed */
    Py_DECREF(id);
    if (pair == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    if (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
        !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 0), &ProgramType) || !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 1), &ProgramType)) {
        PyErr_SetString(PyExc_TypeError, "decode_frame's programs must be (header Program, body Program) pairs");
        return NULL;
    }
    Cursor c = {b, p};
    PyObject *header = NULL, *body = NULL, *result = PyDict_New();
    if (result == NULL)
        return NULL;
    int gc_was_enabled = PyGC_Disable();
    if (!PyObject_GC_IsTracked(result))
        PyObject_GC_Track(result); /* the root first: see "parents first" */
    header = decode_struct(&c, L, &((Program *)PyTuple_GET_ITEM(pair, 0))->root);
    if (header != NULL)
        body = decode_struct(&c, L, &((Program *)PyTuple_GET_ITEM(pair, 1))->root);
    if (body == NULL || c.p != L || PyDict_SetItem(result, str_header, header) < 0 ||
        PyDict_SetItem(result, str_body, body) < 0)
        Py_CLEAR(result);
    else if (!PyObject_GC_IsTracked(header) && !PyObject_GC_IsTracked(body))
        PyObject_GC_UnTrack(result); /* plain values only, as CPython would have left it */
    if (gc_was_enabled)
        PyGC_Enable();
    Py_XDECREF(header);
    Py_XDECREF(body);
    if (result != NULL || (PyErr_Occurred() && !PyErr_ExceptionMatches(Error)))
        return result;
    PyErr_Clear();
    Py_RETURN_NONE; /* bad bytes, or bytes after the body */
}

/* walk_frame(b, programs, api_key, api_version, start, end, budget) -> (stop, left)
 *
 * Whether b[start:end] (bytes or a bytearray, read in place) decodes exactly as that message's
 * header then body, building nothing (see "walking" above): stop is where the body would end, or
 * W_BAD, W_SPENT or W_UNDECIDED when decoding would fail, the budget ran out, or only Python can
 * tell (also for a version without programs, another buffer type, positions outside it); left
 * is the budget not spent. programs as for decode_frame. */
static PyObject *
walk_frame(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 7 || !PyDict_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "walk_frame(b, programs: dict, api_key, api_version, start, end, budget)");
        return NULL;
    }
    long api_key = PyLong_AsLong(args[2]), api_version = PyLong_AsLong(args[3]);
    Py_ssize_t p = PyLong_AsSsize_t(args[4]), L = PyLong_AsSsize_t(args[5]), left = PyLong_AsSsize_t(args[6]);
    if (PyErr_Occurred())
        return NULL;
    Py_ssize_t size = -1, stop = W_UNDECIDED;
    const char *data = NULL;
    byte_buffer(args[0], &data, &size);
    PyObject *pair = NULL;
    if (0 <= api_key && api_key <= 0x7FFF && 0 <= api_version && api_version <= 0x7FFF) {
        PyObject *id = PyLong_FromLong(api_key << 16 | api_version);
        if (id == NULL)
            return NULL;
        pair = PyDict_GetItemWithError(args[1], id); /* borrowed */
        Py_DECREF(id);
        if (pair == NULL && PyErr_Occurred())
            return NULL;
    }
    if (pair != NULL && (!PyTuple_CheckExact(pair) || PyTuple_GET_SIZE(pair) != 2 ||
                         !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 0), &ProgramType) ||
                         !Py_IS_TYPE(PyTuple_GET_ITEM(pair, 1), &ProgramType))) {
        PyErr_SetString(PyExc_TypeError, "walk_frame's programs must be (header Program, body Program) pairs");
        return NULL;
    }
    if (pair != NULL && 0 <= p && p <= L && L <= size) {
        Cursor c = {(const unsigned char *)data, p};
        int rc = walk_struct(&c, L, &((Program *)PyTuple_GET_ITEM(pair, 0))->root, &left);
        if (rc == 0)
            rc = walk_struct(&c, L, &((Program *)PyTuple_GET_ITEM(pair, 1))->root, &left);
        stop = rc ? rc : c.p;
        PyErr_Clear(); /* the readers shared with decoding set an Error on bad bytes */
    }
    return Py_BuildValue("(nn)", stop, left < 0 ? 0 : left);
}

/* program.strict(b, p, L): decode without the fallback, raising Error on bad bytes (for tests). */
static PyObject *
program_strict(Program *self, PyObject *args)
{
    Py_buffer buf;
    Py_ssize_t p, L;
    if (!PyArg_ParseTuple(args, "y*nn", &buf, &p, &L))
        return NULL;
    if (p < 0 || p > L || L > buf.len) {
        PyBuffer_Release(&buf);
        return fail("position outside the buffer");
    }
    Cursor c = {(const unsigned char *)buf.buf, p};
    PyObject *value = decode_struct(&c, L, &self->root);
    PyBuffer_Release(&buf);
    if (value == NULL)
        return NULL;
    return Py_BuildValue("(Nn)", value, c.p);
}

static PyObject *
program_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    PyObject *spec, *fallback;
    static char *kwlist[] = {"spec", "fallback", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "O!O:Program", kwlist, &PyTuple_Type, &spec, &fallback))
        return NULL;
    if (!PyCallable_Check(fallback)) {
        PyErr_SetString(PyExc_TypeError, "fallback must be callable");
        return NULL;
    }
    Program *self = (Program *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->vectorcall = program_vectorcall;
    Py_INCREF(fallback);
    self->fallback = fallback;
    if (node_build(&self->root, spec, 0) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    if (self->root.kind != K_STRUCT || self->root.flags & (F_ARRAY | F_NULLABLE)) {
        Py_DECREF(self);
        PyErr_SetString(PyExc_ValueError, "a program's root must be a plain struct");
        return NULL;
    }
    return (PyObject *)self;
}

static int
program_traverse(Program *self, visitproc visit, void *arg)
{
    Py_VISIT(self->fallback);
    return 0;
}

static int
program_clear(Program *self)
{
    Py_CLEAR(self->fallback);
    return 0;
}

static void
program_dealloc(Program *self)
{
    PyObject_GC_UnTrack(self);
    program_clear(self);
    node_clear(&self->root);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef program_methods[] = {
    {"strict", (PyCFunction)program_strict, METH_VARARGS,
     "strict(b, p, L) -> (dict, end): decode natively, raising Error instead of falling back."},
    {NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "kdissect.decoders._native.Program",
    .tp_doc = "Program(spec, fallback): a compiled decode program, called as program(b, p, L) -> (dict, end).",
    .tp_basicsize = sizeof(Program),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = program_new,
    .tp_dealloc = (destructor)program_dealloc,
    .tp_traverse = (traverseproc)program_traverse,
    .tp_clear = (inquiry)program_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Program, vectorcall),
    .tp_methods = program_methods,
};

static PyMethodDef module_methods[] = {
    {"v2_records", v2_records, METH_VARARGS,
     "v2_records(buf, p, end, records, Record, base_offset, base_ts, append_ts, cut) -> bool: append the "
     "magic 2 records in buf[p:end] to records; False (nothing appended) when the Python loop must decide."},
    {"v2_columns", v2_columns, METH_VARARGS,
     "v2_columns(buf, p, end, base_offset, base_ts, append_ts, cut, into=None) -> tuple | int | None: the magic 2 "
     "records in buf[p:end] as column buffers (or appended to the bytearrays of into: their count); None when "
     "the batch must be decoded the other way."},
    {"crc32c", crc32c, METH_VARARGS,
     "crc32c(data, portable=False) -> int: the CRC-32C of a bytes-like object (a record batch's checksum); "
     "portable: by table, even where the processor's instruction is there."},
    {"size_fields", (PyCFunction)(void (*)(void))size_fields, METH_FASTCALL,
     "size_fields(b, start, stop, least, most, heads) -> list[int]: where size fields between least and most "
     "start, followed by 4 bytes (a big-endian number) in the set heads (None: any)."},
    {"walk_frame", (PyCFunction)(void (*)(void))walk_frame, METH_FASTCALL,
     "walk_frame(b, programs, api_key, api_version, start, end, budget) -> (stop, left): where a frame's "
     "header and body would end, building nothing; stop < 0: decoding would fail (-1), the budget of steps "
     "ran out (-2), or only the Python decoder can tell (-3)."},
    {"scan", scan, METH_VARARGS,
     "scan(b, programs, api_key, api_version[, names]) -> ((found...), (values...), first_error, errors) | None: what the "
     "native pairing reads of a whole frame (client_id's length, acks, throttle_time_ms; the error codes; with names the "
     "(topic, topic id) contexts and every code)."},
    {"decode_frame", (PyCFunction)(void (*)(void))decode_frame, METH_FASTCALL,
     "decode_frame(b, programs, api_key, api_version, sized) -> dict | None: a whole frame, header and body, "
     "in one call; None when Python must decide."},
    {NULL},
};

static struct PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kdissect.decoders._native",
    .m_doc = "Schema-program interpreter for Kafka message decoding (see program.py), the magic 2 record loop, "
             "and hunting's walk and scan.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC
PyInit__native(void)
{
    PyObject *m = PyModule_Create(&native_module);
    if (m == NULL)
        return NULL;
    crc32c_init();
#ifdef CRC32C_HARDWARE
    __builtin_cpu_init();
    crc_hardware = __builtin_cpu_supports("sse4.2");
#endif
    PyObject *uuid_mod = PyImport_ImportModule("uuid");
    if (uuid_mod == NULL)
        goto error;
    uuid_type = PyObject_GetAttrString(uuid_mod, "UUID");
    PyObject *safe = PyObject_GetAttrString(uuid_mod, "SafeUUID");
    Py_DECREF(uuid_mod);
    if (uuid_type == NULL || safe == NULL || !PyType_Check(uuid_type)) {
        Py_XDECREF(safe);
        goto error;
    }
    safe_unknown = PyObject_GetAttrString(safe, "unknown");
    Py_DECREF(safe);
    str_int = PyUnicode_InternFromString("int");
    str_is_safe = PyUnicode_InternFromString("is_safe");
    str_unknown_tags = PyUnicode_InternFromString("unknown_tagged_fields");
    str_header = PyUnicode_InternFromString("header");
    str_body = PyUnicode_InternFromString("body");
    empty_tuple = PyTuple_New(0);
    Error = PyErr_NewException("kdissect.decoders._native.Error", NULL, NULL);
    if (safe_unknown == NULL || str_int == NULL || str_is_safe == NULL || str_unknown_tags == NULL ||
        str_header == NULL || str_body == NULL ||
        empty_tuple == NULL || Error == NULL || PyType_Ready(&ProgramType) < 0)
        goto error;
    Py_INCREF(Error);
    if (PyModule_AddObject(m, "Error", Error) < 0)
        goto error;
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(m, "Program", (PyObject *)&ProgramType) < 0)
        goto error;
    PyObject *capsule = PyCapsule_New(&scan_api, SCAN_CAPSULE, NULL);
    if (capsule == NULL || PyModule_AddObject(m, "scan_api", capsule) < 0) {
        Py_XDECREF(capsule);
        goto error;
    }
    PyObject *records = PyCapsule_New(&records_api, RECORDS_CAPSULE, NULL);
    if (records == NULL || PyModule_AddObject(m, "records_api", records) < 0) {
        Py_XDECREF(records);
        goto error;
    }
    return m;
error:
    Py_DECREF(m);
    return NULL;
}
