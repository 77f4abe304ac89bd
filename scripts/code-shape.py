#!/usr/bin/env python3
"""Measures of code shape in src/ (docs/design-notes.md, "Code shape: backends").

  scripts/code-shape.py [--list N] [ROOT]

Prints:
  - the lines inside multi-line macros (#define ... with backslash
    continuations), in total and in those whose body holds a loop (for/while
    other than `while (0)`), i.e. a kernel hidden in a macro, each listed;
  - the N largest functions (lines from the signature to the closing brace),
    found by Universal Ctags when it is installed.
Standard library only; ROOT defaults to the repository's src/.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys

EXTS = (".c", ".h", ".cu", ".cuh", ".cpp")
LOOP = re.compile(r"\b(for|while)\s*\(")
WHILE0 = re.compile(r"\bwhile\s*\(\s*0\s*\)")


def sources(root):
    for d, _, files in os.walk(root):
        for f in sorted(files):
            if f.endswith(EXTS):
                yield os.path.join(d, f)


def macros(path):
    """(name, first line, number of lines, has a loop) of each multi-line #define."""
    with open(path, encoding="utf-8", errors="replace") as fh:
        lines = fh.read().split("\n")
    i = 0
    while i < len(lines):
        m = re.match(r"\s*#\s*define\s+(\w+)", lines[i])
        if m and lines[i].rstrip().endswith("\\"):
            start = i
            body = [lines[i]]
            while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                body.append(lines[i])
            text = WHILE0.sub("", "\n".join(body))
            yield m.group(1), start + 1, len(body), bool(LOOP.search(text))
        i += 1


def functions(root):
    """(lines, file, name, first line) of every function ctags finds."""
    ctags = shutil.which("ctags")
    if not ctags:
        return None
    out = subprocess.run(
        [ctags, "-R", "--languages=C,C++", "--langmap=C++:+.cu.cuh", "--kinds-C=f",
         "--kinds-C++=f", "--fields=+ne", "-o", "-", root],
        capture_output=True, text=True, check=False).stdout
    found = []
    for row in out.splitlines():
        parts = row.split("\t")
        fields = dict(p.split(":", 1) for p in parts[3:] if ":" in p)
        if "line" in fields and "end" in fields:
            n = int(fields["end"]) - int(fields["line"]) + 1
            found.append((n, parts[1], parts[0], int(fields["line"])))
    return sorted(found, reverse=True)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("root", nargs="?", default=os.path.join(here, "..", "src"))
    ap.add_argument("--list", type=int, default=5, help="largest functions to list")
    a = ap.parse_args()
    root = os.path.normpath(a.root)
    total = kernel = count = 0
    kernels = []
    for path in sources(root):
        for name, line, n, loop in macros(path):
            total += n
            count += 1
            if loop:
                kernel += n
                kernels.append((n, os.path.relpath(path, root), line, name))
    print(f"multi-line macros in {root}: {count}, {total} lines")
    print(f"  of which with a loop in the body (a kernel in a macro): {len(kernels)}, {kernel} lines")
    for n, path, line, name in sorted(kernels, reverse=True):
        print(f"    {n:5d}  {path}:{line}  {name}")
    fns = functions(root)
    if fns is None:
        print("largest functions: ctags (Universal Ctags) not found", file=sys.stderr)
        return
    print(f"largest functions ({len(fns)} found):")
    for n, path, name, line in fns[: a.list]:
        print(f"  {n:5d}  {os.path.relpath(path, root)}:{line}  {name}")


if __name__ == "__main__":
    main()
