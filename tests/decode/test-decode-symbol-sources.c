/* SPDX-License-Identifier: MIT */

/* Where function names come from (issue 18): PLT stubs named "sym@plt"
 * exactly where objdump names them (.plt, .plt.sec, .plt.got), and the
 * local functions of a stripped image from a separate debug file found by
 * build-id, by .gnu_debuglink (also for an image opened under another
 * name, as bundles open theirs), from MiniDebugInfo (.gnu_debugdata), and
 * from a debuginfod server when DEBUGINFOD_URLS is set.
 * The stripped images and their debug files are built here with gcc,
 * objcopy, strip and xz, from the symbolizer fixture. */

#include <fcntl.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/wait.h>

#include "client/decode/symbols.h"
#include "common/basic/elf-util.h"
#include "common/basic/fileio.h"
#include "decode-test-util.h"

static const char *fixture;
static char dir[] = "/tmp/test-symbol-sources-XXXXXX";

typedef struct Syms {
        DecodeInput *in;
        DecodeContext *ctx;
        DecodeImages *im;
        DecodeSymbolizer *sym;
        const DecodeView *v;
} Syms;

/* path: what to open; name: the file's name on the host that ran it. */
static void syms_open(Syms *s, const char *path, const char *name) {
        DecodeImage img = { .fd = -EBADF, .kind = DECODE_IMAGE_ELF };

        ASSERT_OK(decode_input_new("t", &s->in));
        img.path = strdup(path);
        img.name = strdup(name);
        ASSERT_OK(decode_input_add_image(s->in, &img));
        ASSERT_OK(decode_context_new(s->in, &s->ctx));
        ASSERT_OK(decode_images_new(s->in, s->ctx, &s->im));
        ASSERT_OK(decode_symbolizer_new(s->im, s->ctx, s->in, NULL, &s->sym));
        /* Without side-band the image sits at its link addresses. */
        ASSERT_OK(decode_images_view(s->im, DECODE_PID_UNKNOWN, 0, &s->v, NULL, NULL));
}

static void syms_close(Syms *s) {
        decode_symbolizer_free(s->sym);
        decode_images_free(s->im);
        decode_context_free(s->ctx);
        decode_input_free(s->in);
        *s = (Syms){};
}

static const char *syms_name(Syms *s, uint64_t addr) {
        return decode_symbolizer_lookup(s->sym, s->v, addr)->name;
}

static void run(const char *fmt, ...) _printf_(1, 2);
static void run(const char *fmt, ...) {
        _cleanup_free_ char *cmd = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        ASSERT_TRUE(vasprintf(&cmd, fmt, ap) >= 0);
        va_end(ap);
        r = system(cmd);
        if (r != 0)
                test_fail("'%s' failed (%d)", cmd, r);
}

static bool have(const char *tool) {
        _cleanup_free_ char *cmd = NULL;

        ASSERT_TRUE(asprintf(&cmd, "command -v %s >/dev/null 2>&1", tool) >= 0);
        return system(cmd) == 0;
}

/* The link-time address of a function, from nm (of the unstripped file). */
static uint64_t nm_addr(const char *file, const char *func) {
        _cleanup_free_ char *cmd = NULL;
        char line[512];
        uint64_t addr = 0;
        FILE *f;

        ASSERT_TRUE(asprintf(&cmd, "nm %s", file) >= 0);
        f = popen(cmd, "r");
        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f)) {
                unsigned long long a;
                char type, name[256];
                if (sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && streq(name, func))
                        addr = a;
        }
        pclose(f);
        if (!addr)
                test_fail("%s not in nm %s", func, file);
        return addr;
}

/* Every "<x@plt>:" label objdump -d puts in the PLT sections is our name
 * at that address, and we name no stub objdump does not. */
