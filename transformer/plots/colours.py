"""Colours as numbers: CSS colour strings (hex, rgb(), rgba(), a few names) parsed and written back, translucency,
composition over a background, and the WCAG relative luminance and contrast ratio the palettes are checked with."""

from __future__ import annotations

import colorsys
import re

# ------------------------------------------------------------------------------------------------ colours as numbers
NAMED = {"black": "#000000", "white": "#ffffff", "grey": "#808080", "gray": "#808080", "transparent": "rgba(0,0,0,0)"}


_FUNCTION = re.compile(r"rgba?\(\s*([\d.]+)\s*,\s*([\d.]+)\s*,\s*([\d.]+)\s*(?:,\s*([\d.]+)\s*)?\)")


Rgba = tuple[int, int, int, float]


def parse_colour(text: str) -> Rgba | None:
    """A CSS colour as plotly takes it (``#rgb``, ``#rrggbb``, ``rgb(…)``, ``rgba(…)``, a few names) as
    (red, green, blue, alpha), channels 0–255; None for anything else (e.g. a name this does not know)."""
    text = NAMED.get(text.strip().lower(), text.strip().lower()) if isinstance(text, str) else ""
    if re.fullmatch(r"#[0-9a-f]{3}", text):
        return int(text[1] * 2, 16), int(text[2] * 2, 16), int(text[3] * 2, 16), 1.0
    if re.fullmatch(r"#[0-9a-f]{6}", text):
        return int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16), 1.0
    match = _FUNCTION.fullmatch(text)
    if match is None:
        return None
    red, green, blue, alpha = match.groups()
    return round(float(red)), round(float(green)), round(float(blue)), 1.0 if alpha is None else float(alpha)


def format_colour(rgba: Rgba) -> str:
    """(red, green, blue, alpha) as ``#rrggbb`` when opaque, else as ``rgba(…)``."""
    red, green, blue, alpha = rgba
    if alpha >= 1:
        return f"#{red:02x}{green:02x}{blue:02x}"
    return f"rgba({red}, {green}, {blue}, {round(alpha, 3):g})"


def translucent(colour: str, alpha: float) -> str:
    """``colour`` at opacity ``alpha``, as ``rgba(…)``."""
    rgba = parse_colour(colour)
    if rgba is None:
        raise ValueError(f"not a colour: {colour!r}")
    return format_colour((*rgba[:3], alpha))


def relative_luminance(colour: str | Rgba) -> float:
    """WCAG 2.x relative luminance of an opaque colour: 0 for black, 1 for white (alpha is ignored)."""
    rgba = parse_colour(colour) if isinstance(colour, str) else colour
    if rgba is None:
        raise ValueError(f"not a colour: {colour!r}")
    linear = [value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4 for value in unit_rgb(rgba)]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast_ratio(first: str | Rgba, second: str | Rgba) -> float:
    """WCAG 2.x contrast ratio of two opaque colours, 1 (the same) to 21 (black on white): text needs 4.5, the lines
    and marks that carry meaning 3 (WCAG 1.4.3 and 1.4.11)."""
    lighter, darker = sorted((relative_luminance(first), relative_luminance(second)), reverse=True)
    return (lighter + 0.05) / (darker + 0.05)


def over(colour: str | Rgba, background: str) -> Rgba:
    """A translucent ``colour`` as it shows over an opaque ``background`` (alpha compositing)."""
    top = parse_colour(colour) if isinstance(colour, str) else colour
    bottom = parse_colour(background)
    if top is None or bottom is None:
        raise ValueError(f"not colours: {colour!r}, {background!r}")
    alpha = top[3]
    red, green, blue = (round(alpha * a + (1 - alpha) * b) for a, b in zip(top[:3], bottom[:3], strict=True))
    return red, green, blue, 1.0


def unit_rgb(rgba: Rgba) -> tuple[float, float, float]:
    return rgba[0] / 255, rgba[1] / 255, rgba[2] / 255


def is_grey(rgba: Rgba, tolerance: int = 12) -> bool:
    """Whether a colour has (almost) no hue: its channels lie within ``tolerance`` of each other."""
    return max(rgba[:3]) - min(rgba[:3]) <= tolerance


def lightness(rgba: Rgba) -> float:
    """A colour's HLS lightness, 0 (black) to 1 (white)."""
    return colorsys.rgb_to_hls(*unit_rgb(rgba))[1]


def with_lightness(rgba: Rgba, level: float) -> Rgba:
    """The same hue and saturation (HLS) at lightness ``level`` (0–1), alpha kept."""
    hue, _, saturation = colorsys.rgb_to_hls(*unit_rgb(rgba))
    red, green, blue = (round(255 * value) for value in colorsys.hls_to_rgb(hue, level, saturation))
    return red, green, blue, rgba[3]
