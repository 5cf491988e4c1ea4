"""Compile time of one session made of a pathological turn, for each shape that once made a pattern backtrack.

The compile window bounds what is read (about 24,000 characters), so a turn of 100 KiB costs what its
window costs. Before the twentieth session a turn of code fences (each stripped to a newline) ran for
minutes, runs of ", " or of blank lines for 10 to 13 seconds and a line of links for 7. A row far above
the plain-prose row is a pattern to fix (possessive, from where a run starts: see `text.squeezed`).

    python bench/promotion_adversarial.py [--size 100000]
"""

from __future__ import annotations

import argparse
import time

from cairn_contracts.promotion import Turn
from cairn_promotion.eval import build_compiler

SHAPES = {
    "plain prose": "my sister Ana lives in Porto and we deploy on Tuesdays. ",
    "code fences": "```x```",
    "blank lines": "\n\n\n",
    "spaces and tabs": " \t ",
    "commas": ", ",
    "ellipses": "... ",
    "links": "see http://x.io/a ",
    "corrections": "no wait ",
    "apologies": "sorry ",
    "thanks": "thanks, ",
    "dashes": "- ",
    "hashes": "#  ",
    "html comments": "<!-- x -->",
    "colons": "key: value ",
    "quotes": '"a" ',
    "updates": "we moved to 5 raised it to 6 ",
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="characters in the turn")
    args = parser.parse_args()
    compiler = build_compiler("auto")
    compiler.extract([Turn(role="user", content="warm up the embedder")])
    print(f"{'shape':18} {'ms':>8}  (one user turn of {args.size} characters, learned decision)")
    for name, unit in SHAPES.items():
        text = (unit * (args.size // len(unit) + 1))[: args.size]
        start = time.perf_counter()
        compiler.extract([Turn(role="user", content=text)])
        print(f"{name:18} {(time.perf_counter() - start) * 1000:8.0f}", flush=True)


if __name__ == "__main__":
    main()
