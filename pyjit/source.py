"""Source locations: where in the user's program a node, value or error comes from."""

import dataclasses
import linecache


@dataclasses.dataclass(frozen=True)
class SourceLoc:
    """A line of the user's program; `str()` gives `file:line`."""

    filename: str
    lineno: int

    def __str__(self) -> str:
        return f"{self.filename}:{self.lineno}"

    def line(self) -> str:
        """The text of the line, stripped; empty when the file cannot be read."""
        return linecache.getline(self.filename, self.lineno).strip()

    def describe(self) -> str:
        """`file:line` followed by the line itself on its own indented line, when known."""
        text = self.line()
        return f"{self}\n    {text}" if text else str(self)
