"""Where run logs are read from: a local path, or a URI a Spark cluster can read.

On a cluster, every executor reads the run logs itself, so they must be where all of them can
reach: a path shared by every machine (NFS, or one machine's disk with master, worker and
driver on it), or a URI of a file system Hadoop knows (``hdfs://``, ``s3a://`` where the user's
Spark is configured for it, ``file://``). The loader reads little itself before Spark reads the
data: each run's manifest, the first line of each table, whether a row follows. For a local path
it does that with pathlib; for a URI it asks Hadoop's FileSystem API inside the Spark driver's
JVM (through py4j), so whatever file systems that Spark is configured for work here too.

``HadoopPath`` offers the few pathlib operations the loader uses (``/``, ``name``,
``exists``, ``is_dir``, ``is_file``, ``iterdir``, ``read_text``, ``open`` for reading lines,
``stat().st_size``, ``resolve``); ``str()`` gives the URI Spark's readers take.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pyspark.sql import SparkSession

# A URI: a scheme of two or more letters (one letter would be a Windows drive).
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")


class RunPath(Protocol):
    """What the loader needs of a run-log location (pathlib.Path has it)."""

    @property
    def name(self) -> str: ...

    def __truediv__(self, other: str) -> RunPath: ...

    def exists(self) -> bool: ...

    def is_dir(self) -> bool: ...

    def is_file(self) -> bool: ...

    def iterdir(self) -> Iterator[RunPath]: ...

    def read_text(self, encoding: str = ...) -> str: ...


def readable(path: Path | HadoopPath) -> Path | io.StringIO:
    """What pandas' readers take: the path itself, or a URI's text (a small table: counters)."""
    return io.StringIO(path.read_text()) if isinstance(path, HadoopPath) else path


def is_uri(text: str) -> bool:
    return bool(_URI.match(text))


def location(text: str | Path, spark: SparkSession | None) -> Path | HadoopPath:
    """A local path as pathlib has it; a URI through Hadoop (needs the session's JVM)."""
    if isinstance(text, Path) or not is_uri(text):
        return Path(text)
    if spark is None:
        raise ValueError(f"{text}: a URI is read through Spark; no session was given")
    return HadoopPath.of(spark, text)


@dataclass(frozen=True)
class _Stat:
    st_size: int


class _Lines:
    """A text file read line by line through a java.io.BufferedReader (only what is asked
    for is read: a header check never pulls a whole table into the driver)."""

    def __init__(self, reader: Any) -> None:
        self._reader = reader

    def readline(self) -> str:
        line = self._reader.readLine()
        return "" if line is None else line + "\n"

    def __iter__(self) -> Iterator[str]:
        while (line := self.readline()) != "":
            yield line

    def __enter__(self) -> _Lines:
        return self

    def __exit__(self, *exc: object) -> None:
        self._reader.close()


class HadoopPath:
    """A file or directory behind Hadoop's FileSystem API."""

    def __init__(self, jvm: Any, fs: Any, jpath: Any) -> None:
        self._jvm, self._fs, self._path = jvm, fs, jpath

    @classmethod
    def of(cls, spark: SparkSession, uri: str) -> HadoopPath:
        jvm = spark.sparkContext._jvm
        assert jvm is not None, "the Spark session has no JVM"
        jpath = jvm.org.apache.hadoop.fs.Path(uri)
        fs = jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())
        return cls(jvm, fs, fs.makeQualified(jpath))

    def __str__(self) -> str:
        return str(self._path.toString())

    def __repr__(self) -> str:
        return f"HadoopPath({str(self)!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, HadoopPath) and str(self) == str(other)

    def __hash__(self) -> int:
        return hash(str(self))

    def __truediv__(self, other: str) -> HadoopPath:
        return HadoopPath(self._jvm, self._fs, self._jvm.org.apache.hadoop.fs.Path(self._path,
                                                                                    other))

    @property
    def name(self) -> str:
        return str(self._path.getName())

    def resolve(self) -> HadoopPath:
        return self

    def exists(self) -> bool:
        return bool(self._fs.exists(self._path))

    def is_dir(self) -> bool:
        return self.exists() and bool(self._fs.getFileStatus(self._path).isDirectory())

    def is_file(self) -> bool:
        return self.exists() and bool(self._fs.getFileStatus(self._path).isFile())

    def iterdir(self) -> Iterator[HadoopPath]:
        for status in self._fs.listStatus(self._path):
            yield HadoopPath(self._jvm, self._fs, status.getPath())

    def stat(self) -> _Stat:
        return _Stat(int(self._fs.getFileStatus(self._path).getLen()))

    def open(self, mode: str = "r", encoding: str = "utf-8", newline: str | None = None
             ) -> _Lines:
        if mode != "r":
            raise ValueError("run logs are read, never written, through a URI")
        stream = self._fs.open(self._path)
        reader = self._jvm.java.io.BufferedReader(
            self._jvm.java.io.InputStreamReader(stream, encoding))
        return _Lines(reader)

    def read_text(self, encoding: str = "utf-8") -> str:
        with self.open("r", encoding) as lines:
            return "".join(lines)
