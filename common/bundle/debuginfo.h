/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * Where an image's separate debug file is on this host, for a bundle that
 * carries them ([Storage] DebugInfo=): the conventions GDB and elfutils
 * share (GDB's "Separate Debug Files"; elfutils' dwfl_standard_find_debuginfo()),
 *
 *   1. by build-id: /usr/lib/debug/.build-id/xx/yyyy.debug (Debian's -dbg
 *      and -dbgsym packages install there);
 *   2. by .gnu_debuglink: DIR/LINK, DIR/.debug/LINK, /usr/lib/debug/DIR/LINK
 *      for the image's directory DIR.
 *
 * The decoder finds debug files through libdw itself; ptraced links
 * libelf only, so these two documented conventions are followed here.
 * A candidate counts only when its build-id is the image's: a debug file
 * for another build would name the wrong functions.
 */

#include "common/basic/macro.h"

/* root: "" or a process's "/proc/PID/root", prefixed to every path.
 * image_path: the image as that root sees it (for its debuglink and
 * directory); image_fd: the image, open. *ret is the path of a debug file
 * with the build-id id, or -ENOENT. */
int bundle_debuginfo_find(const char *root, const char *image_path, int image_fd, const uint8_t *id,
                          size_t id_size, char **ret);
