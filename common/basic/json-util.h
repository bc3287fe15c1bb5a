/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Adding a member to a json-c object without leaking or half-building
 * anything: json-c's adders take ownership of the value even on failure
 * only in some versions, and its constructors return NULL on OOM, which
 * json_object_object_add() would store as a JSON null. Every helper
 * returns 0 or -ENOMEM and owns the value either way.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/basic/macro.h"

/* Drops the reference at the end of the scope; NULL is fine. */
static inline void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_object_putp)

int json_add_value(struct json_object *o, const char *key, struct json_object *value);
int json_add_string(struct json_object *o, const char *key, const char *value);
int json_add_uint64(struct json_object *o, const char *key, uint64_t value);
int json_add_i64(struct json_object *o, const char *key, int64_t value);
int json_add_bool(struct json_object *o, const char *key, bool value);
