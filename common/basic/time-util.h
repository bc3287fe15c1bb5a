/* SPDX-License-Identifier: MIT */
#pragma once

#include <time.h>

#include "common/basic/macro.h"

typedef uint64_t usec_t;
typedef uint64_t nsec_t;

#define USEC_INFINITY ((usec_t) UINT64_MAX)
#define NSEC_PER_SEC ((nsec_t) 1000000000ULL)
#define NSEC_PER_MSEC ((nsec_t) 1000000ULL)
#define NSEC_PER_USEC ((nsec_t) 1000ULL)
#define USEC_PER_SEC ((usec_t) 1000000ULL)
#define USEC_PER_MSEC ((usec_t) 1000ULL)
#define USEC_PER_MINUTE ((usec_t) (60ULL * USEC_PER_SEC))
#define USEC_PER_HOUR ((usec_t) (60ULL * USEC_PER_MINUTE))

static inline nsec_t now_nsec(clockid_t clock) {
        struct timespec ts;
        (void) clock_gettime(clock, &ts);
        return (nsec_t) ts.tv_sec * NSEC_PER_SEC + (nsec_t) ts.tv_nsec;
}

static inline usec_t now_usec(clockid_t clock) {
        return now_nsec(clock) / NSEC_PER_USEC;
}

/* "12.5ms", "3s", "2min 5s"-like short form for status lines. */
char *format_timespan(char *buf, size_t l, usec_t t);
#define FORMAT_TIMESPAN_MAX 64
/* RFC 3339 local time with seconds, from CLOCK_REALTIME microseconds. */
char *format_timestamp(char *buf, size_t l, usec_t t);
#define FORMAT_TIMESTAMP_MAX 64
