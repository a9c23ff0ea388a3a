/* The common-case packet: link -> IP -> TCP headers of one captured frame, read in C.
 * See _headers.c for the rules; _native.c builds TcpSegment objects from it. */
#ifndef KDISSECT_SOURCES_HEADERS_H
#define KDISSECT_SOURCES_HEADERS_H

#include <stddef.h>
#include <stdint.h>

/* What common_segment says about a frame. */
enum {
    SEG_OK = 0,           /* a TCP segment, fields filled in */
    SEG_DEFER_SAFE = 1,   /* not the common case; the Python path decodes it, and it cannot start an IP
                             datagram reassembly (so the native path may go on after it) */
    SEG_DEFER_UNSAFE = 2, /* may be an IP fragment: the Python path decodes it and what follows, while its
                             defragmenter holds anything */
};

typedef struct {
    int version;              /* 4 or 6 */
    const unsigned char *src; /* address bytes (4 or 16) inside the frame */
    const unsigned char *dst;
    unsigned src_port, dst_port;
    uint32_t seq, ack;
    unsigned flags, window;
    size_t payload_start, payload_end; /* captured payload: frame[payload_start:payload_end] */
    long long payload_len;             /* what the headers claim the segment carried */
} CommonSegment;

int common_segment(int link_type, const unsigned char *frame, size_t captured, long long wire_len,
                   CommonSegment *out);

#endif
