/* SPDX-License-Identifier: MIT */

/*
 * ptraced: the Intel PT flight recorder daemon. run() reads as a recipe:
 * logging and signals, arguments, configuration, the PMU backend, the
 * manager (which owns everything else and sends READY=1 once it is all
 * attached), the event loop.
 */

#include <fcntl.h>
#include <getopt.h>
#include <signal.h>

#include <systemd/sd-daemon.h>

#include "common/basic/fileio.h"
#include "common/basic/log.h"
#include "common/basic/parse-util.h"
#include "common/perf/pmu.h"
#include "common/pt/event-config.h"
#include "daemon/manager/config.h"
#include "daemon/manager/lookback.h"
#include "daemon/manager/manager.h"
#include "daemon/recorder/recorder.h"
#if HAVE_EMULATED_PMU
#include "daemon/sim/backend.h"
#include "daemon/sim/source.h"
#endif

static const char *arg_config = NULL;
static const char *arg_sysfs_root = NULL;
static const char *arg_sim_truth_dir = NULL;
static int arg_source = -1;
static bool arg_check_config = false;

static void help(void) {
        printf("Usage: ptraced [OPTIONS...]\n"
               "\n"
               "Always-on Intel Processor Trace flight recorder.\n"
               "\n"
               "  -h --help              Show this help\n"
               "     --version           Show version\n"
               "     --config FILE       Read FILE (and FILE.d/*.conf) instead of %s\n"
               "                         and its drop-in directories\n"
               "     --source=kernel|sim Where the trace comes from (overrides [Trace] Source=)\n"
               "     --check-config      Load and validate the configuration against the\n"
               "                         PMU, print the effective event, and exit\n"
               "     --sysfs-root DIR    Look for PMUs under DIR instead of /sys (with\n"
               "                         --check-config, for other machines' sysfs trees)\n"
               "     --sim-truth-dir DIR With --source=sim: after each snapshot, write the\n"
               "                         emulated PMU's own record of every CPU's ring to\n"
               "                         DIR/<n>/cpu<N>.pt (tests compare bundles with it)\n"
               "\n"
               "Signals: SIGTERM/SIGINT stop, SIGUSR2 takes a snapshot (reason \"signal\"),\n"
               "SIGHUP reloads the configuration (what can change without a restart).\n"
               "Control: 'ptctl snapshot', 'ptctl status' over %s\n"
               "([Control] Socket=, or the socket systemd passes).\n"
               "See ptraced(8) and ptraced.conf(5).\n",
               PTRACED_CONF_FILE, PTRACED_SOCKET_PATH);
}

static int parse_argv(int argc, char **argv) {
        enum {
                ARG_VERSION = 0x100,
                ARG_CONFIG,
                ARG_CHECK_CONFIG,
                ARG_SYSFS_ROOT,
                ARG_SOURCE,
                ARG_SIM_TRUTH_DIR,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
                { "source", required_argument, NULL, ARG_SOURCE },
                { "sim-truth-dir", required_argument, NULL, ARG_SIM_TRUTH_DIR },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ptraced %s (%s)\n", PACKAGE_VERSION,
                               HAVE_EMULATED_PMU ? "+emulated-pmu" : "-emulated-pmu");
                        return 0;
                case ARG_CONFIG:
                        arg_config = optarg;
                        break;
                case ARG_CHECK_CONFIG:
                        arg_check_config = true;
                        break;
                case ARG_SYSFS_ROOT:
                        arg_sysfs_root = optarg;
                        break;
                case ARG_SOURCE:
                        arg_source = -1;
                        for (int i = 0; trace_source_names[i]; i++)
                                if (streq(optarg, trace_source_names[i]))
                                        arg_source = i;
                        if (arg_source < 0) {
                                log_error("invalid --source=%s: expected kernel or sim", optarg);
                                return -EINVAL;
                        }
                        break;
                case ARG_SIM_TRUTH_DIR:
                        arg_sim_truth_dir = optarg;
                        break;
                case '?':
                        return -EINVAL;
                default:
                        assert(false);
                }

        if (optind < argc) {
                log_error("unexpected argument '%s'; ptraced takes options only, see --help", argv[optind]);
                return -EINVAL;
        }
        return 1;
}

