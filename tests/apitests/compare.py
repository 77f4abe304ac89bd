"""Compares a run of array-api-tests (its JUnit XML report) with the expected failures.

    compare.py REPORT.xml EXPECTED_FAILURES.txt

Each line of the list is "PATTERN  # why": a test id as pytest shows it,
"test_file.py::test_name[params]" ("test_file.py::TestClass::test_name" in a class), where "*"
matches anything and every other character only itself, and the reason it fails (a line
without a reason is an error). The run fails
(exit 1) on a failure no pattern matches, and on a pattern that matches no failure (the test
passes now: the line goes). Prints the counts, which python/README.md records."""

import re
import sys
import xml.etree.ElementTree as ET


def compile_pattern(pattern):
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")) + r"\Z")


def read_expected(path):
    patterns = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            pattern, _, why = line.partition("#")
            if not why.strip():
                sys.exit(f"{path}:{n}: {pattern.strip()!r} has no reason (PATTERN  # why)")
            patterns.append(pattern.strip())
    return patterns


def main(report, expected_path):
    passed, failed, skipped = [], [], []
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next((p for p in reversed(parts) if p.startswith("test_")), parts[-1])
        cls = "" if parts[-1] == module else parts[-1] + "::"
        test_id = f"{module}.py::{cls}{case.get('name')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed.append(test_id)
        elif case.find("skipped") is not None:
            skipped.append(test_id)
        else:
            passed.append(test_id)
    patterns = read_expected(expected_path)
    compiled = {p: compile_pattern(p) for p in patterns}
    used = set()
    unexpected = []
    for test_id in failed:
        hits = [p for p in patterns if compiled[p].match(test_id)]
        used.update(hits)
        if not hits:
            unexpected.append(test_id)
    stale = [p for p in patterns if p not in used]
    total = len(passed) + len(failed) + len(skipped)
    print(f"array-api-tests: {len(passed)} passed, {len(failed)} failed ({len(failed) - len(unexpected)} "
          f"expected), {len(skipped)} skipped, of {total}")
    for test_id in unexpected:
        print(f"unexpected failure: {test_id}")
    for p in stale:
        print(f"listed in {expected_path} but no longer failing: {p}")
    return 1 if unexpected or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
