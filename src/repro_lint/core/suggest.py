"""The nearest known name to a misspelt one (a command, an option, a configuration key),
for the "did you mean" of an error line."""

from __future__ import annotations

import difflib
from typing import Iterable, Optional


def nearest(word: str, known: Iterable[str], cutoff: float = 0.75) -> Optional[str]:
    """The known name closest to `word`, or None when none is close enough to be a typo."""
    names = list(known)
    folded = {n.lower().replace("_", "-"): n for n in names}
    hits = difflib.get_close_matches(word.lower().replace("_", "-"), list(folded), n=1, cutoff=cutoff)
    return folded[hits[0]] if hits else None


def did_you_mean(word: str, known: Iterable[str], quote: str = "`") -> str:
    """` (did you mean `NAME`?)` for the nearest name, else an empty string."""
    hit = nearest(word, known)
    return f" (did you mean {quote}{hit}{quote}?)" if hit else ""
