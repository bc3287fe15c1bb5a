/* SPDX-License-Identifier: MIT */
#pragma once

/* Small containers the decoder stages share. */

#include "buffer.h"
#include "macro.h"

/* An open-addressing hash map from uint64_t keys to pointers. Not
 * thread-safe; readers may share a map nobody writes any more. */
typedef struct U64Map {
        uint64_t *keys;
        void **values;
        size_t n, allocated; /* allocated is a power of two or 0 */
} U64Map;

void u64map_done(U64Map *m);
void *u64map_get(const U64Map *m, uint64_t key);
/* Insert or replace. */
int u64map_put(U64Map *m, uint64_t key, void *value);
/* Iterate: for (size_t i = 0; u64map_next(m, &i, &k, &v);) */
bool u64map_next(const U64Map *m, size_t *i, uint64_t *ret_key, void **ret_value);

/* Interned strings that live as long as the pool. */
typedef struct StrPool {
        U64Map map;  /* hash -> chain of entries */
        char **chunks;
        size_t n_chunks;
        char *cur;
        size_t cur_left;
} StrPool;

void strpool_done(StrPool *p);
/* Returns the interned copy of s[0..len) (NUL-terminated), NULL on OOM. */
const char *strpool_intern(StrPool *p, const char *s, size_t len);

/* Fast formatting into a Buffer: the text formats print millions of lines. */
int buf_puts(Buffer *b, const char *s);
int buf_putc(Buffer *b, char c);
int buf_printf(Buffer *b, const char *fmt, ...) _printf_(2, 3);
/* "0x" + lowercase hex without padding. */
int buf_hex(Buffer *b, uint64_t v);
int buf_u64(Buffer *b, uint64_t v);
int buf_i64(Buffer *b, int64_t v);
/* A JSON string literal with quotes and escapes. */
int buf_json_string(Buffer *b, const char *s);

static inline uint64_t hash_u64(uint64_t x) {
        x ^= x >> 33;
        x *= UINT64_C(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x *= UINT64_C(0xc4ceb9fe1a85ec53);
        x ^= x >> 33;
        return x;
}

static inline uint64_t hash_bytes(const void *p, size_t n) {
        const uint8_t *s = p;
        uint64_t h = UINT64_C(0xcbf29ce484222325);
        for (size_t i = 0; i < n; i++) {
                h ^= s[i];
                h *= UINT64_C(0x100000001b3);
        }
        return h;
}

/* Format a build-id as lowercase hex into buf (2*n+1 bytes). */
char *build_id_to_hex(const uint8_t *id, size_t n, char *buf);

/* Like FOREACH_ARRAY, also for arrays reached through a const struct
 * (the loop variable points to the elements' own type), and for a NULL
 * array of 0 elements (NULL + 0 is undefined, and UBSan says so). */
#define DECODE_FOREACH(i, array, n) for (__typeof__(*(array)) *i = (array); i && i < (array) + (n); i++)

/* Unchecked writers for the hot rendering path: the caller has reserved
 * room (buffer_reserve) for what it writes. */
static inline void buf_hex_fast(Buffer *b, uint64_t v) {
        static const char digits[] = "0123456789abcdef";
        char *p = (char *) b->data + b->size;
        int n = v ? (67 - __builtin_clzll(v)) / 4 : 1; /* hex digits */

        p[0] = '0';
        p[1] = 'x';
        for (int i = n + 1; i >= 2; i--, v >>= 4)
                p[i] = digits[v & 0xf];
        b->size += (size_t) n + 2;
}

static inline void buf_u64_fast(Buffer *b, uint64_t v) {
        char tmp[20];
        int i = sizeof(tmp);

        do {
                tmp[--i] = (char) ('0' + v % 10);
                v /= 10;
        } while (v);
        memcpy(b->data + b->size, tmp + i, sizeof(tmp) - i);
        b->size += sizeof(tmp) - i;
}

static inline void buf_i64_fast(Buffer *b, int64_t v) {
        if (v < 0) {
                b->data[b->size++] = '-';
                buf_u64_fast(b, (uint64_t) 0 - (uint64_t) v);
        } else
                buf_u64_fast(b, (uint64_t) v);
}

static inline void buf_str_fast(Buffer *b, const char *s, size_t n) {
        memcpy(b->data + b->size, s, n);
        b->size += n;
}
