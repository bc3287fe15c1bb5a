/* SPDX-License-Identifier: MIT */

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>

#include "client/decode/plt.h"
#include "client/decode/symbols.h"
#include "client/decode/symtab.h"
#include "common/perf/record.h"

/* kallsyms gives no sizes: a symbol is taken to reach to the next one, but
 * not further than this (past the last symbol of a region). */
#define KSYM_MAX_SPAN (UINT64_C(1) << 20)

typedef struct KSym {
        uint64_t addr;
        const char *name;
        const char *module; /* NULL for the kernel proper */
} KSym;

typedef struct ImageSyms {
        Dwfl *dwfl;
        Dwfl_Module *mod;
        bool tried;
        U64Map cache; /* link vaddr -> DecodeSymbol* */
        DecodeSymtab *symtab; /* NULL: ask dwfl_module_addrinfo() */
        DecodePltEntry *plt; /* the PLT stubs, which no symbol table names */
        size_t n_plt;
} ImageSyms;

struct DecodeSymbolizer {
        DecodeImages *im;
        const DecodeContext *ctx;
        const DecodeInput *in;
        DecodeSymbolizerOptions opts;
        pthread_mutex_t lock;
        StrPool strings;
        KSym *ksyms;
        size_t n_ksyms;
        U64Map kcache;    /* kernel addr -> DecodeSymbol* */
        U64Map nocache;   /* (view, addr) hash -> DecodeSymbol* for addresses without an image */
        ImageSyms *images; /* by image index */
        size_t n_images;
        DecodeSymbol **all; /* everything allocated, to free */
        size_t n_all, allocated_all;
};

/* Where an image's separate debug file is: the one its bundle carries
 * first; else libdw's standard search (by build-id under
 * /usr/lib/debug/.build-id, then by .gnu_debuglink beside the file and
 * under /usr/lib/debug/DIR, then debuginfod when DEBUGINFOD_URLS is set,
 * with its cache), which also reads MiniDebugInfo (.gnu_debugdata) and
 * falls back to .dynsym; and that search again under the image's name on
 * the host that ran it, since a bundle's images are memfds whose
 * directory is nowhere. *userdata is the image (image_syms()). */
static int find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                          const char *file_name, const char *debuglink_file, GElf_Word debuglink_crc,
                          char **debuginfo_file_name) {
        const DecodeLoadedImage *li = *userdata;
        const char *captured = li ? decode_loaded_image_debug_path(li) : NULL;
        int fd;

        if (captured) {
                fd = open(captured, O_RDONLY | O_CLOEXEC);
                if (fd >= 0) {
                        *debuginfo_file_name = strdup(captured);
                        return fd;
                }
        }
        fd = dwfl_standard_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file, debuglink_crc,
                                          debuginfo_file_name);
        /* Again only for the debuglink: the build-id search (and
         * debuginfod) do not depend on the file's name. */
        if (fd >= 0 || !debuglink_file || !modname || modname[0] != '/' || streq_ptr(modname, file_name))
                return fd;
        return dwfl_standard_find_debuginfo(mod, userdata, modname, base, modname, debuglink_file, debuglink_crc,
                                            debuginfo_file_name);
}

static const Dwfl_Callbacks dwfl_callbacks = {
        .find_elf = dwfl_build_id_find_elf,
        .find_debuginfo = find_debuginfo,
        .section_address = dwfl_offline_section_address,
};

DecodeSymbolizer *decode_symbolizer_free(DecodeSymbolizer *s) {
        if (!s)
                return NULL;
        for (size_t i = 0; i < s->n_images; i++) {
                if (s->images[i].dwfl)
                        dwfl_end(s->images[i].dwfl);
                u64map_done(&s->images[i].cache);
                decode_symtab_free(s->images[i].symtab);
                free(s->images[i].plt);
        }
        free(s->images);
        for (size_t i = 0; i < s->n_all; i++)
                free(s->all[i]);
        free(s->all);
        u64map_done(&s->kcache);
        u64map_done(&s->nocache);
        free(s->ksyms);
        strpool_done(&s->strings);
        pthread_mutex_destroy(&s->lock);
        return mfree(s);
}

