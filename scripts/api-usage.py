#!/usr/bin/env python3
"""List the public declarations nothing uses as a user would, and fail when one is new.

The API policy (CONTRIBUTING.md): every public declaration is used by a README or DocC
example, an example or benchmark package, or a test written as a user writes one (a test file
without `@testable import`; the shared support in Tests/Support is infrastructure, not a
user). This reads the declarations `count-public.py --concepts` lists (protocol default
implementations and conformance witnesses left out) and looks for each in that code, read
with comments and string literals blanked out (from Markdown, only the ```swift blocks).

A name is a loose proof of use, and deliberately so: it needs no build. A type counts as used
when its name appears, or one of its members is used (`Hedging.Delay` through `.fixed`); an
initializer when its type's name appears; a member when it is used as one: after a dot, as an
argument label, called, or declared by a conformer (`var endpoint`).

Usage:
    python3 scripts/api-usage.py            # fail (exit 1) when an unused declaration is not
                                            # in API/unused-public.txt, or one listed there is used
    python3 scripts/api-usage.py --list     # print every unused declaration
"""

import glob
import importlib.util
import json
import os
import re
import subprocess
import sys

ALLOWED = "API/unused-public.txt"


def load_count_public():
    spec = importlib.util.spec_from_file_location("count_public", os.path.join("scripts", "count-public.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def corpus(strip):
    """The code a user would write: the Swift blocks of the README and the articles, the
    example and benchmark packages, and the test files without `@testable` (not the shared
    test support, which is infrastructure), comments and string literals blanked out."""
    code = []
    markdown = ["README.md"] + glob.glob("Sources/**/*.docc/**/*.md", recursive=True)
    for path in markdown:
        with open(path, errors="ignore") as handle:
            code += re.findall(r"^```swift\n(.*?)^```", handle.read(), re.M | re.S)
    sources = glob.glob("Examples/**/*.swift", recursive=True) + glob.glob("Benchmarks/**/*.swift", recursive=True)
    tests = [path for path in glob.glob("Tests/**/*.swift", recursive=True) if not path.startswith("Tests/Support/")]
    for path in sources + tests:
        with open(path, errors="ignore") as handle:
            source = handle.read()
        if path in tests and re.search(r"^\s*@testable\s+import", source, re.M):
            continue
        code.append(source)
    return strip("\n".join(code))


def uses(text):
    """Names used as a type (any word) and names used as a member: after a dot, as an
    argument label, called, or declared by a conformer (`var endpoint`)."""
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", text))
    members = set(re.findall(r"\.\s*([A-Za-z_][A-Za-z0-9_]*)", text))
    members |= set(re.findall(r"\b([A-Za-z_][A-Za-z0-9_]*)\s*[:(]", text))
    members |= set(re.findall(r"\b(?:var|let|func|typealias|case|associatedtype)\s+([A-Za-z_][A-Za-z0-9_]*)", text))
    return words, members


def declarations():
    output = subprocess.run(
        [sys.executable, os.path.join("scripts", "count-public.py"), "--json", "--concepts"],
        check=True, capture_output=True, text=True).stdout
    return json.loads(output)


def unused(decls, words, members_used):
    def qualified(decl):  # a nested type's name is already qualified
        if "." in decl["name"] or not decl["container"]:
            return decl["name"]
        return f'{decl["container"]}.{decl["name"]}'

    members = {}
    for decl in decls:
        members.setdefault(decl["container"], []).append(decl["name"].split(".")[-1])
    found = []
    for decl in decls:
        name = decl["name"].split(".")[-1]
        if not re.match(r"[A-Za-z_]", name):
            continue  # operators
        if decl["kind"] in ("struct", "enum", "class", "actor", "protocol", "typealias"):
            inner = members.get(qualified(decl), [])
            if name in words or any(member in members_used for member in inner if member != "init"):
                continue
        elif name == "init":
            owner = decl["container"].split(".")[-1]
            if owner in words:
                continue
        elif decl["container"] and name in members_used:
            continue
        elif not decl["container"] and name in words:
            continue
        found.append(f'{decl["module"]}\t{qualified(decl)}')
    return sorted(set(found))


def main():
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    words, members_used = uses(corpus(load_count_public().strip))
    found = unused(declarations(), words, members_used)
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
