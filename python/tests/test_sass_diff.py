"""scripts/sass_diff.py on two saved listings: the same kernel at other addresses and encodings is
identical; a changed instruction, a kernel gone and a kernel new are named; the exit status says
whether anything differs. scripts/sass_wait_first.py on saved listings: a kernel that touches memory
or branches before its ACQBULK, or has none, is named; without cuobjdump a binary is skipped (77)."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "sass_diff.py")
WAIT_FIRST = os.path.join(ROOT, "scripts", "sass_wait_first.py")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def listing(kernels):
    out = ["Fatbin elf code:", "================", "arch = sm_90", "code version = [1,8]", ""]
    for name, instructions in kernels:
        out.append(f"\t\tFunction : {name}")
        out.append('\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"')
        for i, ins in enumerate(instructions):
            out.append(f"        /*{16 * i:04x}*/                   {ins} ;   /* 0x{i:016x} */")
            out.append("                                                   /* 0x000fe20000000800 */")
    return "\n".join(out) + "\n"


A = [("_Z1av", ["LDC R1, c[0x0][0x28]", "S2R R3, SR_TID.X", "EXIT"]),
     ("_Z1bv", ["LDC R1, c[0x0][0x28]", "EXIT"]),
     ("_Z1cv", ["EXIT"])]
B_SAME = [("_Z1cv", ["EXIT"]), ("_Z1av", ["LDC R1, c[0x0][0x28]", "S2R R3,  SR_TID.X", "EXIT"]),
          ("_Z1bv", ["LDC R1, c[0x0][0x28]", "EXIT"])]
B_DIFF = [("_Z1av", ["LDC R1, c[0x0][0x28]", "S2R R4, SR_TID.X", "EXIT"]),
          ("_Z1bv", ["LDC R1, c[0x0][0x28]", "EXIT"]),
          ("_Z1dv", ["EXIT"])]

with tempfile.TemporaryDirectory() as tmp:
    paths = {}
    for key, ks in (("a", A), ("same", B_SAME), ("diff", B_DIFF)):
        paths[key] = os.path.join(tmp, key + ".sass")
        with open(paths[key], "w") as f:
            f.write(listing(ks))

    def run(*args):
        return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True)

    r = run(paths["a"], paths["same"])
    check(r.returncode == 0 and "3 kernels identical, 0 changed, 0 only before, 0 only after" in r.stdout,
          f"the same code elsewhere in the file, other spacing: identical, exit 0 ({r.stdout.strip()})")
    r = run(paths["a"], paths["diff"])
    check(r.returncode == 1 and "1 kernels identical, 1 changed, 1 only before, 1 only after" in r.stdout
          and "changed     sm_90 _Z1av" in r.stdout and "only before sm_90 _Z1cv" in r.stdout
          and "only after  sm_90 _Z1dv" in r.stdout,
          f"a changed register, a kernel gone, one new: each named, exit 1 ({r.stdout.strip()})")
    r = run(paths["a"], paths["diff"], "--funcs", "_Z1bv")
    check(r.returncode == 0 and "1 kernels identical" in r.stdout, "--funcs compares only the kernels it matches")
    empty = os.path.join(tmp, "empty.sass")
    open(empty, "w").close()
    r = run(empty, empty)
    check(r.returncode == 2 and "nothing compared" in r.stderr, "two listings without kernels: exit 2, said")

WAITS = [("_Z4goodv", ["LDC R1, c[0x0][0x28]", "ACQBULK", "S2R R3, SR_TID.X", "LDG.E.128 R4, desc[UR4][R2.64]", "EXIT"]),
         ("_Z4predv", ["S2R R3, SR_TID.X", "ACQBULK", "@P0 STG.E [R2.64], R4", "EXIT"])]
LATE = [("_Z4loadv", ["LDC R1, c[0x0][0x28]", "LDG.E R4, desc[UR4][R2.64]", "ACQBULK", "EXIT"]),
        ("_Z5storev", ["@!P0 STG.E.U8 [R2.64], R4", "ACQBULK", "EXIT"]),
        ("_Z6branchv", ["ISETP.GE.AND P0, PT, R0, 0x1, PT", "@P0 BRA 0x80", "ACQBULK", "EXIT"]),
        ("_Z5asyncv", ["LDGSTS.E.BYPASS.128 [R3], desc[UR4][R4.64]", "ACQBULK", "EXIT"]),
        ("_Z4nonev", ["S2R R3, SR_TID.X", "LDS R4, [R3]", "NOP"])]

with tempfile.TemporaryDirectory() as tmp:
    good, late, empty = (os.path.join(tmp, n + ".sass") for n in ("good", "late", "empty"))
    with open(good, "w") as f:
        f.write(listing(WAITS))
    with open(late, "w") as f:
        f.write(listing(WAITS + LATE))
    open(empty, "w").close()

    def wait_first(*args, env=None):
        return subprocess.run([sys.executable, WAIT_FIRST, *args], capture_output=True, text=True, env=env)

    r = wait_first(good)
    check(r.returncode == 0 and "2 of 2 kernels wait" in r.stdout,
          f"ACQBULK before the first load or store (shared loads, constants, special registers may precede): exit 0 ({r.stdout.strip()})")
    r = wait_first(good, late)
    named = [k for k, _ in LATE if k in r.stdout]
    check(r.returncode == 1 and "4 of 9 kernels wait" in r.stdout and len(named) == len(LATE)
          and "no ACQBULK" in r.stdout and "leaves the entry" in r.stdout and "_Z4goodv" not in r.stdout,
          f"a load, a predicated store, a branch, an async copy before ACQBULK, and no ACQBULK: each named, exit 1 ({r.stdout.strip()})")
    r = wait_first(late, "--funcs", "_Z4good|_Z4pred")
    check(r.returncode == 0 and "2 of 2" in r.stdout, "--funcs checks only the kernels it matches")
    r = wait_first(empty)
    check(r.returncode == 2 and "no kernel" in r.stderr, "a listing without kernels: exit 2, said")
    r = wait_first(os.path.join(tmp, "absent.so"))
    check(r.returncode == 2 and "no file" in r.stderr, "a missing file: exit 2, said")
    binary = os.path.join(tmp, "lib.a")
    with open(binary, "wb") as f:
        f.write(b"!<arch>\n\0\0")
    r = wait_first(binary, env=dict(os.environ, CUOBJDUMP=os.path.join(tmp, "no-cuobjdump")))
    check(r.returncode == 77 and "SKIPPED" in r.stdout, f"a binary without cuobjdump: skipped, 77 ({r.stdout.strip()})")



def archive(members):
    """A static library in GNU ar format: a symbol table, a long-name table, then the members
    (name, bytes), one of them named through the long-name table, one of odd size."""
    def header(name, size):
        return f"{name:<16}{0:<12}{0:<6}{0:<6}{644:<8}{size:<10}`\n".encode()
    longnames = b"a_member_with_a_long_name.o/\n"
    out = bytearray(b"!<arch>\n")
    for name, body in [("/", b"\0\0\0\0"), ("//", longnames)] + members:
        out += header(name, len(body)) + body + (b"\n" if len(body) % 2 else b"")
    return bytes(out)


with tempfile.TemporaryDirectory() as tmp:
    # A stand-in cuobjdump: an object's bytes are its listing; one holding only "host" has no
    # device code (cuobjdump says so and exits 255).
    fake = os.path.join(tmp, "cuobjdump")
    with open(fake, "w") as f:
        f.write(f"#!{sys.executable}\n"
                "import sys\n"
                "body = open(sys.argv[-1]).read()\n"
                "if body == 'host':\n"
                "    print(f\"cuobjdump info    : File '{sys.argv[-1]}' does not contain device code\")\n"
                "    sys.exit(255)\n"
                "sys.stdout.write(body)\n")
    os.chmod(fake, 0o755)
    lib = os.path.join(tmp, "libk.a")
    with open(lib, "wb") as f:
        f.write(archive([("first.o/", listing(WAITS[:1]).encode()), ("host.o/", b"host"),
                         ("/0", (listing(WAITS[1:]) + " ").encode())]))
    env = dict(os.environ, CUOBJDUMP=fake)
    r = subprocess.run([sys.executable, WAIT_FIRST, lib], capture_output=True, text=True, env=env)
    check(r.returncode == 0 and "2 of 2 kernels wait" in r.stdout,
          f"a static library is read an object at a time, host-only members left out ({r.stdout.strip()} {r.stderr.strip()})")
    whole = os.path.join(tmp, "whole.sass")
    with open(whole, "w") as f:
        f.write(listing(WAITS))
    r = subprocess.run([sys.executable, SCRIPT, lib, whole], capture_output=True, text=True, env=env)
    check(r.returncode == 0 and "2 kernels identical" in r.stdout,
          f"its kernels are the listing's of the whole ({r.stdout.strip()} {r.stderr.strip()})")
    with open(lib, "ab") as f:
        f.write(b"x")  # a truncated member header at the end is ignored
    r = subprocess.run([sys.executable, SCRIPT, lib, whole], capture_output=True, text=True, env=env)
    check(r.returncode == 0, "a stray byte after the last member is ignored")

print(f"sass_diff: {'PASS' if not failures else 'FAIL'}")
sys.exit(1 if failures else 0)
