"""A class-data-sharing archive of the classes a local Spark run loads, kept in the user's cache.

Starting Spark's JVM is most of a small run's cost, and most of that is loading and verifying some
ten thousand classes. The JVM can map them from an archive instead (AppCDS): with it, the JVM of a
local-mode run uses about half the CPU seconds (``bench/bench_spark.py``). Java 17 writes such an
archive when a JVM that was started with ``-XX:ArchiveClassesAtExit`` exits normally, so the first
local run on a machine asks for one and then lets its JVM exit instead of leaving it to die with
the Python process (a once-only wait of some seconds); the runs after it map the archive. The JVM
checks the archive itself (its JDK, its class path) and starts without it if it does not fit; the
archive's name holds the JDK and the Spark version so that a new one is written when they change.
``--conf spark.driver.extraJavaOptions=-Xshare:off`` turns it off for a run. A run killed while its
JVM wrote the archive leaves the half-written file (named by its process id, some 160 MB): the next
run removes those of processes that are gone.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path
from subprocess import Popen, TimeoutExpired

from kdissect.dataclass import dataclass

_QUIET = "-Xlog:cds*=off"  # a stale or missing archive is not worth a warning
_EXIT_WAIT_S = 300  # writing the archive takes seconds to tens of seconds on a busy machine


@dataclass(frozen=True)
class ClassArchive:
    """Where the archive for this JDK and Spark lies, and whether this run writes it."""

    path: Path
    writing: Path | None  # the file this run's JVM writes at exit (renamed to ``path`` when complete)

    def java_options(self) -> list[str]:
        if self.writing is not None:
            return [f"-XX:ArchiveClassesAtExit={self.writing}", _QUIET]
        return [f"-XX:SharedArchiveFile={self.path}", _QUIET]


def spark_install(version: str, package_dir: str) -> str:
    """What a class archive is valid for on the Spark side: pyspark's version, place and the time its
    jars were installed. The JVM ignores, silently, an archive whose jars changed since it was written
    (a venv made again in the same place, same version): the jars' directory time gives such an
    install a new archive instead of slow starts with the stale one forever."""
    jars = os.path.join(package_dir, "jars")
    try:
        installed = os.stat(jars).st_mtime_ns
    except OSError:
        installed = 0
    return f"{version}|{package_dir}|{installed}"


def class_archive(spark_install: str) -> ClassArchive | None:
    """The archive to use or write for a JVM about to start (``spark_install``: the pyspark version and
    place), or None (no ``java`` found, no cache)."""
    java = shutil.which("java", path=os.path.join(os.environ["JAVA_HOME"], "bin")) if "JAVA_HOME" in os.environ \
        else shutil.which("java")  # fmt: skip
    if java is None:
        return None
    real = os.path.realpath(java)
    key = hashlib.sha256(f"{real}|{os.stat(real).st_mtime_ns}|{spark_install}".encode())
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "kdissect"
    path = cache / f"spark-classes-{key.hexdigest()[:16]}.jsa"
    remove_abandoned(cache)
    if path.exists():
        return ClassArchive(path, None)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return ClassArchive(path, path.with_name(f"{path.name}.{os.getpid()}.tmp"))


def remove_abandoned(cache: Path) -> None:
    """Remove the archives being written (``*.jsa.<pid>.tmp``) whose process is gone (killed before its
    JVM finished); a live process's, another run writing now, stays."""
    for half in cache.glob("spark-classes-*.jsa.*.tmp"):
        pid = half.suffixes[-2].lstrip(".")
        if pid.isdigit() and not _alive(int(pid)):
            half.unlink(missing_ok=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # no signal sent: only whether the process exists
    except ProcessLookupError:
        return False
    except OSError:  # another user's process (PermissionError): alive
        return True
    return True


def keep_written(archive: ClassArchive, jvm: Popen, verbose: bool) -> None:
    """After the session stopped and its gateway closed: let the JVM exit (it writes the archive as it
    does) and keep what it wrote. Said only with ``verbose``: a run is quiet on stderr by default."""
    if archive.writing is None:
        return
    if verbose:
        print("kdissect: writing Spark's class archive (once, to start later runs faster) ...", file=sys.stderr)
    try:
        jvm.stdin.close()  # type: ignore[union-attr]  # the JVM exits when its standard input ends
        jvm.wait(_EXIT_WAIT_S)
        if jvm.returncode == 0 and archive.writing.exists():
            os.replace(archive.writing, archive.path)
    except (OSError, TimeoutExpired):  # a faster start later is not worth failing this run
        jvm.kill()
    finally:
        archive.writing.unlink(missing_ok=True)
