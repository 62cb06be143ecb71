"""results/baseline/base.json: the code `make regress` compares with when no BASE is given.

A regression run compares this tree with a base. On a branch the natural base is the branch
point; on main, where work lands commit after commit, it is the last version whose costs were
accepted. Accepting is deliberate (``make regress-accept``, after a change meant to move the
costs, with the reason written down) and is what the file records: the commit, when, and why.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError
from harness.regression.base import REPO

FILE = REPO / "results" / "baseline" / "base.json"
KIND = "twinbench.regress-base"
VERSION = 1


def read(path: Path = FILE) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError) as exc:
        raise UserError(f"{path}: no accepted base ({exc}); give BASE=REF or accept one with "
                        "make regress-accept") from None
    if not isinstance(doc, dict) or doc.get("kind") != KIND or doc.get("version") != VERSION \
            or not isinstance(doc.get("commit"), str):
        raise UserError(f"{path}: not a twinbench regression base (version {VERSION})")
    return doc


def ref(path: Path = FILE) -> str:
    return str(read(path)["commit"])


def write(commit: str, reason: str, path: Path = FILE) -> dict[str, Any]:
    if not reason.strip():
        raise UserError("say why the new costs are accepted (REASON=...)")
    doc = {"kind": KIND, "version": VERSION, "commit": commit,
           "accepted_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "reason": reason.strip()}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return doc
