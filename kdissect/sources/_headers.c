/* Link, IP and TCP headers of the common packet, in C: the native twin of link.py, ip.py and
 * tcp_header.py for the frames those accept without a word.
 *
 * Rules:
 * - It decides only what the Python path would decide the same way without an anomaly: a frame
 *   that is cut, malformed, not IP, not TCP, a fragment, or carries IPv6 extension headers is
 *   deferred (SEG_DEFER_*), and the Python path (the reference) decodes and reports it.
 * - For a frame it accepts, every field equals what packets.py's general path gives: addresses,
 *   ports, sequence numbers, flags (the low byte of the offset/flags word), window, the captured
 *   payload span and the claimed payload length (IP length less the headers; an IPv4 total length
 *   or IPv6 payload length of 0 means the wire length tells, as with segmentation offload).
 * - Every read is checked against the captured length first; nothing is allocated here.
 * - A deferral that could be an IP fragment is SEG_DEFER_UNSAFE: the caller then leaves the
 *   frames after it to Python too, whose defragmenter must see them in order.
 */
#include "_headers.h"

/* ---- link layer (link.py) --------------------------------------------------------------- */

enum {
    LINKTYPE_NULL = 0, LINKTYPE_ETHERNET = 1, LINKTYPE_RAW_12 = 12, LINKTYPE_RAW_14 = 14, LINKTYPE_RAW = 101,
    LINKTYPE_LOOP = 108, LINKTYPE_LINUX_SLL = 113, LINKTYPE_IPV4 = 228, LINKTYPE_IPV6 = 229,
    LINKTYPE_LINUX_SLL2 = 276,
};
enum { ETHERTYPE_IPV4 = 0x0800, ETHERTYPE_IPV6 = 0x86DD };
#define AF_INET_ANY 2 /* AF_INET is 2 on every loopback writer */
#define SLL_LEN 16
#define SLL2_LEN 20

static inline unsigned be16(const unsigned char *s) { return (unsigned)(s[0] << 8 | s[1]); }
static inline uint32_t be32(const unsigned char *s)
{
    return (uint32_t)s[0] << 24 | (uint32_t)s[1] << 16 | (uint32_t)s[2] << 8 | s[3];
}

static int
is_vlan(unsigned ethertype)
{
    return ethertype == 0x8100 || ethertype == 0x88A8 || ethertype == 0x9100 || ethertype == 0x9200;
}

/* IP version (4, 6) after an ethertype read at pos - 2, skipping VLAN tags; 0 when not IP or cut. */
static int
after_ethertype(const unsigned char *d, size_t n, unsigned ethertype, size_t *pos)
{
    while (is_vlan(ethertype)) {
        if (n < *pos + 4)
            return 0;
        ethertype = be16(d + *pos + 2);
        *pos += 4;
    }
    return ethertype == ETHERTYPE_IPV4 ? 4 : ethertype == ETHERTYPE_IPV6 ? 6 : 0;
}

static int
is_af_inet6(uint32_t family)
{
    return family == 10 || family == 24 || family == 28 || family == 30;
}

/* IP version and where its header starts; 0 when the Python path must decide. */
static int
link_layer(int link_type, const unsigned char *d, size_t n, size_t *pos)
{
    uint32_t family;
    *pos = 0;
    switch (link_type) {
    case LINKTYPE_ETHERNET:
        if (n < 14)
            return 0;
        *pos = 14;
        return after_ethertype(d, n, be16(d + 12), pos);
    case LINKTYPE_LINUX_SLL:
        if (n < SLL_LEN)
            return 0;
        *pos = SLL_LEN;
        return after_ethertype(d, n, be16(d + 14), pos);
    case LINKTYPE_LINUX_SLL2:
        if (n < SLL2_LEN)
            return 0;
        *pos = SLL2_LEN;
        return after_ethertype(d, n, be16(d), pos);
    case LINKTYPE_NULL:
    case LINKTYPE_LOOP:
        if (n < 4)
            return 0;
        *pos = 4;
        family = be32(d);
        if (family & 0xFFFF0000u)
            family = (uint32_t)d[3] << 24 | (uint32_t)d[2] << 16 | (uint32_t)d[1] << 8 | d[0];
        return family == AF_INET_ANY ? 4 : is_af_inet6(family) ? 6 : 0;
    case LINKTYPE_RAW_12:
    case LINKTYPE_RAW_14:
    case LINKTYPE_RAW:
        if (n < 1 || (d[0] >> 4 != 4 && d[0] >> 4 != 6))
            return 0;
        return d[0] >> 4;
    case LINKTYPE_IPV4:
        return 4;
    case LINKTYPE_IPV6:
        return 6;
    default:
        return 0;
    }
}

