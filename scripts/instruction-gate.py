#!/usr/bin/env python3
"""The instruction guardrail: fails when a small request costs more than the ledger allows.

Usage: scripts/instruction-gate.py INSTRUCTIONS_JSON [BASELINE_JSON]

INSTRUCTIONS_JSON is what `scripts/instructions.sh` wrote. BASELINE_JSON (default:
Benchmarks/instructions-baseline.json) holds the counts recorded in PERFORMANCE.md, per scenario
and client, and the tolerance (3%). A count over its baseline by more than the tolerance fails;
one under it by more than the tolerance is reported, so that the ledger can be lowered in the
same commit. callgrind counts instructions, not time: the figures repeat from run to run.
"""
import json
import sys


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    measured_path = sys.argv[1]
    baseline_path = sys.argv[2] if len(sys.argv) > 2 else "Benchmarks/instructions-baseline.json"
    with open(measured_path) as f:
        measured = {(fig["scenario"], fig["subject"]): fig["median"] for fig in json.load(f)["figures"]}
    with open(baseline_path) as f:
        baseline = json.load(f)
    tolerance = baseline["tolerance"]
    failures = 0
    print(f"instruction gate: each count against {baseline_path} (tolerance {tolerance:.0%})")
    for entry in baseline["counts"]:
        key = (entry["scenario"], entry["subject"])
        allowed = entry["instructions"]
        if key not in measured:
            print(f"  MISSING  {key[1]} / {key[0]}: not in {measured_path}")
            failures += 1
            continue
        count = measured[key]
        ratio = count / allowed
        verdict = "ok"
        if ratio > 1 + tolerance:
            verdict = "OVER"
            failures += 1
        elif ratio < 1 - tolerance:
            verdict = "under (lower the ledger's figure)"
        print(f"  {verdict:8} {key[1]} / {key[0]}: {count:,.0f} against {allowed:,} ({ratio:.3f}x)")
    if failures:
        print(f"instruction gate: {failures} count(s) over the ledger; a change that raises them on purpose "
              "updates PERFORMANCE.md and the baseline in the same commit")
        return 1
    print("instruction gate: passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
