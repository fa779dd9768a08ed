#!/usr/bin/env python3
"""The API check's work, for scripts/api-check.sh (read its header first).

Usage: scripts/api-check.py check      BIN_PATH API_DIR CHANGELOG
       scripts/api-check.py regenerate BIN_PATH API_DIR VERSION COMMIT

BIN_PATH is the build folder of `swift build --build-tests --traits PostgreSQL` (.build/debug):
nothing is built here. Each MODULE's public API is dumped with swift-api-digester from the
.swiftmodule built there, with the search paths SwiftPM compiled it with (read from
BIN_PATH/description.json), then `package` declarations are dropped (see prune()). The modules
are the Swift modules of the package's library products (`swift package describe`), as for
`swift package diagnose-api-breaking-changes`. `regenerate`
writes the dumps to API_DIR/VERSION/ and API_DIR/VERSION (the file) as "VERSION COMMIT"; `check`
compares them with the recorded version's dumps and with CHANGELOG's Unreleased section.
"""
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Flags of a module's compile command that say where its dependencies are (each takes a value).
SEARCH_FLAGS = {"-target", "-Xcc", "-I", "-F", "-Isystem", "-Fsystem", "-module-cache-path",
                "-sdk", "-resource-dir", "-sysroot"}


def fail(message: str) -> "NoReturn":
    print(f"API check: {message}", file=sys.stderr)
    sys.exit(2)


def library_modules() -> list[str]:
    """The Swift modules of the root package's library products (the umbrella `Courier` too)."""
    result = subprocess.run(["swift", "package", "describe", "--type", "json"], capture_output=True, text=True)
    if result.returncode != 0:
        fail(f"swift package describe failed:\n{result.stderr}")
    package = json.loads(result.stdout)
    swift_targets = {t["name"]: t.get("c99name", t["name"]) for t in package["targets"]
                     if t.get("module_type") == "SwiftTarget"}
    modules = {swift_targets[name] for product in package["products"] if "library" in product["type"]
               for name in product["targets"] if name in swift_targets}
    return sorted(modules)


def build_description(bin_path: str) -> dict:
    path = os.path.join(bin_path, "description.json")
    try:
        with open(path) as f:
            description = json.load(f)
    except (OSError, ValueError) as error:
        fail(f"cannot read {path} ({error}): build first with `swift build --build-tests --traits PostgreSQL`")
    # The traits api-check.sh builds with: an API behind a trait that is off is not in the dump.
    traits = description.get("traitConfiguration", {}).get("enabledTraits", {})
    enabled = [t for names in (traits.values() if isinstance(traits, dict) else [traits]) for t in names]
    for trait in filter(None, os.environ.get("API_CHECK_TRAITS", "").split(",")):
        if trait not in enabled:
            fail(f"{bin_path} was not built with the {trait} trait (traits: {enabled}): "
                 "the API behind it would be missing")
    return description


def compile_command(description: dict, bin_path: str, module: str) -> dict:
    """The command SwiftPM compiled `module` with for the target (not for the host)."""
    modules_dir = os.path.realpath(os.path.join(bin_path, "Modules"))
    for command in description.get("swiftCommands", {}).values():
        if command.get("moduleName") != module:
            continue
        output = command.get("moduleOutputPath", "")
        if os.path.dirname(os.path.realpath(output)) != modules_dir:
            continue  # the same module built for the host (plugins, macros)
        return command
    fail(f"{module} is not in {bin_path}/description.json: build first with "
         "`swift build --build-tests --traits PostgreSQL`")


def toolchain_tool(command: dict, name: str) -> str:
    """The tool `name` beside the compiler of `command`, else the one on PATH."""
    tool = os.path.join(os.path.dirname(command.get("executable", "")), name)
    if os.access(tool, os.X_OK):
        return tool
    return shutil.which(name) or fail(f"{name} not found")


def search_arguments(command: dict) -> list[str]:
    """The module and framework search paths of a compile command."""
    arguments = ["-I", command["importPath"]]
    other = command.get("otherArguments", [])
    i = 0
    while i < len(other):
        flag = other[i]
        if flag in SEARCH_FLAGS and i + 1 < len(other):
            arguments += [flag, other[i + 1]]
            i += 2
            continue
        if (flag.startswith("-I") or flag.startswith("-F")) and flag not in ("-Isystem", "-Fsystem"):
            arguments.append(flag)
        i += 1
    return arguments


