/* The detail walk over a frame's bytes: _native.c's walk (tables/detail_walk.py's plans) for the common
 * case, reading the fields the plan needs in place, with no decoded body.
 *
 * _native.c walks the dicts the decoder's C path built for a whole body; on chatty traffic building those
 * dicts (and the records bytes inside them) cost as much as the walk itself. This walk follows the same
 * plan over the frame's bytes with the decoder's readers in place (decoders/_native.c, "reading in
 * place", through the scan capsule): per struct it reads its scalars once (a value only for a field the
 * walk reads: a context, a partition value, an error code, a base offset, a top-level field the caller
 * wants) and skips the rest; once a struct's members its own fields read are behind, it takes those
 * fields and walks its nested structs (revisiting those it skipped before that point, walking the later
 * ones where they are), so it finds what _native.c finds, in the same order: partition rows merged per topic-partition, records (as bytes, only
 * when the caller collects them), topic ids, produce base offsets, and the top-level fields asked for.
 *
 * Rules:
 * - Nothing here is per API: the program (decoders) and the plan (detail_walk.py) say everything.
 * - It declines (0, nothing but the caller's scratch outputs touched) whatever it does not reproduce
 *   exactly, and the caller then decodes and walks the bodies as before: a frame the decoder's C path
 *   would leave or fail on (the readers' rules), a struct with tagged fields, a response with a non-zero
 *   error code (the errors rows want paths and messages), a response struct with a host and a port when
 *   brokers are read, records beside non-null aborted transactions, a struct wider than MAX_MEMBERS, a
 *   partition row's value a machine value cannot hold as the dict does (part_rows_merge: not an int, or
 *   beyond int64).
 * - A string a struct reads (a topic name, a group id) is decoded once per distinct bytes: the text of
 *   the last TEXTS distinct strings of at most TEXT_MAX bytes is kept by their bytes, and the same bytes
 *   give the same str (decoding is a function of the bytes; the span is read by the decoder's rules first,
 *   so a string it would decline is declined the same). A producer names its topic in every request and
 *   the broker in every response: both rows then hold one object, hashed once, compared by identity.
 * - Memory and time: recursion follows the program, bounded by WALK_MAX_DEPTH; a nested member before
 *   the last field its struct reads is skipped, then walked (each skip is the decoder's walk, building
 *   nothing), so a byte is passed over at most once per level of nesting; values are released before
 *   the struct's walk returns, except those handed to the outputs. How a struct's members are taken (its
 *   program's node matched to its plan) is compiled once per node, plan and wanted keys and kept in a
 *   cache of SHAPES entries (each holding its plan), not redone per struct walked.
 */
#include "_walk.h"

#include <stdint.h>
#include <string.h>

#include "../decoders/_scan.h"

#define MAX_MEMBERS 48
/* Scalars whose value the walk reads (besides a partition value slot, records and wanted fields). */
#define READS (M_TOPIC_NAME | M_GROUP_ID | M_TOPIC_ID | M_PARTITION | M_ERROR | M_BASE_OFFSET | M_ERROR_CODE)

static const ScanApi *api;

typedef struct {
    const unsigned char *b;
    Py_ssize_t L;
    int response, brokers;
    PartRows *rows;                               /* the partition rows (_part_rows.c); NULL: not wanted */
    PyObject *records, *learned, *base_offsets; /* NULL: not wanted */
} Bytes;

typedef struct {
    PyObject *topic, *topic_id, *partition, *group; /* borrowed; NULL when unknown */
} Ctx;

/* How the walk takes a member in the struct's pass over its bytes: INT is a VALUE an int64 holds that the walk only
 * folds into a row, tests or keeps (an error code, a partition value, a base offset), read as a machine value. */
enum { SKIP, VALUE, INT, SPAN, NESTED };
/* The plan flags whose value the struct's context holds as the object itself. */
#define CONTEXT (M_TOPIC_NAME | M_GROUP_ID | M_TOPIC_ID | M_PARTITION)

/* A struct's members matched to its plan (``match``): what the walk does with each, the same for every
 * struct of that node, plan and wanted keys, so compiled once (``shape_of``) and kept. */
