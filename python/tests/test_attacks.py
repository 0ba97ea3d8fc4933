"""Every attack of python/tests/attack_kernels.py fails certification (exit 1), through
python -m rmsnorm_cert certify, each in a process of its own; the ones that attack a timer (right
only on the first calls, cached, finished after the return) fail `python -m rmsnorm_cert time`
too, while a correct kernel passes it. With torch on a GPU, SIDE_STREAM (work left on a stream of
its own) fails `time` at a size where that work outlasts the return. Exits 77 without numpy.

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
for attack in ("ZEROS", "NAN", "GC_COPY", "WARMUP", "MEMO", "LATE"):
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert", "certify", f"{HERE}/attack_kernels.py:{attack}",
                        "--cases", "20", "--out", f"{OUT}/{attack.lower()}"], capture_output=True, text=True, timeout=600)
    verdict = [line for line in r.stdout.splitlines() if line.startswith(("PASS ", "FAIL "))]
    ok = r.returncode == 1 and verdict and verdict[0].startswith("FAIL")
    print(("ok    " if ok else "FAIL  ") + f"{attack}: exit {r.returncode}, {verdict[0][:90] if verdict else r.stderr[-300:]}")
    if not ok:
        failures.append(attack)


def timed(target, *args):
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert", "time", target, *args], capture_output=True, text=True,
                       timeout=600)
    verdict = [line for line in r.stdout.splitlines() if line.startswith(("PASS ", "FAIL ", "NOT RUN "))]
    return r.returncode, (verdict[0][:110] if verdict else r.stderr[-300:])


small = ["--rows", "64", "--dim", "256", "--type", "f32", "--calls", "10"]
for attack in ("WARMUP", "MEMO", "LATE"):
    rc_, line = timed(f"{HERE}/attack_kernels.py:{attack}", *small)
    ok = rc_ == 1 and line.startswith("FAIL")
    print(("ok    " if ok else "FAIL  ") + f"time {attack}: exit {rc_}, {line}")
    if not ok:
        failures.append("time " + attack)
rc_, line = timed(f"{HERE}/numpy_kernels.py:GOOD", *small)
print(("ok    " if rc_ == 0 else "FAIL  ") + f"time of a correct kernel passes: exit {rc_}, {line}")
if rc_ != 0:
    failures.append("time GOOD")
sys.path.insert(0, HERE)
import attack_kernels  # noqa: E402
if attack_kernels.SIDE_STREAM is not None:
    rc_, line = timed(f"{HERE}/attack_kernels.py:SIDE_STREAM", "--rows", "4096", "--dim", "8192", "--calls", "3", "--warmup", "1")
    ok = rc_ == 1 and line.startswith("FAIL")
    print(("ok    " if ok else "FAIL  ") + f"time SIDE_STREAM (GPU): exit {rc_}, {line}")
    if not ok:
        failures.append("time SIDE_STREAM")
else:
    print("skip  time SIDE_STREAM: no torch with CUDA here")
print(f"attacks: {'PASS' if not failures else 'FAIL'} (every attack fails certification, every timer attack fails time)")
sys.exit(1 if failures else 0)
