"""scripts/quack_site.sh without PyPI or a GPU: `unpack` puts two parts made here (the same layout
`pack` writes, with small stand-ins for the libraries and wheels) together as a site directory,
prints its PYTHONPATH, and refuses a missing part; a wrong command line prints the usage."""
import lzma
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
SCRIPT = os.path.join(ROOT, "scripts", "quack_site.sh")
IR = "nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/_mlir_libs/_cutlass_ir.cu13.cpython-312-x86_64-linux-gnu.so"
RT = "nvidia_cutlass_dsl/cu13/lib/libcute_dsl_runtime.so"
WHEELS = {"quack_kernels-0.6.5-py3-none-any.whl": "quack/__init__.py",
          "nvidia_cutlass_dsl-4.8.1-py3-none-any.whl": "nvidia_cutlass_dsl_packages.pth",
          "nvidia_cutlass_dsl_libs_base-4.8.1-cp312-cp312-manylinux_2_28_x86_64.whl": "nvidia_cutlass_dsl/dsl_packages/cutlass/_mlir/__init__.py",
          # The DSL's Python side (cutlass, cutlass.cutlass_dsl): without it quack does not import.
          "nvidia_cutlass_dsl_libs_core-4.8.1-py3-none-any.whl": "nvidia_cutlass_dsl/dsl_packages/cutlass/cutlass_dsl/__init__.py",
          "apache_tvm_ffi-0.1.15-cp312-cp312-manylinux_2_28_x86_64.whl": "tvm_ffi/__init__.py",
          "torch_c_dlpack_ext-0.1.5-cp312-cp312-manylinux_2_28_x86_64.whl": "torch_c_dlpack_ext/__init__.py",
          "einops-0.8.2-py3-none-any.whl": "einops/__init__.py",
          # Unpacked only where the host's Python cannot import the module: typing_extensions can.
          "typing_extensions-4.16.0-py3-none-any.whl": "typing_extensions_from_wheel.py"}
failures = []
if not shutil.which("xz"):
    print("quack_site: skipped, no xz here")
    sys.exit(77)
# Whether the Python that runs the script can import typing_extensions (then its wheel stays packed).
HAS_TE = subprocess.run(["python3", "-c", "import typing_extensions"], capture_output=True).returncode == 0


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


with tempfile.TemporaryDirectory() as tmp:
    p1, p2, libs = (os.path.join(tmp, d) for d in ("part1", "part2", "libs"))
    for d in (p1, p2, os.path.dirname(os.path.join(libs, IR)), os.path.dirname(os.path.join(libs, RT))):
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(p1, "ir.so.xz"), "wb") as f:
        f.write(lzma.compress(b"mlir bindings"))
    with open(os.path.join(p2, "rt.so.xz"), "wb") as f:
        f.write(lzma.compress(b"runtime"))
    with open(os.path.join(libs, "nvidia_cutlass_dsl/cu13/include.h"), "w") as f:
        f.write("rest of the wheel\n")
    with tarfile.open(os.path.join(p2, "libs_rest.tgz"), "w:gz") as t:
        t.add(libs, arcname=".")
    for name, member in WHEELS.items():
        with zipfile.ZipFile(os.path.join(p2, name), "w") as z:
            z.writestr(member, "# " + name + "\n")
    site = os.path.join(tmp, "site")
    r = subprocess.run(["bash", SCRIPT, "unpack", site, p1, p2], capture_output=True, text=True)
    check(r.returncode == 0, f"unpack succeeds ({r.stderr.strip()[-300:]})")
    check(r.stdout.strip() == f"{site}:{site}/nvidia_cutlass_dsl/dsl_packages", f"it prints the PYTHONPATH ({r.stdout.strip()})")
    read = lambda rel: open(os.path.join(site, rel), "rb").read() if os.path.exists(os.path.join(site, rel)) else None
    check(read(IR) == b"mlir bindings" and read(RT) == b"runtime", "both libraries decompressed into the DSL's layout")
    check(os.access(os.path.join(site, IR), os.X_OK), "the libraries are executable")
    check(read("nvidia_cutlass_dsl/cu13/include.h") is not None, "the rest of the compiler wheel is there")
    check(all(read(m) is not None for n, m in WHEELS.items() if not n.startswith("typing_extensions")),
          "every small wheel is unpacked")
    check((read("typing_extensions_from_wheel.py") is None) == HAS_TE,
          "a module the host's Python has is not unpacked from its wheel, one it lacks is")
    os.remove(os.path.join(p2, "rt.so.xz"))
    r = subprocess.run(["bash", SCRIPT, "unpack", site, p1, p2], capture_output=True, text=True)
    check(r.returncode != 0 and "rt.so.xz is missing" in r.stderr, "a missing part is refused by name")
    r = subprocess.run(["bash", SCRIPT, "unpack", site], capture_output=True, text=True)
    check(r.returncode != 0 and "pack DIR" in r.stdout, "a wrong command line prints the usage")
    r = subprocess.run(["bash", SCRIPT, "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "unpack SITE PART1 PART2" in r.stdout, "--help")

print(f"quack_site: {'FAIL' if failures else 'PASS'}")
sys.exit(1 if failures else 0)
