"""How each character looks on the stage: a palette the page builds its figure in (skin,
hair, shirt, the iris's two colours). A role names one (`look`), or takes the next in LOOKS
by its place in the cast, so that characters side by side are told apart at a glance."""

from __future__ import annotations

from collections.abc import Sequence

LOOKS: dict[str, dict[str, object]] = {
    "teal": {"skin": "#f1bd9c", "hair": "#3a2622", "shirt": "#2f6f8c",
             "iris": ["#1f6f86", "#5fc1cf"]},
    "amber": {"skin": "#c98e6b", "hair": "#1c1c22", "shirt": "#9a6231",
              "iris": ["#5a3a1a", "#b07a3c"]},
    "violet": {"skin": "#f3c6a8", "hair": "#7a3b22", "shirt": "#5b3f8c",
               "iris": ["#3f6f3a", "#8fcf7a"]},
    "rose": {"skin": "#e0a882", "hair": "#c9a24a", "shirt": "#8c2f4f",
             "iris": ["#2f4f86", "#7aa2ff"]},
}  # fmt: skip


def look_of(place: int, named: str | None) -> str:
    """The look of the role at `place` in the cast (from 0) that names `named` (or none)."""
    return named if named is not None else list(LOOKS)[place % len(LOOKS)]


def cast_facts(roles: Sequence) -> list[dict[str, object]]:
    """Each role's name and palette, in the cast's order: left to right on the stage."""
    return [{"name": r.name, "look": LOOKS[look_of(i, r.look)]} for i, r in enumerate(roles)]
