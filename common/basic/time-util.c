/* SPDX-License-Identifier: MIT */

#include <inttypes.h>

#include "common/basic/time-util.h"

char *format_timespan(char *buf, size_t l, usec_t t) {
        if (t == USEC_INFINITY)
                snprintf(buf, l, "infinity");
        else if (t < USEC_PER_MSEC)
                snprintf(buf, l, "%" PRIu64 "us", t);
        else if (t < USEC_PER_SEC)
                snprintf(buf, l, "%.1fms", (double) t / USEC_PER_MSEC);
        else if (t < USEC_PER_MINUTE)
                snprintf(buf, l, "%.2fs", (double) t / USEC_PER_SEC);
        else if (t < USEC_PER_HOUR)
                snprintf(buf, l, "%" PRIu64 "min %" PRIu64 "s", t / USEC_PER_MINUTE,
                         (t % USEC_PER_MINUTE) / USEC_PER_SEC);
        else
                snprintf(buf, l, "%" PRIu64 "h %" PRIu64 "min", t / USEC_PER_HOUR,
                         (t % USEC_PER_HOUR) / USEC_PER_MINUTE);
        return buf;
}

char *format_timestamp(char *buf, size_t l, usec_t t) {
        time_t sec = (time_t) (t / USEC_PER_SEC);
        struct tm tm;

        if (!localtime_r(&sec, &tm) || strftime(buf, l, "%Y-%m-%d %H:%M:%S", &tm) == 0)
                snprintf(buf, l, "@%" PRIu64, t);
        return buf;
}