typedef struct {
    const KdNode *nd;
    PyObject *plan, *wanted;      /* the key, with nd (held: their addresses stay theirs while kept) */
    Py_ssize_t n;                 /* nd->nregular when compiled */
    int matched;                  /* 1, or 0: the walk declines this struct */
    PyObject *member[MAX_MEMBERS]; /* its plan member (key, flags, child plan, slot; borrowed from plan) */
    long flags[MAX_MEMBERS], slot[MAX_MEMBERS]; /* its plan flags and partition value slot */
    char how[MAX_MEMBERS];        /* SKIP, VALUE, INT, SPAN (records), NESTED (a struct or an array of structs) */
    signed char want[MAX_MEMBERS]; /* its index among the wanted top-level keys, or -1 */
    Py_ssize_t complete;          /* the members before it hold everything the struct's own fields read */
    Py_ssize_t aborted;           /* the aborted transactions member, or -1 */
    signed char own[MAX_MEMBERS]; /* its scalars read (VALUE, INT, SPAN; not arrays), in member order: all its own */
    int nown;                     /* fields look at (a skipped scalar holds nothing they read) */
    signed char valued[MAX_MEMBERS]; /* its VALUE members (what holds an object once read), in member order */
    int nvalued;
    long host_port;               /* M_HOST | M_PORT, of those its scalars have */
} Shape;

/* One struct's members as the pass over its bytes found them. */
typedef struct {
    const Shape *s;
    Py_ssize_t at[MAX_MEMBERS];   /* where its bytes start */
    PyObject *value[MAX_MEMBERS]; /* the values read (new references), else NULL */
    long long number[MAX_MEMBERS]; /* the INT members' values */
    Py_ssize_t records_at, records_n; /* the records field's bytes (n -1: null; records_at -1: none) */
} Members;

/* Keys are interned (the programs' and the plans'): identity, compared by value only when one is not. */
static int
same_key(PyObject *a, PyObject *b)
{
    if (a == b)
        return 1;
    if (!PyUnicode_Check(a) || !PyUnicode_Check(b) || (PyUnicode_CHECK_INTERNED(a) && PyUnicode_CHECK_INTERNED(b)))
        return 0;
    return PyUnicode_Compare(a, b) == 0;
}

static Py_ssize_t
index_of(PyObject *keys, PyObject *key)
{
    for (Py_ssize_t k = 0; keys != NULL && k < PyTuple_GET_SIZE(keys); k++)
        if (same_key(PyTuple_GET_ITEM(keys, k), key))
            return k;
    return -1;
}

/* Each regular member matched to its plan member (the plan lists the schema's fields in order, tagged
 * ones among them) and how it is taken; ``complete``: after the last member whose bytes the struct's own
 * fields read (a value they read, the records, the aborted transactions beside them). matched 1, or 0. */
