"""The run-log format version and kind, written by harness/runlog.py and read by
spark_analysis/schema.py, move together with docs/result-format.md.

The analysis never imports the harness, so the two sides keep their own constants; only a test
can tie them, and this one does: a writer bumped without the reader (or the doc) fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

from harness import runlog
from spark_analysis import schema

DOC = Path(__file__).resolve().parents[2] / "docs" / "result-format.md"


def test_the_writer_writes_the_newest_version_the_reader_reads() -> None:
    assert max(schema.SUPPORTED_FORMAT_VERSIONS) == runlog.FORMAT_VERSION
    assert schema.FAULT_FILES_SINCE <= runlog.FORMAT_VERSION


def test_both_sides_name_the_same_kind_of_manifest() -> None:
    assert runlog.KIND == schema.MANIFEST_KIND


def test_the_contract_document_names_the_version_written() -> None:
    title = DOC.read_text("utf-8").splitlines()[0]
    found = re.search(r"format_version (\d+)", title)
    assert found is not None, f"{DOC.name} must name its format_version in its title"
    assert int(found.group(1)) == runlog.FORMAT_VERSION
