"""python -m rmsnorm_cert refuses what it cannot run, fast and with the tool's exit status:

- 3 (could not run): a target file or module that is missing, an adapter whose imports fail, an
  adapter without kernels, librmsnorm_cert.so missing or unloadable (the message says where it
  looked and names RMSNORM_CERT_LIB), a kernel with array="torch" (the default) when torch
  cannot be imported (the message says array="numpy"); for certify, repro, time and replay;
- 2 (bad arguments): a target attribute that does not exist;
- `time` reports a kernel that does not claim the type, op or width asked, or a torch kernel on
  "cuda" without a CUDA device, as NOT RUN (exit 1) before it generates any case.

No GPU and no torch needed: torch is replaced by stand-ins on PYTHONPATH (one that cannot be
imported, one that sees no CUDA device). Exits 77 (skipped) without numpy.

    python3 python/tests/test_cli_errors.py OUT_DIR     (PYTHONPATH=python, RMSNORM_CERT_LIB=...)
"""
import ctypes
import json
import os
import shutil
import subprocess
import sys
import time

try:
    import numpy  # noqa: F401
except ImportError:
    print("skipped: no numpy")
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.join(os.path.dirname(HERE), "rmsnorm_cert")
KERNELS = os.path.join(HERE, "numpy_kernels.py")
OUT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "python-cli-errors")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what, flush=True)
    if not cond:
        failures.append(what)