static void
match(const KdNode *nd, PyObject *plan, PyObject *want, Shape *sh)
{
    Py_ssize_t np = PyTuple_GET_SIZE(plan), j = 0;
    sh->matched = 0;
    sh->complete = 0;
    sh->aborted = -1;
    sh->nown = sh->nvalued = 0;
    sh->host_port = 0;
    for (Py_ssize_t i = 0; i < nd->nregular; i++) {
        const KdNode *m = &nd->regular[i];
        while (j < np && !same_key(PyTuple_GET_ITEM(PyTuple_GET_ITEM(plan, j), 0), m->key))
            j++;
        if (j == np)
            return;
        PyObject *pm = sh->member[i] = PyTuple_GET_ITEM(plan, j++);
        long flags = sh->flags[i] = PyLong_AsLong(PyTuple_GET_ITEM(pm, 1));
        long slot = sh->slot[i] = PyLong_AsLong(PyTuple_GET_ITEM(pm, 3));
        Py_ssize_t k = index_of(want, m->key);
        sh->want[i] = (signed char)k;
        if (k >= 0 && flags & M_STRUCT)
            return; /* (a wanted struct would be walked too: top-level fields are scalars) */
        if (k >= 0)
            sh->how[i] = VALUE;
        else if (flags & M_STRUCT)
            sh->how[i] = NESTED;
        else if (flags & M_ARRAY)
            sh->how[i] = SKIP;
        else if (flags & M_RECORDS)
            sh->how[i] = SPAN;
        else if (!(flags & READS || slot >= 0))
            sh->how[i] = SKIP;
        else
            sh->how[i] = ((m->kind >= K_INT8 && m->kind <= K_INT64) || (m->kind >= K_VARINT && m->kind <= K_UVARINT))
                                 && !(m->flags & F_ARRAY) && !(flags & CONTEXT) ? INT : VALUE;
        if (sh->how[i] == VALUE)
            sh->valued[sh->nvalued++] = (signed char)i;
        if (!(flags & (M_STRUCT | M_ARRAY))) {
            sh->host_port |= flags & (M_HOST | M_PORT);
            if (sh->how[i] != SKIP)
                sh->own[sh->nown++] = (signed char)i;
        }
        int aborted = same_key(m->key, walk_aborted_key);
        if (aborted && sh->aborted < 0)
            sh->aborted = i;
        if ((sh->how[i] == VALUE && (flags & READS || slot >= 0)) || sh->how[i] == INT || sh->how[i] == SPAN || aborted)
            sh->complete = i + 1; /* (a wanted field's value is only handed back: read where it is) */
    }
    if (PyErr_Occurred())
        PyErr_Clear(); /* (a flag or slot not an int: declined, the decoded bodies' walk reports it) */
    else
        sh->matched = 1;
}

/* The shapes compiled, by (node, plan, want), open addressing over SHAPES entries: the structs of the
 * message versions a capture holds are a few dozen. An entry is never replaced (a walk up the stack may be
 * using it), so once its probes find no room a shape is compiled into the caller's ``spare`` instead. An
 * entry holds its plan and wanted keys; a node lives as long as its program, which the decoder compiles
 * once per message version and keeps (decoders/compiler.py). */
#define SHAPES 512
#define PROBES 8
static Shape *shapes[SHAPES];

/* The shape of a struct of node nd walked with this plan and these wanted keys (borrowed: an entry, or
 * ``spare``), or NULL on no memory. */
static const Shape *
shape_of(const KdNode *nd, PyObject *plan, PyObject *want, Shape *spare)
{
    size_t h = ((uintptr_t)nd >> 4) * 31 + ((uintptr_t)plan >> 4) * 7 + ((uintptr_t)want >> 4);
    Shape *sh = NULL;
    for (int k = 0; k < PROBES; k++) {
        Shape **slot = &shapes[(h + (size_t)k) % SHAPES];
        if (*slot == NULL) {
            if ((sh = *slot = PyMem_Calloc(1, sizeof *sh)) == NULL) {
                PyErr_NoMemory();
                return NULL;
            }
            sh->plan = Py_NewRef(plan);
            sh->wanted = Py_XNewRef(want);
            break;
        }
        if ((*slot)->nd == nd && (*slot)->plan == plan && (*slot)->wanted == want && (*slot)->n == nd->nregular)
            return *slot;
    }
    if (sh == NULL)
        sh = spare; /* (its plan and want not held: the caller holds them while it walks) */
    sh->nd = nd;
    sh->n = nd->nregular;
    match(nd, plan, want, sh);
    return sh;
}

/* The strings met, by their bytes (direct-mapped: a slot keeps the last text of its hash). */
#define TEXTS 64
#define TEXT_MAX 255 /* (a topic name is at most 249 bytes) */
typedef struct {
    Py_ssize_t n;
    PyObject *text; /* NULL: empty slot */
    char bytes[TEXT_MAX];
} Text;
static Text texts[TEXTS];

/* A string member's value (a new reference): its text as met before when its bytes were, else decoded (and kept,
 * when short). NULL: declined (no exception) or an error (exception set), as the decoder's value(). */
