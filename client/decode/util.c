/* SPDX-License-Identifier: MIT */

#include <stdarg.h>

#include "client/decode/util.h"
#include "common/basic/conf-parser.h"

/* Key 0 is a valid key; empty slots are marked by a NULL value, so NULL
 * values cannot be stored (u64map_put refuses them). */

void u64map_done(U64Map *m) {
        free(m->keys);
        free(m->values);
        *m = (U64Map){};
}

static size_t u64map_slot(const U64Map *m, uint64_t key) {
        size_t mask = m->allocated - 1, i = hash_u64(key) & mask;

        while (m->values[i] && m->keys[i] != key)
                i = (i + 1) & mask;
        return i;
}

void *u64map_get(const U64Map *m, uint64_t key) {
        if (m->allocated == 0)
                return NULL;
        return m->values[u64map_slot(m, key)];
}

static int u64map_grow(U64Map *m) {
        size_t n = m->allocated ? m->allocated * 2 : 16;
        U64Map nm = { .allocated = n };

        nm.keys = calloc(n, sizeof(uint64_t));
        nm.values = calloc(n, sizeof(void *));
        if (!nm.keys || !nm.values) {
                free(nm.keys);
                free(nm.values);
                return -ENOMEM;
        }
        for (size_t i = 0; i < m->allocated; i++)
                if (m->values[i]) {
                        size_t s = u64map_slot(&nm, m->keys[i]);
                        nm.keys[s] = m->keys[i];
                        nm.values[s] = m->values[i];
                        nm.n++;
                }
        u64map_done(m);
        *m = nm;
        return 0;
}

int u64map_put(U64Map *m, uint64_t key, void *value) {
        size_t s;

        if (!value)
                return -EINVAL;
        if ((m->n + 1) * 4 >= m->allocated * 3) {
                int r = u64map_grow(m);
                if (r < 0)
                        return r;
        }
        s = u64map_slot(m, key);
        if (!m->values[s])
                m->n++;
        m->keys[s] = key;
        m->values[s] = value;
        return 0;
}

void *u64map_get_or_new(U64Map *m, uint64_t key, size_t size) {
        void *v = u64map_get(m, key);

        if (v)
                return v;
        v = calloc(1, size);
        if (!v)
                return NULL;
        if (u64map_put(m, key, v) < 0) {
                free(v);
                return NULL;
        }
        return v;
}

bool u64map_next(const U64Map *m, size_t *i, uint64_t *ret_key, void **ret_value) {
        for (; *i < m->allocated; (*i)++)
                if (m->values[*i]) {
                        if (ret_key)
                                *ret_key = m->keys[*i];
                        if (ret_value)
                                *ret_value = m->values[*i];
                        (*i)++;
                        return true;
                }
        return false;
}

/* Pool entries: the string follows a pointer to the next entry of the same
 * hash bucket. */
typedef struct PoolEntry {
        struct PoolEntry *next;
        size_t len;
        char s[];
} PoolEntry;

#define POOL_CHUNK (64U * 1024)

void strpool_done(StrPool *p) {
        for (size_t i = 0; i < p->n_chunks; i++)
                free(p->chunks[i]);
        free(p->chunks);
        u64map_done(&p->map);
        *p = (StrPool){};
}

static void *pool_alloc(StrPool *p, size_t n) {
        void *r;

        n = ALIGN_TO(n, sizeof(void *));
        if (n > p->cur_left) {
                size_t sz = MAX((size_t) POOL_CHUNK, n);
                char **l = reallocarray(p->chunks, p->n_chunks + 1, sizeof(char *));
                if (!l)
                        return NULL;
                p->chunks = l;
                p->cur = malloc(sz);
                if (!p->cur)
                        return NULL;
                p->chunks[p->n_chunks++] = p->cur;
                p->cur_left = sz;
        }
        r = p->cur;
        p->cur += n;
        p->cur_left -= n;
        return r;
}

const char *strpool_intern(StrPool *p, const char *s, size_t len) {
        uint64_t h = hash_bytes(s, len);
        PoolEntry *head = u64map_get(&p->map, h), *e;

        for (e = head; e; e = e->next)
                if (e->len == len && memcmp(e->s, s, len) == 0)
                        return e->s;
        e = pool_alloc(p, sizeof(PoolEntry) + len + 1);
        if (!e)
                return NULL;
        e->next = head;
        e->len = len;
        memcpy(e->s, s, len);
        e->s[len] = 0;
        if (u64map_put(&p->map, h, e) < 0)
                return NULL;
        return e->s;
}

int buf_printf(Buffer *b, const char *fmt, ...) {
        va_list ap;
        int n;

        for (size_t want = 128;;) {
                if (buffer_reserve(b, want) < 0)
                        return -ENOMEM;
                va_start(ap, fmt);
                n = vsnprintf((char *) b->data + b->size, b->allocated - b->size, fmt, ap);
                va_end(ap);
                if (n < 0)
                        return -EINVAL;
                if ((size_t) n < b->allocated - b->size) {
                        b->size += n;
                        return 0;
                }
                want = (size_t) n + 1;
        }
}

int buf_hex(Buffer *b, uint64_t v) {
        static const char digits[] = "0123456789abcdef";
        char tmp[18];
        int i = sizeof(tmp);

        do {
                tmp[--i] = digits[v & 0xf];
                v >>= 4;
        } while (v);
        tmp[--i] = 'x';
        tmp[--i] = '0';
        return buffer_append(b, tmp + i, sizeof(tmp) - i);
}

int buf_u64(Buffer *b, uint64_t v) {
        char tmp[20];
        int i = sizeof(tmp);

        do {
                tmp[--i] = '0' + v % 10;
                v /= 10;
        } while (v);
        return buffer_append(b, tmp + i, sizeof(tmp) - i);
}

int buf_i64(Buffer *b, int64_t v) {
        if (v < 0) {
                if (buf_putc(b, '-') < 0)
                        return -ENOMEM;
                return buf_u64(b, (uint64_t) 0 - (uint64_t) v);
        }
        return buf_u64(b, (uint64_t) v);
}

int buf_json_string(Buffer *b, const char *s) {
        if (buf_putc(b, '"') < 0)
                return -ENOMEM;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                int r;
                switch (*p) {
                case '"':
                        r = buf_puts(b, "\\\"");
                        break;
                case '\\':
                        r = buf_puts(b, "\\\\");
                        break;
                case '\n':
                        r = buf_puts(b, "\\n");
                        break;
                case '\t':
                        r = buf_puts(b, "\\t");
                        break;
                default:
                        /* Bytes beyond ASCII are escaped one by one: the
                         * output stays valid JSON whatever a path holds. */
                        if (*p < 0x20 || *p >= 0x7f)
                                r = buf_printf(b, "\\u%04x", *p);
                        else
                                r = buf_putc(b, (char) *p);
                }
                if (r < 0)
                        return r;
        }
        return buf_putc(b, '"');
}

char *build_id_to_hex(const uint8_t *id, size_t n, char *buf) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < n; i++) {
                buf[2 * i] = digits[id[i] >> 4];
                buf[2 * i + 1] = digits[id[i] & 0xf];
        }
        buf[2 * n] = 0;
        return buf;
}
