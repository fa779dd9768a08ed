#!/usr/bin/env python3
"""DocC for the library modules from an existing build, for scripts/docs.sh (read its header).

Usage: scripts/docs.py BIN_PATH OUTPUT MODULE...

What swift-docc-plugin's `generate-documentation --enable-experimental-combined-documentation`
does, without its one `swift build` per target (some 15 s each even when nothing is to be
compiled, 10 targets): each module's symbol graph is extracted from the .swiftmodule in BIN_PATH
(swift-symbolgraph-extract, public symbols, extension blocks, with the search paths SwiftPM
compiled the module with, as the API check reads them), `docc convert` builds its archive with
its catalog and with links to the archives of the modules it depends on, warnings as errors,
then `docc merge` combines them into OUTPUT/Courier.doccarchive.
"""
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("api_check", os.path.join(here, "api-check.py"))
api_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(api_check)


def fail(message: str) -> "NoReturn":
    print(f"Documentation: {message}", file=sys.stderr)
    sys.exit(1)


def run(command: list[str], what: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    problems = [line for line in output.splitlines() if line.startswith(("warning:", "error:"))]
    if result.returncode != 0 or problems:
        print(output[:20000])
        fail(f"{what} reported a problem (warnings are errors here)\ncommand: {' '.join(command)}")


def main() -> None:
    bin_path, output, modules = sys.argv[1], sys.argv[2], sys.argv[3:]
    package = json.loads(subprocess.run(["swift", "package", "describe", "--type", "json"],
                                        capture_output=True, text=True, check=True).stdout)
    targets = {t["name"]: t for t in package["targets"]}
    description = api_check.build_description(bin_path)
    docc = shutil.which("docc") or fail("docc not found (it comes with the Swift toolchain)")
    work = tempfile.mkdtemp(prefix="courier-docs-")
    try:
        archives: dict[str, str] = {}
        os.makedirs(os.path.join(work, "archives"))
        for module in modules:  # in dependency order: a module after those it links to
            target = targets.get(module) or fail(f"no target {module}")
            command = api_check.compile_command(description, bin_path, module)
            extract = api_check.toolchain_tool(command, "swift-symbolgraph-extract")
            search = api_check.search_arguments(command)
            graphs = os.path.join(work, "symbols", module)
            os.makedirs(graphs)
            run([extract, "-module-name", module, "-minimum-access-level", "public",
                 "-emit-extension-block-symbols", "-output-dir", graphs] + search,
                f"swift-symbolgraph-extract {module}")
            catalogs = [os.path.join(target["path"], name) for name in sorted(os.listdir(target["path"]))
                        if name.endswith(".docc")]
            archive = os.path.join(work, "archives", module + ".doccarchive")
            dependencies = [archives[d] for d in target.get("target_dependencies") or [] if d in archives]
            if any(d in modules and d not in archives for d in target.get("target_dependencies") or []):
                fail(f"{module} is listed before a module it depends on")
            command = [docc, "convert"] + catalogs[:1] + [
                "--warnings-as-errors", "--emit-lmdb-index", "--fallback-display-name", module,
                "--fallback-bundle-identifier", module, "--additional-symbol-graph-dir", graphs,
                "--output-path", archive, "--enable-experimental-external-link-support"]
            for dependency in dependencies:
                command += ["--dependency", dependency]
            run(command, f"docc convert {module}")
            archives[module] = archive
            print(f"Documentation: {module}")
        combined = os.path.join(output, "Courier.doccarchive")
        shutil.rmtree(combined, ignore_errors=True)
        os.makedirs(output, exist_ok=True)
        run([docc, "merge"] + [archives[m] for m in modules] + [
            "--output-path", combined, "--synthesized-landing-page-name", "Courier",
            "--synthesized-landing-page-kind", "Package"], "docc merge")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
