#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
#
# sim-churn.py SECONDS: process churn for the emulated PMU's soak
# (test-sim-soak.sh), for SECONDS: processes that fork and exit, exec
# small programs, map and unmap executable files (dlopen/dlclose, mmap
# with PROT_EXEC), start threads that run and exit. Every change goes
# through the side-band the simulated source follows, so its process model
# and the address spaces the walker runs in change under it all the time.
# Prints "churned N processes, M threads, K mappings" at the end.
import ctypes
import ctypes.util
import mmap
import os
import sys
import threading
import time

seconds = float(sys.argv[1])
end = time.monotonic() + seconds
libs = [p for p in (ctypes.util.find_library(n) for n in ("m", "z", "crypt", "bz2", "lzma", "ssl", "zstd")) if p]
files = [f for f in ("/bin/true", "/bin/ls", "/bin/cat", "/bin/sh") if os.path.exists(f)]
dl = ctypes.CDLL(None)
dl.dlclose.argtypes = [ctypes.c_void_p]


def map_exec(path):
    """Map a file executable and unmap it again."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC, flags=mmap.MAP_PRIVATE)
        sum(m[i] for i in range(0, len(m), 4096))  # touch the pages
        m.close()


def load_unload():
    """dlopen and dlclose a few libraries (their own mmaps and munmaps)."""
    for name in libs:
        try:
            h = ctypes.CDLL(name)
            dl.dlclose(ctypes.c_void_p(h._handle))
        except OSError:
            pass


def thread_work(n):
    x = 0
    for i in range(n):
        x += i * i
    if files:
        map_exec(files[n % len(files)])


def child(kind):
    if kind == 0 and files:
        os.execv("/bin/true", ["true"])
    if kind == 1:
        os.execv("/bin/sh", ["sh", "-c", "for i in 1 2 3; do :; done"])
    load_unload()
    ts = [threading.Thread(target=thread_work, args=(2000 + 100 * k,)) for k in range(3)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    os._exit(0)


procs = threads = mappings = 0
i = 0
running = []
while time.monotonic() < end:
    pid = os.fork()
    if pid == 0:
        try:
            child(i % 4)
        finally:
            os._exit(0)
    running.append(pid)
    procs += 1
    i += 1
    if i % 4 >= 2:
        threads += 3
    # The parent churns its own address space and threads too.
    if files:
        map_exec(files[i % len(files)])
        mappings += 1
    if i % 8 == 0:
        t = threading.Thread(target=thread_work, args=(500,))
        t.start()
        t.join()
        threads += 1
    if i % 16 == 0:
        load_unload()
        mappings += len(libs)
    # At most 8 children at once.
    while len(running) >= 8:
        done, _ = os.wait()
        running.remove(done)
for pid in running:
    os.waitpid(pid, 0)
print(f"churned {procs} processes, {threads} threads, {mappings} mappings")
