"""Every attack of python/tests/attack_kernels.py fails certification (exit 1), through
python -m rmsnorm_cert certify, each in a process of its own. Exits 77 without numpy.

    python3 python/tests/test_attacks.py OUT_DIR     (PYTHONPATH=python, RMSNORM_CERT_LIB=...)
"""
import os
import subprocess
import sys

try:
    import numpy  # noqa: F401
except ImportError:
    print("skipped: no numpy")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else "python-attacks"
failures = []
for attack in ("ZEROS", "NAN", "GC_COPY", "WARMUP", "MEMO"):
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert", "certify", f"{HERE}/attack_kernels.py:{attack}",
                        "--cases", "20", "--out", f"{OUT}/{attack.lower()}"], capture_output=True, text=True, timeout=600)
    verdict = [line for line in r.stdout.splitlines() if line.startswith(("PASS ", "FAIL "))]
    ok = r.returncode == 1 and verdict and verdict[0].startswith("FAIL")
    print(("ok    " if ok else "FAIL  ") + f"{attack}: exit {r.returncode}, {verdict[0][:90] if verdict else r.stderr[-300:]}")
    if not ok:
        failures.append(attack)
print(f"attacks: {'PASS' if not failures else 'FAIL'} (every attack must fail certification)")
sys.exit(1 if failures else 0)
