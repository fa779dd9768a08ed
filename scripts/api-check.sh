#!/usr/bin/env bash
# The API check: fails when the public API breaks a promise of the last version without saying so
# in CHANGELOG.md's Unreleased section.
#
# Usage: scripts/api-check.sh [--skip-build] [--api-dir DIR]
#        scripts/api-check.sh --regenerate VERSION [--api-dir DIR]
#
# The last version is recorded in API/VERSION ("0.1.0 <commit>"), and its public API in
# API/<version>/<Module>.json: one dump per Swift module of a library product (the umbrella
# `Courier` too), written by swift-api-digester when the version was cut. So CI never builds the
# old commit (and needs none of its history: a shallow clone does).
#
# What it does: the build of the test command (`swift build --build-tests --traits PostgreSQL`,
# COURIER_STRICT=1: after scripts/test.sh, nothing to do), then, build-free,
# scripts/api-check.py dumps each module's API from the .swiftmodule in .build/debug
# (`swift-api-digester -dump-sdk`, with the search paths SwiftPM compiled the module with), drops
# `package` declarations, and compares the dump with the recorded one (`swift-api-digester
# -diagnose-sdk -input-paths OLD -input-paths NEW`). A module that is new has nothing to compare;
# a module that is gone is a breaking change.
#
# Why not `swift package diagnose-api-breaking-changes <commit> --baseline-dir API`: (1) it
# rebuilds the old commit, with the package's default traits (CourierPostgresCache's API is then
# empty), whenever one module's baseline is missing from --baseline-dir/<full sha>/, e.g. after a
# new library product; (2) it needs the old commit in the clone; (3) it compares a baseline with
# the loaded module, which reports a changed `package` func as a breaking change and misses a
# public declaration made `package`. With baselines present it runs the same digester on the
# same build, as this script does.
#
# The rule: each breaking change is about a declaration, named by its qualified name without
# arguments (Func Widget.wobble(times:) -> Widget.wobble; Constructor Box.init(x:) -> Box.init;
# Accessor Box.count.Set() -> Box.count; Struct Outer.Inner -> Outer.Inner). The Unreleased
# section (from "## Unreleased" or "## [Unreleased]" to the next "## ") lists it when one of its
# code spans holds that name as a whole dotted path, optionally after the module, with anything
# after it but another name part: `Widget.wobble`, `Widget.wobble(times:)` and
# `CourierCore.Widget.wobble(times:)` list Widget.wobble; `wobble` and `Widget.wobbleAll` do not.
# A break in a changed type's member needs that member's name: one line can list several.
#
# Output: each breaking change, "listed" or "unlisted", then either
#   API check: N breaking changes against 0.1.0 (<commit>), all listed in CHANGELOG's Unreleased
#   API check: no breaking changes against 0.1.0 (<commit>) (11 modules)
# (exit 0), or the unlisted ones with the name to list (exit 1). Exit 2: the check could not run.
# Without API/VERSION it prints that it skipped, and exits 0.
#
# Cutting a version (the baseline is the API of the release commit):
#   1. Land the release commit: CHANGELOG's Unreleased becomes "## [0.1.0] - <date>", under a new
#      empty "## Unreleased". `bash scripts/test.sh` passes on it.
#   2. On that commit, with no change to Package.swift or Sources/:
#        bash scripts/api-check.sh --regenerate 0.1.0
#      It writes API/0.1.0/*.json and API/VERSION ("0.1.0 <HEAD>"), and removes the previous
#      version's folder.
#   3. git add -A API && git commit -m "API baseline of 0.1.0", then tag the release commit.
#   From then on, every breaking change needs its CHANGELOG line until the next version is cut.
set -euo pipefail
cd "$(dirname "$0")/.."
api_dir=API
version=""
build=1
while [ $# -gt 0 ]; do
    case "$1" in
        --regenerate) version="${2:?--regenerate needs a version, e.g. 0.1.0}"; shift 2 ;;
        --api-dir) api_dir="${2:?--api-dir needs a folder}"; shift 2 ;;
        --skip-build) build=0; shift ;;
        *) sed -n '5,6p' "$0"; exit 2 ;;
    esac
done
# The test command's build and environment, so that after it nothing is rebuilt (another trait
# or COURIER_STRICT would recompile every module). Its traits are checked against the build's.
traits=PostgreSQL
export COURIER_STRICT=1 API_CHECK_TRAITS="$traits"
if [ "$build" -eq 1 ]; then
    swift build --build-tests --traits "$traits" >&2
fi
bin=.build/debug
if [ -n "$version" ]; then
    if ! git diff --quiet HEAD -- Package.swift Sources; then
        echo "API check: Package.swift or Sources/ differ from HEAD: the baseline would not be HEAD's API" >&2
        exit 2
    fi
    mkdir -p "$api_dir"
    exec python3 scripts/api-check.py regenerate "$bin" "$api_dir" "$version" "$(git rev-parse HEAD)"
fi
exec python3 scripts/api-check.py check "$bin" "$api_dir" CHANGELOG.md
