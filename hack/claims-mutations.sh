#!/usr/bin/env bash
# Checks docs/claims.md's guarantee table: each row names a mutation (a
# plausible bug in one file) and the test command that must fail on it.
# The script applies each mutation in turn, runs the command, expects it to
# fail, and puts the file back. A row whose mutation no longer breaks its
# test, or no longer applies (the line moved on), fails the check; a row
# marked "untested" is listed as such.
#
# Usage: hack/claims-mutations.sh [ROW-SUBSTRING]   (part of make mutation)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
exec python3 - "${1:-}" <<'PY'
import re, shutil, subprocess, sys, tempfile, os

only = sys.argv[1]
text = open("docs/claims.md").read()
section = text.split("## Guarantees", 1)[1].split("\n## ", 1)[0]
rows = [l for l in section.splitlines() if l.startswith("| ") and not l.startswith("| guarantee") and not l.startswith("|---")]
failed, untested, checked = [], [], 0
for row in rows:
    # A cell's "|" is written "\\|" (Markdown), and means "|".
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip()[1:-1])]
    claim, mutation = cells[0], cells[-1]
    if only and only not in claim:
        continue
    if mutation == "untested":
        untested.append(claim)
        continue
    spans = re.findall(r"`([^`]*)`", mutation)
    if len(spans) != 4 or "→" not in mutation:
        failed.append(f"{claim}: the mutation cell is not `FILE` `OLD` → `NEW`, `COMMAND`: {mutation}")
        continue
    path, old, new, command = (x.replace("\\|", "|") for x in spans)
    src = open(path).read()
    if src.count(old) != 1:
        failed.append(f"{claim}: {path} holds `{old}` {src.count(old)} times, not once")
        continue
    backup = tempfile.mktemp()
    shutil.copy(path, backup)
    try:
        open(path, "w").write(src.replace(old, new, 1))
        print(f"== {claim}\n   {path}: {old} -> {new}\n   {command}", flush=True)
        r = subprocess.run(command, shell=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        checked += 1
        if r.returncode == 0:
            failed.append(f"{claim}: `{command}` passes with {path} `{old}` → `{new}`")
            print("   LIVED", flush=True)
        else:
            print("   killed", flush=True)
    finally:
        shutil.move(backup, path)
for u in untested:
    print(f"untested: {u}")
if failed:
    print("\nFAIL: docs/claims.md:")
    for f in failed:
        print("  " + f)
    sys.exit(1)
print(f"{checked} guarantee mutations killed, {len(untested)} rows untested")
PY