static int ksym_cmp(const void *a, const void *b) {
        const KSym *x = a, *y = b;

        if (x->addr != y->addr)
                return x->addr < y->addr ? -1 : 1;
        /* Prefer global names over local ones at the same address: they
         * are what a reader knows (and sort deterministically). */
        return strcmp(x->name, y->name);
}

/* Lines "ffffffff81000000 T _text" or "ffffffffc0000000 t foo\t[mod]". Lines
 * that do not parse are skipped: /proc/kallsyms is text a bundle carries. */
static int parse_kallsyms(DecodeSymbolizer *s, const char *text, size_t size) {
        const char *p = text, *end = text + size;
        size_t allocated = 0;

        while (p < end) {
                const char *eol = memchr(p, '\n', end - p) ?: end;
                const char *q = p, *name, *name_end, *mod = NULL, *mod_end = NULL;
                uint64_t addr = 0;
                char type;
                int digits = 0;

                for (; q < eol && digits < 16; q++, digits++) {
                        int v;
                        if (*q >= '0' && *q <= '9')
                                v = *q - '0';
                        else if (*q >= 'a' && *q <= 'f')
                                v = *q - 'a' + 10;
                        else if (*q >= 'A' && *q <= 'F')
                                v = *q - 'A' + 10;
                        else
                                break;
                        addr = addr << 4 | v;
                }
                if (digits == 0 || q + 3 > eol || q[0] != ' ' || q[2] != ' ')
                        goto next;
                type = q[1];
                if (!strchr("TtWw", type) || addr == 0)
                        goto next;
                name = q + 3;
                name_end = name;
                while (name_end < eol && *name_end != '\t' && *name_end != ' ')
                        name_end++;
                if (name_end == name)
                        goto next;
                if (name_end < eol) {
                        mod = memchr(name_end, '[', eol - name_end);
                        if (mod) {
                                mod_end = memchr(mod, ']', eol - mod);
                                if (!mod_end)
                                        mod = NULL;
                        }
                }
                if (s->n_ksyms == allocated) {
                        size_t n = allocated ? allocated * 2 : 4096;
                        KSym *k = reallocarray(s->ksyms, n, sizeof(KSym));
                        if (!k)
                                return -ENOMEM;
                        s->ksyms = k;
                        allocated = n;
                }
                s->ksyms[s->n_ksyms] = (KSym){ .addr = addr };
                s->ksyms[s->n_ksyms].name = strpool_intern(&s->strings, name, name_end - name);
                if (mod)
                        s->ksyms[s->n_ksyms].module = strpool_intern(&s->strings, mod, mod_end - mod + 1);
                if (!s->ksyms[s->n_ksyms].name || (mod && !s->ksyms[s->n_ksyms].module))
                        return -ENOMEM;
                s->n_ksyms++;
        next:
                p = eol + 1;
        }
        if (s->n_ksyms > 1)
                qsort(s->ksyms, s->n_ksyms, sizeof(KSym), ksym_cmp);
        return 0;
}

/* Kernel code the kernel announced in the side-band (KSYMBOL records: BPF
 * programs its JIT compiled, BPF trampolines and dispatchers), named as
 * perf names it (machine__process_ksymbol_register() in perf's
 * util/machine.c takes the record's name, "bpf_prog_<tag>_<name>"). Their
 * code is in the bundle's kernel text copy, which covers the [bpf]
 * ranges. Programs unloaded keep their names: an address reused by a
 * later program is named by the one registered last. */
