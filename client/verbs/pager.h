/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * A pager for output to a terminal, as perf, git and coredumpctl do: when
 * standard output is a terminal, it is piped into $PTCTL_PAGER, else
 * $PAGER, else less, with $LESS defaulting to "FRSX" (quit when it fits
 * one screen, raw colours, chop long lines, no screen clearing: `less
 * -FRSX`). An empty value or "cat" means no pager. Standard error goes to
 * the pager too when it is the same terminal, so messages do not scribble
 * over the pager's screen (systemd's pager does the same).
 */

#include "common/basic/macro.h"

/* Start the pager unless no_pager or stdout is not a terminal. Returns 1
 * when paging, 0 when not, negative errno when the pager could not start
 * (then output goes to the terminal as it is). */
int ptctl_pager_open(bool no_pager);
/* Flush and close our end, wait for the pager to exit. Safe to call when
 * no pager runs; also runs at exit. */
void ptctl_pager_close(void);
