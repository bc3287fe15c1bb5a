/* SPDX-License-Identifier: MIT */

/* The io.ptraced contract: the method table and the interface descriptions
 * agree (every method, parameter and error is declared, nothing is
 * declared that the table lacks), the descriptions are well-formed varlink
 * IDL, and parameters are validated as the descriptions say. */

#include <ctype.h>

#include "common/basic/conf-parser.h"
#include "common/control/protocol.h"
#include "test.h"

/* A small checker for the IDL subset we write: one declaration per
 * top-level line, fields one per line inside parentheses, types from the
 * grammar (optional "?", "[]" arrays, primitives or declared type names). */
static bool type_is_valid(const char *t, char *const *types) {
        if (*t == '?')
                t++;
        while (startswith(t, "[]"))
                t += 2;
        if (streq(t, "string") || streq(t, "int") || streq(t, "bool") || streq(t, "float") || streq(t, "object"))
                return true;
        for (char *const *i = types; i && *i; i++)
                if (streq(*i, t))
                        return true;
        return false;
}

static bool field_name_is_valid(const char *s, size_t n) {
        if (n == 0 || !islower((unsigned char) s[0]))
                return false;
        for (size_t i = 0; i < n; i++)
                if (!(islower((unsigned char) s[i]) || isdigit((unsigned char) s[i]) || s[i] == '_'))
                        return false;
        return true;
}

/* The text with "#" comments (to the end of their line) removed. */
static char *strip_comments(const char *s, size_t n) {
        char *out = calloc(1, n + 1);
        size_t k = 0;

        ASSERT_NOT_NULL(out);
        for (size_t i = 0; i < n; i++) {
                if (s[i] == '#') {
                        while (i < n && s[i] != '\n')
                                i++;
                        if (i == n)
                                break;
                }
                out[k++] = s[i];
        }
        return out;
}

