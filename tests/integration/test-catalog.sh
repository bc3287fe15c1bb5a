#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
#
# The journal catalog (issue 18): every MESSAGE_ID of
# common/basic/message-ids.h has an entry in systemd/ptraced.catalog, no
# entry is for an ID the code does not use, and journalctl reads the file
# (--update-catalog into a scratch root, then --list-catalog shows each).
set -euo pipefail
src=$1
catalog=$src/systemd/ptraced.catalog

ids=$(sed -n 's/^#define MSGID_[A-Z_]* "\([0-9a-f]\{32\}\)"$/\1/p' "$src/common/basic/message-ids.h" | sort)
entries=$(sed -n 's/^-- \([0-9a-f]\{32\}\)$/\1/p' "$catalog" | sort)
[ -n "$ids" ] || { echo "FAIL: no MESSAGE_IDs found in message-ids.h"; exit 1; }
missing=$(comm -23 <(echo "$ids") <(echo "$entries"))
extra=$(comm -13 <(echo "$ids") <(echo "$entries"))
[ -z "$missing" ] || { echo "FAIL: no catalog entry for: $missing"; exit 1; }
[ -z "$extra" ] || { echo "FAIL: catalog entries for unknown IDs: $extra"; exit 1; }
echo "$(echo "$ids" | wc -l) MESSAGE_IDs, each with a catalog entry"

command -v journalctl >/dev/null || { echo "journalctl is not installed: the catalog's syntax was not checked"; exit 0; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/usr/lib/systemd/catalog" "$tmp/var/lib/systemd/catalog"
cp "$catalog" "$tmp/usr/lib/systemd/catalog/"
journalctl --root "$tmp" --update-catalog
listed=$(journalctl --root "$tmp" --list-catalog | awk '{ print $1 }' | sort)
missing=$(comm -23 <(echo "$ids") <(echo "$listed"))
[ -z "$missing" ] || { echo "FAIL: journalctl did not read the entries of: $missing"; exit 1; }
echo "journalctl reads all of them"
