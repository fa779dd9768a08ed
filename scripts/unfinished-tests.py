#!/usr/bin/env python3
"""Prints the Swift Testing tests of a log that started and never ended (a stalled run)."""
import re
import sys

started, ended = [], set()
start = re.compile(r"^◇ Test (.+) started\.$")
end = re.compile(r"^[✔✘] Test (.+?)(?: with \d+ test cases?)? (?:passed|failed) after ")
with open(sys.argv[1], encoding="utf-8", errors="replace") as log:
    for line in log:
        line = line.rstrip("\n")
        if (match := start.match(line)) and not match.group(1).startswith("case passing"):
            started.append(match.group(1))
        elif match := end.match(line):
            ended.add(match.group(1))
stuck = [name for name in started if name not in ended and name != "run"]
for name in stuck:
    print("  " + name)
print(f"{len(stuck)} of {len(started)} started tests never ended")
