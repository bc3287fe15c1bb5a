/* SPDX-License-Identifier: MIT */

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "common/basic/buffer.h"
#include "common/basic/conf-parser.h"
#include "common/basic/fileio.h"
#include "common/basic/parse-util.h"
#include "common/basic/string-util.h"
#include "common/basic/strv.h"

/* ptraced.conf is a few KiB; refuse anything absurd rather than reading a
 * device or a runaway file into memory. */
#define CONFIG_FILE_MAX (4U * 1024U * 1024U)
#define CONFIG_LINE_MAX (64U * 1024U)

const char *const config_default_dropin_dirs[] = {
        PTRACED_SYSCONFDIR "/ptraced.conf.d",
        "/run/ptraced.conf.d",
        "/usr/local/lib/ptraced.conf.d",
        "/usr/lib/ptraced.conf.d",
        NULL,
};

/* ---- typed parsers ---- */

int config_parse_bool(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (parse_bool(rvalue, field) < 0) {
                *ret_valid = strdup("a boolean: yes/no, true/false, on/off or 1/0");
                return -EINVAL;
        }
        return 0;
}

int config_parse_size(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (parse_size(rvalue, field) < 0) {
                *ret_valid = strdup("a size in bytes with optional K, M, G or T suffix, e.g. 4M");
                return -EINVAL;
        }
        return 0;
}

int config_parse_duration(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (parse_duration(rvalue, field) < 0) {
                *ret_valid = strdup("a duration with unit us, ms, s, min or h, e.g. 20ms");
                return -EINVAL;
        }
        return 0;
}

int config_parse_uint64(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (parse_uint64(rvalue, field) < 0) {
                *ret_valid = strdup("a non-negative integer");
                return -EINVAL;
        }
        return 0;
}

int config_parse_uint32(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (parse_uint32(rvalue, field) < 0) {
                *ret_valid = strdup("a non-negative integer below 2^32");
                return -EINVAL;
        }
        return 0;
}

int config_parse_string(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        char **s = field;
        char *n = NULL;

        if (*rvalue) {
                n = strdup(rvalue);
                if (!n)
                        return -ENOMEM;
        }
        free(*s);
        *s = n;
        return 0;
}

int config_parse_path(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        if (*rvalue && rvalue[0] != '/') {
                *ret_valid = strdup("an absolute path starting with /");
                return -EINVAL;
        }
        return config_parse_string(ctx, rvalue, field, ret_valid);
}

int config_parse_mode(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        unsigned long v;
        char *end;

        errno = 0;
        v = strtoul(rvalue, &end, 8);
        if (!*rvalue || errno != 0 || *end != 0 || v > 07777) {
                *ret_valid = strdup("an octal file mode such as 0660");
                return -EINVAL;
        }
        *(uint32_t *) field = (uint32_t) v;
        return 0;
}

int config_parse_strv(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        char ***l = field;
        _cleanup_strv_free_ char **words = NULL;
        int r;

        if (!*rvalue) {
                strv_free(*l);
                *l = NULL;
                return 0;
        }
        r = strv_split_words(rvalue, &words);
        if (r < 0)
                return r;
        for (char **w = words; *w; w++) {
                r = strv_extend(l, *w);
                if (r < 0)
                        return r;
        }
        return 0;
}

int config_parse_enum(const ConfigParserContext *ctx, const char *rvalue, void *field, char **ret_valid) {
        const char *const *names = ctx->arg;
        size_t len = 0;

        for (size_t i = 0; names[i]; i++)
                if (streq(rvalue, names[i])) {
                        *(int *) field = (int) i;
                        return 0;
                }

        for (size_t i = 0; names[i]; i++)
                len += strlen(names[i]) + 2;
        char *v = malloc(len + 16);
        if (!v)
                return -ENOMEM;
        strcpy(v, "one of: ");
        for (size_t i = 0; names[i]; i++) {
                if (i > 0)
                        strcat(v, ", ");
                strcat(v, names[i]);
        }
        *ret_valid = v;
        return -EINVAL;
}

/* ---- files ---- */

