"""Printing the benchmark scripts' result tables, as aligned text or as Markdown for the README."""

from __future__ import annotations

from collections.abc import Sequence


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]], markdown: bool, align: str = "right") -> None:
    """One table: a Markdown table, or columns padded to their widest cell (``align`` "right" or "left")."""
    cells = [[str(cell) for cell in row] for row in rows]
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for row in cells:
            print("| " + " | ".join(row) + " |")
        return
    widths = [max(len(cell) for cell in column) for column in zip(header, *cells, strict=True)]
    pad = str.rjust if align == "right" else str.ljust
    for row in (header, *cells):
        print("  ".join(pad(cell, width) for cell, width in zip(row, widths, strict=True)))