static PyObject *
text_value(Bytes *w, Py_ssize_t *p, const KdNode *m)
{
    Py_ssize_t at, n, q = *p;
    if (api->span(w->b, w->L, &q, m, &at, &n) != 1 || n > TEXT_MAX)
        return api->value(w->b, w->L, p, m); /* (declines as span did, or a long string: decoded) */
    if (n < 0) {
        *p = q;
        return Py_NewRef(Py_None);
    }
    uint32_t h = 2166136261u; /* FNV-1a */
    for (Py_ssize_t k = 0; k < n; k++)
        h = (h ^ w->b[at + k]) * 16777619u;
    Text *slot = &texts[h % TEXTS];
    if (slot->text != NULL && slot->n == n && !memcmp(slot->bytes, w->b + at, (size_t)n)) {
        *p = q;
        return Py_NewRef(slot->text);
    }
    PyObject *v = api->value(w->b, w->L, p, m);
    if (v != NULL) {
        Py_XSETREF(slot->text, Py_NewRef(v));
        slot->n = n;
        memcpy(slot->bytes, w->b + at, (size_t)n);
    }
    return v;
}

/* The records tuple (topic, topic id, partition, bytes, aborted transactions) of _native.c's add_records,
 * the aborted transactions a null or absent field (else it declines). 1, 0, -1. */
static int
add_records(Bytes *w, const KdNode *nd, const Members *ms, const Ctx *ctx)
{
    Py_ssize_t i = ms->s->aborted;
    if (i >= 0) {
        Py_ssize_t q = ms->at[i];
        long long n;
        if (api->items(w->b, w->L, &q, &nd->regular[i], &n) != 0)
            return 0;
    }
    PyObject *raw = PyBytes_FromStringAndSize((const char *)w->b + ms->records_at, ms->records_n);
    PyObject *row = raw == NULL ? NULL
        : PyTuple_Pack(5, ctx->topic ? ctx->topic : Py_None, ctx->topic_id ? ctx->topic_id : Py_None,
                       ctx->partition ? ctx->partition : Py_None, raw, Py_None);
    Py_XDECREF(raw);
    int rc = row == NULL ? -1 : PyList_Append(w->records, row);
    Py_XDECREF(row);
    return rc < 0 ? -1 : 1;
}

/* The struct's partition row (TableSink._partition_rows): its scalars folded in, as machine values
 * (_part_rows.c). 1, 0 (a value a row cannot hold: declined), -1. */
static int
merge(Bytes *w, const KdNode *nd, const Members *ms, const Ctx *ctx)
{
    PartRow *row = part_rows_row(w->rows, ctx->topic, ctx->topic_id, ctx->partition);
    if (row == NULL)
        return -1;
    for (int k = 0; k < ms->s->nown; k++) {
        int i = ms->s->own[k];
        if (ms->s->how[i] == INT) {
            part_rows_merge_int(row, ms->s->flags[i], ms->s->slot[i], ms->number[i], w->response);
            continue;
        }
        int rc = ms->value[i] == NULL ? 1 : part_rows_merge(row, ms->s->flags[i], ms->s->slot[i], ms->value[i], w->response);
        if (rc != 1)
            return rc;
        if (ms->value[i] == NULL && ms->s->flags[i] & M_RECORDS && ms->records_at >= 0 && ms->records_n >= 0) {
            row->records_bytes[w->response] = ms->records_n;
            row->has_records_bytes[w->response] = 1;
        }
    }
    return 1;
}

/* Base offset >= 0 kept per (topic, partition) (_native.c's walk, produce_base_offsets): the member's value (v, or
 * an INT member's x). 0 or -1. */
static int
base_offset(Bytes *w, PyObject *v, long long x, const Ctx *ctx)
{
    int ge;
    if (v == NULL) {
        ge = x >= 0;
    } else if (PyLong_CheckExact(v)) { /* (the decoder's int64: its sign, with no zero object to compare with) */
        int overflow;
        long long n = PyLong_AsLongLongAndOverflow(v, &overflow);
        ge = overflow ? overflow > 0 : n >= 0;
    } else {
        PyObject *zero = PyLong_FromLong(0);
        ge = zero ? PyObject_RichCompareBool(v, zero, Py_GE) : -1;
        Py_XDECREF(zero);
    }
    if (ge <= 0)
        return ge;
    PyObject *key = PyTuple_Pack(2, ctx->topic ? ctx->topic : Py_None, ctx->partition),
             *value = v != NULL ? Py_NewRef(v) : PyLong_FromLongLong(x);
    int rc = key && value ? PyDict_SetItem(w->base_offsets, key, value) : -1;
    Py_XDECREF(key);
    Py_XDECREF(value);
    return rc;
}

