/* SPDX-License-Identifier: MIT */
#pragma once

/*
 * libptsynth: an Intel PT trace synthesizer that walks real x86-64 code.
 *
 * Layers, bottom up, in daemon/synth/ (each header documents its module
 * in detail):
 *
 *   image.h     ELF images (segments, function entries from symbols and
 *               .eh_frame_hdr, GOT relocations, address-taken
 *               functions) and address spaces (images at runtime
 *               addresses, GOT slots resolved as ld.so would).
 *   loader.h    Process address spaces as the kernel and ld.so build
 *               them: PT_INTERP, DT_NEEDED via RPATH/RUNPATH,
 *               ld.so.cache and default paths; ASLR-like placement
 *               unique across the machine.
 *   kernel.h    The kernel-like image built from kernel/ (inside the
 *               library: kernel-image.S) and its Linux-named entry
 *               points; kallsyms.
 *   block.h     Basic blocks decoded with Zydis, classified as Intel PT
 *               sees instructions; jump tables; a per-CPU cache.
 *   walk.h      A walker: IP, real call stack, seeded branch outcomes
 *               and indirect targets.
 *   pkt.h       Per-CPU packet generation through libipt's encoder:
 *               TNT/TIP/FUP/PGE/PGD/PIP/MODE, IP compression, return
 *               compression, PSB+ cadence, TSC/TMA/MTC/CYC/CBR, OVF,
 *               PTW and power events; output in chunks to a sink.
 *   ring.h      A ring with the hardware's overwrite (snapshot) mode.
 *   truth.h     Ground truth: branches and events with PSB marks,
 *               trimmed to what a window can hold.
 *   cpu.h       One CPU: runs threads (user walker, kernel walker,
 *               kernel entry frames), privilege filtering, interrupts,
 *               faults, switches at the kernel's switch point, TSX,
 *               overflows; driven by run(until) and request_switch().
 *               cpu.c (threads, PSB+, switches, the run loop),
 *               cpu-kernel.c (kernel entries and exits, TSX),
 *               cpu-walk.c (steps), cpu-internal.h between them.
 *   machine.h   The machine: processes and threads of real programs, a
 *               scheduler, side-band perf records, the result
 *               (machine.c), its configuration (config.c) and truth
 *               files (result.c).
 *   bundle.h    Writes a result as a bundle (common/bundle/bundle.h).
 *
 * Typical use (what the ptsynth program does):
 *
 *     SynthConfig cfg;
 *     synth_config_init(&cfg);
 *     cfg.seed = 42;
 *     _cleanup_(synth_machine_freep) SynthMachine *m = NULL;
 *     r = synth_machine_new(&cfg, &m, &error);
 *     r = synth_machine_run(m, &error);
 *     const SynthResult *res = synth_machine_result(m);
 *     synth_result_write_truth(res, f);
 *     synth_bundle_write(res, "out.tar", &error);
 *
 * A driver with its own schedule (the emulated PMU) uses the CPU layer
 * directly (tests/unit/test-synth-cpu.c does exactly this):
 *
 *   - images from a SynthImageSet, address spaces from the loader or built
 *     by hand (synth_address_space_new/map/resolve, e.g. from a real
 *     process's /proc/PID/maps), a SynthProcess per process (pid, CR3);
 *   - threads from synth_thread_new(); those not running first are put in
 *     their switched-out state with synth_thread_park() (or
 *     synth_thread_init_new() for one that starts through ret_from_fork);
 *   - synth_cpu_init() with SynthCpuConfig.sink set: the bytes go to the
 *     driver's sink in chunks as they are produced, instead of the CPU's
 *     own ring; keep_truth off when no truth is wanted;
 *   - synth_cpu_start(), then synth_cpu_request_switch(cpu, next) whenever
 *     the schedule says and synth_cpu_run(cpu, until) in time steps; the
 *     switch callback reports the exact TSC of each switch for the
 *     driver's side-band; synth_cpu_finish() at the end.
 *
 * Objects are not thread-safe, but separate CPUs (each with its own
 * block cache) may run on separate threads as long as a thread runs on one
 * CPU at a time; images are read-only once loaded.
 *
 * Everything is deterministic: the same configuration and seed on the
 * same machine (the same ELF files) give the same bytes.
 */

#include "daemon/synth/block.h"
#include "daemon/synth/bundle.h"
#include "daemon/synth/cpu.h"
#include "daemon/synth/image.h"
#include "daemon/synth/kernel.h"
#include "daemon/synth/loader.h"
#include "daemon/synth/machine.h"
#include "daemon/synth/pkt.h"
#include "daemon/synth/ring.h"
#include "daemon/synth/truth.h"
#include "daemon/synth/walk.h"