static int add_ksymbol_records(DecodeSymbolizer *s, const DecodeInput *in) {
        size_t n0 = s->n_ksyms;

        DECODE_FOREACH(sb, in->sidebands, in->n_sidebands) {
                PerfRecordStream st;
                const void *rec;
                size_t size;

                perf_record_stream_init(&st, sb->data, sb->size);
                while (perf_record_stream_next(&st, &rec, &size) > 0) {
                        PerfRecord r;
                        KSym *k;

                        if (perf_record_parse(rec, size, sb->sample_type, sb->sample_id_all, &r) < 0 ||
                            r.type != PERF_RECORD_KSYMBOL || (r.ksymbol.flags & PERF_RECORD_KSYMBOL_FLAGS_UNREGISTER) ||
                            !r.ksymbol.name || !r.ksymbol.name[0] || r.ksymbol.addr < DECODE_KERNEL_START)
                                continue;
                        k = reallocarray(s->ksyms, s->n_ksyms + 1, sizeof(KSym));
                        if (!k)
                                return -ENOMEM;
                        s->ksyms = k;
                        s->ksyms[s->n_ksyms] = (KSym){
                                .addr = r.ksymbol.addr,
                                .name = strpool_intern(&s->strings, r.ksymbol.name, strlen(r.ksymbol.name)),
                                .module = strpool_intern(&s->strings, "[bpf]", 5),
                        };
                        if (!s->ksyms[s->n_ksyms].name || !s->ksyms[s->n_ksyms].module)
                                return -ENOMEM;
                        s->n_ksyms++;
                }
        }
        if (s->n_ksyms > n0 && s->n_ksyms > 1)
                qsort(s->ksyms, s->n_ksyms, sizeof(KSym), ksym_cmp);
        return 0;
}

int decode_symbolizer_new(DecodeImages *im, const DecodeContext *ctx, const DecodeInput *in,
                          const DecodeSymbolizerOptions *opts, DecodeSymbolizer **ret) {
        _cleanup_(decode_symbolizer_freep) DecodeSymbolizer *s = NULL;
        int r;

        s = calloc(1, sizeof(*s));
        if (!s)
                return -ENOMEM;
        pthread_mutex_init(&s->lock, NULL);
        s->im = im;
        s->ctx = ctx;
        s->in = in;
        if (opts)
                s->opts = *opts;
        s->n_images = in->n_images;
        s->images = calloc(in->n_images ?: 1, sizeof(ImageSyms));
        if (!s->images)
                return -ENOMEM;
        if (in->kallsyms) {
                r = parse_kallsyms(s, in->kallsyms, in->kallsyms_size);
                if (r < 0)
                        return r;
        }
        r = add_ksymbol_records(s, in);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(s);
        return 0;
}

bool decode_symbolizer_has_kallsyms(const DecodeSymbolizer *s) {
        return s->n_ksyms > 0;
}

static const KSym *ksym_find(const DecodeSymbolizer *s, uint64_t addr) {
        size_t lo = 0, hi = s->n_ksyms;

        while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (s->ksyms[mid].addr <= addr)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        if (lo == 0)
                return NULL;
        /* Several names at one address: take the first (sorted by name). */
        lo--;
        while (lo > 0 && s->ksyms[lo - 1].addr == s->ksyms[lo].addr)
                lo--;
        if (addr - s->ksyms[lo].addr >= KSYM_MAX_SPAN)
                return NULL;
        return &s->ksyms[lo];
}

static DecodeSymbol *new_symbol(DecodeSymbolizer *s) {
        DecodeSymbol *d;

        if (s->n_all == s->allocated_all) {
                size_t n = s->allocated_all ? s->allocated_all * 2 : 1024;
                DecodeSymbol **l = reallocarray(s->all, n, sizeof(DecodeSymbol *));
                if (!l)
                        return NULL;
                s->all = l;
                s->allocated_all = n;
        }
        d = calloc(1, sizeof(*d));
        if (!d)
                return NULL;
        s->all[s->n_all++] = d;
        return d;
}

