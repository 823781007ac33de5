#!/usr/bin/env python3
"""Second pass over a gremlins report: each mutant gremlins calls NOT
COVERED is applied by hand and the package's tests run.

gremlins decides coverage from go test's cover profile, and Go's cover
tool puts no block around the condition of a `case` clause or of a
switch's tag, so every mutant there is "not covered" even when a test runs
it. This pass applies the same token change gremlins would (its own
mapping: internal/engine/mappings.go), runs `go test ./PKG`, and marks a
mutant the tests fail on as KILLED (with "recheck": true), and one that
does not compile as NOT VIABLE, as gremlins does. One that still
passes stays NOT COVERED: either no test runs it or none notices, and the
report lists it for a person to look at.

A mutant gremlins calls TIMED OUT (its test run took longer than gremlins'
estimate, which a busy machine makes likely) is run again the same way,
alone and with a generous timeout: KILLED when the tests fail (or really do
not end), LIVED when they pass.

With --lived, the mutants gremlins saw live are run again the same way:
after tests were added for them, this brings a report up to date without
a whole new gremlins run (a killed mutant stays killed: tests were only
added).

With --lived-only, only the lived ones are run again (a quick update
after tests were added; not-covered and timed-out mutants that loop
without end each cost the whole timeout).

$RECHECK_TIMEOUT (default 10m) is go test's -timeout for each run.

Usage: hack/mutation-recheck.py [--lived | --lived-only] PKG REPORT.json
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

# The mutations gremlins makes by default, by its mutant type.
MUTATIONS = {
    "ARITHMETIC_BASE": {"+": "-", "-": "+", "*": "/", "/": "*", "%": "*"},
    "CONDITIONALS_BOUNDARY": {">=": ">", ">": ">=", "<=": "<", "<": "<="},
    "CONDITIONALS_NEGATION": {"==": "!=", "!=": "==", ">=": "<", ">": "<=", "<=": ">", "<": ">="},
    "INCREMENT_DECREMENT": {"++": "--", "--": "++"},
    "INVERT_NEGATIVES": {"-": "+"},
}


def operator_at(line, col):
    """The operator token that starts at 0-based col (longest first)."""
    for width in (2, 1):
        tok = line[col:col + width]
        if any(tok in m for m in MUTATIONS.values()) and len(tok) == width:
            return tok
    return None


def main():
    args = sys.argv[1:]
    lived_only = "--lived-only" in args
    lived = "--lived" in args or lived_only
    args = [a for a in args if a not in ("--lived", "--lived-only")]
    pkg, report = args[0], args[1]
    statuses = {"NOT COVERED", "TIMED OUT", "LIVED"} if lived else {"NOT COVERED", "TIMED OUT"}
    if lived_only:
        statuses = {"LIVED"}
    counter = {"NOT COVERED": "mutants_not_covered", "LIVED": "mutants_lived", "TIMED OUT": "mutants_timed_out"}
    r = json.load(open(report))
    for f in r.get("files", []):
        path = os.path.join(pkg, f["file_name"])
        for m in f["mutations"]:
            before = m["status"]
            if before not in statuses:
                continue
            src = open(path).read()
            lines = src.split("\n")
            line = lines[m["line"] - 1]
            col = m["column"] - 1
            tok = operator_at(line, col)
            new = MUTATIONS.get(m["type"], {}).get(tok)
            if new is None:
                print(f"  recheck: {path}:{m['line']}:{m['column']} {m['type']}: no operator to change at that column, left as it is", flush=True)
                continue
            lines[m["line"] - 1] = line[:col] + new + line[col + len(tok):]
            backup = tempfile.mktemp()
            shutil.copy(path, backup)
            try:
                open(path, "w").write("\n".join(lines))
                # A mutant that does not compile (a string's + made -) is
                # not viable, as gremlins counts it, and no test's kill.
                build = subprocess.run(["go", "vet", "./" + pkg], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
                res = build if build.returncode != 0 else subprocess.run(
                    ["go", "test", "-count=1", "-timeout", os.environ.get("RECHECK_TIMEOUT", "10m"), "./" + pkg],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            finally:
                shutil.move(backup, path)
            if build.returncode != 0:
                m["status"], m["recheck"] = "NOT VIABLE", True
                r["mutants_not_viable"] = r.get("mutants_not_viable", 0) + 1
                r[counter[before]] = r.get(counter[before], 0) - 1
                print(f"  recheck: NOT VIABLE (does not build) {m['type']} at {f['file_name']}:{m['line']}:{m['column']}", flush=True)
            elif res.returncode != 0:
                m["status"], m["recheck"] = "KILLED", True
                r["mutants_killed"] += 1
                r[counter[before]] = r.get(counter[before], 0) - 1
                print(f"  recheck: KILLED {m['type']} at {f['file_name']}:{m['line']}:{m['column']}", flush=True)
            elif before == "TIMED OUT":
                m["status"], m["recheck"] = "LIVED", True
                r["mutants_lived"] += 1
                r[counter[before]] = r.get(counter[before], 0) - 1
                print(f"  recheck: LIVED (ended when run alone) {m['type']} at {f['file_name']}:{m['line']}:{m['column']}", flush=True)
            else:
                print(f"  recheck: still {before} {m['type']} at {f['file_name']}:{m['line']}:{m['column']}", flush=True)
    if lived_only:
        # Added to the passes the report already had.
        prev = r.get("rechecked") or ""
        r["rechecked"] = prev if "lived" in prev else (prev.replace(" and ", ", ") + " and lived" if prev else "lived")
    else:
        r["rechecked"] = "not covered, timed out and lived" if lived else "not covered and timed out"
    json.dump(r, open(report, "w"), indent=1)


if __name__ == "__main__":
    main()