static int cmp_basename(const void *a, const void *b) {
        const char *x = strrchr(*(char *const *) a, '/'), *y = strrchr(*(char *const *) b, '/');
        return strcmp(x ? x + 1 : *(char *const *) a, y ? y + 1 : *(char *const *) b);
}

int config_files_list(const char *main_path, const char *const *dropin_dirs, char ***ret) {
        _cleanup_strv_free_ char **files = NULL, **dropins = NULL, **own_dirs = NULL;
        int r;

        files = calloc(1, sizeof(char *));
        dropins = calloc(1, sizeof(char *));
        if (!files || !dropins)
                return -ENOMEM;

        if (main_path) {
                r = strv_extend(&files, main_path);
                if (r < 0)
                        return r;
        }

        if (!dropin_dirs) {
                if (!main_path) {
                        *ret = TAKE_PTR(files);
                        return 0;
                }
                r = strv_consume(&own_dirs, strdup_printf("%s.d", main_path));
                if (r < 0)
                        return r;
                dropin_dirs = (const char *const *) own_dirs;
        }

        /* Earlier directories win over later ones for the same file name. */
        for (const char *const *d = dropin_dirs; *d; d++) {
                DIR *dir = opendir(*d);
                struct dirent *de;

                if (!dir)
                        continue;
                while ((de = readdir(dir))) {
                        const char *name = de->d_name;
                        size_t l = strlen(name);
                        bool shadowed = false;

                        if (name[0] == '.' || l < 6 || !streq(name + l - 5, ".conf"))
                                continue;
                        for (char **f = dropins; *f; f++)
                                if (streq(strrchr(*f, '/') + 1, name))
                                        shadowed = true;
                        if (shadowed)
                                continue;
                        r = strv_consume(&dropins, strdup_printf("%s/%s", *d, name));
                        if (r < 0) {
                                closedir(dir);
                                return r;
                        }
                }
                closedir(dir);
        }

        qsort(dropins, strv_length(dropins), sizeof(char *), cmp_basename);
        for (char **f = dropins; *f; f++) {
                r = strv_extend(&files, *f);
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(files);
        return 0;
}

/* ---- parsing ---- */

typedef struct ParseState {
        const ConfigItem *items;
        const ConfigSectionTemplate *templates;
        void *userdata;
        char ***warnings;
        char *section;                          /* current section name, NULL before the first */
        const ConfigSectionTemplate *template;  /* when the section is templated */
        void *object;                           /* base for items of the section; NULL for a refused
                                                 * templated section */
} ParseState;

static char *strip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

/* Messages quote the file's own text, which may hold anything (issue 17:
 * binary garbage reached the terminal raw): controls and invalid UTF-8
 * are escaped before a message leaves the parser. */
static char *escape_message(char *msg) {
        char *e;

        if (!msg)
                return NULL;
        e = escape_string(msg, 0);
        free(msg);
        return e;
}

static int warn(ParseState *st, char *msg) {
        msg = escape_message(msg);
        if (!msg)
                return -ENOMEM;
        if (st->warnings)
                return strv_consume(st->warnings, msg);
        free(msg);
        return 0;
}

/* An error in a templated section stays local; elsewhere it is fatal. */
static int report(ParseState *st, char *msg, char **ret_error) {
        msg = escape_message(msg);
        if (!msg)
                return -ENOMEM;
        if (st->template) {
                if (st->object && st->template->invalidate)
                        st->template->invalidate(st->object, msg, st->userdata);
                return warn(st, msg);
        }
        *ret_error = msg;
        return -EINVAL;
}

static int parse_section_header(ParseState *st, const char *filename, unsigned line, char *l,
                                char **ret_error) {
        size_t n = strlen(l);
        char *name;

        if (n < 3 || l[n - 1] != ']')
                return report(st,
                              strdup_printf("%s:%u: invalid section header '%s': expected [Section]", filename,
                                            line, l),
                              ret_error);
        l[n - 1] = 0;
        name = strip(l + 1);

        free(st->section);
        st->section = strdup(name);
        if (!st->section)
                return -ENOMEM;
        st->template = NULL;
        st->object = st->userdata;

        for (const ConfigSectionTemplate *t = st->templates; t && t->prefix; t++) {
                const char *suffix = startswith(name, t->prefix);
                char *err = NULL;

                if (!suffix)
                        continue;
                st->template = t;
                /* A refused header leaves object NULL: its lines are skipped. */
                st->object = NULL;
                if (!*suffix)
                        return warn(st, strdup_printf("%s:%u: section [%s] needs a name: expected [%sNAME]",
                                                      filename, line, name, t->prefix));
                st->object = t->new_object(suffix, filename, line, st->userdata, &err);
                if (!st->object) {
                        if (!err)
                                return -ENOMEM;
                        char *m = strdup_printf("%s:%u: [%s]: %s", filename, line, name, err);
                        free(err);
                        return warn(st, m);
                }
                return 0;
        }

        for (const ConfigItem *i = st->items; i->section; i++)
                if (streq(i->section, name))
                        return 0;

        /* Name the valid sections so a typo is obvious. */
        size_t len = 0;
        for (const ConfigItem *i = st->items; i->section; i++)
                len += strlen(i->section) + 4;
        for (const ConfigSectionTemplate *t = st->templates; t && t->prefix; t++)
                len += strlen(t->prefix) + 10;
        _cleanup_free_ char *valid = calloc(1, len + 1);
        if (!valid)
                return -ENOMEM;
        for (const ConfigItem *i = st->items; i->section; i++) {
                bool seen = false;
                for (const ConfigItem *j = st->items; j < i; j++)
                        if (streq(j->section, i->section))
                                seen = true;
                if (seen)
                        continue;
                if (*valid)
                        strcat(valid, ", ");
                strcat(valid, "[");
                strcat(valid, i->section);
                strcat(valid, "]");
        }
        for (const ConfigSectionTemplate *t = st->templates; t && t->prefix; t++) {
                strcat(valid, ", [");
                strcat(valid, t->prefix);
                strcat(valid, "NAME]");
        }
        return report(st, strdup_printf("%s:%u: unknown section [%s]: valid sections are %s", filename, line, name, valid),
                      ret_error);
}

static int parse_assignment(ParseState *st, const char *filename, unsigned line, char *l, char **ret_error) {
        char *eq = strchr(l, '='), *key, *value;
        const ConfigItem *item = NULL;

        if (!st->section)
                return report(st,
                              strdup_printf("%s:%u: assignment '%s' outside of a section: put it under a [Section] header",
                                            filename, line, l),
                              ret_error);
        if (st->template && !st->object)
                return 0; /* the section was refused; its lines were reported with it */
        if (!eq)
                return report(st, strdup_printf("%s:%u: '%s' is not an assignment: expected Key=Value", filename, line, l),
                              ret_error);

        *eq = 0;
        key = strip(l);
        value = strip(eq + 1);

        for (const ConfigItem *i = st->items; i->section; i++) {
                bool match = st->template ? streq(i->section, st->template->prefix) : streq(i->section, st->section);
                if (match && streq(i->key, key)) {
                        item = i;
                        break;
                }
        }

        if (!item) {
                size_t len = 0;
                const char *sect = st->template ? st->template->prefix : st->section;

                for (const ConfigItem *i = st->items; i->section; i++)
                        if (streq(i->section, sect))
                                len += strlen(i->key) + 3;
                _cleanup_free_ char *valid = calloc(1, len + 1);
                if (!valid)
                        return -ENOMEM;
                for (const ConfigItem *i = st->items; i->section; i++)
                        if (streq(i->section, sect)) {
                                if (*valid)
                                        strcat(valid, ", ");
                                strcat(valid, i->key);
                                strcat(valid, "=");
                        }
                return report(st,
                              strdup_printf("%s:%u: unknown key '%s' in section [%s]: valid keys are %s", filename, line,
                                            key, st->section, valid),
                              ret_error);
        }

        ConfigParserContext ctx = {
                .filename = filename,
                .line = line,
                .section = st->section,
                .key = key,
                .arg = item->arg,
        };
        _cleanup_free_ char *valid = NULL;
        int r = item->parse(&ctx, value, (uint8_t *) st->object + item->offset, &valid);
        if (r == -ENOMEM)
                return r;
        if (r < 0)
                return report(st,
                              strdup_printf("%s:%u: invalid value in %s=%s: expected %s", filename, line, key, value,
                                            valid ?: "a valid value"),
                              ret_error);
        return 0;
}

/* Physical lines joined by a trailing backslash are appended to one
 * buffer, each byte copied once: joining by re-formatting the whole
 * continued line at every step was quadratic (issue 17: 80,000 continued
 * lines took 4.7 s). The logical line is bounded like a physical one. */
static int parse_text(ParseState *st, const char *filename, char *text, char **ret_error) {
        _cleanup_buffer_ Buffer cont = BUFFER_NULL; /* a line continued with a trailing backslash */
        unsigned line = 0;
        char *p = text;

        while (p && *p) {
                char *nl = strchr(p, '\n'), *l;
                size_t len;
                int r;

                if (nl)
                        *nl = 0;
                line++;
                len = strlen(p);
                if (len > CONFIG_LINE_MAX || cont.size + len > CONFIG_LINE_MAX) {
                        *ret_error = strdup_printf("%s:%u: line longer than %u bytes (continuations included)",
                                                   filename, line, CONFIG_LINE_MAX);
                        return -EINVAL;
                }

                if (len > 0 && p[len - 1] == '\\') {
                        p[len - 1] = ' ';
                        if (buffer_append(&cont, p, len) < 0)
                                return -ENOMEM;
                        p = nl ? nl + 1 : NULL;
                        continue;
                }

                if (cont.size > 0) {
                        if (buffer_append(&cont, p, len + 1) < 0) /* with the NUL */
                                return -ENOMEM;
                        l = strip((char *) cont.data);
                } else
                        l = strip(p);

                if (*l == 0 || *l == '#' || *l == ';')
                        r = 0;
                else if (*l == '[')
                        r = parse_section_header(st, filename, line, l, ret_error);
                else
                        r = parse_assignment(st, filename, line, l, ret_error);
                if (r < 0)
                        return r;
                buffer_clear(&cont);

                p = nl ? nl + 1 : NULL;
        }
        return 0;
}

static int parse_one(ParseState *st, const char *filename, const char *text, char **ret_error) {
        _cleanup_free_ char *copy = strdup(text);

        if (!copy)
                return -ENOMEM;
        /* Each file starts outside any section, like systemd's parser. */
        st->section = mfree(st->section);
        st->template = NULL;
        st->object = NULL;
        return parse_text(st, filename, copy, ret_error);
}

int config_parse_text(const ConfigItem *items, const ConfigSectionTemplate *templates, const char *name,
                        const char *text, void *userdata, char ***ret_warnings, char **ret_error) {
        ParseState st = {
                .items = items,
                .templates = templates,
                .userdata = userdata,
                .warnings = ret_warnings,
        };
        int r;

        r = parse_one(&st, name, text, ret_error);
        free(st.section);
        return r;
}

int config_parse_files(const ConfigItem *items, const ConfigSectionTemplate *templates, char *const *files,
                       void *userdata, char ***ret_warnings, char **ret_error) {
        ParseState st = {
                .items = items,
                .templates = templates,
                .userdata = userdata,
                .warnings = ret_warnings,
        };
        int r = 0;

        for (char *const *f = files; f && *f; f++) {
                _cleanup_free_ char *text = NULL;

                r = read_regular_file(*f, CONFIG_FILE_MAX, &text, NULL);
                if (r == -ENOENT) {
                        r = 0;
                        continue;
                }
                if (r == -EBADFD || r == -EISDIR) {
                        *ret_error = escape_message(strdup_printf(
                                "%s: not a regular file (%s): a configuration is read from regular files only",
                                *f, r == -EISDIR ? "a directory" : "a FIFO, socket or device"));
                        r = -EINVAL;
                        break;
                }
                if (r == -EFBIG) {
                        *ret_error = strdup_printf("%s: larger than %u bytes, refusing to read it", *f, CONFIG_FILE_MAX);
                        r = -EINVAL;
                        break;
                }
                if (r < 0) {
                        *ret_error = strdup_printf("%s: cannot read: %s", *f, strerror(-r));
                        break;
                }
                r = parse_one(&st, *f, text, ret_error);
                if (r < 0)
                        break;
        }

        free(st.section);
        return r;
}
