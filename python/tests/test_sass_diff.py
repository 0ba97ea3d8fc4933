"""scripts/sass_diff.py on two saved listings: the same kernel at other addresses and encodings is
identical; a changed instruction, a kernel gone and a kernel new are named; the exit status says
whether anything differs."""
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPT = os.path.join(ROOT, "scripts", "sass_diff.py")
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

print(f"sass_diff: {'PASS' if not failures else 'FAIL'}")
sys.exit(1 if failures else 0)