def digester_arguments(description: dict, bin_path: str, module: str) -> tuple[str, list[str]]:
    """The digester and the search paths SwiftPM compiled `module` with."""
    command = compile_command(description, bin_path, module)
    return toolchain_tool(command, "swift-api-digester"), search_arguments(command)


def prune(node: dict) -> dict:
    """Drops the nodes marked isInternal: `package` declarations (which the digester dumps, from
    a debug build too) are not public API. Left in, a changed `package` func is reported as a
    breaking change; and the digester, comparing a baseline with a loaded module, does not report
    a public declaration made `package`. Comparing two pruned dumps gets both right."""
    if "children" in node:
        node["children"] = [prune(child) for child in node["children"] if not child.get("isInternal")]
    return node


def dump(description: dict, bin_path: str, module: str, output: str) -> None:
    digester, arguments = digester_arguments(description, bin_path, module)
    command = [digester, "-dump-sdk", "-abort-on-module-fail", "-avoid-tool-args", "-avoid-location",
               "-module", module, "-o", output] + arguments
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0 or not os.path.exists(output):
        fail(f"swift-api-digester could not dump {module} (exit {result.returncode}):\n"
             f"{result.stdout}{result.stderr}\ncommand: {' '.join(command)}")
    with open(output) as f:
        api = json.load(f)
    if "ABIRoot" not in api:
        fail(f"{output} is not a digester dump")
    prune(api["ABIRoot"])
    with open(output, "w") as f:
        json.dump(api, f, indent=2, ensure_ascii=False)
        f.write("\n")


def dump_all(bin_path: str, modules: list[str], folder: str) -> None:
    description = build_description(bin_path)
    os.makedirs(folder, exist_ok=True)
    with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        jobs = [pool.submit(dump, description, bin_path, m, os.path.join(folder, m + ".json"))
                for m in modules]
        for job in jobs:
            job.result()


def recorded_version(api_dir: str) -> tuple[str, str]:
    with open(os.path.join(api_dir, "VERSION")) as f:
        fields = f.read().split()
    if len(fields) != 2:
        fail(f"{api_dir}/VERSION should hold one line: VERSION COMMIT")
    return fields[0], fields[1]


def breaking_changes(digester: str, baseline: str, current: str) -> list[str]:
    """The digester's findings between two dumps: its report lists them under /* section */
    headers, one per line ("Func Widget.wobble(times:) has been removed")."""
    with tempfile.NamedTemporaryFile(suffix=".txt") as report:
        result = subprocess.run([digester, "-diagnose-sdk", "-input-paths", baseline,
                                 "-input-paths", current, "-o", report.name],
                                capture_output=True, text=True)
        text = open(report.name).read()
    if result.returncode != 0:
        fail(f"swift-api-digester could not compare {baseline} with {current}:\n"
             f"{result.stdout}{result.stderr}")
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line or (line.startswith("/*") and line.endswith("*/")):
            continue
        found.append(line.removeprefix("API breakage: "))
    return found


def declaration(change: str) -> str:
    """The qualified name a change is about: "Func Widget.wobble(times:) has been removed" is
    about `Widget.wobble`; "Constructor Box.init(x:) …" about `Box.init`; "Accessor
    Box.count.Set() …" about `Box.count`."""
    words = change.split()
    if len(words) < 2:
        return change
    kind, name = words[0], words[1]
    if kind.lower() == "accessor":
        name = re.sub(r"\.\w+\(\)$", "", name)  # Box.subscript(_:).Get() -> Box.subscript(_:)
    return re.sub(r"\([^()]*\)$", "", name) or name


def unreleased_spans(changelog: str) -> list[str]:
    """The code spans (`…`) of CHANGELOG's Unreleased section, whitespace removed."""
    with open(changelog) as f:
        text = f.read()
    match = re.search(r"^## \[?Unreleased\]?[^\n]*\n(.*?)(?=^## |\Z)", text, re.M | re.S | re.I)
    if not match:
        return []
    return [re.sub(r"\s+", "", span) for span in re.findall(r"`+([^`]+?)`+", match.group(1))]


