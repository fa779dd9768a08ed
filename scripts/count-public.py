#!/usr/bin/env python3
"""Count the public API of Courier's library modules without building.

Usage:
    python3 scripts/count-public.py [REPO]             # per-module table (REPO defaults to .)
    python3 scripts/count-public.py [REPO] --list      # one line per public declaration (TSV)
    python3 scripts/count-public.py [REPO] --json      # the same, as JSON
    python3 scripts/count-public.py [REPO] --concepts  # leave out protocol-extension default
                                               # implementations and conformance witnesses

What counts as one public declaration (roughly what a symbol graph at -minimum-access-level
public lists, minus synthesized members):
  * a type (struct/class/actor/enum/protocol) declared `public` or `open`;
  * a func / init / subscript / var / let / typealias / macro declared `public` or `open`;
  * each `case` of a public enum (`case a, b` counts 2);
  * each requirement (func/init/var/subscript/associatedtype) of a public protocol;
  * each member of a `public extension` that has no access modifier of its own;
  * a member is counted only if every enclosing type is public too (a `public func` in an
    internal type, or in an extension of an internal type, is not API). Extensions of types
    from other modules (HTTPRequest, Logger, ...) count as public when their member is public.
Not counted: `@_spi(...)` declarations (and members of SPI types), `deinit`, `package` declarations, synthesized members (memberwise inits, Codable,
Equatable), conformances themselves, and `@_exported import` re-exports.
Both branches of an `#if` are read (the PostgresCache sources are all under `#if PostgreSQL`:
they count, as they are public when the trait is on).
"""

import json
import os
import re
import sys

MODULES = {
    # directory under Sources/ -> module name
    "Core": "CourierCore",
    "Transport": "CourierTransport",
    "Caching": "CourierCaching",
    "JSON": "CourierJSON",
    "Services": "CourierServices",
    "Testing": "CourierTesting",
    "XML": "CourierXML",
    "Lifecycle": "CourierLifecycle",
    "OpenAPI": "CourierOpenAPI",
    "PostgresCache": "CourierPostgresCache",
    "Courier": "Courier",
}

TYPE_KW = {"struct", "class", "actor", "enum", "protocol"}
MEMBER_KW = {"func", "init", "subscript", "var", "let", "typealias", "associatedtype",
             "case", "deinit", "macro", "operator", "precedencegroup"}
ACCESS = {"public", "open", "package", "internal", "fileprivate", "private"}
MODIFIERS = ACCESS | {"static", "class", "final", "override", "mutating", "nonmutating",
                      "convenience", "required", "lazy", "weak", "unowned", "indirect",
                      "nonisolated", "dynamic", "optional", "prefix", "postfix", "infix",
                      "consuming", "borrowing", "isolated", "distributed", "async"}
DECL_START = TYPE_KW | MEMBER_KW | {"extension", "import"} | MODIFIERS