static void check_plt_against_objdump(const char *file, size_t min_stubs) {
        _cleanup_free_ char *cmd = NULL;
        Syms s = {};
        char line[512];
        size_t n = 0;
        FILE *f;

        syms_open(&s, file, file);
        ASSERT_TRUE(asprintf(&cmd, "objdump -d -j .plt -j .plt.sec -j .plt.got %s 2>/dev/null", file) >= 0);
        f = popen(cmd, "r");
        ASSERT_NOT_NULL(f);
        while (fgets(line, sizeof line, f)) {
                unsigned long long a;
                char label[256];
                const char *ours;
                size_t len;

                if (sscanf(line, "%llx <%255[^>]>:", &a, label) != 2)
                        continue;
                ours = syms_name(&s, a);
                len = strlen(label);
                if (len <= 4 || !streq(label + len - 4, "@plt")) {
                        /* PLT0 (objdump's "x@plt-0x10"): no stub of any function. */
                        if (ours && strstr(ours, "@plt"))
                                test_fail("%s at 0x%llx: objdump says %s, we say %s", file, a, label, ours);
                } else if (!startswith(label, "*ABS*")) {
                        if (!ours || !streq(ours, label))
                                test_fail("%s at 0x%llx: objdump says %s, we say %s", file, a, label,
                                          ours ?: "(nothing)");
                        /* The whole stub is the symbol, as objdump's next label shows. */
                        ASSERT_STREQ(syms_name(&s, a + 5), label);
                        n++;
                } else {
                        /* An ifunc: named after its resolver where a symbol is there. */
                        if (!ours || !strstr(ours, "@plt"))
                                test_fail("%s at 0x%llx: objdump says %s, we say %s", file, a, label,
                                          ours ?: "(nothing)");
                        n++;
                }
        }
        pclose(f);
        printf("  %s: %zu stubs named as objdump names them\n", file, n);
        if (n < min_stubs)
                test_fail("%s: only %zu stubs, expected at least %zu", file, n, min_stubs);
        syms_close(&s);
}

