"""Supersession on real rule pairs: what a newer user rule does to an older one of the same scope.

Reads ../shared/eval-data/coding-prompts/dev-pairs.jsonl at run time (update and compatible pairs
of real users' rules; nothing is copied) and runs `learning.supersession` — the same decision the
capture service makes — on each pair, the later rule against the earlier one, with the cosine of
the shipped embedder (the service gets it from the write path's neighbours). Prints, per pair
kind, how many would be replaced (the old rule retired), asked about (both kept, a review item
asks "does this replace …?") or left alone. Compatible pairs wrongly superseded must be 0.

    .venv/bin/python bench/supersession.py [--no-embedder]
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from memory.maths import learning, textnorm  # noqa: E402

PAIRS = ROOT.parent / "shared" / "eval-data" / "coding-prompts" / "dev-pairs.jsonl"


def verdict(new: str, old: str, cosine: float) -> str:
    """The capture service's decision for `new` stated after `old` (polarity from the words)."""
    key_new, key_old = textnorm.variant_key(new), textnorm.variant_key(old)
    return learning.supersession(
        new,
        old,
        cosine=cosine,
        new_polarity=learning.polarity_of(new),
        old_polarity=learning.polarity_of(old),
        same_key=key_new is not None and key_new == key_old,
    )


def pair_verdicts(
    path: Path = PAIRS, cosine: Callable[[str, str], float] | None = None
) -> dict[str, Counter[str]]:
    """{pair kind: Counter of verdicts ("replace", "ask", "")} over the pair file."""
    out: dict[str, Counter[str]] = {}
    with path.open(encoding="utf-8") as handle:
        for raw in handle:
            if not raw.strip():
                continue
            row = json.loads(raw)
            new, old = row["later"]["rule"], row["earlier"]["rule"]
            cos = cosine(new, old) if cosine else 0.0
            out.setdefault(row["kind"], Counter())[verdict(new, old, cos)] += 1
    return out


def _embedder_cosine() -> Callable[[str, str], float]:
    from lib.embedder import Embedder

    embedder = Embedder()

    def cosine(a: str, b: str) -> float:
        va, vb = embedder.embed([a, b])
        return float(va @ vb)

    return cosine


def main() -> None:
    if not PAIRS.exists():
        print(f"{PAIRS} not found (eval-data absent)")
        return
    cosine = None if "--no-embedder" in sys.argv else _embedder_cosine()
    results = pair_verdicts(PAIRS, cosine)
    print(f"pairs: {PAIRS.name}, cosine: {'embedder' if cosine else 'none (0.0)'}")
    for kind in sorted(results):
        counts = results[kind]
        total = sum(counts.values())
        print(
            f"{kind:<11} n={total:<3} replaced={counts['replace']:<3} asked={counts['ask']:<3} "
            f"left alone={counts['']}"
        )
    wrong = results.get("compatible", Counter())["replace"]
    print(f"compatible pairs wrongly superseded: {wrong}")


if __name__ == "__main__":
    main()