static const char *intern(DecodeSymbolizer *s, const char *str) {
        return str ? strpool_intern(&s->strings, str, strlen(str)) : NULL;
}

/* The function containing link, as dwfl_module_addrinfo() names it
 * (through the module's sorted table where it can mirror libdw). */
static const char *image_addr_name(DecodeSymbolizer *s, ImageSyms *is, uint64_t link, uint64_t *ret_offset) {
        const char *name = NULL;
        GElf_Off off = 0;
        GElf_Sym sym;
        int r = is->symtab ? decode_symtab_lookup(is->symtab, link, &name, ret_offset) : -EOPNOTSUPP;

        if (r >= 0)
                return name ? intern(s, name) : NULL;
        name = dwfl_module_addrinfo(is->mod, link, &off, &sym, NULL, NULL, NULL);
        *ret_offset = off;
        return name ? intern(s, name) : NULL;
}

static ImageSyms *image_syms(DecodeSymbolizer *s, const DecodeLoadedImage *li) {
        size_t idx = decode_loaded_image_index(li);
        ImageSyms *is;

        if (idx >= s->n_images)
                return NULL;
        is = &s->images[idx];
        if (!is->tried) {
                is->tried = true;
                if (decode_loaded_image_is_elf(li)) {
                        is->dwfl = dwfl_begin(&dwfl_callbacks);
                        if (is->dwfl) {
                                dwfl_report_begin(is->dwfl);
                                /* Base 0: module addresses are the image's link-time addresses. */
                                is->mod = dwfl_report_elf(is->dwfl, decode_loaded_image_name(li),
                                                          decode_loaded_image_path(li), -1, 0, false);
                                dwfl_report_end(is->dwfl, NULL, NULL);
                                if (is->mod) {
                                        void **userdata = NULL;
                                        (void) dwfl_module_info(is->mod, &userdata, NULL, NULL, NULL, NULL, NULL,
                                                                NULL);
                                        if (userdata)
                                                *userdata = (void *) li;
                                }
                                if (!is->mod) {
                                        dwfl_end(is->dwfl);
                                        is->dwfl = NULL;
                                } else {
                                        GElf_Addr bias;
                                        Elf *elf = dwfl_module_getelf(is->mod, &bias);

                                        /* Without, every new address asks dwfl. */
                                        if (decode_symtab_new(is->mod, &is->symtab) < 0)
                                                is->symtab = NULL;
                                        /* Base 0: the stubs' link-time addresses are what we look up. */
                                        if (elf && bias == 0)
                                                (void) decode_plt_read(elf, &is->plt, &is->n_plt);
                                }
                        }
                }
        }
        return is;
}

/* "inner <- outer" for the inlined subroutines containing addr. */
static const char *inline_chain(DecodeSymbolizer *s, Dwfl_Module *mod, uint64_t addr) {
        Dwarf_Addr bias = 0;
        Dwarf_Die *cu = dwfl_module_addrdie(mod, addr, &bias), *scopes = NULL;
        Buffer b = BUFFER_NULL;
        const char *res = NULL;
        int n;

        if (!cu)
                return NULL;
        n = dwarf_getscopes(cu, addr - bias, &scopes);
        for (int i = 0; i < n; i++) {
                Dwarf_Attribute attr;
                Dwarf_Die origin;
                const char *name;

                if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
                        continue;
                name = dwarf_diename(&scopes[i]);
                if (!name && dwarf_attr_integrate(&scopes[i], DW_AT_abstract_origin, &attr) &&
                    dwarf_formref_die(&attr, &origin))
                        name = dwarf_diename(&origin);
                if (b.size > 0 && buf_puts(&b, " <- ") < 0)
                        goto finish;
                if (buf_puts(&b, name ?: "??") < 0)
                        goto finish;
        }
        if (b.size > 0)
                res = strpool_intern(&s->strings, (const char *) b.data, b.size);
finish:
        free(scopes);
        buffer_done(&b);
        return res;
}