static int walk_struct(Bytes *w, const KdNode *nd, PyObject *plan, Py_ssize_t *p, const Ctx *parent, int depth,
                       PyObject *want, PyObject **got);

/* What _native.c's walk_struct does with a struct's own scalars, in its order: the context, brokers,
 * topic ids, the partition row, then error codes, records and base offsets. 1, 0, -1. */
static int
own_fields(Bytes *w, const KdNode *nd, const Members *ms, Ctx *ctx)
{
    int has_partition = 0;
    for (int k = 0; k < ms->s->nown; k++) {
        int i = ms->s->own[k];
        long flags = ms->s->flags[i];
        PyObject *v = ms->value[i];
        if (v == NULL)
            ;
        else if ((flags & M_TOPIC_NAME) && PyUnicode_Check(v))
            ctx->topic = v;
        else if ((flags & M_GROUP_ID) && PyUnicode_Check(v))
            ctx->group = v;
        else if ((flags & M_TOPIC_ID) && walk_is_uuid(v))
            ctx->topic_id = v;
        else if ((flags & M_PARTITION) && PyLong_Check(v) && ctx->partition == NULL) {
            ctx->partition = v;
            has_partition = 1;
        }
    }
    if (w->brokers && w->response && ms->s->host_port == (M_HOST | M_PORT))
        return 0;
    if (w->learned != NULL && ctx->topic != NULL && ctx->topic_id != NULL
        && walk_learn_topic(w->learned, ctx->topic, ctx->topic_id) < 0)
        return -1;
    if (has_partition && w->rows != NULL && (ctx->topic != NULL || ctx->topic_id != NULL)) {
        int rc = merge(w, nd, ms, ctx);
        if (rc != 1)
            return rc;
    }
    for (int k = 0; k < ms->s->nown; k++) {
        int i = ms->s->own[k];
        long flags = ms->s->flags[i];
        PyObject *v = ms->value[i];
        if (flags & M_ERROR && w->response) {
            int set = ms->s->how[i] == INT ? ms->number[i] != 0 : PyObject_IsTrue(v);
            if (set)
                return set < 0 ? -1 : 0;
        }
        if (flags & M_RECORDS && w->records != NULL && ms->records_at >= 0 && ms->records_n > 0) {
            int rc = add_records(w, nd, ms, ctx);
            if (rc <= 0)
                return rc;
        }
        if (flags & M_BASE_OFFSET && w->base_offsets != NULL && has_partition
            && base_offset(w, v, ms->s->how[i] == INT ? ms->number[i] : 0, ctx) < 0)
            return -1;
    }
    return 1;
}

/* A nested member's structs, from *p on, each with this struct's context. 1, 0, -1. */
static int
nested(Bytes *w, const KdNode *m, PyObject *plan_member, Py_ssize_t *p, const Ctx *ctx, int depth)
{
    long long n;
    int rc = api->items(w->b, w->L, p, m, &n);
    if (rc < 0)
        return 0;
    for (long long k = 0; rc && k < n; k++)
        if ((rc = walk_struct(w, m, PyTuple_GET_ITEM(plan_member, 2), p, ctx, depth + 1, NULL, NULL)) != 1)
            return rc;
    return 1;
}

/* The struct's own fields (own_fields), then the nested members before ``complete``, revisited from where
 * they start, in member order. 1, 0, -1. */
static int
own_then_nested(Bytes *w, const KdNode *nd, Members *ms, Ctx *ctx, int depth)
{
    int rc = own_fields(w, nd, ms, ctx);
    for (Py_ssize_t i = 0; rc == 1 && i < ms->s->complete; i++) {
        Py_ssize_t q = ms->at[i];
        if (ms->s->how[i] == NESTED)
            rc = nested(w, &nd->regular[i], ms->s->member[i], &q, ctx, depth);
    }
    return rc;
}

/* One struct, in one pass over its bytes: each member read or skipped; once the members its own fields
 * read are behind (``complete``), those fields taken and the nested members before them revisited, and
 * the nested members after walked where they are, not skipped first. As _native.c's walk_struct: the
 * struct's own fields, then its nested structs in member order. 1, 0, -1. */
