/* SPDX-License-Identifier: MIT */
#pragma once

#include "client/decode/input/input.h"

/* Read a bundle (or bundle.tar.zst) into a DecodeInput. A member that
 * cannot be read costs what it carried (a CPU, the side-band, an image),
 * recorded as a note or a missing image; only an unreadable bundle as a
 * whole is an error (*ret_error says why). */
int decode_input_from_bundle(const char *path, DecodeInput **ret, char **ret_error);