/* "sym@plt", as objdump and perf name a stub. An ifunc's stub names the
 * resolver at its addend where a symbol sits there (perf does the same);
 * else objdump's "*ABS*+0xaddend@plt". */
static const char *plt_name(DecodeSymbolizer *s, ImageSyms *is, const DecodePltEntry *pe) {
        _cleanup_free_ char *name = NULL;
        const char *target = pe->name;
        GElf_Off off = 1;
        GElf_Sym sym;

        if (!target) {
                target = dwfl_module_addrinfo(is->mod, pe->ifunc_addend, &off, &sym, NULL, NULL, NULL);
                if (off != 0)
                        target = NULL;
        }
        if (target ? asprintf(&name, "%s@plt", target) < 0 :
                     asprintf(&name, "*ABS*+0x%" PRIx64 "@plt", pe->ifunc_addend) < 0)
                return NULL;
        return intern(s, name);
}

/* JIT code, named as perf names it: a jitdump code load by its record's
 * name (perf inject --jit makes it the symbol of jitted-<pid>-<index>.so),
 * memory read at dump time by the process's perf map, with
 * /tmp/perf-<pid>.map as its DSO (map__new() in perf's util/map.c
 * turns anonymous memory into that file). */
static void jit_name(DecodeSymbolizer *s, const DecodeSection *sec, uint64_t addr, DecodeSymbol *d) {
        const DecodeImage *img = decode_loaded_image_input(sec->image);
        const DecodeJitSymbol *js;
        char dso[64];

        if (img->symbol) {
                d->name = intern(s, img->symbol);
                d->offset = addr - sec->vaddr;
                return;
        }
        if (!decode_input_has_perf_map(s->in, img->pid))
                return;
        snprintf(dso, sizeof dso, "/tmp/perf-%" PRIu32 ".map", img->pid);
        d->dso = intern(s, dso);
        js = decode_input_jit_symbol(s->in, img->pid, addr);
        if (js) {
                d->name = intern(s, js->name);
                d->offset = addr - js->start;
        }
}

static const DecodeSymbol *lookup_image(DecodeSymbolizer *s, const DecodeSection *sec, uint64_t addr) {
        uint64_t link = sec->link_vaddr + (addr - sec->vaddr);
        ImageSyms *is = image_syms(s, sec->image);
        DecodeSymbol *d;

        if (!is)
                return NULL;
        d = u64map_get(&is->cache, link);
        if (d)
                return d;
        d = new_symbol(s);
        if (!d)
                return NULL;
        d->dso = intern(s, decode_loaded_image_name(sec->image));
        if (decode_loaded_image_input(sec->image)->has_pid)
                jit_name(s, sec, addr, d);
        else if (is->mod) {
                const DecodePltEntry *pe = decode_plt_find(is->plt, is->n_plt, link);
                uint64_t off = pe ? link - pe->addr : 0;
                const char *name = pe ? plt_name(s, is, pe) : image_addr_name(s, is, link, &off);

                if (name) {
                        d->name = name;
                        d->offset = off;
                }
                if (s->opts.want_srcline) {
                        Dwfl_Line *line = dwfl_module_getsrc(is->mod, link);
                        if (line) {
                                int lineno = 0;
                                const char *file = dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL);
                                d->file = intern(s, file);
                                d->line = lineno;
                        }
                }
                if (s->opts.want_inline)
                        d->inlined = inline_chain(s, is->mod, link);
        }
        (void) u64map_put(&is->cache, link, d);
        return d;
}

/* The side-band's announcement of a symbol at addr (KSYMBOL): a BPF
 * program loaded or unloaded in the window, which kallsyms from the
 * trigger may not name. perf's machine__process_ksymbol_register() maps
 * each at its address as records come; lookups here carry no time, so the
 * latest registration covering addr names it, also after its
 * unregistration (the trace may have run it before). */