static int
walk_struct(Bytes *w, const KdNode *nd, PyObject *plan, Py_ssize_t *p, const Ctx *parent, int depth, PyObject *want,
            PyObject **got)
{
    if (depth >= WALK_MAX_DEPTH || nd->nregular > MAX_MEMBERS || !PyTuple_Check(plan))
        return 0;
    Members ms;
    Shape spare;
    if ((ms.s = shape_of(nd, plan, want, &spare)) == NULL)
        return -1;
    Ctx ctx = {parent->topic, parent->topic_id, NULL, parent->group};
    int rc = ms.s->matched;
    Py_ssize_t n = rc == 1 ? nd->nregular : 0;
    ms.records_at = -1;
    memset(ms.value, 0, (size_t)n * sizeof *ms.value);
    for (Py_ssize_t i = 0; rc == 1 && i < n; i++) {
        const KdNode *m = &nd->regular[i];
        if (i == ms.s->complete && (rc = own_then_nested(w, nd, &ms, &ctx, depth)) != 1)
            break;
        ms.at[i] = *p;
        if (ms.s->how[i] == NESTED && i >= ms.s->complete)
            rc = nested(w, m, ms.s->member[i], p, &ctx, depth);
        else if (ms.s->how[i] == VALUE) {
            int text = m->kind == K_STRING && !(m->flags & F_ARRAY);
            ms.value[i] = text ? text_value(w, p, m) : api->value(w->b, w->L, p, m);
            rc = ms.value[i] != NULL ? 1 : PyErr_Occurred() ? -1 : 0;
        }
        else if (ms.s->how[i] == INT)
            rc = api->integer(w->b, w->L, p, m, &ms.number[i]) == 1;
        else if (ms.s->how[i] == SPAN)
            rc = api->span(w->b, w->L, p, m, &ms.records_at, &ms.records_n) == 1;
        else
            rc = api->skip(w->b, w->L, p, m) == 0;
    }
    if (rc == 1 && nd->flags & F_FLEXIBLE) { /* tagged fields present: the decoded body is the reference's */
        if (*p >= w->L || w->b[*p] != 0)
            rc = 0;
        else
            (*p)++;
    }
    if (rc == 1 && ms.s->complete == n)
        rc = own_then_nested(w, nd, &ms, &ctx, depth);
    for (int k = 0; k < (n ? ms.s->nvalued : 0); k++) {
        int i = ms.s->valued[k];
        if (rc == 1 && ms.s->want[i] >= 0 && got[ms.s->want[i]] == NULL)
            got[ms.s->want[i]] = Py_NewRef(ms.value[i]);
        Py_XDECREF(ms.value[i]);
    }
    return rc;
}

/* The frame roots last found per direction (a lane's exchanges are of one message version, nearly always), its
 * programs held: a program is compiled once per message version and kept (decoders/compiler.py), as the shapes
 * assume of their nodes. The decoder's frame_roots, without its lookup per frame. */
typedef struct {
    PyObject *programs; /* (held) */
    int api_key, api_version;
    const KdNode *header, *body;
} Roots;
static Roots roots[2];

static int
roots_of(PyObject *programs, int api_key, int api_version, int response, const KdNode **header, const KdNode **body)
{
    Roots *r = &roots[response != 0];
    if (r->programs == programs && r->api_key == api_key && r->api_version == api_version) {
        *header = r->header;
        *body = r->body;
        return 1;
    }
    int rc = api->frame_roots(programs, api_key, api_version, header, body);
    if (rc == 1) {
        Py_XSETREF(r->programs, Py_NewRef(programs));
        r->api_key = api_key;
        r->api_version = api_version;
        r->header = *header;
        r->body = *body;
    }
    return rc;
}

/* walk_bytes(plan, programs, frame b[0:L] with no size, api key and version, response, then the outputs (NULL
 * when not wanted): partition rows, records tuples, topic ids learned (a dict: first name kept), base
 * offsets; ``brokers``: whether a broker struct declines; ``want``: top-level keys whose values go to
 * got[k] (new references, None when absent). 1 walked, 0 declined, -1 error. */