/* The files, then the command line's overrides: at start-up and on every
 * reload (SIGHUP), so both see the same configuration. */
static int load_config(PtracedConfig *c, char ***ret_warnings, char **ret_error, void *userdata) {
        int r;

        r = ptraced_config_load(c, arg_config, ret_warnings, ret_error);
        if (r < 0)
                return r;
        if (arg_source >= 0)
                c->source = arg_source;
        if (arg_sim_truth_dir && c->source != TRACE_SOURCE_SIM)
                return asprintf(ret_error, "--sim-truth-dir needs --source=sim") < 0 ? -ENOMEM : -EINVAL;
        /* The simulated source traces user space only (no kernel code to
         * walk without /proc/kcore): that is its default event, and what
         * the bundles' manifests then say. */
#if HAVE_EMULATED_PMU
        if (c->source == TRACE_SOURCE_SIM && !c->event && !(c->event = strdup(SIM_SOURCE_DEFAULT_EVENT)))
                return -ENOMEM;
#endif
        return 0;
}

static int make_backend(const PtracedConfig *config, PmuBackend **ret) {
        int r = 0;

        if (config->source == TRACE_SOURCE_KERNEL) {
                r = pmu_backend_kernel_new(ret);
                if (r < 0)
                        return log_error_errno(r, "Failed to set up the kernel PMU backend: %m");
                if (arg_sysfs_root) {
                        char *s = strdup(arg_sysfs_root);
                        if (!s)
                                return log_oom();
                        free((*ret)->sysfs_root);
                        (*ret)->sysfs_root = s;
                }
                return 0;
        }

        /* The emulated PMU makes its own sysfs tree: an option that
         * would be ignored is refused. */
        if (arg_sysfs_root)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL),
                                       "--sysfs-root applies to Source=kernel; the emulated PMU (Source=sim) "
                                       "describes itself");
#if HAVE_EMULATED_PMU
        _Static_assert(_PMU_SIM_CPU_MAX == 2, "sim_model_names[] names every PmuSimCpuModel, in order");
        /* The emulated PMU, fed by the trace synthesizer. */
        SimBackendOptions so = {
                .n_cpus = config->sim_cpus,
                .seed = config->sim_seed,
                .bytes_per_sec = config->sim_rate,
                .event = config->event,
                .cpu_model = (PmuSimCpuModel) config->sim_model, /* sim_model_names[] is in this order */
                .keep_truth = arg_sim_truth_dir != NULL,
        };
        _cleanup_free_ char *error = NULL;
        r = sim_backend_new(&so, ret, &error);
        if (r < 0 && error)
                return log_error_errno(r, "Failed to set up the emulated intel_pt PMU: %s", error);
        if (r < 0)
                return log_error_errno(r, "Failed to set up the emulated intel_pt PMU: %m");
        log_notice("Running on the emulated intel_pt PMU (%u CPUs, %" PRIu64 " bytes/s each, %s): every status line "
                   "and bundle says simulated.",
                   config->sim_cpus ?: (unsigned) MAX(sysconf(_SC_NPROCESSORS_ONLN), 1L), config->sim_rate,
                   sim_model_names[config->sim_model]);
        return 0;
#else
        (void) r;
        return log_error_errno(SYNTHETIC_ERRNO(EOPNOTSUPP),
                               "This ptraced was built without the emulated intel_pt PMU (meson option "
                               "emulated-pmu=false): Source=sim is not available.");
#endif
}