def strip(src):
    """Blank out comments and string literals, keeping newlines (and so line numbers)."""
    out = []
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            j = src.find("\n", i)
            j = n if j < 0 else j
            i = j
            continue
        if src.startswith("/*", i):
            depth, j = 1, i + 2
            while j < n and depth:
                if src.startswith("/*", j):
                    depth, j = depth + 1, j + 2
                elif src.startswith("*/", j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            out.append("\n" * src.count("\n", i, j))
            i = j
            continue
        m = re.match(r'(#*)("""|")', src[i:i + 12])
        if m and (m.group(1) == "" or c == "#") and (c == '"' or m.group(1)):
            hashes, quote = m.group(1), m.group(2)
            after = i + len(hashes) + 3
            if quote == '"""' and not re.match(r"[ \t]*\n", src[after:after + 80]):
                quote = '"'  # `#""""#` is one line: a multi-line literal opens with a newline
            close = quote + hashes
            j = i + len(hashes) + len(quote)
            depth = 0  # interpolation parens \( ... )
            while j < n:
                if src[j] == "\\" and not hashes:
                    if src.startswith("\\(", j):
                        # skip interpolation, which may itself contain strings
                        k, d = j + 2, 1
                        while k < n and d:
                            if src[k] == "(":
                                d += 1
                            elif src[k] == ")":
                                d -= 1
                            elif src[k] == '"':
                                k2 = src.find('"', k + 1)
                                k = k2 if k2 > 0 else k
                            k += 1
                        j = k
                        continue
                    j += 2
                    continue
                if src.startswith(close, j):
                    j += len(close)
                    break
                j += 1
            out.append('""' + "\n" * src.count("\n", i, j))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


TOKEN = re.compile(r"\n|[A-Za-z_][A-Za-z0-9_]*|`[^`]+`|#\w+|@\w+|\d[\w.]*|->|[{}()\[\]<>:,=;.?!&|+\-*/%^~]|\S")


def tokenize(text):
    toks, line = [], 1
    for m in TOKEN.finditer(text):
        t = m.group(0)
        if t == "\n":
            toks.append(("\n", line))
            line += 1
        else:
            toks.append((t.strip("`"), line))
    return toks


class Ctx:
    def __init__(self, kind, name, public, is_protocol=False, is_enum=False, ext_public=False):
        self.kind = kind            # 'type' | 'ext' | 'top'
        self.name = name            # qualified name
        self.public = public        # effective public-ness of the container
        self.is_protocol = is_protocol
        self.is_enum = is_enum
        self.ext_public = ext_public  # `public extension`: members default to public


def skip_attr(toks, i):
    """toks[i] is '@attr'; skip its optional (...) argument."""
    i += 1
    if i < len(toks) and toks[i][0] == "(":
        d = 0
        while i < len(toks):
            if toks[i][0] == "(":
                d += 1
            elif toks[i][0] == ")":
                d -= 1
                if d == 0:
                    return i + 1
            i += 1
    return i


def skip_block(toks, i):
    """toks[i] is '{'; return index after the matching '}'."""
    d = 0
    while i < len(toks):
        t = toks[i][0]
        if t == "{":
            d += 1
        elif t == "}":
            d -= 1
            if d == 0:
                return i + 1
        i += 1
    return i


def next_nonnl(toks, i):
    while i < len(toks) and toks[i][0] == "\n":
        i += 1
    return i


def line_starts_decl(toks, i):
    j = next_nonnl(toks, i)
    if j >= len(toks):
        return True
    t = toks[j][0]
    return t in DECL_START or t.startswith("@") or t == "}" or t.startswith("#")


def parse_file(path, types_access, out, module, pass_no):
    src = open(path, encoding="utf-8").read()
    toks = tokenize(strip(src))
    stack = [Ctx("top", "", True)]
    i, n = 0, len(toks)
    while i < n:
        t, line = toks[i]
        if t == "\n" or t == ";":
            i += 1
            continue
        if t == "}":
            if len(stack) > 1:
                stack.pop()
            i += 1
            continue
        if t.startswith("#"):  # #if / #else / #endif / #elseif: skip the line
            while i < n and toks[i][0] != "\n":
                i += 1
            continue
        # attributes and modifiers
        attrs, mods = [], []
        start_line = line
        while i < n:
            t = toks[i][0]
            if t.startswith("@"):
                attrs.append(t)
                i = skip_attr(toks, i)
            elif t in MODIFIERS and i + 1 < n and (
                    toks[next_nonnl(toks, i + 1)][0] not in ("(", ":", "=", ".", ",")
                    or (t in ACCESS and toks[i + 1][0] == "(" and i + 2 < n and toks[i + 2][0] == "set")):
                # `class func` / `class var` is a modifier; `class Foo` is a type
                if t == "class" and toks[next_nonnl(toks, i + 1)][0] not in MODIFIERS | {"func", "var", "let", "subscript"}:
                    break
                # access modifiers may have (set)
                i += 1
                if i < n and toks[i][0] == "(" and t in ACCESS:
                    # `private(set)`: a setter's access, not the declaration's
                    while i < n and toks[i][0] != ")":
                        i += 1
                    i += 1
                else:
                    mods.append(t)
            elif t == "\n":
                i += 1
            else:
                break
        if i >= n:
            break
        kw, start_line = toks[i]
        ctx = stack[-1]
        access = next((m for m in mods if m in ACCESS and m != "class"), None)
        if kw == "import":
            while i < n and toks[i][0] != "\n":
                i += 1
            continue
        if kw in TYPE_KW or kw == "extension":
            # name
            j = i + 1
            name_parts = []
            while j < n and toks[j][0] not in ("{", ":", "<", "where", "\n"):
                if toks[j][0] != ".":
                    name_parts.append(toks[j][0])
                j += 1
            local = ".".join(name_parts)
            # find the opening brace of the body
            while j < n and toks[j][0] != "{":
                j += 1
            if kw == "extension":
                qual = local
                # extension of an own type? (look up the qualified name, then the last part)
                own = types_access.get(module, {})
                if qual in own:
                    target_public = own[qual]
                else:
                    known_elsewhere = [m for m in types_access if qual in types_access[m]]
                    if known_elsewhere:
                        target_public = any(types_access[m][qual] for m in known_elsewhere)
                    else:
                        target_public = True  # a type from another package (HTTPRequest, Logger ...)
                ext_public = access in ("public", "open")
                protocol_ext = False
                for m in types_access:
                    if types_access[m].get("__proto__" + qual):
                        protocol_ext = True
                stack.append(Ctx("ext", qual, target_public, ext_public=ext_public))
                i = j + 1
                continue
            qual = (ctx.name + "." + local) if ctx.kind in ("type", "ext") and ctx.name else local
            is_pub = access in ("public", "open") or (ctx.kind == "ext" and ctx.ext_public and access is None)
            eff = is_pub and ctx.public and "@_spi" not in attrs
            if pass_no == 1:
                types_access.setdefault(module, {})[qual] = eff
                if kw == "protocol":
                    types_access[module]["__proto__" + qual] = True
            elif eff:
                out.append(dict(module=module, file=path, line=start_line, kind=kw, name=qual,
                                container=ctx.name, attrs=attrs))
            stack.append(Ctx("type", qual, eff, is_protocol=(kw == "protocol"), is_enum=(kw == "enum")))
            i = j + 1
            continue
        if kw in MEMBER_KW:
            # member name
            j = i + 1
            if kw in ("init", "subscript", "deinit"):
                name = kw
            else:
                name = toks[j][0] if j < n else "?"
            # signature text (up to body / end of line)
            names = [name]
            sig_start = i
            depth = 0
            angle = 0
            if kw == "case":
                names = []
                expect = True
            while j < n:
                tj = toks[j][0]
                if tj in ("(", "["):
                    depth += 1
                elif tj in (")", "]"):
                    depth -= 1
                elif tj == "{" and depth == 0:
                    if kw in ("var", "let", "func", "init", "subscript", "deinit", "case"):
                        j = skip_block(toks, j)
                        if kw in ("func", "init", "subscript", "deinit"):
                            break
                        continue
                    break
                elif tj == "}" and depth == 0:
                    break
                elif tj == "\n" and depth == 0:
                    if line_starts_decl(toks, j):
                        break
                elif tj == ";" and depth == 0:
                    break
                if kw == "case" and depth == 0:
                    if tj == ",":
                        expect = True
                    elif expect and re.match(r"[A-Za-z_]", tj) and tj != "case":
                        names.append(tj)
                        expect = False
                j += 1
            sig = " ".join(x[0] for x in toks[sig_start:min(j, sig_start + 40)] if x[0] != "\n")
            if kw == "deinit":
                i = j
                continue
            in_type = ctx.kind in ("type", "ext")
            if not in_type:
                is_pub = access in ("public", "open")
                eff = is_pub
            elif ctx.kind == "type" and ctx.is_protocol:
                eff = ctx.public  # requirements of a public protocol
            elif ctx.kind == "type" and ctx.is_enum and kw == "case":
                eff = ctx.public
            elif ctx.kind == "ext" and ctx.ext_public and access is None:
                eff = ctx.public
            else:
                eff = access in ("public", "open") and ctx.public
            if any(a == "@_spi" for a in attrs):
                eff = False  # SPI: not public API (a symbol graph leaves it out by default)
            if pass_no == 2 and eff and kw not in ("operator", "precedencegroup"):
                for nm in names or [name]:
                    out.append(dict(module=module, file=path, line=start_line, kind=kw, name=nm,
                                    container=ctx.name, sig=sig, attrs=attrs, in_ext=(ctx.kind == "ext"),
                                    static=("static" in mods or "class" in mods)))
            i = j
            continue
        # anything else (an expression at top level, e.g. in main.swift): skip the line
        if kw == "{":
            i = skip_block(toks, i)
            continue
        i += 1


def collect(repo):
    files = []
    for d, mod in MODULES.items():
        root = os.path.join(repo, "Sources", d)
        for dp, dn, fn in os.walk(root):
            dn[:] = sorted(x for x in dn if not x.endswith(".docc"))
            for f in sorted(fn):
                if f.endswith(".swift"):
                    files.append((mod, os.path.join(dp, f)))
    types_access = {}
    for mod, p in files:
        parse_file(p, types_access, [], mod, 1)
    out = []
    for mod, p in files:
        parse_file(p, types_access, out, mod, 2)
    for d in out:
        d["file"] = os.path.relpath(d["file"], repo)
    return out


WITNESS_NAMES = {"description", "debugDescription", "customMirror", "=", "==", "<", "hash",
                 "makeAsyncIterator", "next", "encode", "unownedExecutor", "Element", "rawValue"}


def role(d, protocols):
    """'default' for a member of an extension of one of Courier's protocols (a default
    implementation), 'witness' for a conformance's member a user never names (description, ==,
    hash, makeAsyncIterator, next, encode(to:), init(from:), literal inits, rawValue ...),
    else None. `--concepts` leaves both out of the count."""
    if d.get("in_ext") and d["container"] in protocols:
        return "default"
    if d["kind"] in TYPE_KW:
        return None
    if d["name"] in WITNESS_NAMES:
        return "witness"
    if d["kind"] == "init" and re.search(r"from decoder|Literal|rawValue", d.get("sig", "")):
        return "witness"
    return None


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    repo = args[0] if args else "."
    decls = collect(repo)
    if "--concepts" in sys.argv:
        protocols = {d["name"] for d in decls if d["kind"] == "protocol"}
        decls = [d for d in decls if not role(d, protocols)]
    if "--json" in sys.argv:
        json.dump(decls, sys.stdout, indent=1)
        return
    if "--list" in sys.argv:
        for d in decls:
            q = (d["container"] + "." if d["container"] and d["kind"] not in TYPE_KW else "") + d["name"]
            print("\t".join([d["module"], f'{d["file"]}:{d["line"]}', d["kind"], q, d.get("sig", "")]))
        return
    counts = {}
    for d in decls:
        counts[d["module"]] = counts.get(d["module"], 0) + 1
    total = 0
    for mod in MODULES.values():
        c = counts.get(mod, 0)
        total += c
        print(f"{mod:22} {c:5}")
    print(f"{'total':22} {total:5}")


if __name__ == "__main__":
    main()
