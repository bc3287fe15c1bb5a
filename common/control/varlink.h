/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Varlink framing and messages (https://varlink.org), shared by ptraced and
 * every client: on a Unix stream socket each message is one JSON object
 * followed by a NUL byte. A call is
 *
 *     {"method":"io.ptraced.Snapshot","parameters":{...},"oneway":true}
 *
 * and its reply {"parameters":{...}} or {"error":"io.ptraced.RateLimited",
 * "parameters":{...}}. Replies come in the order of the calls.
 *
 * Nothing here does I/O policy or logs: the daemon's control server and
 * the client helpers (varlink-client.h) build on it. Everything read is
 * bounded before it is allocated: a message longer than the buffer's limit
 * is -EMSGSIZE, JSON nested deeper than VARLINK_DEPTH_MAX is refused, and
 * strings must be valid UTF-8 (json-c's strict mode).
 */

#include <json-c/json.h>
#include <sys/types.h>

#include "common/basic/macro.h"

/* A call the daemon accepts, NUL included. Calls are small (the largest,
 * Snapshot, carries a reason of at most 256 bytes); 64 KiB leaves room for
 * future methods and is still cheap to hold for every connection. */
#define VARLINK_CALL_MAX ((size_t) 64 * 1024)
/* A reply a client accepts, NUL included (ListBundles is the largest). */
#define VARLINK_REPLY_MAX ((size_t) 16 * 1024 * 1024)
/* JSON nesting; our messages need 4. */
#define VARLINK_DEPTH_MAX 16
/* "interface.Method" */
#define VARLINK_METHOD_NAME_MAX 255

/* ---- framing ---- */

/* Bytes from a stream, split into NUL-terminated messages. */
typedef struct VarlinkBuffer {
        char *data;
        size_t size;      /* bytes held */
        size_t allocated;
        size_t consumed;  /* bytes of messages already handed out */
        size_t scanned;   /* bytes after `consumed` known to hold no NUL */
        size_t max;       /* one message, NUL included */
} VarlinkBuffer;

void varlink_buffer_init(VarlinkBuffer *b, size_t max);
void varlink_buffer_done(VarlinkBuffer *b);

/* One read() of what fd has. Returns the number of bytes read (> 0), 0 at
 * EOF, -EAGAIN when nothing is there now, -EMSGSIZE when the buffer already
 * holds `max` bytes of one message without its NUL, or -errno. Call
 * varlink_buffer_next() until it returns 0 before reading more: buffered
 * complete messages count against the limit. Messages handed out before
 * this call are invalidated. */
ssize_t varlink_buffer_read(VarlinkBuffer *b, int fd);
/* for tests: append bytes without a socket, so the unit test and the fuzz
 * target drive the same framing varlink_buffer_read() feeds. Same errors
 * as above. */
int varlink_buffer_append(VarlinkBuffer *b, const void *p, size_t n);
/* The next complete message: returns 1 with *ret pointing at it
 * (NUL-terminated, *ret_size without the NUL), valid until the next
 * read/append; 0 when no complete message is buffered; -EMSGSIZE when the
 * message under way is already over the limit. */
int varlink_buffer_next(VarlinkBuffer *b, const char **ret, size_t *ret_size);
/* Bytes of an incomplete message waiting for its NUL. */
size_t varlink_buffer_pending(const VarlinkBuffer *b);

/* ---- calls ---- */

typedef enum VarlinkCallFlags {
        VARLINK_CALL_ONEWAY = 1 << 0,  /* no reply wanted */
        VARLINK_CALL_MORE = 1 << 1,    /* the client accepts several replies */
        VARLINK_CALL_UPGRADE = 1 << 2, /* switch the connection to another protocol after the reply */
} VarlinkCallFlags;

typedef struct VarlinkCall {
        char *method;                   /* "interface.Method", validated */
        struct json_object *parameters; /* always an object (empty when absent) */
        unsigned flags;                 /* VarlinkCallFlags */
} VarlinkCall;

void varlink_call_done(VarlinkCall *c);

/* Parse one message (without its NUL) as a call. -EBADMSG when it is not a
 * JSON object, or "method" is missing or not a valid method name, or
 * "parameters" is not an object, or a flag is not a boolean; *ret_error
 * then says which. Unknown top-level keys are ignored, as the varlink
 * specification asks of readers. */
int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret, char **ret_error);

/* Is s "reverse.domain.interface.Method"? */
bool varlink_method_name_is_valid(const char *s);
/* "io.ptraced.Snapshot" -> length of "io.ptraced" (0 when invalid). */
size_t varlink_method_interface_length(const char *method);

/* ---- replies ---- */

typedef struct VarlinkReply {
        char *error;                    /* error name, or NULL for a result */
        struct json_object *parameters; /* always an object (empty when absent) */
        bool continues;
} VarlinkReply;

void varlink_reply_done(VarlinkReply *r);
int varlink_reply_parse(const char *msg, size_t size, VarlinkReply *ret, char **ret_error);

/* ---- building messages ----
 * Each returns a malloc'ed buffer holding the JSON text and its NUL;
 * *ret_size counts the NUL. parameters may be NULL (sent as {}); they are
 * not consumed. */
int varlink_format_call(const char *method, struct json_object *parameters, unsigned flags, char **ret,
                        size_t *ret_size);
int varlink_format_reply(struct json_object *parameters, char **ret, size_t *ret_size);
int varlink_format_error(const char *error, struct json_object *parameters, char **ret, size_t *ret_size);

/* Parse a JSON text with the same limits as messages (strict, UTF-8,
 * depth); for tools that take parameters on the command line. */
int varlink_json_parse(const char *text, size_t size, struct json_object **ret, char **ret_error);