#if HAVE_EMULATED_PMU
static void write_sim_truth(Manager *m, const struct RecorderSnapshot *s, uint64_t seq, void *userdata) {
        _cleanup_free_ char *dir = NULL;
        _cleanup_free_ unsigned *cpus = NULL;
        int r;

        cpus = calloc(MAX(s->n_cpus, (size_t) 1), sizeof(unsigned));
        if (!cpus || asprintf(&dir, "%s/%" PRIu64, arg_sim_truth_dir, seq) < 0) {
                log_oom();
                return;
        }
        for (size_t i = 0; i < s->n_cpus; i++)
                cpus[i] = s->cpus[i].cpu;
        r = sim_backend_write_truth(manager_get_backend(m), cpus, s->n_cpus, dir);
        if (r < 0)
                log_warning_errno(r, "Cannot write the simulator's truth to %s, ignoring: %m", dir);
}
#endif

/* Everything start-up would refuse or leave out fails the check: a
 * rejected setting (a warning of the load, "..., ignoring") or trigger is
 * one the daemon would run without (issue 18: 3 of 4 triggers rejected and
 * exit 0, against ptraced(8)). */
static int check_config(const PtracedConfig *config, PmuBackend *backend, char *const *warnings) {
        size_t n_triggers = 0, n_rejected = 0;
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig event = {};
        _cleanup_free_ char *filter = NULL;
        Lookback lookback;
        int r;

        r = ptraced_config_load_event(config, backend->sysfs_root, &pmu, &event);
        if (r < 0)
                return r;
        r = ptraced_config_load_filters(config, pmu, &event, &filter);
        if (r < 0)
                return r;
        /* Every refusal of start-up that depends on the configuration alone
         * (issue 17: --check-config must not pass what start-up refuses). */
        r = ptraced_config_check_memory(config, backend, pmu, &lookback);
        if (r < 0)
                return r;

        printf("source: %s\n", trace_source_names[config->source]);
        printf("pmu: %s (type %u)\n", pmu->name, pmu->type);
        printf("event: %s\n", event.text);
        if (filter)
                printf("filter: %s\n", filter);
        for (const TriggerConfig *t = config->trigger_list; t; t = t->next) {
                printf("trigger %s: %s\n", t->name,
                       t->error ? t->error : trigger_type_names[t->type]);
                n_triggers++;
                n_rejected += !!t->error;
        }
        if (n_rejected > 0)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "%zu of %zu triggers rejected (see above).",
                                       n_rejected, n_triggers);
        if (strv_length(warnings) > 0)
                return log_error_errno(SYNTHETIC_ERRNO(EINVAL), "%zu settings rejected (see above).",
                                       strv_length(warnings));
        return 0;
}

static int run(int argc, char **argv) {
        _cleanup_(ptraced_config_done) PtracedConfig config;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_(pmu_backend_freep) PmuBackend *backend = NULL;
        _cleanup_(manager_freep) Manager *m = NULL;
        int r, n_fds;

        log_open();
        /* Before any thread exists: the emulated PMU's producers, the dump
         * and copy threads. */
        manager_block_signals();
        ptraced_config_init(&config);

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = load_config(&config, &warnings, &error, NULL);
        if (r < 0 && error)
                return log_error_errno(r, "%s", error);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration: %m");
        for (char **w = warnings; w && *w; w++)
                log_warning("%s, ignoring.", *w);

        r = make_backend(&config, &backend);
        if (r < 0)
                return r;

        if (arg_check_config)
                return check_config(&config, backend, warnings);

        n_fds = sd_listen_fds(true);
        if (n_fds < 0)
                log_warning_errno(n_fds, "Failed to read the sockets passed by socket activation, ignoring: %m");

        r = manager_new(&config, TAKE_PTR(backend), &m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the manager: %m");
#if HAVE_EMULATED_PMU
        if (arg_sim_truth_dir)
                manager_set_snapshot_hook(m, write_sim_truth, NULL);
#endif
        manager_set_config_loader(m, load_config, NULL);
        r = manager_start(m, MAX(n_fds, 0));
        if (r < 0)
                return r;
        r = manager_run(m);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char **argv) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
