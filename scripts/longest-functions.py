#!/usr/bin/env python3
"""The longest functions of a source tree, in lines from `fn` to its closing brace.

Usage: scripts/longest-functions.py DIR [N]

Relies on rustfmt's layout: a function's closing brace is the first line
after its signature that holds only `}` at the signature's indentation.
Test functions (`#[test]` just above) are counted too.
"""

import re
import sys
from pathlib import Path

FN = re.compile(r"^(\s*)(pub(\([^)]*\))? )?(const )?(async )?(unsafe )?(extern \"C\" )?fn (\w+)")


def functions(path: Path):
    lines = path.read_text().splitlines()
    for i, line in enumerate(lines):
        m = FN.match(line)
        if not m:
            continue
        indent = m.group(1)
        # A declaration without a body (trait method) ends with `;` before any `{`.
        j = i
        while j < len(lines) and "{" not in lines[j] and not lines[j].rstrip().endswith(";"):
            j += 1
        if j >= len(lines) or "{" not in lines[j]:
            continue
        if lines[j].rstrip().endswith("}") and lines[j].count("{") == lines[j].count("}"):
            yield (j - i + 1, m.group(8), path, i + 1)
            continue
        for k in range(j + 1, len(lines)):
            if lines[k] == indent + "}":
                yield (k - i + 1, m.group(8), path, i + 1)
                break


def main() -> int:
    if len(sys.argv) < 2 or not Path(sys.argv[1]).is_dir():
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        print(f"expected a source directory, got {sys.argv[1:2] or 'nothing'}", file=sys.stderr)
        return 2
    root = Path(sys.argv[1])
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    found = sorted((f for p in root.rglob("*.rs") for f in functions(p)), key=lambda f: -f[0])
    for length, name, path, line in found[:n]:
        print(f"{length:5} {name} {path}:{line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
