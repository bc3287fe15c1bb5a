/* SPDX-License-Identifier: MIT */

#include <stdarg.h>

#include "common/basic/json-util.h"
#include "common/control/varlink.h"

#define BUFFER_INITIAL 4096

static int fail(char **ret_error, int error, const char *fmt, ...) _printf_(3, 4);
static int fail(char **ret_error, int error, const char *fmt, ...) {
        va_list ap;

        if (ret_error) {
                char *s = NULL;
                va_start(ap, fmt);
                if (vasprintf(&s, fmt, ap) < 0)
                        s = NULL;
                va_end(ap);
                free(*ret_error);
                *ret_error = s;
        }
        return -error;
}

/* ---- framing ---- */

void varlink_buffer_init(VarlinkBuffer *b, size_t max) {
        assert(max > 1);
        *b = (VarlinkBuffer){ .max = max };
}

void varlink_buffer_done(VarlinkBuffer *b) {
        b->data = mfree(b->data);
        b->size = b->allocated = b->consumed = b->scanned = 0;
}

size_t varlink_buffer_pending(const VarlinkBuffer *b) {
        return b->size - b->consumed;
}

/* Drop what was handed out, and make room for at least one more byte
 * without ever holding more than one message's limit of unconsumed data. */
static int buffer_make_room(VarlinkBuffer *b) {
        if (b->consumed > 0) {
                memmove(b->data, b->data + b->consumed, b->size - b->consumed);
                b->size -= b->consumed;
                b->consumed = 0;
        }
        if (b->size >= b->max)
                return -EMSGSIZE;
        if (b->size == b->allocated) {
                size_t n = MIN(MAX(b->allocated * 2, (size_t) BUFFER_INITIAL), b->max);
                char *p = realloc(b->data, n);
                if (!p)
                        return -ENOMEM;
                b->data = p;
                b->allocated = n;
        }
        return 0;
}

ssize_t varlink_buffer_read(VarlinkBuffer *b, int fd) {
        ssize_t n;
        int r;

        r = buffer_make_room(b);
        if (r < 0)
                return r;
        n = read(fd, b->data + b->size, b->allocated - b->size);
        if (n < 0)
                return errno == EINTR ? -EAGAIN : negative_errno();
        b->size += (size_t) n;
        return n;
}

int varlink_buffer_append(VarlinkBuffer *b, const void *p, size_t n) {
        const uint8_t *s = p;

        while (n > 0) {
                int r = buffer_make_room(b);
                size_t k;

                if (r < 0)
                        return r;
                k = MIN(n, b->allocated - b->size);
                memcpy(b->data + b->size, s, k);
                b->size += k;
                s += k;
                n -= k;
        }
        return 0;
}

int varlink_buffer_next(VarlinkBuffer *b, const char **ret, size_t *ret_size) {
        size_t start = b->consumed;
        const char *nul;

        if (b->size == start)
                return 0;
        nul = memchr(b->data + start + b->scanned, 0, b->size - start - b->scanned);
        if (!nul) {
                b->scanned = b->size - start;
                return b->scanned >= b->max ? -EMSGSIZE : 0;
        }
        *ret = b->data + start;
        *ret_size = (size_t) (nul - (b->data + start));
        b->consumed = (size_t) (nul - b->data) + 1;
        b->scanned = 0;
        return 1;
}

/* ---- JSON ---- */

int varlink_json_parse(const char *text, size_t size, struct json_object **ret, char **ret_error) {
        struct json_tokener *tok;
        struct json_object *o;
        enum json_tokener_error e;
        size_t end;

        if (size > INT32_MAX)
                return fail(ret_error, EMSGSIZE, "message too large");
        tok = json_tokener_new_ex(VARLINK_DEPTH_MAX);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
        o = json_tokener_parse_ex(tok, text, (int) size);
        e = json_tokener_get_error(tok);
        end = json_tokener_get_parse_end(tok);
        json_tokener_free(tok);

        if (e == json_tokener_continue) {
                json_object_put(o);
                return fail(ret_error, EBADMSG, "not valid JSON: the text ends inside a value");
        }
        if (e != json_tokener_success) {
                json_object_put(o);
                return fail(ret_error, EBADMSG, "not valid JSON at byte %zu: %s", end,
                            json_tokener_error_desc(e));
        }
        for (size_t i = end; i < size; i++)
                if (!strchr(" \t\r\n", text[i])) {
                        json_object_put(o);
                        return fail(ret_error, EBADMSG, "not valid JSON: unexpected data after the value at byte %zu",
                                    i);
                }
        *ret = o;
        return 0;
}

