"""The run-log format is declared once (twinbench_common/runlog/): the writer, the reader and
docs/result-format.md all follow the declarations, and every version of every table stays
readable.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import twinbench_common.runlog as fmt
from harness import runlog
from spark_analysis import schema
from twinbench_common.runlog.manifest import FORMAT_VERSION, table_versions

DOC = Path(__file__).resolve().parents[3] / "docs" / "result-format.md"


def test_the_writer_writes_the_newest_version_the_reader_reads() -> None:
    assert max(schema.SUPPORTED_FORMAT_VERSIONS) == runlog.FORMAT_VERSION == FORMAT_VERSION


def test_both_sides_name_the_same_kind_of_manifest() -> None:
    assert runlog.KIND == schema.MANIFEST_KIND


def test_the_contract_document_names_the_version_written() -> None:
    title = DOC.read_text("utf-8").splitlines()[0]
    found = re.search(r"format_version (\d+)", title)
    assert found is not None, f"{DOC.name} must name its format_version in its title"
    assert int(found.group(1)) == runlog.FORMAT_VERSION


def test_the_contract_document_gives_every_table_its_version() -> None:
    """The doc's table of tables names each file with its current version."""
    text = DOC.read_text("utf-8")
    for table in fmt.TABLES:
        assert re.search(rf"`{re.escape(table.file)}`\s*\|\s*{table.version}\s*\|", text), (
            f"{DOC.name} must list {table.file} at version {table.version}")


@pytest.mark.parametrize("table", fmt.TABLES, ids=lambda t: t.name)
def test_every_old_format_maps_to_a_version_of_the_table(table: fmt.Table) -> None:
    """Formats 1-8 versioned the directory as a whole; each table says which of its versions
    each of them wrote, and the versions only grow with the format."""
    versions = [table.by_format[f] for f in sorted(table.by_format)]
    assert versions == sorted(versions)
    assert set(versions) <= set(range(1, table.version + 1))
    for version in range(1, table.version + 1):
        assert table.names(version), f"{table.name} v{version} has no columns"


def test_a_current_manifest_names_every_table() -> None:
    manifest = {"format_version": FORMAT_VERSION,
                "tables": fmt.manifest.current_versions(fmt.TABLES)}
    assert table_versions(manifest, fmt.TABLES) == {t.name: t.version for t in fmt.TABLES}
    with pytest.raises(ValueError, match="tables"):
        table_versions({"format_version": FORMAT_VERSION}, fmt.TABLES)
    # A format-1 run had records, coordination and latency only.
    assert set(table_versions({"format_version": 1}, fmt.TABLES)) == {
        "records", "coordination", "latency"}


def test_a_column_that_replaced_others_names_columns_of_older_versions() -> None:
    for table in fmt.TABLES:
        for column in table.columns:
            for old in column.was:
                assert table.column(old).until == column.since, (table.name, column.name, old)