def cuda_device_count():
    """CUDA devices the driver reports (0 without a driver): what the tool's device check sees."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
        count = ctypes.c_int(0)
        if cuda.cuInit(0) != 0 or cuda.cuDeviceGetCount(ctypes.byref(count)) != 0:
            return 0
        return count.value
    except OSError:
        return 0


def run(args, env=None, timeout=120):
    full = dict(os.environ)
    full.update(env or {})
    for key, value in list(full.items()):
        if value is None:
            del full[key]
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "rmsnorm_cert"] + args, capture_output=True, text=True, timeout=timeout,
                       env=full)
    return r.returncode, r.stdout + r.stderr, time.monotonic() - t0


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    return path


shutil.rmtree(OUT, ignore_errors=True)
PYTHONPATH = os.environ.get("PYTHONPATH", "")

# Stand-ins for torch: one that cannot be imported, one without a CUDA device.
NO_TORCH = os.path.join(OUT, "no_torch")
write(os.path.join(NO_TORCH, "torch.py"), 'raise ImportError("No module named \'torch\' (a stand-in of the test)")\n')
NO_DEVICE = os.path.join(OUT, "no_device")
write(os.path.join(NO_DEVICE, "torch", "__init__.py"),
      "class cuda:\n    @staticmethod\n    def is_available():\n        return False\n")


def with_torch(stand_in):
    return {"PYTHONPATH": stand_in + os.pathsep + PYTHONPATH}


# A NumPy kernel that forgot array="numpy"; an adapter mixing it with a right one.
NUMPY_BODY = '''import numpy as np, rmsnorm_cert as rc
def forward(x, weight, eps):
    x64 = x.astype(np.float64)
    r = 1.0 / np.sqrt(np.mean(x64 * x64, axis=-1, keepdims=True) + eps)
    return (x64 * r * weight.astype(np.float64)).astype(x.dtype), r[:, 0].astype(np.float32)
'''
FORGOT = write(os.path.join(OUT, "forgot_array.py"),
               NUMPY_BODY + 'KERNELS = [rc.Kernel(name="np", forward=forward, dtypes=("f32",))]\n')
MIXED = write(os.path.join(OUT, "mixed.py"), NUMPY_BODY +
              'KERNELS = [rc.Kernel(name="np_ok", forward=forward, array="numpy", dtypes=("f32",)),\n'
              '           rc.Kernel(name="torch_one", forward=forward, dtypes=("f32",))]\n')
TORCH_CUDA = write(os.path.join(OUT, "torch_cuda.py"), NUMPY_BODY +
                   'KERNELS = [rc.Kernel(name="tc", forward=forward, dtypes=("f32", "bf16"))]\n')
BAD_IMPORT = write(os.path.join(OUT, "bad_import.py"), "import no_such_dependency_here  # noqa\n")
EMPTY = write(os.path.join(OUT, "empty.py"), 'KERNELS, UNAVAILABLE = [], "needs liger: not installed"\n')

# 1. A missing target is "could not run", for every command that takes one.
for command in ("certify", "repro", "time", "replay"):
    extra = {"repro": ["--line", "op=forward"], "replay": ["corpora"]}.get(command, [])
    rc, text, _ = run([command, os.path.join(OUT, "no_such_file.py")] + extra)
    check(rc == 3 and "no_such_file.py: no such file" in text, f"{command}: a missing file exits 3, said ({rc})")
rc, text, _ = run(["certify", "no_such_module_here"])
check(rc == 3 and "no module named 'no_such_module_here'" in text, f"a missing module exits 3, said ({rc})")
rc, text, _ = run(["certify", BAD_IMPORT])
check(rc == 3 and "no_such_dependency_here" in text, f"an adapter whose import fails exits 3, said ({rc})")
rc, text, _ = run(["certify", EMPTY])
check(rc == 3 and "needs liger" in text, f"an adapter without kernels exits 3 with its UNAVAILABLE ({rc})")
rc, text, _ = run(["certify", f"{KERNELS}:NOT_THERE"])
check(rc == 2 and "NOT_THERE" in text, f"a missing attribute is still a usage error, exit 2 ({rc})")

# librmsnorm_cert.so: named but missing, not a library, or nowhere to be found.
for command in ("certify", "time"):
    rc, text, _ = run([command, f"{KERNELS}:GOOD"], env={"RMSNORM_CERT_LIB": os.path.join(OUT, "none.so")})
    check(rc == 3 and "RMSNORM_CERT_LIB=" in text and "none.so: no such file" in text,
          f"{command}: RMSNORM_CERT_LIB naming no file exits 3, said ({rc})")
not_a_library = write(os.path.join(OUT, "not_a_library.so"), "not an ELF file\n")
rc, text, _ = run(["certify", f"{KERNELS}:GOOD"], env={"RMSNORM_CERT_LIB": not_a_library})
check(rc == 3 and "cannot load" in text and "not_a_library.so" in text, f"an unloadable library exits 3, said ({rc})")
# The package alone, outside any source tree and without the environment variable.
lone = os.path.join(OUT, "lone")
shutil.copytree(PACKAGE, os.path.join(lone, "rmsnorm_cert"), ignore=shutil.ignore_patterns("__pycache__", "*.so"))
rc, text, _ = run(["certify", f"{KERNELS}:GOOD"], env={"PYTHONPATH": lone, "RMSNORM_CERT_LIB": None})
check(rc == 3 and "librmsnorm_cert.so not found" in text and "RMSNORM_CERT_LIB" in text
      and os.path.join(lone, "rmsnorm_cert") in text and "build" in text,
      f"no library anywhere exits 3, saying where it looked and how to name one ({rc})")

# 3. array="torch" (the default) without torch: refused at load time, with the fix.
for command, extra in (("certify", ["--cases", "1"]), ("time", ["--type", "f32"]), ("replay", ["corpora"])):
    rc, text, _ = run([command, FORGOT] + extra, env=with_torch(NO_TORCH))
    check(rc == 3 and "array='torch'" in text and "array='numpy'" in text and "torch cannot be imported" in text,
          f"{command}: a NumPy kernel without array='numpy' and no torch exits 3, saying why ({rc})")
rc, text, _ = run(["certify", FORGOT.replace("forgot_array.py", "forgot_array.py:forward"), "--cases", "1"],
                  env=with_torch(NO_TORCH))
check(rc == 3 and "--array numpy" in text, f"a plain function: the message names --array numpy ({rc})")
# Only the selected kernels count: the NumPy kernel of a mixed adapter still runs.
rc, text, _ = run(["time", MIXED, "--kernels", "np_ok", "--type", "f32", "--rows", "2", "--dim", "8", "--calls", "1",
                   "--warmup", "0"], env=with_torch(NO_TORCH))
check(rc == 0 and "PASS plugin.python.np_ok" in text, f"--kernels np_ok runs without torch ({rc}: {text[-120:]!r})")
line = ("op=forward;variant=plugin.python.np_ok;rows=2;dim=8;x_type=f32;g_type=f32;y_type=f32;convention=standard;"
        "eps=1e-6;generator=regimes;seed=0x1;x.regime=normal;g.regime=random")
rc, text, _ = run(["repro", MIXED, "--line", line], env=with_torch(NO_TORCH))
check(rc == 0 and "result: ok" in text, f"repro of a line naming the NumPy kernel runs without torch ({rc})")
rc, text, _ = run(["repro", MIXED, "--line", line.replace("np_ok", "torch_one")], env=with_torch(NO_TORCH))
check(rc == 3 and "torch_one: array='torch'" in text, f"repro of a line naming the torch kernel: exit 3 ({rc})")
rc, text, _ = run(["time", MIXED, "--type", "f32"], env=with_torch(NO_TORCH))
check(rc == 3 and "torch_one: array='torch'" in text,
      f"all of the mixed adapter: refused, naming the torch kernel ({rc})")
# The API says the same, as an exception.
api = ("import sys, rmsnorm_cert as rc\n"
       f"sys.path.insert(0, {OUT!r})\n"
       "import forgot_array\n"
       "try:\n"
       f"    rc.certify(forgot_array.KERNELS, out={os.path.join(OUT, 'api')!r})\n"
       "except rc.CannotRun as e:\n"
       "    print('CannotRun:', e); sys.exit(3)\n")
full = dict(os.environ, **with_torch(NO_TORCH))
r = subprocess.run([sys.executable, "-c", api], capture_output=True, text=True, timeout=120, env=full)
check(r.returncode == 3 and "array='numpy'" in r.stdout, f"rmsnorm_cert.certify raises CannotRun ({r.returncode})")

# 2. time: what no kernel can run is said before any case is generated (4096 x 4096 by default).
rc, text, secs = run(["time", f"{KERNELS}:GOOD"])
check(rc == 1 and "NOT RUN plugin.python.numpy_fp64" in text and "does not claim x of type bf16" in text and secs < 5,
      f"time: a kernel without bf16 at the default --type bf16: NOT RUN, exit 1, in {secs:.1f} s ({rc})")
rc, text, secs = run(["time", f"{KERNELS}:GOOD", "--json"])
try:
    doc = json.loads(text)
    ok = doc["passed"] is False and doc["variants"][0]["status"] == "unsupported" and doc["type"] == "bf16"
except (ValueError, KeyError, IndexError):
    ok = False
check(rc == 1 and ok and secs < 5, f"time --json: the same, as the tool's JSON ({rc}, {secs:.1f} s)")
rc, text, secs = run(["time", f"{KERNELS}:GOOD", "--type", "f32", "--op", "add_forward"])
check(rc == 1 and "does not implement add_forward" in text and secs < 5, f"time: an op it lacks: NOT RUN ({rc})")
rc, text, secs = run(["time", f"{KERNELS}:GOOD", "--type", "f32", "--dim", "8192"])
check(rc == 1 and "declares D in [1, 4096]" in text and secs < 5, f"time: a width it does not claim: NOT RUN ({rc})")
if cuda_device_count() == 0:  # the tool's own device check; on a GPU host the stand-in torch would run
    rc, text, secs = run(["time", TORCH_CUDA, "--type", "f32"], env=with_torch(NO_DEVICE))
    check(rc == 1 and "NOT RUN plugin.python.tc" in text and "no CUDA device" in text and secs < 5,
          f"time: a torch kernel on cuda without a device: NOT RUN, exit 1, in {secs:.1f} s ({rc})")
else:
    print("  (a CUDA device is present: the no-device case of time is not checked here)")
rc, text, _ = run(["time", f"{KERNELS}:GOOD", "--type", "f64"])
check(rc == 2, f"time: a bad --type is still the tool's usage error, exit 2 ({rc})")
rc, text, _ = run(["time", f"{KERNELS}:GOOD", "--type=f32", "--rows", "2", "--dim", "8", "--calls", "1"])
check(rc == 0 and "PASS plugin.python.numpy_fp64" in text, f"time: a kernel that claims the case still runs ({rc})")

print(f"python cli errors: {'PASS' if not failures else 'FAIL'} ({len(failures)} failed)")
sys.exit(1 if failures else 0)