/* ---- IP (ip.py) ------------------------------------------------------------------------- */

enum { IPPROTO_TCP_ = 6, IPV6_HEADER_LEN = 40 };

static int
is_ipv6_extension(unsigned next_header)
{
    switch (next_header) {
    case 0: case 43: case 44: case 51: case 60: case 135: case 139: case 140:
        return 1;
    default:
        return 0;
    }
}

/* Fills addresses and the TCP span [*start, *end) with its claimed *length; SEG_OK or a deferral. */
static int
ipv4(const unsigned char *d, size_t n, size_t pos, long long wire_len, CommonSegment *s, size_t *start,
     size_t *end, long long *length)
{
    unsigned ihl, total, frag;
    if (n - pos < 20)
        return SEG_DEFER_SAFE;
    ihl = (d[pos] & 0x0F) * 4u;
    if (d[pos] >> 4 != 4 || ihl < 20 || d[pos + 9] != IPPROTO_TCP_)
        return SEG_DEFER_SAFE;
    frag = be16(d + pos + 6);
    if (frag & 0x3FFF)
        return SEG_DEFER_UNSAFE;
    total = be16(d + pos + 2);
    if (total == 0) {
        if (wire_len < 0 || wire_len > 0xFFFFFFFFLL)
            return SEG_DEFER_SAFE;
        total = (unsigned)wire_len;
    }
    if (total < ihl || pos + ihl > n)
        return SEG_DEFER_SAFE;
    s->version = 4;
    s->src = d + pos + 12;
    s->dst = d + pos + 16;
    *start = pos + ihl;
    *end = pos + total < n ? pos + total : n;
    *length = (long long)total - ihl;
    return SEG_OK;
}

static int
ipv6(const unsigned char *d, size_t n, size_t pos, long long wire_len, CommonSegment *s, size_t *start,
     size_t *end, long long *length)
{
    long long payload_len;
    if (n - pos < IPV6_HEADER_LEN || d[pos] >> 4 != 6)
        return SEG_DEFER_SAFE;
    if (d[pos + 6] != IPPROTO_TCP_)
        return is_ipv6_extension(d[pos + 6]) ? SEG_DEFER_UNSAFE : SEG_DEFER_SAFE;
    payload_len = be16(d + pos + 4);
    if (payload_len == 0)
        payload_len = wire_len - IPV6_HEADER_LEN > 0 ? wire_len - IPV6_HEADER_LEN : 0;
    s->version = 6;
    s->src = d + pos + 8;
    s->dst = d + pos + 24;
    *start = pos + IPV6_HEADER_LEN;
    *end = (long long)(n - *start) < payload_len ? n : *start + (size_t)payload_len;
    *length = payload_len;
    return SEG_OK;
}

/* ---- TCP (tcp_header.py) and the whole frame -------------------------------------------- */

enum { TCP_MIN_HEADER = 20 };

int
common_segment(int link_type, const unsigned char *d, size_t n, long long orig_len, CommonSegment *s)
{
    size_t pos, start, end, header_len;
    long long length;
    int version = link_layer(link_type, d, n, &pos), rc;
    long long wire_len = orig_len - (long long)pos;
    if (version == 4)
        rc = ipv4(d, n, pos, wire_len, s, &start, &end, &length);
    else if (version == 6)
        rc = ipv6(d, n, pos, wire_len, s, &start, &end, &length);
    else
        return SEG_DEFER_SAFE;
    if (rc != SEG_OK)
        return rc;
    if (length < TCP_MIN_HEADER || end - start < TCP_MIN_HEADER)
        return SEG_DEFER_SAFE;
    header_len = (size_t)(d[start + 12] >> 4) * 4;
    if (header_len < TCP_MIN_HEADER || (long long)header_len > length)
        return SEG_DEFER_SAFE;
    s->src_port = be16(d + start);
    s->dst_port = be16(d + start + 2);
    s->seq = be32(d + start + 4);
    s->ack = be32(d + start + 8);
    s->flags = d[start + 13];
    s->window = be16(d + start + 14);
    s->payload_start = start + header_len < end ? start + header_len : end;
    s->payload_end = end;
    s->payload_len = length - (long long)header_len;
    return SEG_OK;
}
