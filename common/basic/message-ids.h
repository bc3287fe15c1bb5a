/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * MESSAGE_ID values of ptraced's journal entries, so that
 * `journalctl MESSAGE_ID=...` finds every bundle written or every refusal.
 * Never change a value once released.
 */

#define MSGID_SNAPSHOT_TAKEN "e92f5754a4824908aac0697cac8bc197"
#define MSGID_SNAPSHOT_REFUSED "a4a4ffcbebc94076af74b449c284a5ce"
#define MSGID_SNAPSHOT_FAILED "e0ded24ecf6b46339bf9cc95b12dee69"
#define MSGID_BUNDLE_WRITTEN "dcfa79c7f7284307afb0125163e1aa6b"
#define MSGID_SIDEBAND_LOST "09a44f9727634179943e0dd602e9e00c"
#define MSGID_TRIGGER_SUSPENDED "392bcd3d97ee401fbefc4725f42ad64c"
#define MSGID_CRASH_TRIGGER "c62ac4ec68e64029893605f4fb9fe440"
#define MSGID_RECORDING_STARTED "c67a25df8ade46798af4d580af0ac582"
#define MSGID_CONFIG_RELOADED "e01f788bf15a417286ccbfdf02c07100"
#define MSGID_CONFIG_RELOAD_FAILED "05c20e15603d4bc0b713e6e0c897452a"
