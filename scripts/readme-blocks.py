#!/usr/bin/env python3
"""Writes every Swift block of the README, as pasted, into a scratch package that depends on Courier.

    scripts/readme-blocks.py README.md SCRATCH_DIR COURIER_CHECKOUT [ARTICLE.md ...]

The DocC articles given after the checkout are compiled the same way, each block a target
named after its file and line (`GettingStartedLine30`).

Each block becomes a target of its own, its code the file's whole content: an executable
(`main.swift`, so top-level statements and `await` work as they do in a script or `main.swift`),
or a test target when it imports Testing. A block whose first line is `// Continues the
example above.` is compiled after the block before it, in the same file, as a reader would
paste it. A block right after a `<!-- readme-check: skip ... -->` line (a Package.swift excerpt) is left out;
one after `<!-- readme-check: same-as PATH -->` must equal that file of the checkout, which is
compiled elsewhere (the gateway example's `main.swift`, built by CI in its own package).
The targets depend on the products the block imports; the package reaches Courier through a
link named `courier`, the identity the README's installation lines use. A block that imports
CourierOpenAPI gets the client generated for the tests (Tests/CourierOpenAPITests/Generated,
from its openapi.yaml) beside it, as an app has its generated `Client`.

Before writing anything it checks that the documents do not repeat each other: a prose
paragraph (whitespace normalized; code blocks, tables, headings, HTML comments and paragraphs
under 80 characters ignored; each list item a paragraph of its own) that appears in the README
and an article, or in two articles, fails the check, naming both files and lines. A topic has
one home; the others link to it.
"""
import os
import re
import sys

readme, scratch, checkout = sys.argv[1], sys.argv[2], os.path.abspath(sys.argv[3])
documents = [readme] + sys.argv[4:]
CONTINUES = "// Continues the example above."
PRODUCTS = {"Courier", "CourierCore", "CourierTransport", "CourierServices", "CourierCaching",
            "CourierJSON", "CourierTesting", "CourierXML", "CourierLifecycle", "CourierOpenAPI"}
# Modules of other packages an example may import: module -> (package identity, URL, version).
EXTERNAL = {
    "Logging": ("swift-log", "https://github.com/apple/swift-log.git", "1.6.0"),
    "Tracing": ("swift-distributed-tracing", "https://github.com/apple/swift-distributed-tracing.git", "1.7.3"),
    "InMemoryTracing": ("swift-distributed-tracing", "https://github.com/apple/swift-distributed-tracing.git", "1.7.3"),
    "Metrics": ("swift-metrics", "https://github.com/apple/swift-metrics.git", "2.13.0"),
    "MetricsTestKit": ("swift-metrics", "https://github.com/apple/swift-metrics.git", "2.13.0"),
    "OpenAPIRuntime": ("swift-openapi-runtime", "https://github.com/apple/swift-openapi-runtime.git", "1.13.4"),
    "HTTPTypes": ("swift-http-types", "https://github.com/apple/swift-http-types.git", "1.4.0"),
}
# The generated client a CourierOpenAPI block is compiled with, and the modules its files import.
GENERATED_CLIENT = os.path.join("Tests", "CourierOpenAPITests", "Generated")
GENERATED_IMPORTS = {"OpenAPIRuntime", "HTTPTypes"}

def read_blocks(path):
    """The Swift blocks of one Markdown file: (line, code, skipped)."""
    found = []
    lines = open(path, encoding="utf-8").read().split("\n")
    index, skip_next, same_as = 0, False, None
    while index < len(lines):
        line = lines[index]
        if line.strip().startswith("<!-- readme-check: skip"):
            skip_next = True
        elif line.strip().startswith("<!-- readme-check: same-as "):
            same_as = line.strip()[len("<!-- readme-check: same-as "):].removesuffix("-->").strip()
        elif line.startswith("```swift"):
            start, body = index + 1, []
            index += 1
            while not lines[index].startswith("```"):
                body.append(lines[index])
                index += 1
            code = "\n".join(body) + "\n"
            if same_as is not None:
                expected = open(os.path.join(checkout, same_as), encoding="utf-8").read()
                if code != expected:
                    sys.exit(f"{path}:{start}: this block differs from {same_as}; copy the file into it")
            found.append((start, code, skip_next or same_as is not None))
            skip_next, same_as = False, None
        elif line.startswith("```"):
            index += 1
            while not lines[index].startswith("```"):
                index += 1
        index += 1
    return found


