"""The base side of a code-vs-code regression: another version of twinbench, ready to run.

The regression runs the same workload on two versions of the brokers, interleaved session by
session on this machine: the working tree (head) and a base. The base is a git ref (a commit,
a branch, a tag; ``make regress`` defaults to the accepted ref in results/baseline/base.json)
checked out into a worktree of its own under results/regress/, or a directory holding another
twinbench tree (for a copy without git history). Only its brokers run: the harness, the load
client and the measurement are head's, one instrument for both sides.

Its environment: when the base pins the same dependencies as head (pyproject.toml's
``dependencies`` and ``test`` extras), its brokers run on head's interpreter with the base tree
first on PYTHONPATH (the base's code, the same pinned libraries); otherwise it gets a virtual
environment of its own with its own pins installed, as a fresh clone would.
"""

from __future__ import annotations

import contextlib
import re
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from brokers.core.errors import UserError

REPO = Path(__file__).resolve().parents[2]
# Where base trees are kept (git-ignored), one per commit, reused by later runs.
CACHE = REPO / "results" / "regress"
# Written into a prepared worktree: which commit it holds, so a later run can reuse it.
MARK = ".twinbench-base"


@dataclass(frozen=True)
class BaseTree:
    # The tree whose brokers run as the base side.
    path: Path
    # Its commit (None: a directory given as the base, not a git ref).
    commit: str | None
    # What the user named: the ref or the directory.
    given: str
    # The interpreter its brokers run on.
    python: str
    # True: head's interpreter with the base tree first on PYTHONPATH (same pinned libraries).
    shared_environment: bool

    def env(self) -> dict[str, str]:
        """Environment variables of a base broker process: the base tree first on the path.

        PYTHONSAFEPATH too: ``python -m`` otherwise puts the working directory first, and the
        harness starts brokers from head's tree, so a base arm would import head's code."""
        return {"PYTHONPATH": str(self.path), "PYTHONSAFEPATH": "1"}

    def manifest(self) -> dict[str, Any]:
        return {"given": self.given, "commit": self.commit, "path": str(self.path),
                "python": self.python, "shared_environment": self.shared_environment}


def _git(*args: str, cwd: Path = REPO) -> str:
    try:
        done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True,
                              timeout=120)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UserError(f"git {' '.join(args)}: {exc}") from None
    if done.returncode != 0:
        raise UserError(f"git {' '.join(args)}: {done.stderr.strip() or 'failed'}")
    return done.stdout.strip()


def resolve(ref: str) -> str:
    """The commit ``ref`` names, or one line saying why it names none."""
    if not (REPO / ".git").exists():
        raise UserError(f"the base {ref!r} is a git ref but {REPO} is not a git checkout; give "
                        "BASE=DIR, a directory holding the twinbench to compare with")
    try:
        return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    except UserError:
        pass
    # A clone without the commit (shallow, or a single branch): fetch that one commit from
    # where the clone came from, as CI checkouts often are.
    if re.fullmatch(r"[0-9a-f]{40}", ref):
        with contextlib.suppress(UserError):
            _git("fetch", "--quiet", "origin", ref)
            return _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")
    raise UserError(f"the base {ref!r} names no commit here (a shallow clone lacks history: "
                    "git fetch --unshallow)")


def _pins(tree: Path) -> tuple[Any, ...]:
    """What a tree's pyproject.toml pins: its dependencies and its test extras."""
    try:
        project = tomllib.loads((tree / "pyproject.toml").read_text("utf-8"))["project"]
    except (OSError, KeyError, tomllib.TOMLDecodeError) as exc:
        raise UserError(f"{tree}: no readable pyproject.toml ({exc})") from None
    extras = project.get("optional-dependencies", {})
    return tuple(project.get("dependencies", [])), tuple(extras.get("test", []))


def _environment(tree: Path) -> tuple[str, bool]:
    """(interpreter, shared): head's when the pins agree, else a venv built in the tree."""
    if _pins(tree) == _pins(REPO):
        return sys.executable, True
    venv = tree / ".venv"
    python = venv / "bin" / "python"
    stamp = venv / ".twinbench-installed"
    if not stamp.is_file():
        print(f"twinbench: the base pins other dependencies than head; installing them into "
              f"{venv} (once)", file=sys.stderr, flush=True)
        try:
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
            subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-e",
                            f"{tree}[test]"], check=True)
        except (OSError, subprocess.CalledProcessError) as exc:
            raise UserError(f"could not build the base's environment in {venv}: {exc}") from None
        stamp.write_text("ok\n")
    return str(python), False


def _worktree(commit: str) -> Path:
    """A worktree of ``commit`` under CACHE (made once, reused)."""
    path = CACHE / f"base-{commit[:12]}"
    mark = path / MARK
    if mark.is_file() and mark.read_text().strip() == commit:
        return path
    if path.exists():
        # A worktree half made or of another commit: start again.
        if (path / ".git").exists():
            _git("worktree", "remove", "--force", str(path))
        shutil.rmtree(path, ignore_errors=True)
    CACHE.mkdir(parents=True, exist_ok=True)
    _git("worktree", "prune")
    _git("worktree", "add", "--detach", "--force", str(path), commit)
    mark.write_text(commit + "\n")
    return path


def prepare(base: str) -> BaseTree:
    """The base named by ``base``: a directory holding a twinbench tree, or a git ref."""
    as_dir = Path(base).expanduser()
    if as_dir.is_dir():
        tree = as_dir.resolve()
        if not (tree / "brokers" / "__init__.py").is_file():
            raise UserError(f"{tree}: not a twinbench tree (no brokers/ package)")
        python, shared = _environment(tree)
        return BaseTree(tree, None, base, python, shared)
    commit = resolve(base)
    tree = _worktree(commit)
    python, shared = _environment(tree)
    return BaseTree(tree, commit, base, python, shared)


def head_commit() -> str | None:
    try:
        return _git("rev-parse", "HEAD")
    except UserError:
        return None


def same_brokers(tree: BaseTree) -> bool:
    """Whether head's broker code equals the base's (then the comparison is A/A: said in the
    verdict, since nothing that could regress differs)."""
    if tree.commit is None:
        return False
    try:
        diff = _git("diff", "--name-only", tree.commit, "--", "brokers")
    except UserError:
        return False
    return diff == ""
