#!/usr/bin/env python3
"""Static size of each kernel's main loop in a SASS listing (cuobjdump -sass): for every function,
the instructions between the target of its longest backward branch and that branch. A quick,
device-free proxy for the work per iteration of a persistent kernel's loop (both sides of every
branch inside it are counted once), for comparing two builds of the same kernel.

Usage: scripts/sass_loop.py LISTING [REGEX]   (REGEX filters the mangled function names)
"""
import re
import sys


def report(name, ins, pattern):
    if pattern and not re.search(pattern, name):
        return
    where = {addr: i for i, (addr, _) in enumerate(ins)}
    best, head = 0, None
    for i, (addr, text) in enumerate(ins):
        m = re.search(r"BRA (?:`\(\.L_x_\d+\) )?0x([0-9a-f]+)", text)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target < addr and target in where and i - where[target] + 1 > best:
            best, head = i - where[target] + 1, target
    print(f"{best:6d} instructions in the loop at {hex(head) if head is not None else '-':>8}  ({len(ins)} in all)  {name}")


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    pattern = sys.argv[2] if len(sys.argv) > 2 else None
    name, ins = None, []
    with open(sys.argv[1]) as f:
        for line in f:
            if "Function :" in line:
                if name:
                    report(name, ins, pattern)
                name, ins = line.split(":", 1)[1].strip(), []
                continue
            m = re.match(r"\s+/\*([0-9a-f]{4,})\*/\s+(\S.*?);", line)
            if m:
                ins.append((int(m.group(1), 16), m.group(2)))
    if name:
        report(name, ins, pattern)
    return 0


if __name__ == "__main__":
    sys.exit(main())
