/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Small language helpers shared by every module: scoped cleanup, ownership
 * transfer, array sizes. The habits are systemd's: a variable declared with
 * _cleanup_free_ or _cleanup_close_ is released when it leaves scope, and
 * TAKE_PTR()/TAKE_FD() hand ownership to the caller explicitly.
 */

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _pure_ __attribute__((pure))
#define _const_ __attribute__((const))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _likely_(x) (__builtin_expect(!!(x), 1))
#define _unlikely_(x) (__builtin_expect(!!(x), 0))
#define _warn_unused_result_ __attribute__((warn_unused_result))
#define _packed_ __attribute__((packed))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* MIN/MAX evaluate each argument once; __COUNTER__ gives each expansion its
 * own temporaries so that nesting them does not shadow. */
#define PTD_XCONCAT(a, b) a##b
#define PTD_CONCAT(a, b) PTD_XCONCAT(a, b)
#define PTD_UNIQ(x, u) PTD_CONCAT(_ptd_uniq_##x, u)

#define PTD_MIN(u, a, b)                                                                                    \
        ({                                                                                                  \
                __typeof__(a) PTD_UNIQ(A, u) = (a);                                                         \
                __typeof__(b) PTD_UNIQ(B, u) = (b);                                                         \
                PTD_UNIQ(A, u) < PTD_UNIQ(B, u) ? PTD_UNIQ(A, u) : PTD_UNIQ(B, u);                          \
        })
#define PTD_MAX(u, a, b)                                                                                    \
        ({                                                                                                  \
                __typeof__(a) PTD_UNIQ(A, u) = (a);                                                         \
                __typeof__(b) PTD_UNIQ(B, u) = (b);                                                         \
                PTD_UNIQ(A, u) > PTD_UNIQ(B, u) ? PTD_UNIQ(A, u) : PTD_UNIQ(B, u);                          \
        })
#undef MIN
#undef MAX
#define MIN(a, b) PTD_MIN(__COUNTER__, a, b)
#define MAX(a, b) PTD_MAX(__COUNTER__, a, b)

#define ALIGN_TO(x, a) (((x) + (a)-1) & ~((__typeof__(x))(a)-1))
#define IS_POWER_OF_TWO(x) ((x) != 0 && (((x) & ((x)-1)) == 0))

/* Move a pointer out of a cleanup-managed variable, leaving NULL behind. */
#define TAKE_PTR(p)                                                                                         \
        ({                                                                                                  \
                __typeof__(p) _p = (p);                                                                     \
                (p) = NULL;                                                                                 \
                _p;                                                                                         \
        })

/* Exchange two values of the same type. */
#define SWAP_TWO(a, b)                                                                                      \
        do {                                                                                                \
                __typeof__(a) _t = (a);                                                                     \
                (a) = (b);                                                                                  \
                (b) = _t;                                                                                   \
        } while (0)

/* Same for file descriptors: leaves -EBADF behind. */
#define TAKE_FD(fd)                                                                                         \
        ({                                                                                                  \
                int _fd = (fd);                                                                             \
                (fd) = -EBADF;                                                                              \
                _fd;                                                                                        \
        })

/* A cleanup function for a type whose free function accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                                             \
        static inline void func##p(type *p) {                                                               \
                if (*p)                                                                                     \
                        func(*p);                                                                           \
        }

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd) {
        if (fd >= 0) {
                int saved = errno;
                (void) close(fd);
                errno = saved;
        }
        return -EBADF;
}

static inline void closep(int *fd) {
        *fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                (void) fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

/* Free an array of strings terminated by NULL. */
static inline void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(char **, strv_free);
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* errno as a negative value, never 0: for paths where a libc call failed but
 * might not have set errno. */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

/* Wrap a libc call that returns -1 and sets errno: gives negative errno. */
#define RET_NERRNO(expr)                                                                                    \
        ({                                                                                                  \
                __typeof__(expr) _r = (expr);                                                               \
                _r < 0 ? negative_errno() : _r;                                                             \
        })

static inline bool streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

static inline const char *yes_no(bool b) {
        return b ? "yes" : "no";
}

/* Return the part of s after prefix, or NULL when s does not start with it. */
static inline const char *startswith(const char *s, const char *prefix) {
        size_t l = strlen(prefix);
        return strncmp(s, prefix, l) == 0 ? s + l : NULL;
}

static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

/* Overflow-checked arithmetic for sizes that come from untrusted input. */
#define ADD_OVERFLOW(a, b, res) __builtin_add_overflow(a, b, res)
#define MUL_OVERFLOW(a, b, res) __builtin_mul_overflow(a, b, res)

/* An empty array may be NULL: NULL + 0 is undefined in C, so the end is
 * computed only for a real array. */
#define FOREACH_ARRAY(i, array, n)                                                                           \
        for (__typeof__(&(array)[0]) i = (array), i##_end_ = i ? i + (n) : i; i < i##_end_; i++)
