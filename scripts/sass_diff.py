#!/usr/bin/env python3
"""Which device kernels changed their machine code between two builds.

    scripts/sass_diff.py BEFORE AFTER [--funcs REGEX] [--list]

BEFORE and AFTER are each a library, object or executable (read with `cuobjdump -sass`) or a text
file holding such a listing. Kernels are matched by mangled name and architecture; each one's
instructions are compared with the encodings and the listing's addresses left out, so that a kernel
whose code is the same compares equal wherever it sits in the file. Prints how many kernels are
identical, and names the ones that changed, appeared or disappeared.

A change that should leave the kernels alone (moving code between files, renaming a launcher,
splitting a header) is checked with it against the build before the change: exit 0 when every
kernel's code is identical and the two builds hold the same kernels, 1 otherwise, 2 on bad input.
"""
import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import tempfile

FUNCTION = re.compile(r"^\s*Function\s*:\s*(\S+)")
ARCH = re.compile(r"^\s*arch\s*=\s*(sm_\d+\w*)")
# An instruction line: /*0040*/  IMAD.MOV.U32 R8, RZ, RZ, 0x1f ;  /* 0x0000001fff087424 */
INSTRUCTION = re.compile(r"^\s*/\*[0-9a-f]{4,}\*/\s*(.*?);")


def cuobjdump():
    """The cuobjdump to run: $CUOBJDUMP, else the one on PATH."""
    return os.environ.get("CUOBJDUMP") or "cuobjdump"


def _archive_members(path):
    """The object files of a static library (ar format), in order: their bytes."""
    with open(path, "rb") as f:
        data = f.read()
    out, at = [], 8
    while at + 60 <= len(data):
        name = data[at:at + 16].decode("ascii", "replace").strip()
        size = int(data[at + 48:at + 58].decode("ascii").strip() or 0)
        body = data[at + 60:at + 60 + size]
        at += 60 + size + (size & 1)
        if name in ("/", "//", "/SYM64/", "__.SYMDEF", "__.SYMDEF SORTED"):  # symbol and name tables
            continue
        if name.startswith("#1/"):  # BSD: the name leads the body
            n = int(name[3:])
            body = body[n:]
        out.append(body)
    return out


def _cuobjdump_sass(tool, env, path, missing_ok=False):
    try:
        r = subprocess.run([tool, "-sass", path], capture_output=True, text=True, env=env)
    except FileNotFoundError:
        raise SystemExit("sass_diff: cuobjdump is not on PATH (it comes with the CUDA toolkit), nor named by $CUOBJDUMP")
    if r.returncode != 0:
        if missing_ok and "does not contain device code" in r.stdout + r.stderr:
            return ""
        raise SystemExit(f"sass_diff: cuobjdump -sass {path} failed: {r.stderr.strip()[:300]}")
    return r.stdout


def listing(path):
    """The SASS listing of a binary (cuobjdump -sass), or the text of a file that already is one.
    A static library is listed an object at a time, as many at once as there are cores (one
    cuobjdump over a library of a few hundred kernels takes most of a minute); the members'
    listings follow in the library's order, host-only members empty."""
    with open(path, "rb") as f:
        head = f.read(4096)
    if b"\0" not in head and not head.startswith(b"!<arch>\n"):  # a text file: a saved listing
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    tool = cuobjdump()
    env = dict(os.environ)
    if os.path.dirname(tool):  # a cuobjdump of its own: the nvdisasm it runs beside it
        env["PATH"] = os.path.dirname(tool) + os.pathsep + env.get("PATH", "")
    if not head.startswith(b"!<arch>\n"):
        return _cuobjdump_sass(tool, env, path)
    with tempfile.TemporaryDirectory(prefix="sass_diff.") as tmp:
        objects = []
        for i, body in enumerate(_archive_members(path)):
            objects.append(os.path.join(tmp, f"{i:04d}.o"))
            with open(objects[-1], "wb") as f:
                f.write(body)
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            parts = list(pool.map(lambda o: _cuobjdump_sass(tool, env, o, missing_ok=True), objects))
    return "".join(parts)


def kernel_code(text, funcs=None):
    """{(arch, mangled name): its instructions in address order, spaces normalized}."""
    out = {}
    arch, name, body = "?", None, []

    def close():
        if name is not None and (funcs is None or funcs.search(name)):
            out[(arch, name)] = body

    for line in text.splitlines():
        m = ARCH.match(line)
        if m:
            close()
            name, body = None, []
            arch = m.group(1)
            continue
        m = FUNCTION.match(line)
        if m:
            close()
            name, body = m.group(1), []
            continue
        m = INSTRUCTION.match(line)
        if m and name is not None:
            body.append(" ".join(m.group(1).split()))
    close()
    return out


def funcs_pattern(text, tool):
    """--funcs compiled (None without it); a bad expression is said and exits 2."""
    try:
        return re.compile(text) if text else None
    except re.error as e:
        print(f"{tool}: --funcs: {e}", file=sys.stderr)
        raise SystemExit(2)


def kernels(text, funcs=None):
    """{(arch, mangled name): digest of its instructions}."""
    return {k: hashlib.sha256("\n".join(v).encode()).hexdigest() for k, v in kernel_code(text, funcs).items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--funcs", help="only kernels whose mangled name matches this regular expression")
    ap.add_argument("--list", action="store_true", help="also name every identical kernel")
    args = ap.parse_args(argv)
    funcs = funcs_pattern(args.funcs, "sass_diff")
    try:
        a, b = kernels(listing(args.before), funcs), kernels(listing(args.after), funcs)
    except OSError as e:
        print(f"sass_diff: {e}", file=sys.stderr)
        return 2
    if not a and not b:
        print("sass_diff: no kernel in either build (nothing compared)", file=sys.stderr)
        return 2
    same = sorted(k for k in a if k in b and a[k] == b[k])
    changed = sorted(k for k in a if k in b and a[k] != b[k])
    gone = sorted(k for k in a if k not in b)
    new = sorted(k for k in b if k not in a)
    print(f"{len(same)} kernels identical, {len(changed)} changed, {len(gone)} only before, {len(new)} only after")
    for what, keys in (("changed", changed), ("only before", gone), ("only after", new)) + \
            ((("identical", same),) if args.list else ()):
        for arch, name in keys:
            print(f"  {what:11s} {arch} {name}")
    return 0 if not (changed or gone or new) else 1


if __name__ == "__main__":
    sys.exit(main())