static bool segment_is_valid(const char *s, size_t n, bool first) {
        if (n == 0 || s[0] == '-' || s[n - 1] == '-')
                return false;
        if (first && !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
                return false;
        for (size_t i = 0; i < n; i++) {
                char c = s[i];
                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'))
                        return false;
        }
        return true;
}

size_t varlink_method_interface_length(const char *method) {
        const char *dot = strrchr(method, '.');
        size_t n = strlen(method), segments = 0;

        if (!dot || n > VARLINK_METHOD_NAME_MAX)
                return 0;
        /* The method: an upper-case letter, then letters and digits. */
        if (!(dot[1] >= 'A' && dot[1] <= 'Z'))
                return 0;
        for (const char *p = dot + 1; *p; p++)
                if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9')))
                        return 0;
        /* The interface: at least two dot-separated segments. */
        for (const char *s = method; s < dot;) {
                const char *e = memchr(s, '.', (size_t) (dot - s));
                size_t l = e ? (size_t) (e - s) : (size_t) (dot - s);
                if (!segment_is_valid(s, l, segments == 0))
                        return 0;
                segments++;
                s += l + (e ? 1 : 0);
                if (e && s == dot)
                        return 0; /* "a..Method" or "a.b.", empty segment */
        }
        return segments >= 2 ? (size_t) (dot - method) : 0;
}

bool varlink_method_name_is_valid(const char *s) {
        return varlink_method_interface_length(s) > 0;
}

static int get_flag(struct json_object *o, const char *key, unsigned flag, unsigned *flags, char **ret_error) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || json_object_is_type(v, json_type_null))
                return 0;
        if (!json_object_is_type(v, json_type_boolean))
                return fail(ret_error, EBADMSG, "\"%s\" must be true or false", key);
        if (json_object_get_boolean(v))
                *flags |= flag;
        return 0;
}

/* "parameters": an object, or absent/null meaning {}. Returns a new reference. */
static int get_parameters(struct json_object *o, struct json_object **ret, char **ret_error) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, "parameters", &v) || json_object_is_type(v, json_type_null)) {
                *ret = json_object_new_object();
                return *ret ? 0 : -ENOMEM;
        }
        if (!json_object_is_type(v, json_type_object))
                return fail(ret_error, EBADMSG, "\"parameters\" must be an object");
        *ret = json_object_get(v);
        return 0;
}

void varlink_call_done(VarlinkCall *c) {
        c->method = mfree(c->method);
        if (c->parameters)
                json_object_put(c->parameters);
        c->parameters = NULL;
        c->flags = 0;
}

int varlink_call_parse(const char *msg, size_t size, VarlinkCall *ret, char **ret_error) {
        struct json_object *o = NULL, *m;
        VarlinkCall c = {};
        const char *name;
        int r;

        r = varlink_json_parse(msg, size, &o, ret_error);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object)) {
                r = fail(ret_error, EBADMSG, "a call must be a JSON object");
                goto finish;
        }
        if (!json_object_object_get_ex(o, "method", &m) || !json_object_is_type(m, json_type_string)) {
                r = fail(ret_error, EBADMSG, "a call needs \"method\", a string");
                goto finish;
        }
        name = json_object_get_string(m);
        if ((size_t) json_object_get_string_len(m) != strlen(name) || !varlink_method_name_is_valid(name)) {
                r = fail(ret_error, EBADMSG, "\"method\" must be \"interface.Method\", e.g. \"io.ptraced.Status\"");
                goto finish;
        }
        if ((r = get_flag(o, "oneway", VARLINK_CALL_ONEWAY, &c.flags, ret_error)) < 0 ||
            (r = get_flag(o, "more", VARLINK_CALL_MORE, &c.flags, ret_error)) < 0 ||
            (r = get_flag(o, "upgrade", VARLINK_CALL_UPGRADE, &c.flags, ret_error)) < 0)
                goto finish;
        r = get_parameters(o, &c.parameters, ret_error);
        if (r < 0)
                goto finish;
        c.method = strdup(name);
        if (!c.method) {
                varlink_call_done(&c);
                r = -ENOMEM;
                goto finish;
        }
        *ret = c;
        r = 0;
