"""Real filesystems that fail on demand, for storage-failure tests (root only).

* ``small_tmpfs(path, size)``: a tmpfs of ``size`` bytes; filling it gives real ENOSPC.
* ``loop_ext4(path, size)``: an ext4 on a loop device over a sparse image file. ``shutdown``
  uses ext4's own fault switch (the EXT4_IOC_SHUTDOWN ioctl, what xfstests' ``godown`` does):
  afterwards every write, fsync and read of the filesystem fails with EIO. With
  ``flush_log=False`` nothing that was not yet durable reaches the disk, which after a remount
  is a power failure: only what was fsynced survives.

Both are context managers that unmount and detach whatever they set up, even when the test
fails; processes using the mount must be stopped first (the tests stop them by PID).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

# _IOR('X', 125, __u32) from linux/ext4.h, and its flags.
EXT4_IOC_SHUTDOWN = 0x8004587D
EXT4_GOING_FLAGS_DEFAULT = 0  # sync the filesystem, then shut down
EXT4_GOING_FLAGS_NOLOGFLUSH = 2  # shut down now: unflushed data and journal are lost


def require_root(what: str) -> None:
    if os.geteuid() != 0:
        pytest.skip(f"{what} needs root (mount, loop devices)")
    for tool in ("mount", "umount", "losetup", "mkfs.ext4"):
        if shutil.which(tool) is None:
            pytest.skip(f"{what} needs {tool}")


def _run(*argv: str) -> str:
    res = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {res.stderr.strip()}")
    return res.stdout.strip()


def _umount(mnt: Path) -> None:
    res = subprocess.run(["umount", str(mnt)], capture_output=True, timeout=60)
    if res.returncode != 0:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True, timeout=60)


@contextlib.contextmanager
def small_tmpfs(mnt: Path, size: int) -> Iterator[Path]:
    require_root("a tmpfs")
    mnt.mkdir(parents=True, exist_ok=True)
    try:
        _run("mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mnt))
    except RuntimeError as exc:
        pytest.skip(f"cannot mount a tmpfs here: {exc}")
    try:
        yield mnt
    finally:
        _umount(mnt)


def fill(mnt: Path, leave: int) -> Path:
    """Write a filler file until at most ``leave`` bytes are free; returns its path."""
    filler = mnt / "filler"
    with open(filler, "wb") as f:
        chunk = b"\0" * (1 << 20)
        while True:
            free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
            if free <= leave:
                break
            try:
                f.write(chunk[: min(len(chunk), free - leave)])
                f.flush()
            except OSError:
                break
    return filler


class LoopExt4:
    def __init__(self, image: Path, mnt: Path, device: str) -> None:
        self.image = image
        self.mnt = mnt
        self.device = device
        self.mounted = False

    def mount(self) -> None:
        _run("mount", "-t", "ext4", self.device, str(self.mnt))
        self.mounted = True

    def umount(self) -> None:
        if self.mounted:
            _umount(self.mnt)
            self.mounted = False

    def shutdown(self, *, flush_log: bool) -> None:
        """Fail the filesystem now (EIO from here on); see the module docstring."""
        flags = EXT4_GOING_FLAGS_DEFAULT if flush_log else EXT4_GOING_FLAGS_NOLOGFLUSH
        fd = os.open(self.mnt, os.O_RDONLY)
        try:
            fcntl.ioctl(fd, EXT4_IOC_SHUTDOWN, struct.pack("I", flags))
        finally:
            os.close(fd)

    def power_cycle(self) -> None:
        """After a shutdown: unmount and mount again, as a machine coming back would."""
        self.umount()
        self.mount()


@contextlib.contextmanager
def loop_ext4(workdir: Path, size: int = 64 << 20) -> Iterator[LoopExt4]:
    require_root("a loop-mounted ext4")
    image, mnt = workdir / "ext4.img", workdir / "mnt"
    mnt.mkdir(parents=True, exist_ok=True)
    with open(image, "wb") as f:
        f.truncate(size)
    try:
        device = _run("losetup", "-f", "--show", str(image))
    except RuntimeError as exc:
        pytest.skip(f"no loop device available: {exc}")
    fs = LoopExt4(image, mnt, device)
    try:
        _run("mkfs.ext4", "-q", "-F", device)
        fs.mount()
        yield fs
    finally:
        fs.umount()
        subprocess.run(["losetup", "-d", device], capture_output=True, timeout=60)
        image.unlink(missing_ok=True)
