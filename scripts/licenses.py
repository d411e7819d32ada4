#!/usr/bin/env python3
"""Writes the licenses of what a memcity archive bundles: every crate compiled into its
binaries (the normal dependencies of memcity-agent and of memcity-viewer's `memcity`, for the
archive's platform, and of the page's WebAssembly), each with its license and the license files
its source ships, the same text printed once for all the crates that share it.

Usage: scripts/licenses.py OUT_FILE TRIPLE [TRIPLE...]   (cargo's platform triples, e.g.
x86_64-unknown-linux-gnu wasm32-unknown-unknown)
"""
import hashlib
import json
import os
import subprocess
import sys

ROOTS = {"memcity-agent", "memcity-viewer"}
LICENSE_FILES = ("license", "licence", "copying", "notice", "unlicense", "copyright")


def bundled(triple):
    """The packages the roots reach through normal dependencies on `triple`, by id."""
    meta = json.loads(
        subprocess.check_output(
            ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", triple]
        )
    )
    packages = {p["id"]: p for p in meta["packages"]}
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    todo = [pid for pid, p in packages.items() if p["name"] in ROOTS]
    seen = set()
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        for dep in nodes[pid]["deps"]:
            # Build scripts' and tests' dependencies are not in the binaries.
            if any(kind["kind"] is None for kind in dep["dep_kinds"]):
                todo.append(dep["pkg"])
    members = set(meta["workspace_members"])
    return {pid: packages[pid] for pid in seen if pid not in members}


def license_files(package):
    folder = os.path.dirname(package["manifest_path"])
    found = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if os.path.isfile(path) and name.lower().startswith(LICENSE_FILES):
            found.append(path)
    return found


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    out, triples = sys.argv[1], sys.argv[2:]
    packages = {}
    for triple in triples:
        packages.update(bundled(triple))
    crates = sorted(packages.values(), key=lambda p: (p["name"], p["version"]))
    texts = {}  # digest -> (text, [crate names])
    rows = []
    for p in crates:
        label = f"{p['name']} {p['version']}"
        files = license_files(p)
        for path in files:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read().strip()
            digest = hashlib.sha256(text.encode()).hexdigest()
            texts.setdefault(digest, [text, []])[1].append(f"{label} ({os.path.basename(path)})")
        license = p.get("license") or "see its license file"
        note = "" if files else "  (its source ships no license file)"
        rows.append(f"  {label:<44} {license}{note}")
    with open(out, "w", encoding="utf-8") as f:
        f.write(
            "memcity is licensed under the Apache License 2.0 (LICENSE). Its binaries bundle the\n"
            "Rust crates below, compiled into bin/memcity, lib/libmemcity.so and\n"
            "web/memcity-web.wasm; web/gl.js is the JavaScript half of the miniquad crate.\n"
            "Each crate's license, then the license texts their sources ship, each text once.\n\n"
        )
        f.write("\n".join(rows))
        f.write("\n")
        for text, users in sorted(texts.values(), key=lambda t: t[1][0]):
            f.write("\n" + "=" * 78 + "\n")
            f.write("Used by: " + ", ".join(users) + "\n")
            f.write("=" * 78 + "\n\n")
            f.write(text + "\n")
    print(f"licenses: {len(crates)} crates, {len(texts)} distinct license texts in {out}")


if __name__ == "__main__":
    main()