static void test_plt(void) {
        _cleanup_free_ char *ibt = NULL;

        if (!have("objdump"))
                test_skip("objdump (binutils) is not installed");
        /* Lazy .plt and the .plt.got stub of __cxa_finalize. */
        check_plt_against_objdump(fixture, 2);
        /* IBT: the stubs called are in .plt.sec. */
        ASSERT_TRUE(asprintf(&ibt, "%s/ibt", dir) >= 0);
        run("gcc -O2 -fcf-protection=full -Wl,-z,ibtplt -o %s %s/decode-symbols-fixture.c", ibt, SOURCE_DIR);
        run("objdump -h %s | grep -q ' .plt.sec '", ibt);
        check_plt_against_objdump(ibt, 2);
        /* Distribution binaries: libc's ifunc stubs, a program's. */
        if (access("/usr/bin/bc", R_OK) == 0)
                check_plt_against_objdump("/usr/bin/bc", 10);
        if (access("/usr/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0)
                check_plt_against_objdump("/usr/lib/x86_64-linux-gnu/libc.so.6", 10);
}

/* A copy of the fixture without any symbol table: only a debug file can
 * name fixture_outer (a global function, but not exported: not in .dynsym).
 * The debug file is kept aside, in keep/: libdw also tries NAME.debug
 * beside NAME, so each test puts it where it means to find it. */
static char *stripped_copy(const char *name, char **ret_debug) {
        char *out = NULL, *debug = NULL;

        ASSERT_TRUE(asprintf(&out, "%s/%s", dir, name) >= 0);
        ASSERT_TRUE(asprintf(&debug, "%s/keep/%s.debug", dir, name) >= 0);
        run("mkdir -p %s/keep", dir);
        run("objcopy --only-keep-debug %s %s", fixture, debug);
        run("strip --strip-all -o %s %s", out, fixture);
        *ret_debug = debug;
        return out;
}

static void expect_outer(const char *path, const char *name, bool named) {
        uint64_t outer = nm_addr(fixture, "fixture_outer");
        Syms s = {};

        syms_open(&s, path, name);
        if (named) {
                ASSERT_STREQ(syms_name(&s, outer), "fixture_outer");
                ASSERT_STREQ(syms_name(&s, outer + 1), "fixture_outer");
        } else if (syms_name(&s, outer) && streq(syms_name(&s, outer), "fixture_outer"))
                test_fail("%s: fixture_outer named without its debug file", path);
        syms_close(&s);
}

static void test_stripped_alone(void) {
        _cleanup_free_ char *debug = NULL, *bin = stripped_copy("alone", &debug);

        /* The premise of the next tests: stripped, nothing names it. */
        expect_outer(bin, bin, false);
}

/* The test's own mount namespace with an empty /usr/lib/debug: the
 * host's debug files stay out, and ours can go in. */
static void private_debug_dir(void) {
        if (geteuid() != 0)
                test_skip("needs root for a private mount namespace");
        if (unshare(CLONE_NEWNS) < 0)
                test_skip("unshare(CLONE_NEWNS): %m");
        ASSERT_TRUE(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) >= 0);
        (void) mkdir("/usr/lib/debug", 0755);
        if (mount("tmpfs", "/usr/lib/debug", "tmpfs", 0, "mode=0755") < 0)
                test_skip("cannot mount a tmpfs on /usr/lib/debug: %m");
}

static void test_build_id_dir(void) {
        _cleanup_free_ char *debug = NULL, *bin = stripped_copy("byid", &debug), *hex = NULL;
        uint8_t id[20];
        size_t n = 0;

        ASSERT_OK(elf_util_read_build_id_path(bin, id, sizeof id, &n));
        hex = calloc(2 * n + 1, 1);
        for (size_t i = 0; i < n; i++)
                sprintf(hex + 2 * i, "%02x", id[i]);
        run("mkdir -p /usr/lib/debug/.build-id/%.2s && cp %s /usr/lib/debug/.build-id/%.2s/%s.debug", hex, debug,
            hex, hex + 2);
        expect_outer(bin, bin, true);
        run("rm -rf /usr/lib/debug/.build-id");
}

static void test_debuglink(void) {
        _cleanup_free_ char *debug = NULL, *bin = stripped_copy("linked", &debug), *proc = NULL, *data = NULL;
        size_t size = 0;
        _cleanup_close_ int fd = -EBADF;

        /* No build-id directory entry: only the link finds it, next to the image. */
        run("cd %s && objcopy --add-gnu-debuglink=keep/linked.debug linked && mv keep/linked.debug .", dir);
        expect_outer(bin, bin, true);
        /* A copy in memory (a bundle's images are memfds): the link is
         * looked for beside the image's real name. */
        fd = memfd_create("linked", MFD_CLOEXEC);
        ASSERT_TRUE(fd >= 0);
        ASSERT_OK(read_full_file(bin, 64 << 20, &data, &size));
        ASSERT_TRUE(write(fd, data, size) == (ssize_t) size);
        ASSERT_TRUE(asprintf(&proc, "/proc/self/fd/%d", fd) >= 0);
        expect_outer(proc, bin, true);
        /* And under /usr/lib/debug/<its directory>/, where Debian puts them. */
        run("mkdir -p /usr/lib/debug%s && mv %s/linked.debug /usr/lib/debug%s/", dir, dir, dir);
        expect_outer(proc, bin, true);
        run("rm -rf /usr/lib/debug%s", dir);
}

static void test_minidebuginfo(void) {
        _cleanup_free_ char *bin = NULL;

        if (!have("xz"))
                test_skip("xz is not installed");
        ASSERT_TRUE(asprintf(&bin, "%s/mini", dir) >= 0);
        /* As Fedora builds it: the symbol table alone, xz-compressed, in
         * .gnu_debugdata of the stripped file. */
        run("cd %s && strip --strip-debug -o mini.full %s && objcopy --only-keep-debug mini.full mini.syms && "
            "objcopy --remove-section=.comment mini.syms && xz -f mini.syms && strip --strip-all -o mini %s && "
            "objcopy --add-section .gnu_debugdata=mini.syms.xz mini",
            dir, fixture, fixture);
        expect_outer(bin, bin, true);
}

/* debuginfod, through libdw's own client (it loads libdebuginfod when
 * DEBUGINFOD_URLS is set): a local server hands out the debug file by
 * build-id, and libdw's cache answers once the server is gone. In a child:
 * libdw reads DEBUGINFOD_URLS once per process. */
static void test_debuginfod(void) {
        _cleanup_free_ char *debug = NULL, *bin = stripped_copy("fetched", &debug), *hex = NULL, *url = NULL,
                            *cache = NULL, *log = NULL, *text = NULL;
        uint8_t id[20];
        size_t n = 0;
        unsigned port = 0;
        int status;
        pid_t pid;

        if (!have("python3"))
                test_skip("python3 (the test's debuginfod server) is not installed");
        if (access("/usr/lib/x86_64-linux-gnu/libdebuginfod.so.1", F_OK) < 0)
                test_skip("libdebuginfod1 is not installed: libdw has no debuginfod client");
        ASSERT_OK(elf_util_read_build_id_path(bin, id, sizeof id, &n));
        hex = calloc(2 * n + 1, 1);
        for (size_t i = 0; i < n; i++)
                sprintf(hex + 2 * i, "%02x", id[i]);
        run("mkdir -p %s/srv/buildid/%s && mv %s %s/srv/buildid/%s/debuginfo", dir, hex, debug, dir, hex);
        ASSERT_TRUE(asprintf(&log, "%s/srv.log", dir) >= 0);
        run("cd %s/srv && (python3 -u -m http.server 0 --bind 127.0.0.1 > %s 2>&1 & echo $! > %s/srv.pid)", dir, log,
            dir);
        for (int i = 0; i < 100 && port == 0; i++) {
                const char *p;
                usleep(100 * 1000);
                text = mfree(text);
                if (read_full_file(log, 1 << 16, &text, NULL) >= 0 && (p = strstr(text, " port ")))
                        port = (unsigned) strtoul(p + 6, NULL, 10);
        }
        if (port == 0) {
                run("kill $(cat %s/srv.pid)", dir);
                test_fail("the test's HTTP server did not start: %s", strna(text));
        }
        ASSERT_TRUE(asprintf(&url, "http://127.0.0.1:%u", port) >= 0);
        ASSERT_TRUE(asprintf(&cache, "%s/cache", dir) >= 0);

        pid = fork();
        ASSERT_TRUE(pid >= 0);
        if (pid == 0) {
                setenv("DEBUGINFOD_URLS", url, 1);
                setenv("DEBUGINFOD_CACHE_PATH", cache, 1);
                expect_outer(bin, bin, true);
                /* The server gone: libdw's cache still has it. */
                run("kill $(cat %s/srv.pid)", dir);
                expect_outer(bin, bin, true);
                _exit(0);
        }
        ASSERT_TRUE(waitpid(pid, &status, 0) == pid);
        run("kill $(cat %s/srv.pid) 2>/dev/null || true", dir);
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                test_fail("debuginfod child failed (status %d)", status);
        run("test -f %s/%s/debuginfo", cache, hex);
        /* Without DEBUGINFOD_URLS nothing is fetched: never required. */
        expect_outer(bin, bin, false);
}

int main(int argc, char **argv) {
        if (argc < 2)
                test_skip("usage: test-decode-symbol-sources FIXTURE");
        fixture = argv[1];
        if (access(fixture, R_OK) < 0)
                test_skip("fixture %s missing", fixture);
        if (!have("objcopy") || !have("strip") || !have("nm") || !have("gcc"))
                test_skip("needs gcc and binutils (objcopy, strip, nm)");
        ASSERT_NOT_NULL(mkdtemp(dir));
        /* Only the sources each test sets up: no debuginfod server from
         * the environment (Debian's libdebuginfod-common sets one in
         * login shells). */
        unsetenv("DEBUGINFOD_URLS");
        printf("== test_plt\n");
        test_plt();
        /* Everything below in a private /usr/lib/debug. */
        private_debug_dir();
        printf("== test_stripped_alone\n");
        test_stripped_alone();
        printf("== test_build_id_dir\n");
        test_build_id_dir();
        printf("== test_debuglink\n");
        test_debuglink();
        printf("== test_minidebuginfo\n");
        test_minidebuginfo();
        printf("== test_debuginfod\n");
        test_debuginfod();
        run("rm -rf %s", dir);
        return 0;
}
