"""The columns that name a session, shared by the tables of one kind of session."""

from __future__ import annotations

from twinbench_common.runlog.table import Column, key

# Which run and side a row belongs to; ``label`` is empty unless the run was labelled (the A/A
# calibration's "A" and "B").
RUN: tuple[Column, ...] = (key("run_id"), key("arch"), Column("label", "string"))
# A fault or metadata session: the cell and the fault (or metadata) case, and the try.
CASE_SESSION: tuple[Column, ...] = (*RUN, key("cell_id"), key("case"), key("try", "int"))
# A closed- or open-loop session: the cell and the scenario (split or streaming), and the try.
SCENARIO_SESSION: tuple[Column, ...] = (*RUN, key("cell_id"), key("scenario"),
                                        key("try", "int"))