static const DecodeKsym *sideband_ksym(const DecodeSymbolizer *s, uint64_t addr) {
        if (!s->ctx)
                return NULL;
        for (size_t i = s->ctx->n_ksyms; i > 0; i--) {
                const DecodeKsym *k = &s->ctx->ksyms[i - 1];
                if (!k->unregister && addr >= k->addr && addr - k->addr < k->len)
                        return k;
        }
        return NULL;
}

static const DecodeSymbol *lookup_kernel(DecodeSymbolizer *s, uint64_t addr) {
        const DecodeKsym *sk = sideband_ksym(s, addr);
        const KSym *k = sk ? NULL : ksym_find(s, addr);
        DecodeSymbol *d = u64map_get(&s->kcache, addr);

        if (d)
                return d;
        d = new_symbol(s);
        if (!d)
                return NULL;
        if (sk) {
                d->name = intern(s, sk->name);
                d->offset = addr - sk->addr;
                d->dso = intern(s, sk->bpf ? "[bpf]" : "[kernel.kallsyms]");
        } else if (k) {
                d->name = k->name;
                d->offset = addr - k->addr;
                d->dso = k->module ?: intern(s, "[kernel.kallsyms]");
        } else
                d->dso = intern(s, "[kernel.kallsyms]");
        (void) u64map_put(&s->kcache, addr, d);
        return d;
}

/* A time at which v's version of p's address space holds. Without time
 * conversion the view is every version at once (DECODE_VERSION_ALL), later
 * mappings on top: a time after every change names the mapping that is on
 * top, the one still mapped at the end. */
static uint64_t view_time(const DecodeProcess *p, const DecodeView *v) {
        if (v->version == DECODE_VERSION_ALL)
                return DECODE_TIME_UNKNOWN;
        return v->version == 0 ? 0 : decode_process_version_time(p, v->version - 1);
}

const DecodeSymbol *decode_symbolizer_lookup(DecodeSymbolizer *s, const DecodeView *v, uint64_t addr) {
        const DecodeSection *sec = v ? decode_view_find(v, addr) : NULL;
        const DecodeSymbol *res = NULL;

        pthread_mutex_lock(&s->lock);
        if (addr >= DECODE_KERNEL_START && (s->n_ksyms > 0 || (s->ctx && s->ctx->n_ksyms > 0)))
                res = lookup_kernel(s, addr);
        else if (sec)
                res = lookup_image(s, sec, addr);
        if (!res) {
                /* No image: name the mapping the side-band knows, if any. */
                uint64_t key = hash_u64(addr) ^ (uint64_t) (uintptr_t) v;
                DecodeSymbol *d = u64map_get(&s->nocache, key);
                if (!d && (d = new_symbol(s))) {
                        const DecodeProcess *p = v ? decode_context_process(s->ctx, v->pid) : NULL;
                        const DecodeMapping *m = p ? decode_process_mapping_at(p, addr, view_time(p, v), NULL) : NULL;
                        if (addr >= DECODE_KERNEL_START)
                                d->dso = intern(s, "[kernel.kallsyms]");
                        else if (m)
                                d->dso = m->filename;
                        (void) u64map_put(&s->nocache, key, d);
                }
                res = d;
        }
        pthread_mutex_unlock(&s->lock);
        return res;
}

const char *decode_symbolizer_kernel_name(DecodeSymbolizer *s, uint64_t addr, uint64_t *ret_offset) {
        const KSym *k = ksym_find(s, addr);

        if (!k)
                return NULL;
        if (ret_offset)
                *ret_offset = addr - k->addr;
        return k->name;
}

int decode_symbolizer_kernel_addr(const DecodeSymbolizer *s, const char *name, uint64_t *ret) {
        for (size_t i = 0; i < s->n_ksyms; i++)
                if (streq(s->ksyms[i].name, name) && !s->ksyms[i].module) {
                        *ret = s->ksyms[i].addr;
                        return 0;
                }
        return -ENOENT;
}
