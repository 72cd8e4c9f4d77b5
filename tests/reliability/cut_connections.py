#!/usr/bin/env python3
"""Cuts every established TCP connection of a running process, as a network partition would.

The process's socket descriptors are duplicated into this one (pidfd_getfd, Linux >= 5.6; the
caller needs ptrace rights over it, as its parent or root has) and shut down in both
directions: the process and its peers see their connections end mid-collective, while the
process itself keeps running. Python's standard library only.

  cut_connections.py PID      prints how many connections were cut; exit 1 if none
"""
import ctypes
import os
import socket
import sys

SYS_PIDFD_OPEN = 434
SYS_PIDFD_GETFD = 438


def established_inodes():
    """Socket inodes of established TCP connections (IPv4 and IPv6), from /proc/net."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    fields = line.split()
                    if fields[3] == "01":  # TCP_ESTABLISHED
                        inodes.add(fields[9])
        except FileNotFoundError:
            pass
    return inodes


def main():
    pid = int(sys.argv[1])
    libc = ctypes.CDLL(None, use_errno=True)
    pidfd = libc.syscall(SYS_PIDFD_OPEN, pid, 0)
    if pidfd < 0:
        sys.exit(f"cut_connections: pidfd_open({pid}): {os.strerror(ctypes.get_errno())}")
    established = established_inodes()
    cut = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if not target.startswith("socket:[") or target[8:-1] not in established:
            continue
        local = libc.syscall(SYS_PIDFD_GETFD, pidfd, int(fd), 0)
        if local < 0:
            sys.exit(f"cut_connections: pidfd_getfd({pid}, {fd}): {os.strerror(ctypes.get_errno())}")
        s = socket.socket(fileno=local)
        try:
            s.shutdown(socket.SHUT_RDWR)
            cut += 1
        except OSError:
            pass
        finally:
            s.detach()
            os.close(local)
    print(f"cut {cut} connections of pid {pid}")
    sys.exit(0 if cut else 1)


if __name__ == "__main__":
    main()
