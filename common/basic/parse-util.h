/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Typed parsers for config values, command-line options and sysfs files.
 * All return 0 on success and -EINVAL/-ERANGE on bad input, without logging;
 * callers name the file:line or option and the valid form.
 */

#include "common/basic/macro.h"
#include "common/basic/time-util.h"

int parse_bool(const char *s, bool *ret);
int parse_uint64(const char *s, uint64_t *ret);            /* decimal, or 0x hex */
int parse_uint32(const char *s, uint32_t *ret);
int parse_int(const char *s, int *ret);
/* Sizes with optional binary suffix: 4096, 64K, 4M, 1G, 2T (also KiB, MiB...).
 * Plain "B" is accepted. */
int parse_size(const char *s, uint64_t *ret);
/* Durations: 20ms, 5s, 1min, 2h, 500us, 1.5s; a bare number is seconds
 * (like systemd's time spans). */
int parse_duration(const char *s, usec_t *ret);

/* CPU lists as the kernel prints them: "0-3,5,7-8". Returns a bitmap
 * (bool array) sized max_cpu+1 in *ret and its length in *ret_n. */
int parse_cpu_list(const char *s, bool **ret, size_t *ret_n);

/* Human forms for messages: "4.0 MiB", "12.5 ms". */
char *format_bytes(char *buf, size_t l, uint64_t bytes);
#define FORMAT_BYTES_MAX 32