/* "name: type" list, comma separated, possibly spanning lines. */
static void check_fields(const char *interface, const char *s, size_t n, char *const *types) {
        _cleanup_free_ char *copy = strip_comments(s, n);
        char *save = NULL;

        for (char *f = strtok_r(copy, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
                char *colon, *name, *type, *end;

                while (isspace((unsigned char) *f))
                        f++;
                end = f + strlen(f);
                while (end > f && isspace((unsigned char) end[-1]))
                        *--end = 0;
                if (!*f)
                        test_fail("%s: empty field (a stray comma?)", interface);
                colon = strchr(f, ':');
                if (!colon)
                        test_fail("%s: field without a type: '%s'", interface, f);
                name = f;
                *colon = 0;
                type = colon + 1;
                while (*type == ' ')
                        type++;
                if (!field_name_is_valid(name, strlen(name)))
                        test_fail("%s: invalid field name '%s'", interface, name);
                if (!type_is_valid(type, types))
                        test_fail("%s: field %s has an invalid type '%s'", interface, name, type);
        }
}

/* The ')' closing the list opened at q, skipping comments. */
static const char *find_close(const char *q) {
        for (q++; *q; q++) {
                if (*q == '#') {
                        q = strchr(q, '\n');
                        if (!q)
                                return NULL;
                } else if (*q == ')')
                        return q;
        }
        return NULL;
}

typedef struct Idl {
        char *interface;
        char **methods, **errors, **types;
        char **method_params; /* "Method param" pairs */
} Idl;

static void idl_done(Idl *idl) {
        free(idl->interface);
        strv_free(idl->methods);
        strv_free(idl->errors);
        strv_free(idl->types);
        strv_free(idl->method_params);
}

static void idl_parse(const char *text, Idl *ret) {
        Idl idl = {};
        const char *p = text;

        /* Type names first, so fields may use types declared later. */
        for (const char *t = text; (t = strstr(t, "\ntype ")); t++) {
                const char *n = t + 6, *e = n;
                while (isalnum((unsigned char) *e))
                        e++;
                ASSERT_OK(strv_consume(&idl.types, strndup(n, (size_t) (e - n))));
        }

        while (*p) {
                const char *nl = strchr(p, '\n');
                size_t l = nl ? (size_t) (nl - p) : strlen(p);
                const char *kw;

                if (l == 0 || p[0] == '#') {
                        p += l + (nl ? 1 : 0);
                        continue;
                }
                _cleanup_free_ char *line = strndup(p, l);
                if ((kw = startswith(line, "interface "))) {
                        ASSERT_NULL(idl.interface);
                        idl.interface = strdup(kw);
                        p += l + (nl ? 1 : 0);
                        continue;
                }
                ASSERT_NOT_NULL(idl.interface); /* declarations come after "interface" */

                /* A declaration: keyword, name, then a parenthesized list
                 * (methods: two, joined by "->"). */
                const char *name_start;
                bool method = false;
                if ((kw = startswith(line, "method ")))
                        method = true;
                else if (!(kw = startswith(line, "error ")) && !(kw = startswith(line, "type ")))
                        test_fail("%s: unexpected line '%s'", idl.interface, line);
                name_start = p + (kw - line);
                const char *q = name_start;
                if (!isupper((unsigned char) *q))
                        test_fail("%s: declaration names start upper-case: '%s'", idl.interface, line);
                while (isalnum((unsigned char) *q))
                        q++;
                _cleanup_free_ char *name = strndup(name_start, (size_t) (q - name_start));
                while (*q == ' ')
                        q++;
                for (int list = 0; list < (method ? 2 : 1); list++) {
                        if (list == 1) {
                                while (*q == ' ')
                                        q++;
                                if (!startswith(q, "->"))
                                        test_fail("%s: method %s lacks '->'", idl.interface, name);
                                q += 2;
                                while (*q == ' ')
                                        q++;
                        }
                        if (*q != '(')
                                test_fail("%s: %s lacks its '('", idl.interface, name);
                        const char *close = find_close(q);
                        ASSERT_NOT_NULL(close);
                        check_fields(idl.interface, q + 1, (size_t) (close - q - 1), idl.types);
                        if (method && list == 0) {
                                /* Remember the parameter names. */
                                _cleanup_free_ char *params = strip_comments(q + 1, (size_t) (close - q - 1));
                                char *save = NULL;
                                for (char *f = strtok_r(params, ",", &save); f; f = strtok_r(NULL, ",", &save)) {
                                        while (isspace((unsigned char) *f))
                                                f++;
                                        char *c = strchr(f, ':');
                                        if (!c)
                                                continue;
                                        _cleanup_free_ char *pair = NULL;
                                        ASSERT_TRUE(asprintf(&pair, "%s %.*s", name, (int) (c - f), f) > 0);
                                        ASSERT_OK(strv_extend(&idl.method_params, pair));
                                }
                        }
                        q = close + 1;
                }
                while (*q == ' ')
                        q++;
                if (*q != '\n' && *q != 0)
                        test_fail("%s: trailing text after %s", idl.interface, name);
                if (method)
                        ASSERT_OK(strv_extend(&idl.methods, name));
                else if (startswith(line, "error "))
                        ASSERT_OK(strv_extend(&idl.errors, name));
                p = *q ? q + 1 : q;
        }
        ASSERT_NOT_NULL(idl.interface);
        *ret = idl;
}

static void test_idl_matches_table(void) {
        unsigned n_methods = 0;

        for (const char *const *i = protocol_interfaces; *i; i++) {
                const char *text = protocol_interface_description(*i);
                Idl idl;

                ASSERT_NOT_NULL(text);
                idl_parse(text, &idl);
                ASSERT_STREQ(idl.interface, *i);

                /* Every method of the table is declared with its parameters. */
                for (const ProtocolMethod *m = protocol_methods; m->name; m++) {
                        size_t il = varlink_method_interface_length(m->name);
                        if (il != strlen(*i) || strncmp(m->name, *i, il) != 0)
                                continue;
                        const char *short_name = m->name + il + 1;
                        if (!strv_contains(idl.methods, short_name))
                                test_fail("%s is not in the %s description", m->name, *i);
                        for (const ProtocolParameter *p = m->parameters; p->name; p++) {
                                char pair[128];
                                snprintf(pair, sizeof pair, "%s %s", short_name, p->name);
                                if (!strv_contains(idl.method_params, pair))
                                        test_fail("%s: parameter %s is not declared", m->name, p->name);
                        }
                        n_methods++;
                }
                /* And nothing else is declared. */
                for (char **mm = idl.methods; mm && *mm; mm++) {
                        char full[256];
                        snprintf(full, sizeof full, "%s.%s", *i, *mm);
                        if (!protocol_method_find(full))
                                test_fail("%s is declared but not in the method table", full);
                }
                for (char **mp = idl.method_params; mp && *mp; mp++) {
                        char full[256];
                        const char *sp = strchr(*mp, ' ');
                        snprintf(full, sizeof full, "%s.%.*s", *i, (int) (sp - *mp), *mp);
                        const ProtocolMethod *m = protocol_method_find(full);
                        bool found = false;
                        for (const ProtocolParameter *p = m->parameters; p->name; p++)
                                found = found || streq(p->name, sp + 1);
                        if (!found)
                                test_fail("%s declares parameter %s the table does not check", full, sp + 1);
                }
                /* Every declared error is known, and the other way round. */
                for (char **e = idl.errors; e && *e; e++) {
                        char full[256];
                        snprintf(full, sizeof full, "%s.%s", *i, *e);
                        if (!protocol_error_is_known(full))
                                test_fail("%s is declared but unknown to protocol_error_is_known()", full);
                }
                printf("%s: %zu methods, %zu errors, %zu types\n", *i, strv_length(idl.methods),
                       strv_length(idl.errors), strv_length(idl.types));
                idl_done(&idl);
        }
        /* The manager's error names (daemon/manager/manager.c) are all declared. */
        const char *manager_errors[] = { "io.ptraced.NotRecording", "io.ptraced.Busy", "io.ptraced.Failed",
                                         "io.ptraced.DumpFailed", "io.ptraced.ShuttingDown" };
        for (size_t k = 0; k < ELEMENTSOF(manager_errors); k++)
                ASSERT_TRUE(protocol_error_is_known(manager_errors[k]));
        for (const ProtocolMethod *m = protocol_methods; m->name; m++)
                ASSERT_TRUE(varlink_method_name_is_valid(m->name));
        /* Every method of the table was found in a description. */
        size_t n_table = 0;
        for (const ProtocolMethod *m = protocol_methods; m->name; m++)
                n_table++;
        ASSERT_EQ(n_methods, n_table);
        ASSERT_NULL(protocol_interface_description("io.example"));
}

static void expect_invalid(const char *method, const char *json, const char *parameter, const char *what) {
        _cleanup_free_ char *error = NULL;
        const ProtocolMethod *m = protocol_method_find(method);
        struct json_object *p = json_tokener_parse(json);
        const char *param = NULL;

        ASSERT_NOT_NULL(m);
        ASSERT_NOT_NULL(p);
        ASSERT_ERROR(protocol_check_parameters(m, p, &param, &error), EINVAL);
        ASSERT_STREQ(param, parameter);
        ASSERT_CONTAINS(error, what);
        json_object_put(p);
}

static void expect_valid(const char *method, const char *json) {
        _cleanup_free_ char *error = NULL;
        struct json_object *p = json_tokener_parse(json);
        const char *param = NULL;

        ASSERT_NOT_NULL(p);
        ASSERT_OK(protocol_check_parameters(protocol_method_find(method), p, &param, &error));
        json_object_put(p);
}

static void test_parameters(void) {
        char long_reason[PTRACED_REASON_MAX + 20];

        expect_valid(PTRACED_METHOD_SNAPSHOT, "{}");
        expect_valid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"latency spike ☃\",\"wait\":false}");
        expect_valid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":null}");
        expect_valid(PTRACED_METHOD_STATUS, "{}");
        expect_valid(PTRACED_METHOD_GET_SNAPSHOT, "{\"pending\":\"0123456789abcdef0123456789abcdef\"}");

        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":5}", "reason", "must be a string");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"wait\":\"yes\"}", "wait", "true or false");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"\"}", "reason", "must not be empty");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"a\\nb\"}", "reason", "control characters");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"a\\u0000b\"}", "reason", "control characters");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reason\":\"\\u009b\"}", "reason", "control characters");
        expect_invalid(PTRACED_METHOD_SNAPSHOT, "{\"reasno\":\"x\"}", "reasno", "takes no such parameter");
        expect_invalid(PTRACED_METHOD_STATUS, "{\"verbose\":true}", "verbose", "(it takes none)");
        expect_invalid(PTRACED_METHOD_GET_SNAPSHOT, "{}", "pending", "needs the parameter pending");
        expect_invalid(PTRACED_METHOD_GET_SNAPSHOT, "{\"pending\":\"XYZ\"}", "pending", "hex digits");
        expect_invalid(VARLINK_METHOD_GET_INTERFACE_DESCRIPTION, "{\"interface\":1}", "interface",
                       "must be a string");

        memset(long_reason, 'a', sizeof long_reason);
        long_reason[sizeof long_reason - 1] = 0;
        char json[sizeof long_reason + 32];
        snprintf(json, sizeof json, "{\"reason\":\"%s\"}", long_reason);
        expect_invalid(PTRACED_METHOD_SNAPSHOT, json, "reason", "at most 256");

        /* An absurd unknown name is not echoed back. */
        char weird[200];
        memset(weird, 'k', sizeof weird);
        weird[sizeof weird - 1] = 0;
        snprintf(json, sizeof json, "{\"%s\":1}", weird);
        expect_invalid(PTRACED_METHOD_STATUS, json, "", "takes no such parameter");
}

