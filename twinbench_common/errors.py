"""The root of every error twinbench raises on purpose, and the one-line CLI error.

The full taxonomy (Kafka wire codes, protocol violations) is brokers/core/errors.py, which
re-exports both classes: a broker or harness module keeps importing them from there.
"""

from __future__ import annotations

__all__ = ["TwinbenchError", "UserError"]


class TwinbenchError(Exception):
    """Root of every error this project raises on purpose."""


class UserError(TwinbenchError):
    """A bad argument, file or environment; the message is shown to the user verbatim.
    Command-line entry points print it as one line and exit 2, never a traceback."""
