#!/usr/bin/env python3
"""Writes the documented C++ snippets out as compilable files.

Extracted (and each written as <out>/<name>.cc):
  - every ```cpp block of README.md and docs/*.md;
  - each public header's opening usage example (include/arenarpc/, not
    internal/): the first block of comment lines indented by three spaces
    (`//   code`) that holds code (a `;`, `{` or `#include`), blank comment
    lines included;
  - for a header whose opening lists headers as a table (`//   arenarpc/x.h
    what it holds`), a check that it includes each of them (their include
    guards must be defined after including it alone).

A snippet is a fragment, so each file gets: for a header's example that
header first, then the snippet's own #include lines, then
tests/consumer/snippet_fixture.h (protobuf/gRPC names the fragments use:
EchoService, stub, builder, wire, Handle(...); no arenarpc header, so a
header that stops including what its example needs fails here). Class and
function definitions and declarations go to namespace scope in their order,
other statements into a function body; a line of `...` is dropped and
`{ ... }` becomes `{}`. The files are compiled by tests/consumer against
the installed package (ctest doc_snippets).

Usage: doc_snippets.py <out_dir>. Exit 1 when a public header has no usage
example or a document has no snippet it is expected to have.
"""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Where the generated code of the documented protos lives for the consumer.
INCLUDE_MAP = {
    "echo.arenarpc.h": "echo.arenarpc.h",
}
# Names a snippet uses from the generated echo service and install.h: the
# fixture's second half declares them (it includes echo.arenarpc.h).
NEEDS_INSTALL = re.compile(r"InstallEchoServiceAllocators|mysvc::|echo\.arenarpc\.h")
STATEMENT_START = re.compile(r"^(if|for|while|do|switch|return|else|try)\b|^[{}]")
TOP_LEVEL_START = re.compile(
    r"^(class|struct|template|namespace|using|static_assert|enum|int main)\b")
DECLARATION = re.compile(
    r"^(static\s+|const\s+|constexpr\s+|inline\s+)*"
    r"[A-Za-z_][\w:]*(<[^;=]*?>)?(::[\w]+)*[\s\*&]+[A-Za-z_]\w*\s*(\(|=|;|\{)")
GUARD_TABLE = re.compile(r"^//   (arenarpc/[\w/]+\.h)\s{2,}\S")


def opening_comment(path):
    """The comment lines a header opens with."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if not line.startswith("//"):
                break
            lines.append(line.rstrip("\n"))
    return lines


def header_example(lines):
    """The usage example in a header's opening comment: code lines, or None."""
    blocks, block = [], []
    for line in lines:
        if line.startswith("//   ") or (line == "//" and block):
            block.append(line)
        elif block:
            blocks.append(block)
            block = []
    if block:
        blocks.append(block)
    for b in blocks:
        code = [l[5:] if l.startswith("//   ") else "" for l in b]
        if GUARD_TABLE.match(b[0]):
            continue
        text = "\n".join(code)
        if ";" in text or "{" in text or "#include" in text:
            return code
    return None


def listed_headers(lines):
    """Headers an opening comment's table says it holds (`//   arenarpc/x.h  ...`)."""
    return [m.group(1) for m in map(GUARD_TABLE.match, lines) if m]


def guard(header):
    return re.sub(r"[/.]", "_", header).upper() + "_"


def markdown_snippets(path):
    out, block = [], None
    with open(path, encoding="utf-8") as f:
        for no, line in enumerate(f, 1):
            if block is None and line.strip() in ("```cpp", "```c++"):
                block = (no, [])
            elif block is not None and line.strip() == "```":
                out.append(block)
                block = None
            elif block is not None:
                block[1].append(line.rstrip("\n"))
    return out


def depth_change(line):
    # Strings and comments in snippets hold no braces that matter, bar these.
    code = re.sub(r"//.*", "", line)
    code = re.sub(r'"([^"\\]|\\.)*"', '""', code)
    return code.count("{") + code.count("(") - code.count("}") - code.count(")")


