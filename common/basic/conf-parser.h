/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * An INI-style parser for ptraced.conf, shaped like systemd's: a table of
 * {section, key, parser, offset} items, files read in systemd's order (the
 * main file, then drop-ins *.conf from /etc, /run, /usr/local/lib and
 * /usr/lib, a drop-in in an earlier directory masking one of the same name
 * in a later one, all sorted by file name), later assignments win, and an
 * empty assignment resets a list.
 *
 * Errors name file:line, the assignment, and the valid form. Errors in
 * templated sections ([Trigger:NAME]) are handed to the template's
 * invalidate() hook and parsing goes on, so one bad trigger does not stop
 * the others from loading; errors anywhere else fail the whole parse.
 */

#include "common/basic/macro.h"
#include "common/basic/strv.h" /* lists (config_parse_strv, config_files_list) */
#include "common/basic/time-util.h"

typedef struct ConfigParserContext {
        const char *filename;
        unsigned line;
        const char *section;
        const char *key;
        const void *arg; /* the item's extra argument (enum names, bounds...) */
} ConfigParserContext;

/* Parse rvalue into field. On bad input return -EINVAL (or -ERANGE) and set
 * *ret_valid to a malloc'ed description of the valid form
 * ("a size with optional K, M, G or T suffix, e.g. 4M"). */
typedef int (*ConfigParser)(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);

typedef struct ConfigItem {
        const char *section; /* "Trace", or "Trigger:" to match every [Trigger:NAME] */
        const char *key;
        ConfigParser parse;
        size_t offset; /* into the section's object (userdata, or what new_object returned) */
        const void *arg;
} ConfigItem;

typedef struct ConfigSectionTemplate {
        const char *prefix; /* "Trigger:" */
        /* Called when a [PREFIX NAME] header is seen. Returns the object the
         * section's items are parsed into (the same one for a repeated
         * name), or NULL with *ret_error set. */
        void *(*new_object)(const char *name, const char *filename, unsigned line, void *userdata,
                            char **ret_error);
        /* An error in this section; the object should be marked unusable. */
        void (*invalidate)(void *object, const char *error, void *userdata);
} ConfigSectionTemplate;

/* The files to read: main_path (if it exists) then the drop-ins. With
 * dropin_dirs == NULL, drop-ins come from "<main_path>.d/". */
int config_files_list(const char *main_path, const char *const *dropin_dirs, char ***ret);

/* The default drop-in directories for ptraced.conf, systemd's order. */
extern const char *const config_default_dropin_dirs[];

/* Parse files (NULL-terminated) in order. Missing files are skipped. On a
 * fatal error returns -EINVAL and *ret_error holds the message. Non-fatal
 * errors (in templated sections) are appended to *ret_warnings when given. */
int config_parse_files(const ConfigItem *items, const ConfigSectionTemplate *templates, char *const *files,
                       void *userdata, char ***ret_warnings, char **ret_error);

/* for tests: parse one in-memory buffer as if it were file `name`; the
 * programs read files (config_parse_files()), tests and the fuzz target
 * hand their text over directly. */
int config_parse_text(const ConfigItem *items, const ConfigSectionTemplate *templates, const char *name,
                        const char *text, void *userdata, char ***ret_warnings, char **ret_error);

/* Typed parsers. Field types: bool, uint64_t (size), usec_t, uint64_t,
 * uint32_t, int, char* (string, replaced), char** (list of words, appended;
 * empty resets), int (enum: arg is a NULL-terminated const char *const[]
 * of names, the index is stored). */
int config_parse_bool(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_size(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_duration(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_uint64(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_uint32(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_string(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_strv(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
int config_parse_enum(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
/* An absolute path ("/..."); stored as char*. */
int config_parse_path(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);
/* Octal file mode such as 0660; stored as uint32_t. */
int config_parse_mode(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid);