int
walk_bytes(PyObject *plan, PyObject *programs, const unsigned char *b, Py_ssize_t L, int api_key, int api_version,
           int response, PartRows *rows, PyObject *records, PyObject *learned, PyObject *base_offsets,
           int brokers, PyObject *want, PyObject **got)
{
    if (api == NULL && (api = PyCapsule_Import(SCAN_CAPSULE, 0)) == NULL)
        return -1;
    const KdNode *header, *body;
    int rc = roots_of(programs, api_key, api_version, response, &header, &body);
    Py_ssize_t p = 0, nwant = want != NULL ? PyTuple_GET_SIZE(want) : 0;
    if (rc <= 0 || api->skip(b, L, &p, header))
        return rc < 0 ? -1 : 0;
    Bytes w = {b, L, response, brokers, rows, records, learned, base_offsets};
    Ctx root = {NULL, NULL, NULL, NULL};
    for (Py_ssize_t k = 0; k < nwant; k++)
        got[k] = NULL;
    rc = walk_struct(&w, body, plan, &p, &root, 0, want, got);
    if (rc == 1 && p != L)
        rc = 0; /* bytes after the body: the decoder's C path leaves the frame */
    for (Py_ssize_t k = 0; k < nwant; k++)
        if (rc != 1)
            Py_CLEAR(got[k]);
        else if (got[k] == NULL)
            got[k] = Py_NewRef(Py_None);
    return rc;
}

static PyObject *
none_to_null(PyObject *o)
{
    return o == Py_None ? NULL : o;
}

/* walk_frame(plan, programs, frame, api_key, api_version, response, partitions, records, topics, base_offsets,
 * brokers, want) -> the wanted values (a tuple), or None when the walk declines: walk_bytes for Python (the
 * differential tests); outputs given as None are not wanted; the partition rows come as the body walk's dict
 * (part_rows_to_dict) into ``partitions``, which must be empty. */
PyObject *
walk_frame(PyObject *module, PyObject *args)
{
    PyObject *plan, *programs, *partitions, *records, *topics, *base_offsets, *want;
    Py_buffer frame;
    int key, version, response, brokers;
    if (!PyArg_ParseTuple(args, "O!O!y*iipOOOOpO!:walk_frame", &PyTuple_Type, &plan, &PyDict_Type, &programs, &frame,
                          &key, &version, &response, &partitions, &records, &topics, &base_offsets, &brokers,
                          &PyTuple_Type, &want))
        return NULL;
    PyObject *got[MAX_MEMBERS] = {0}, *out = NULL;
    PartRows rows = {0};
    Py_ssize_t nwant = PyTuple_GET_SIZE(want);
    partitions = none_to_null(partitions), records = none_to_null(records), topics = none_to_null(topics);
    base_offsets = none_to_null(base_offsets);
    if (nwant > MAX_MEMBERS || (partitions && (!PyDict_Check(partitions) || PyDict_GET_SIZE(partitions)))
        || (records && !PyList_Check(records)) || (topics && !PyDict_Check(topics))
        || (base_offsets && !PyDict_Check(base_offsets))) {
        PyErr_SetString(PyExc_TypeError, "walk_frame: partitions (empty), topics, base_offsets dicts, records a list, "
                                         "at most 48 wanted keys");
        goto done;
    }
    int rc = walk_bytes(plan, programs, frame.buf, frame.len, key, version, response, partitions ? &rows : NULL,
                        records, topics, base_offsets, brokers, want, got);
    if (rc == 1 && partitions && part_rows_to_dict(&rows, partitions) < 0)
        rc = -1;
    if (rc == 0)
        out = Py_NewRef(Py_None);
    else if (rc == 1 && (out = PyTuple_New(nwant)) != NULL)
        for (Py_ssize_t k = 0; k < nwant; k++)
            PyTuple_SET_ITEM(out, k, Py_NewRef(got[k]));
    for (Py_ssize_t k = 0; k < nwant; k++)
        Py_XDECREF(got[k]);
done:
    part_rows_clear(&rows);
    PyMem_Free(rows.row);
    PyBuffer_Release(&frame);
    return out;
}