def listed(module: str, name: str, spans: list[str]) -> bool:
    """The rule: a code span names the declaration by its qualified name, as a whole dotted
    path, optionally after its module and with anything after it but another name part:
    `Widget.wobble`, `Widget.wobble(times:)`, `CourierCore.Widget.wobble(times:)` all list
    Widget.wobble; `wobble`, `Widget.wobbleAll` and `Widget.wobble.rate` do not."""
    pattern = re.compile(r"(?<![\w.])(?:" + re.escape(module) + r"\.)?" + re.escape(name) + r"(?![\w.])")
    return any(pattern.search(span) for span in spans)


def check(bin_path: str, api_dir: str, changelog: str, modules: list[str]) -> int:
    if not os.path.exists(os.path.join(api_dir, "VERSION")):
        print(f"API check: skipped, no version recorded ({api_dir}/VERSION is missing)")
        return 0
    version, commit = recorded_version(api_dir)
    baseline_dir = os.path.join(api_dir, version)
    baselines = sorted(f[:-5] for f in os.listdir(baseline_dir) if f.endswith(".json")) \
        if os.path.isdir(baseline_dir) else []
    if not baselines:
        fail(f"{baseline_dir} holds no baseline (run scripts/api-check.sh --regenerate {version})")
    changes: list[tuple[str, str, str]] = []  # (module, change, declaration)
    for module in baselines:
        if module not in modules:
            changes.append((module, f"Module {module} has been removed", module))
    present = [m for m in baselines if m in modules]
    with tempfile.TemporaryDirectory() as scratch:
        dump_all(bin_path, present, scratch)
        digester, _ = digester_arguments(build_description(bin_path), bin_path, present[0])
        for module in present:
            for change in breaking_changes(digester, os.path.join(baseline_dir, module + ".json"),
                                           os.path.join(scratch, module + ".json")):
                changes.append((module, change, declaration(change)))
    for module in modules:
        if module not in baselines:
            print(f"API check: {module} is new since {version} (nothing to compare)")
    spans = unreleased_spans(changelog)
    unlisted = [c for c in changes if not listed(c[0], c[2], spans)]
    against = f"{version} ({commit[:12]})"
    for module, change, name in changes:
        mark = "unlisted" if (module, change, name) in unlisted else "listed  "
        print(f"  {mark} {module}: {change}")
    if unlisted:
        print(f"API check: {len(unlisted)} of {len(changes)} breaking changes against {against} are not "
              f"listed in {changelog}'s Unreleased section. Name each there in a code span, by its "
              "qualified name, with its one-line migration:")
        for module, change, name in unlisted:
            print(f"  `{name}`  ({module}: {change})")
        return 1
    if changes:
        print(f"API check: {len(changes)} breaking change{'s' if len(changes) > 1 else ''} against "
              f"{against}, all listed in CHANGELOG's Unreleased")
    else:
        print(f"API check: no breaking changes against {against} ({len(present)} modules)")
    return 0


def regenerate(bin_path: str, api_dir: str, version: str, commit: str, modules: list[str]) -> int:
    if not re.fullmatch(r"[0-9A-Za-z.+-]+", version):
        fail(f"not a version: {version}")
    previous = recorded_version(api_dir)[0] if os.path.exists(os.path.join(api_dir, "VERSION")) else None
    folder = os.path.join(api_dir, version)
    if os.path.isdir(folder):
        shutil.rmtree(folder)
    dump_all(bin_path, modules, folder)
    with open(os.path.join(api_dir, "VERSION"), "w") as f:
        f.write(f"{version} {commit}\n")
    if previous and previous != version and os.path.isdir(os.path.join(api_dir, previous)):
        shutil.rmtree(os.path.join(api_dir, previous))
        print(f"API check: removed the baseline of {previous}")
    print(f"API check: wrote {len(modules)} baselines to {folder}/ and {api_dir}/VERSION ({version} {commit})")
    return 0


def main() -> int:
    if len(sys.argv) < 2 or sys.argv[1] not in ("check", "regenerate"):
        print(__doc__)
        return 2
    if sys.argv[1] == "check" and len(sys.argv) == 5:
        return check(sys.argv[2], sys.argv[3], sys.argv[4], library_modules())
    if sys.argv[1] == "regenerate" and len(sys.argv) == 6:
        return regenerate(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], library_modules())
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