finish:
        json_object_put(o);
        return r;
}

void varlink_reply_done(VarlinkReply *r) {
        r->error = mfree(r->error);
        if (r->parameters)
                json_object_put(r->parameters);
        r->parameters = NULL;
        r->continues = false;
}

int varlink_reply_parse(const char *msg, size_t size, VarlinkReply *ret, char **ret_error) {
        struct json_object *o = NULL, *v;
        VarlinkReply rp = {};
        unsigned flags = 0;
        int r;

        r = varlink_json_parse(msg, size, &o, ret_error);
        if (r < 0)
                return r;
        if (!json_object_is_type(o, json_type_object)) {
                r = fail(ret_error, EBADMSG, "a reply must be a JSON object");
                goto finish;
        }
        if (json_object_object_get_ex(o, "error", &v) && !json_object_is_type(v, json_type_null)) {
                const char *e = json_object_get_string(v);
                if (!json_object_is_type(v, json_type_string) || !varlink_method_name_is_valid(e)) {
                        r = fail(ret_error, EBADMSG, "\"error\" must be an error name such as \"io.ptraced.Failed\"");
                        goto finish;
                }
                rp.error = strdup(e);
                if (!rp.error) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        r = get_flag(o, "continues", 1, &flags, ret_error);
        if (r >= 0)
                r = get_parameters(o, &rp.parameters, ret_error);
        if (r < 0) {
                varlink_reply_done(&rp);
                goto finish;
        }
        rp.continues = flags != 0;
        *ret = rp;
finish:
        json_object_put(o);
        return r;
}

/* ---- building ---- */

static int serialize(struct json_object *o, char **ret, size_t *ret_size) {
        const char *s;
        size_t n;
        char *p;

        s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!s)
                return -ENOMEM;
        p = malloc(n + 1);
        if (!p)
                return -ENOMEM;
        memcpy(p, s, n);
        p[n] = 0;
        *ret = p;
        *ret_size = n + 1;
        return 0;
}

static int add_parameters(struct json_object *o, struct json_object *parameters) {
        struct json_object *p = parameters ? json_object_get(parameters) : json_object_new_object();

        if (!p)
                return -ENOMEM;
        if (json_object_object_add(o, "parameters", p) < 0) {
                json_object_put(p);
                return -ENOMEM;
        }
        return 0;
}

static int add_true(struct json_object *o, const char *key) {
        struct json_object *v = json_object_new_boolean(true);

        if (!v)
                return -ENOMEM;
        if (json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int varlink_format_call(const char *method, struct json_object *parameters, unsigned flags, char **ret,
                        size_t *ret_size) {
        struct json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "method", method);
        if (r >= 0)
                r = add_parameters(o, parameters);
        if (r >= 0 && (flags & VARLINK_CALL_ONEWAY))
                r = add_true(o, "oneway");
        if (r >= 0 && (flags & VARLINK_CALL_MORE))
                r = add_true(o, "more");
        if (r >= 0 && (flags & VARLINK_CALL_UPGRADE))
                r = add_true(o, "upgrade");
        if (r >= 0)
                r = serialize(o, ret, ret_size);
        json_object_put(o);
        return r;
}

int varlink_format_reply(struct json_object *parameters, char **ret, size_t *ret_size) {
        struct json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = add_parameters(o, parameters);
        if (r >= 0)
                r = serialize(o, ret, ret_size);
        json_object_put(o);
        return r;
}

int varlink_format_error(const char *error, struct json_object *parameters, char **ret, size_t *ret_size) {
        struct json_object *o = json_object_new_object();
        int r;

        if (!o)
                return -ENOMEM;
        r = json_add_string(o, "error", error);
        if (r >= 0)
                r = add_parameters(o, parameters);
        if (r >= 0)
                r = serialize(o, ret, ret_size);
        json_object_put(o);
        return r;
}
