/* SPDX-License-Identifier: MIT */

#include <errno.h>

#include "common/basic/json-util.h"

int json_add_value(struct json_object *o, const char *key, struct json_object *value) {
        if (!value)
                return -ENOMEM;
        if (json_object_object_add(o, key, value) < 0) {
                json_object_put(value);
                return -ENOMEM;
        }
        return 0;
}

int json_add_string(struct json_object *o, const char *key, const char *value) {
        return json_add_value(o, key, json_object_new_string(value));
}

int json_add_uint64(struct json_object *o, const char *key, uint64_t value) {
        return json_add_value(o, key, json_object_new_uint64(value));
}

int json_add_i64(struct json_object *o, const char *key, int64_t value) {
        return json_add_value(o, key, json_object_new_int64(value));
}

int json_add_bool(struct json_object *o, const char *key, bool value) {
        return json_add_value(o, key, json_object_new_boolean(value));
}
