#!/usr/bin/env python3
"""List the public declarations nothing uses as a user would, and fail when one is new.

The API policy (CONTRIBUTING.md): every public declaration is used by a README or DocC
example, an example or benchmark package, or a test written as a user writes one (a test file
without `@testable import`). This reads the declarations `count-public.py --concepts` lists
(protocol default implementations and conformance witnesses left out) and looks for each
one's name, as a whole word, in those places.

A name is a loose proof of use, and deliberately so: it needs no build. A type counts as used
when its name or the name of one of its members appears (`Hedging.Delay` through `.fixed`);
an initializer when its type's name does.

Usage:
    python3 scripts/api-usage.py            # fail (exit 1) when an unused declaration is not
                                            # in API/unused-public.txt, or one listed there is used
    python3 scripts/api-usage.py --list     # print every unused declaration
"""

import glob
import json
import os
import re
import subprocess
import sys

ALLOWED = "API/unused-public.txt"


def corpus_words():
    paths = ["README.md"]
    paths += glob.glob("Sources/**/*.docc/**/*.md", recursive=True)
    paths += glob.glob("Examples/**/*.swift", recursive=True)
    paths += glob.glob("Benchmarks/**/*.swift", recursive=True)
    text = []
    for path in paths:
        if "/.build" in path:
            continue
        with open(path, errors="ignore") as handle:
            text.append(handle.read())
    for path in glob.glob("Tests/**/*.swift", recursive=True):
        with open(path, errors="ignore") as handle:
            source = handle.read()
        if not re.search(r"^@testable import", source, re.M):
            text.append(source)
    return set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", "\n".join(text)))


def declarations():
    output = subprocess.run(
        [sys.executable, os.path.join("scripts", "count-public.py"), "--json", "--concepts"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(output)


def unused(decls, words):
    def qualified(decl):  # a nested type's name is already qualified
        if "." in decl["name"] or not decl["container"]:
            return decl["name"]
        return f'{decl["container"]}.{decl["name"]}'

    members = {}
    for decl in decls:
        members.setdefault(decl["container"], []).append(decl["name"])
    found = []
    for decl in decls:
        name = decl["name"].split(".")[-1]
        if not re.match(r"[A-Za-z_]", name):
            continue  # operators
        if decl["kind"] in ("struct", "enum", "class", "actor", "protocol", "typealias"):
            inner = members.get(qualified(decl), [])
            if name in words or any(member in words for member in inner if member != "init"):
                continue
        elif name == "init":
            owner = decl["container"].split(".")[-1]
            if owner in words:
                continue
        elif name in words:
            continue
        found.append(f'{decl["module"]}\t{qualified(decl)}')
    return sorted(set(found))


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    found = unused(declarations(), corpus_words())
    if "--list" in sys.argv:
        print("\n".join(found))
        return 0
    allowed = set()
    if os.path.exists(ALLOWED):
        with open(ALLOWED) as handle:
            for line in handle:
                line = line.split("#", 1)[0].strip()
                if line:
                    allowed.add("\t".join(line.split(None, 1)))
    new = [entry for entry in found if entry not in allowed]
    stale = sorted(allowed - set(found))
    for entry in new:
        print(f"unused public declaration: {entry.replace(chr(9), ' ')}")
    for entry in stale:
        print(f"used now, remove from {ALLOWED}: {entry.replace(chr(9), ' ')}")
    if new:
        print(
            f"{len(new)} public declaration(s) with no use as a user would write it: show each in a README "
            "or DocC example or a test without @testable, or make it package (see CONTRIBUTING.md).")
    print(f"api-usage: {len(found)} unused public declaration(s), {len(allowed)} allowed")
    return 1 if new or stale else 0


if __name__ == "__main__":
    sys.exit(main())
