"""Brushfire's exceptions. Every error a user can cause is a `BrushfireError`."""

from __future__ import annotations


class BrushfireError(Exception):
    """Base class: something the user can fix, with a message that says how."""

    def _render_traceback_(self) -> list[str]:
        """What IPython and Jupyter show for it: the message alone, since the traceback
        (and chained Spark or validator errors) only hides it. The whole traceback:
        `traceback.print_exception(sys.last_value)`."""
        return [f"\x1b[0;31m{type(self).__name__}\x1b[0m: {self}"]


class SpecError(BrushfireError):
    """A dashboard spec is invalid.

    `problems` holds one entry per problem (at most three are shown), each with the
    file, the 1-based line, the key path as it reads in the YAML, the message and a hint.
    """

    def __init__(self, problems: list[SpecProblem], cause: object | None = None) -> None:
        self.problems = problems
        self.cause = cause  # the validator's original error, kept for debugging
        text = "\n".join(p.render() for p in problems[:3])
        if len(problems) > 3:
            more = len(problems) - 3
            text += f"\n({more} more problem{'s' if more > 1 else ''} not shown: fix these first)"
        super().__init__(text)


class SpecProblem:
    """One problem in a spec: where it is, what is wrong, what to do."""

    def __init__(
        self, file: str, line: int | None, path: str, message: str, hint: str = ""
    ) -> None:
        self.file, self.line, self.path, self.message, self.hint = file, line, path, message, hint

    def render(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        text = f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"
        if self.hint:
            text += f"\n    hint: {self.hint}"
        return text

    def __repr__(self) -> str:
        return f"SpecProblem({self.render()!r})"


class CaptureError(BrushfireError):
    """A Spark capture job failed; the message carries Spark's reason."""


class CacheError(BrushfireError):
    """A lineage cache entry is missing, partial or corrupt (it is never served)."""


class InteractionError(BrushfireError):
    """An interaction names an unknown view, parameter or bar, or has a bad value."""


class NotCapturedError(InteractionError):
    """The interaction needs lineage the spec did not declare, so it was not captured."""
