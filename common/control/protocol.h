/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * The io.ptraced control interface: the one contract ptraced and its clients
 * share (chrony's candm.h habit). Method and error names, which method needs
 * which privilege, the parameters each method takes with their types and
 * bounds, and the varlink interface description served by
 * org.varlink.service.GetInterfaceDescription. The daemon validates every
 * call against this table before it dispatches; clients use the names.
 *
 * Every io.ptraced error carries "message", a sentence for humans that says
 * what to do; some carry more (retry_after_usec, parameter, limit).
 */

#include "common/control/names.h"
#include "common/control/varlink.h"

typedef enum ProtocolType {
        PROTOCOL_STRING, /* printable UTF-8, no control characters, within max_length bytes */
        PROTOCOL_BOOL,
        PROTOCOL_INT,
        PROTOCOL_HEX_ID, /* PTRACED_PENDING_ID_LEN lower-case hex digits */
} ProtocolType;

typedef enum ProtocolAccess {
        PROTOCOL_ACCESS_ANYONE,     /* org.varlink.service: whoever can connect */
        PROTOCOL_ACCESS_READ,       /* read-only: privileged callers, others per [Control] ReadOnlyAccess= */
        PROTOCOL_ACCESS_PRIVILEGED, /* root and group ptraced */
} ProtocolAccess;

typedef struct ProtocolParameter {
        const char *name;
        ProtocolType type;
        bool required;
        size_t max_length; /* PROTOCOL_STRING */
} ProtocolParameter;

typedef struct ProtocolMethod {
        const char *name; /* full: "io.ptraced.Snapshot" */
        ProtocolAccess access;
        const ProtocolParameter *parameters; /* terminated by { NULL } */
} ProtocolMethod;

/* Every method the daemon serves, terminated by { NULL }. */
extern const ProtocolMethod protocol_methods[];
/* The interfaces, as GetInfo lists them; NULL-terminated. */
extern const char *const protocol_interfaces[];

const ProtocolMethod *protocol_method_find(const char *name);
bool protocol_interface_is_known(const char *interface, size_t length);

/* Check a call's parameters against the method's table: every given
 * parameter is known and of its type, every required one is there.
 * -EINVAL with *ret_parameter (the parameter's name: static, or pointing
 * into `parameters`; "" for an unknown name too odd to echo back) and
 * *ret_error (a sentence) on the first problem. */
int protocol_check_parameters(const ProtocolMethod *m, struct json_object *parameters, const char **ret_parameter,
                              char **ret_error);

/* The varlink interface description (IDL text) of an interface, or NULL. */
const char *protocol_interface_description(const char *interface);

/* For tests: is this one of the errors the interfaces declare? (The test
 * checks the description and the names agree.) */
bool protocol_error_is_known(const char *name);

/* Text for a parameter: printable UTF-8 and no control characters. */
bool protocol_text_is_valid(const char *s, size_t length);