static void test_text(void) {
        ASSERT_TRUE(protocol_text_is_valid("latency", 7));
        ASSERT_TRUE(protocol_text_is_valid("ü€😀", strlen("ü€😀")));
        ASSERT_FALSE(protocol_text_is_valid("a\tb", 3));
        ASSERT_FALSE(protocol_text_is_valid("\x7f", 1));
        ASSERT_FALSE(protocol_text_is_valid("\xc0\xaf", 2));         /* overlong */
        ASSERT_FALSE(protocol_text_is_valid("\xed\xa0\x80", 3));     /* surrogate */
        ASSERT_FALSE(protocol_text_is_valid("\xf4\x90\x80\x80", 4)); /* above U+10FFFF */
        ASSERT_FALSE(protocol_text_is_valid("\xe2\x82", 2));         /* truncated */
        ASSERT_FALSE(protocol_text_is_valid("\xc2\x85", 2));         /* C1 control */
}

static void test_access(void) {
        ASSERT_EQ(protocol_method_find(PTRACED_METHOD_SNAPSHOT)->access, PROTOCOL_ACCESS_PRIVILEGED);
        ASSERT_EQ(protocol_method_find(PTRACED_METHOD_STATUS)->access, PROTOCOL_ACCESS_READ);
        ASSERT_EQ(protocol_method_find(PTRACED_METHOD_LIST_BUNDLES)->access, PROTOCOL_ACCESS_READ);
        ASSERT_EQ(protocol_method_find(VARLINK_METHOD_GET_INFO)->access, PROTOCOL_ACCESS_ANYONE);
        ASSERT_NULL(protocol_method_find("io.ptraced.Frobnicate"));
        ASSERT_TRUE(protocol_interface_is_known("io.ptraced", 10));
        ASSERT_FALSE(protocol_interface_is_known("io.ptrace", 9));
}

RUN_TESTS(TEST(test_idl_matches_table), TEST(test_parameters), TEST(test_text), TEST(test_access));