MINIMUM_PARAGRAPH = 80
LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def prose_paragraphs(path):
    """The prose paragraphs of one Markdown file: (line, normalized text), long ones only."""
    found, current, start, fenced = [], [], 0, False

    def flush():
        text = " ".join(" ".join(current).split())
        if len(text) >= MINIMUM_PARAGRAPH:
            found.append((start, text))
        current.clear()

    for number, line in enumerate(open(path, encoding="utf-8").read().split("\n"), start=1):
        stripped = line.strip()
        if stripped.startswith("```"):
            flush()
            fenced = not fenced
            continue
        if fenced or not stripped or stripped.startswith(("#", "|", "<!--")):
            flush()
            continue
        if LIST_ITEM.match(line):
            flush()
            stripped = LIST_ITEM.sub("", line, count=1).strip()
        if not current:
            start = number
        current.append(stripped)
    flush()
    return found


def check_duplicates(readme, articles):
    """Fails when a prose paragraph appears in the README and an article, or in two articles."""
    seen, problems = {}, []
    for document in [readme] + articles:
        for line, text in prose_paragraphs(document):
            first = seen.get(text)
            if first is None:
                seen[text] = (document, line)
            elif first[0] != document:
                problems.append(f"{document}:{line}: this paragraph is also at {first[0]}:{first[1]}: "
                                f"keep it in one place and link there ({text[:60]}...)")
    if problems:
        sys.exit("\n".join(problems) + f"\n{len(problems)} duplicated paragraph(s) between the README and the articles")


def prefix(path):
    """README.md -> Readme; Sources/X/X.docc/GettingStarted.md -> GettingStarted."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return "Readme" if stem.upper() == "README" else re.sub(r"\W", "", stem)


check_duplicates(readme, sys.argv[4:])

blocks = []  # (document, line, code, skipped)
units = []  # (document, first line, code)
for document in documents:
    found = read_blocks(document)
    blocks.extend((document, *block) for block in found)
    for start, code, skipped in found:
        if skipped:
            continue
        if code.startswith(CONTINUES):
            if not units or units[-1][0] != document:
                sys.exit(f"{document}:{start}: the first block cannot continue another")
            _, first, previous = units[-1]
            units[-1] = (document, first, previous + "\n" + code)
        else:
            units.append((document, start, code))

os.makedirs(os.path.join(scratch, "Sources"), exist_ok=True)
link = os.path.join(scratch, "courier")
if not os.path.islink(link):
    os.symlink(checkout, link)
targets = []
used_externals = set()
for document, start, code in units:
    name = f"{prefix(document)}Line{start}"
    imports = set(re.findall(r"^import (\w+)", code, re.MULTILINE))
    products = sorted(imports & PRODUCTS)
    is_test = "Testing" in imports
    folder = os.path.join(scratch, "Tests" if is_test else "Sources", name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"{name}.swift" if is_test else "main.swift"), "w", encoding="utf-8") as file:
        file.write(f"// {document}, the block at line {start}, as pasted.\n" + code)
    if "CourierOpenAPI" in imports:
        generated = os.path.join(checkout, GENERATED_CLIENT)
        for source in sorted(os.listdir(generated)):
            with open(os.path.join(generated, source), encoding="utf-8") as original:
                text = original.read()
            with open(os.path.join(folder, "Generated+" + source), "w", encoding="utf-8") as copy:
                copy.write(text)
        imports |= GENERATED_IMPORTS
    externals = sorted(imports & set(EXTERNAL))
    used_externals.update(externals)
    dependencies = ", ".join([f'.product(name: "{product}", package: "courier")' for product in products]
                             + [f'.product(name: "{module}", package: "{EXTERNAL[module][0]}")' for module in externals])
    kind = "testTarget" if is_test else "executableTarget"
    path = f"Tests/{name}" if is_test else f"Sources/{name}"
    targets.append(f'        .{kind}(name: "{name}", dependencies: [{dependencies}], path: "{path}"),')

urls = sorted({EXTERNAL[module][1:] for module in used_externals})
packages = ", ".join(['.package(path: "courier")'] + [f'.package(url: "{url}", from: "{version}")' for url, version in urls])
manifest = f"""// swift-tools-version: 6.2
// Generated by scripts/readme-blocks.py from README.md: one target per example.
import PackageDescription

let package = Package(
    name: "ReadmeExamples",
    dependencies: [{packages}],
    targets: [
{chr(10).join(targets)}
    ]
)
"""
with open(os.path.join(scratch, "Package.swift"), "w", encoding="utf-8") as file:
    file.write(manifest)
print(f"{len(units)} examples from {len([b for b in blocks if not b[3]])} Swift blocks "
      f"of {len(documents)} files ({len([b for b in blocks if b[3]])} skipped)")
