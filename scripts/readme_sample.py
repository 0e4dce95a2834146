#!/usr/bin/env python3
"""The README's sample output, regenerated from the binary: what `scripts/demo` prints, abridged
by fixed rules (the header, the headline numbers, the timeline, the idle causes and the first
finding's first lines; lines over 100 columns cut with " ..."), so no figure in the README is one
the current binary does not print.

usage: readme_sample.py GPUSCOPE README [--write]
Without --write, exits 1 (with a diff) when the README's block differs; with it, rewrites it.
"""
import difflib
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO_ARGS = ["analyze", "--model", "gpt:params=123.69M,layers=12,heads=12,dmodel=768,seq=1024,batch=16",
             "testdata/pytorch/bf16_sync.json.gz"]
INTRO = "What `analyze` prints, on the bundled trace (abridged):\n\n```\n"


def cut(line):
    return line if len(line) <= 100 else line[:96].rstrip() + " ..."


def sample(gpuscope):
    out = subprocess.run([gpuscope, *DEMO_ARGS], cwd=ROOT, capture_output=True, text=True,
                         env={**os.environ, "NO_COLOR": "1", "COLUMNS": "100"}).stdout.splitlines()
    keep = [out[0], *out[2:5]]  # the title, window and what is left out (not the file name)
    keep += [l for l in out if re.match(r"  (Utilization|SM active \(estimate\)|MFU) ", l)]
    i = next(n for n, l in enumerate(out) if l.startswith("Timeline"))
    keep += ["", out[i], out[i + 1], ""]
    i = next(n for n, l in enumerate(out) if l.startswith("Idle "))
    keep.append(out[i])
    for l in out[i + 1:]:
        if not l.startswith("  "):
            break
        keep.append(l)
    i = next(n for n, l in enumerate(out) if l.startswith("Findings"))
    keep += [""] + out[i:i + 3]
    arrow = next(l for l in out[i + 3:] if l.strip().startswith("→"))
    keep.append(arrow)
    return "\n".join(cut(l) for l in keep) + "\n"


def main():
    gpuscope, readme = sys.argv[1], sys.argv[2]
    text = open(readme, encoding="utf-8").read()
    start = text.index(INTRO) + len(INTRO)
    end = text.index("```\n", start)
    want = sample(gpuscope)
    if "--write" in sys.argv:
        with open(readme, "w", encoding="utf-8") as f:
            f.write(text[:start] + want + text[end:])
        return 0
    if text[start:end] != want:
        sys.stdout.writelines(difflib.unified_diff(text[start:end].splitlines(True), want.splitlines(True),
                                                   "README.md", "gpuscope analyze"))
        print("README's sample output differs from the binary's: run scripts/readme_sample.py "
              "build/src/cli/gpuscope README.md --write", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
