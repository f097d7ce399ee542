#!/usr/bin/env python3
"""Rewrites proto3 files as edition 2024 with the same meaning, so that their
string fields become `string_type = VIEW` (edition 2024's default) and
protoc's experimental_cpp_micro_string option can put their bytes on the
arena. Used only to measure MicroString on the corpus (docs/PROTOBUF_VERSIONS.md); the
corpus itself stays as its authors wrote it.

  to_edition2024.py SRC_DIR OUT_DIR

Copies every .proto under SRC_DIR to OUT_DIR; proto3 files are converted:
  syntax = "proto3"           -> edition = "2024" + file features that keep
                                 proto3's behaviour (implicit presence, legacy
                                 naming, every symbol visible)
  optional T x = N;           -> T x = N [features.field_presence = EXPLICIT];
  reserved "a", "b";          -> reserved a, b;
  option java_multiple_files  -> dropped (removed in edition 2024; Java only)
Wire format, presence and enum semantics are unchanged; only the C++ string
accessors differ (string_view getters, no mutable_ for singular strings).
Written by hand: protobuf's own migration tool (Prototiller) is not public.
"""
import os
import re
import sys

FILE_FEATURES = [
    "option features.field_presence = IMPLICIT;",
    "option features.enforce_naming_style = STYLE_LEGACY;",
    "option features.default_symbol_visibility = EXPORT_ALL;",
]
SYNTAX = re.compile(r'^\s*syntax\s*=\s*"proto3"\s*;')
PACKAGE = re.compile(r"^\s*package\s+[\w.]+\s*;")
OPTIONAL = re.compile(r"^(\s*)optional\s+([\w.]+)\s+(\w+)\s*=\s*(\d+)\s*(?:\[(.*)\])?\s*;(.*)$")
RESERVED = re.compile(r'^(\s*)reserved\s+("[^;]*)\s*;(.*)$')
JAVA_MULTIPLE = re.compile(r"^\s*option\s+java_multiple_files\s*=")


def convert(text):
    lines = text.split("\n")
    if not any(SYNTAX.match(l) for l in lines):
        return text  # proto2 or editions: left alone
    out = []
    features_at = None
    for line in lines:
        if SYNTAX.match(line):
            out.append('edition = "2024";')
            features_at = len(out)
            continue
        if PACKAGE.match(line):
            out.append(line)
            features_at = len(out)
            continue
        if JAVA_MULTIPLE.match(line):
            continue
        m = OPTIONAL.match(line)
        if m:
            indent, type_, name, number, options, rest = m.groups()
            opts = ["features.field_presence = EXPLICIT"]
            if options:
                opts.append(options.strip())
            out.append(f"{indent}{type_} {name} = {number} [{', '.join(opts)}];{rest}")
            continue
        m = RESERVED.match(line)
        if m:
            indent, names, rest = m.groups()
            names = ", ".join(n.strip().strip('"') for n in names.split(","))
            out.append(f"{indent}reserved {names};{rest}")
            continue
        if re.match(r"^\s*optional\s", line):
            raise ValueError(f"unhandled optional field: {line.strip()}")
        out.append(line)
    out[features_at:features_at] = [""] + FILE_FEATURES
    return "\n".join(out)


def main():
    src, dst = sys.argv[1], sys.argv[2]
    for root, _, files in os.walk(src):
        for f in files:
            if not f.endswith(".proto"):
                continue
            path = os.path.join(root, f)
            target = os.path.join(dst, os.path.relpath(path, src))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            try:
                converted = convert(text)
            except ValueError as e:
                sys.exit(f"{path}: {e}")
            with open(target, "w", encoding="utf-8") as fh:
                fh.write(converted)


if __name__ == "__main__":
    main()