def split_units(code):
    """Top-level units: (text, kind) with kind 'top' or 'stmt'."""
    units, cur, depth = [], [], 0
    for line in code:
        stripped = line.strip()
        if stripped == "..." or (not cur and not stripped):
            if cur and stripped != "...":
                cur.append(line)
            continue
        line = line.replace("{ ... }", "{}").replace("...;", ";")
        if not cur and stripped.startswith("//"):
            units.append((line, "comment"))
            continue
        cur.append(line)
        depth += depth_change(line)
        ends = re.sub(r"\s*//.*", "", line).rstrip()
        if depth <= 0 and (ends.endswith(";") or ends.endswith("}")):
            units.append(("\n".join(cur), None))
            cur, depth = [], 0
    if cur:
        units.append(("\n".join(cur), None))
    kinds = []
    for text, kind in units:
        if kind is None:
            first = text.strip()
            if STATEMENT_START.match(first):
                kind = "stmt"
            elif TOP_LEVEL_START.match(first) or DECLARATION.match(first):
                kind = "top"
            else:
                kind = "stmt"
        kinds.append((text, kind))
    return kinds


def render(name, origin, code, default_include):
    includes, body = [], []
    for line in code:
        m = re.match(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', line)
        if m:
            inc = INCLUDE_MAP.get(m.group(1), m.group(1))
            includes.append(f'#include "{inc}"' if '"' in line else f"#include <{inc}>")
        else:
            body.append(line)
    if default_include:  # a header's example: that header first, alone
        includes.insert(0, f'#include "{default_include}"')
    text = "\n".join(code)
    out = [f"// {origin}: generated by scripts/doc_snippets.py, do not edit."]
    out += includes
    out.append('#include "snippet_fixture.h"')
    if NEEDS_INSTALL.search(text):
        out.append('#include "snippet_fixture_install.h"')
    out.append(f"namespace snippet_{name} {{")
    out.append("using namespace fixture;  // NOLINT")
    stmts = []
    for unit, kind in split_units(body):
        if kind == "stmt":
            stmts.append(unit)
        elif kind == "comment":
            (stmts if stmts else out).append(unit)
        else:
            out.append(unit)
    out.append("[[maybe_unused]] int Run() {")
    out += stmts
    out.append("  return 0;")
    out.append("}")
    out.append(f"}}  // namespace snippet_{name}")
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) != 2:
        print(__doc__)
        return 2
    out_dir = argv[1]
    os.makedirs(out_dir, exist_ok=True)
    for old in os.listdir(out_dir):
        if old.endswith(".cc"):
            os.remove(os.path.join(out_dir, old))
    files, missing = {}, []

    docs = ["README.md"] + sorted(
        os.path.join("docs", n) for n in os.listdir(os.path.join(ROOT, "docs"))
        if n.endswith(".md"))
    for doc in docs:
        for no, code in markdown_snippets(os.path.join(ROOT, doc)):
            name = re.sub(r"\W", "_", f"{doc[:-3]}_{no}")
            files[name] = render(name, f"{doc}:{no}", code, None)
    if not any(n.startswith("README") for n in files):
        missing.append("README.md: no ```cpp snippet")

    inc_root = os.path.join(ROOT, "include")
    for base, dirs, names in os.walk(inc_root):
        dirs[:] = sorted(d for d in dirs if d != "internal")
        for n in sorted(names):
            if not n.endswith(".h"):
                continue
            path = os.path.join(base, n)
            header = os.path.relpath(path, inc_root)
            stem = re.sub(r"\W", "_", header[:-2])
            opening = opening_comment(path)
            code = header_example(opening)
            if code is None:
                missing.append(f"include/{header}: no opening usage example")
                continue
            files[f"header_{stem}"] = render(
                f"header_{stem}", f"include/{header}", code, header)
            listed = listed_headers(opening)
            if listed:
                check = [f"// include/{header} includes what its opening lists.",
                         f'#include "{header}"']
                for h in listed:
                    check += [f"#ifndef {guard(h)}",
                              f'#error "{header} says it holds {h} but does not include it"',
                              "#endif"]
                files[f"umbrella_{stem}"] = "\n".join(check) + "\n"

    for name, text in files.items():
        with open(os.path.join(out_dir, name + ".cc"), "w", encoding="utf-8") as f:
            f.write(text)
    for m in missing:
        print(f"doc_snippets: {m}")
    print(f"doc_snippets: {len(files)} file(s) written to {out_dir}")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
