"""Errors that reach the user as one clear line.

Every problem caused by the user's input — a malformed trace line, a config that
does not validate, an unknown scheduler, an impossible topology — is raised as an
:class:`InputError` naming *where* (``file:line`` or a field path) and *what*.
The CLI prints ``error: <where>: <what>`` on stderr and exits with code 2; the
library lets the exception propagate so notebooks can catch it.
"""

from __future__ import annotations


class SchedlabError(Exception):
    """Base class of schedlab's own exceptions."""


class InputError(SchedlabError, ValueError):
    """Bad user input: ``where`` names the file:line or field, ``problem`` says what is wrong."""

    def __init__(self, where: str | None, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}" if where else problem)


class InvariantError(SchedlabError, AssertionError):
    """A scheduler broke a rule the simulated data center enforces (e.g. over-allocation).

    This is a bug in the scheduler, never in the user's input.
    """
