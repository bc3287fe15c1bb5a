/* SPDX-License-Identifier: MIT */

/*
 * ptraced: the Intel PT flight recorder daemon. main() reads as a recipe:
 * logging, arguments, configuration, PMU discovery, then the work.
 */

#include <getopt.h>

#include "log.h"
#include "pmu.h"
#include "pt-config.h"
#include "ptraced-config.h"

static const char *arg_config = NULL;
static const char *arg_sysfs_root = PTRACED_SYSFS_ROOT;
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
               "     --check-config      Load and validate the configuration against the\n"
               "                         PMU, print the effective event, and exit\n"
               "     --sysfs-root DIR    Look for PMUs under DIR instead of /sys (testing)\n"
               "\n"
               "See ptraced(8) and ptraced.conf(5).\n",
               PTRACED_CONF_FILE);
}

static int parse_argv(int argc, char **argv) {
        enum {
                ARG_VERSION = 0x100,
                ARG_CONFIG,
                ARG_CHECK_CONFIG,
                ARG_SYSFS_ROOT,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "check-config", no_argument, NULL, ARG_CHECK_CONFIG },
                { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
                {},
        };
        int c;

        while ((c = getopt_long(argc, argv, "h", options, NULL)) >= 0)
                switch (c) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        printf("ptraced %s\n", PACKAGE_VERSION);
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

/* The intel_pt PMU and the event configuration, validated against it. */
static int load_event(const PtracedConfig *config, Pmu **ret_pmu, PtEventConfig *ret_event) {
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_free_ char *error = NULL;
        int r;

        r = pmu_load(arg_sysfs_root, "intel_pt", &pmu);
        if (r == -ENOENT)
                return log_error_errno(r,
                                       "No intel_pt PMU at %s/bus/event_source/devices/intel_pt: this CPU or kernel "
                                       "has no Intel Processor Trace.",
                                       arg_sysfs_root);
        if (r < 0)
                return log_error_errno(r, "Failed to read the intel_pt PMU under %s: %m", arg_sysfs_root);

        if (config->event)
                r = pt_event_config_parse(pmu, config->event, ret_event, &error);
        else
                r = pt_event_config_default(pmu, ret_event);
        if (r == -EINVAL)
                return log_error_errno(r, "[Trace] Event=%s: %s", strempty(config->event), error);
        if (r < 0)
                return log_error_errno(r, "Failed to build the intel_pt event configuration: %m");
        if (ret_event->forced_pt)
                log_warning("pt=0 doesn't make sense, forcing pt=1");

        *ret_pmu = TAKE_PTR(pmu);
        return 0;
}

static int run(int argc, char **argv) {
        _cleanup_(ptraced_config_done) PtracedConfig config;
        _cleanup_strv_free_ char **warnings = NULL;
        _cleanup_free_ char *error = NULL;
        _cleanup_pmu_free_ Pmu *pmu = NULL;
        _cleanup_(pt_event_config_done) PtEventConfig event = {};
        int r;

        log_open();
        ptraced_config_init(&config);

        r = parse_argv(argc, argv);
        if (r <= 0)
                return r;

        r = ptraced_config_load(&config, arg_config, &warnings, &error);
        if (r == -EINVAL)
                return log_error_errno(r, "%s", error);
        if (r < 0)
                return log_error_errno(r, "Failed to load the configuration: %m");
        for (char **w = warnings; w && *w; w++)
                log_warning("%s, ignoring.", *w);

        r = load_event(&config, &pmu, &event);
        if (r < 0)
                return r;

        if (arg_check_config) {
                printf("source: %s\n", trace_source_names[config.source]);
                printf("pmu: %s (type %u)\n", pmu->name, pmu->type);
                printf("event: %s\n", event.text);
                return 0;
        }

        return log_error_errno(EOPNOTSUPP, "This build of ptraced validates its configuration only "
                                           "(--check-config); the recorder is not built in yet.");
}

int main(int argc, char **argv) {
        int r = run(argc, argv);
        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
