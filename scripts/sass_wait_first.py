#!/usr/bin/env python3
"""Every kernel waits for the grid ahead of it before it touches global memory.

    scripts/sass_wait_first.py BINARY... [--funcs REGEX]

The library's kernels are launched as programmatic dependents of the kernel ahead in the stream
(docs/launch-forms.md#programmatic-dependent-launch): one may be running while the kernel ahead
still writes its input, so its first statement is griddepcontrol.wait (begin_dependent_grid). In
the machine code that is ACQBULK. Each BINARY (a library, object or executable, read with
`cuobjdump -sass`, or a text file holding such a listing) is checked kernel by kernel: ACQBULK
must come, in straight-line code from the entry (no branch, call or exit before it), before the
first instruction that reads or writes global or generic memory (LDG, STG, LD, ST, atomics and
reductions, asynchronous and bulk copies, LDGSTS, cache control). Exit 0 when every kernel does,
1 naming each that does not, 2 on bad input or no kernel at all, 77 when cuobjdump is missing
(ctest reports the test skipped). $CUOBJDUMP names the cuobjdump to run.
"""
import argparse
import os
import re
import shutil
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sass_diff  # noqa: E402  (its listing reader and kernel splitter)

# The opcode (first word, after a predicate) of an instruction that touches global or generic memory.
MEMORY = re.compile(r"^(LDG|STG|LD|ST|ATOM|ATOMG|RED|REDG|LDGSTS|LDGDEPBAR|UBLKCP|UBLKPF|UBLKRED|UTMALDG|UTMASTG|"
                    r"UTMAPF|UTMAREDG|CCTL|CCTLL|SUST|SULD|SUATOM|SURED)(\.|$)")
# Control flow that could leave the entry's straight line before the wait.
FLOW = re.compile(r"^(BRA|BRX|JMP|JMX|CALL|RET|EXIT|BSSY|BSYNC|WARPSYNC|BREAK|BPT|KILL)(\.|$)")


def opcode(instruction):
    words = instruction.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0] if words else ""


def verdict(code):
    """None when the kernel waits first, else why not."""
    for i, ins in enumerate(code):
        op = opcode(ins)
        if op.startswith("ACQBULK"):
            return None
        if MEMORY.match(op):
            return f"instruction {i} ({ins}) touches memory before ACQBULK"
        if FLOW.match(op):
            return f"instruction {i} ({ins}) leaves the entry before ACQBULK"
    return "no ACQBULK"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("binary", nargs="+")
    ap.add_argument("--funcs", help="only kernels whose mangled name matches this regular expression")
    args = ap.parse_args(argv)
    funcs = sass_diff.funcs_pattern(args.funcs, "sass_wait_first")
    total, bad = 0, []
    for path in args.binary:
        if not os.path.isfile(path):
            print(f"sass_wait_first: no file {path}", file=sys.stderr)
            return 2
        with open(path, "rb") as f:
            text_file = b"\0" not in f.read(4096)
        if not text_file and not shutil.which(sass_diff.cuobjdump()):
            print(f"SKIPPED: {sass_diff.cuobjdump()} not found (set CUOBJDUMP, or put the CUDA toolkit's on PATH)")
            return 77
        for (arch, name), code in sorted(sass_diff.kernel_code(sass_diff.listing(path), funcs).items()):
            total += 1
            why = verdict(code)
            if why:
                bad.append(f"  {os.path.basename(path)} {arch} {name}: {why}")
    if total == 0:
        print("sass_wait_first: no kernel found (nothing checked)", file=sys.stderr)
        return 2
    print(f"{total - len(bad)} of {total} kernels wait for the grid ahead before touching memory")
    for line in bad[:50]:
        print(line)
    if len(bad) > 50:
        print(f"  ... and {len(bad) - 50} more")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
