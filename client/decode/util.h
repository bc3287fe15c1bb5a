/* SPDX-License-Identifier: MIT */
#pragma once

/* Small containers the decoder stages share. */

#include <stdarg.h>
#include <string.h>

#include "common/basic/buffer.h"
#include "common/basic/macro.h"

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
/* The value at key; if there is none, a new zeroed one of size bytes that
 * the map's owner frees (NULL on -ENOMEM). */
void *u64map_get_or_new(U64Map *m, uint64_t key, size_t size);
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

/* Fast formatting into a Buffer: the text formats print millions of lines.
 * buf_puts() and buf_putc() are inline, with the buffer's room checked
 * here and buffer_append() called only to grow it: --format=calls calls
 * them several times a line on its one consuming thread, and a literal's
 * strlen() then folds away. */
static inline int buf_puts(Buffer *b, const char *s) {
        size_t n = strlen(s);

        if (b->data && n <= b->allocated - b->size) {
                memcpy(b->data + b->size, s, n);
                b->size += n;
                return 0;
        }
        return buffer_append(b, s, n);
}

static inline int buf_putc(Buffer *b, char c) {
        if (b->size < b->allocated) {
                b->data[b->size++] = (uint8_t) c;
                return 0;
        }
        return buffer_append(b, &c, 1);
}
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
 * room (buffer_reserve) for what it writes plus DECODE_FAST_SLACK bytes:
 * they store whole words and then advance by what is meaningful. */
#define DECODE_FAST_SLACK 32

/* Eight hex digits of v, most significant first, as the bytes of a word
 * in memory order: the nibbles spread to one per byte, then turned into
 * '0'..'9', 'a'..'f' without a branch. */
static inline uint64_t decode_hex8(uint32_t v) {
        uint64_t x = v, letters;

        x = ((x & UINT64_C(0xffff0000)) << 16) | (x & UINT64_C(0xffff));
        x = ((x & UINT64_C(0x0000ff000000ff00)) << 8) | (x & UINT64_C(0x000000ff000000ff));
        x = ((x & UINT64_C(0x00f000f000f000f0)) << 4) | (x & UINT64_C(0x000f000f000f000f));
        /* Byte i holds nibble i; 1 in the bytes whose nibble is >= 10. */
        letters = ((x + UINT64_C(0x0606060606060606)) >> 4) & UINT64_C(0x0101010101010101);
        x += UINT64_C(0x3030303030303030) + letters * ('a' - '0' - 10);
        return __builtin_bswap64(x);
}

static inline void buf_hex_fast(Buffer *b, uint64_t v) {
        char *p = (char *) b->data + b->size;
        int n = v ? (67 - __builtin_clzll(v)) / 4 : 1; /* hex digits */
        union {
                uint64_t w[4];
                char c[32];
        } t = { .w = { decode_hex8((uint32_t) (v >> 32)), decode_hex8((uint32_t) v), 0, 0 } };

        p[0] = '0';
        p[1] = 'x';
        /* The last n of the 16 digits: 16 bytes from there, of which n count. */
        memcpy(p + 2, t.c + 16 - n, 16);
        b->size += (size_t) n + 2;
}

/* Decimal digits of v. */
static inline int decode_u64_digits(uint64_t v) {
        int n = 1;

        while (v >= 10000) {
                v /= 10000;
                n += 4;
        }
        return n + (v >= 10) + (v >= 100) + (v >= 1000);
}

static inline void buf_u64_fast(Buffer *b, uint64_t v) {
        static const char pairs[201] = "0001020304050607080910111213141516171819"
                                       "2021222324252627282930313233343536373839"
                                       "4041424344454647484950515253545556575859"
                                       "6061626364656667686970717273747576777879"
                                       "8081828384858687888990919293949596979899";
        int n = decode_u64_digits(v);
        char *p = (char *) b->data + b->size + n;

        b->size += (size_t) n;
        while (v >= 100) {
                p -= 2;
                memcpy(p, pairs + 2 * (v % 100), 2);
                v /= 100;
        }
        if (v >= 10) {
                p -= 2;
                memcpy(p, pairs + 2 * v, 2);
        } else
                *--p = (char) ('0' + v);
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
