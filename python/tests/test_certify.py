"""Python kernels certified through the bridge (python -m rmsnorm_cert certify): a correct NumPy
kernel passes, the lecture's eps-outside-the-root kernel fails with a repro line that replays the
failure against it, a kernel that raises fails case by case without ending the run, a target
naming nothing is refused with exit status 2 and a missing one with 3 (test_cli_errors.py checks
the rest of what cannot run). Exits 77 (skipped) without numpy.

    python3 python/tests/test_certify.py OUT_DIR     (PYTHONPATH=python, RMSNORM_CERT_LIB=...)
"""
import json
import os
import shlex
import subprocess
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    print("skipped: no numpy")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "numpy_kernels.py")
OUT = sys.argv[1] if len(sys.argv) > 1 else "python-certify"
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


def run(args, timeout=600):
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert"] + args, capture_output=True, text=True, timeout=timeout)
    return r.returncode, r.stdout + r.stderr


# A correct kernel passes.
rc, text = run(["certify", f"{KERNELS}:GOOD", "--cases", "20", "--out", f"{OUT}/good"])
print(text[-3000:])
check(rc == 0, f"the float64 NumPy kernel is certified (exit {rc})")
with open(f"{OUT}/good/plugin.python.numpy_fp64.json") as f:
    cert = json.load(f)
check(cert.get("verdict") == "pass", "its certificate says pass")
props = cert.get("properties", {}).get("tests", [])
check(sum(p.get("verdict") == "pass" for p in props) >= 10, f"at least ten properties pass ({len(props)} listed)")

# eps outside the root fails, with a repro line that replays the failure.
rc, text = run(["certify", f"{KERNELS}:EPS_OUTSIDE", "--cases", "20", "--out", f"{OUT}/bad"])
print(text[-3000:])
check(rc == 1, f"eps outside the root fails certification (exit {rc})")
with open(f"{OUT}/bad/plugin.python.eps_outside.json") as f:
    bad = json.load(f)
repro = [t["repro"] for t in bad["properties"]["tests"] if t.get("repro")]
repro += [f["repro"] for f in bad["corpus"]["failures"] if f.get("repro")]
check(bool(repro) and all(r.startswith("python -m rmsnorm_cert repro ") for r in repro),
      "each failure comes with a python -m rmsnorm_cert repro line")
if repro:
    argv = shlex.split(repro[0])[3:]
    rc2, text2 = run(argv)
    print(text2[-1500:])
    check(rc2 == 1, f"the repro line replays the failure (exit {rc2})")

# A kernel that raises fails those cases; the run goes on to the end and writes its certificate.
rc, text = run(["certify", f"{KERNELS}:RAISES", "--cases", "10", "--no-properties", "--out", f"{OUT}/raises"])
print(text[-1500:])
check(rc == 1 and "raised RuntimeError" in text, f"a kernel's exception fails its cases (exit {rc})")
check(os.path.exists(f"{OUT}/raises/plugin.python.raises.json"), "and the certificate is written")

# A kernel that kills its process fails the step it was in, "crashed on case <line>", and the run
# goes on: every property, the corpus and each op's cases run in a child process of their own.
rc, text = run(["certify", f"{KERNELS}:SEGFAULTS", "--cases", "10", "--out", f"{OUT}/segfaults"])
print(text[-1500:])
check(rc == 1 and "crashed on case" in text, f"a kernel that segfaults fails its steps (exit {rc})")
with open(f"{OUT}/segfaults/plugin.python.segfaults.json") as f:
    seg = json.load(f)
crashed = [t for t in seg["properties"]["tests"] if t["verdict"] == "CRASH"]
check(bool(crashed) and all(t["repro"].startswith("python -m rmsnorm_cert repro") for t in crashed),
      f"the crashed properties name the case and its repro line ({len(crashed)} crashed)")
check(all("forward_segfaults" in t["message"] for t in crashed), "and the Python stack where the process died")
check(any(t["verdict"] == "pass" for t in seg["properties"]["tests"]), "and the others still ran")

# A target naming nothing is bad input; a missing one could not run.
rc, text = run(["certify", f"{KERNELS}:NOT_THERE"])
check(rc == 2 and "NOT_THERE" in text, f"a missing attribute is refused with exit 2 ({text.strip()[:120]})")
rc, text = run(["certify", os.path.join(HERE, "no_such_file.py")])
check(rc == 3 and "no such file" in text, f"a missing file is refused with exit 3 ({text.strip()[:120]})")

print(f"python certify: {'PASS' if not failures else 'FAIL'} ({len(failures)} failed)")
sys.exit(1 if failures else 0)
