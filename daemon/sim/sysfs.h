/* SPDX-License-Identifier: MIT */
#pragma once

/* The emulated PMU's sysfs tree (sysfs.c); pmu-sim.c's alone. */

#include <stdbool.h>

/* Address ranges the emulated PMU filters on (nr_addr_filters). */
#define PMU_SIM_NR_ADDR_FILTERS 2

/* A new private sysfs root with the intel_pt PMU in it; the online list
 * is written by pmu_sim_sysfs_write_online(). *ret_root is set as soon as
 * the directory exists, also on failure: the caller removes the tree. */
int pmu_sim_sysfs_new(char **ret_root);
/* Replace devices/system/cpu/online (atomically: the recorder may read it
 * at any moment). */
int pmu_sim_sysfs_write_online(const char *root, const bool *online, unsigned n_cpus);
/* Overwrite one file of the PMU's caps/ (an emulated model's own caps). */
int pmu_sim_sysfs_write_cap(const char *root, const char *name, const char *value);
