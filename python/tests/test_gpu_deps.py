"""scripts/gpu_deps.sh without a registry: stand-ins for apt-get, dpkg and pip (first on PATH) and
for quack_site.sh (QUACK_SITE) write small packages of the real layout, each call logged. Checked:
the folder gets root/, pylib/, flashinfer/include and quack/part1, part2 where the script puts
them; a part already there is not fetched again; SKIP leaves parts out; a FlashInfer wheel without
its headers, pip leaving no wheel, or apt-get failing, fails with the reason; bad arguments exit 2."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import zipfile

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir))
SCRIPT = os.path.join(ROOT, "scripts", "gpu_deps.sh")
failures = []


def check(cond, what):
    print(("ok    " if cond else "FAIL  ") + what)
    if not cond:
        failures.append(what)


def write_exe(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def stand_ins(bin_dir, wheels_dir, log):
    # apt-get download NAME...: an empty NAME_1.0_amd64.deb each (dpkg below unpacks by name).
    write_exe(os.path.join(bin_dir, "apt-get"), f"""#!/bin/sh
echo "apt-get $*" >> {log}
[ "$1" = download ] || exit 1
shift
for p in "$@"; do : > "${{p}}_1.0_amd64.deb"; done
""")
    # dpkg -x FILE DIR: the package's name as a file under DIR/usr/include.
    write_exe(os.path.join(bin_dir, "dpkg"), f"""#!/bin/sh
echo "dpkg $*" >> {log}
[ "$1" = -x ] || exit 1
mkdir -p "$3/usr/include" && : > "$3/usr/include/$(basename "$2" | cut -d_ -f1)"
""")
    # pip download ... -d DIR SPEC: the prepared wheel of SPEC's project copied into DIR.
    write_exe(os.path.join(bin_dir, "pip"), f"""#!/bin/sh
echo "pip $*" >> {log}
dest=""; spec=""
while [ $# -gt 0 ]; do
  case "$1" in -d) dest=$2; shift 2 ;; -*) shift ;; download) shift ;; *) spec=$1; shift ;; esac
done
name=$(echo "$spec" | cut -d= -f1)
mkdir -p "$dest"
[ -f "{wheels_dir}/$name.whl" ] && cp "{wheels_dir}/$name.whl" "$dest/${{name}}-1.0-py3-none-any.whl"
exit 0
""")
    write_exe(os.path.join(bin_dir, "quack_site.sh"), f"""#!/bin/sh
echo "quack_site $*" >> {log}
mkdir -p "$2/part1" "$2/part2" && : > "$2/part1/ir.so.xz" && : > "$2/part2/rt.so.xz"
""")


def make_wheel(path, files):
    with zipfile.ZipFile(path, "w") as z:
        for name in files:
            z.writestr(name, "x")


def run(args, env_extra, tmp):
    env = dict(os.environ)
    env["PATH"] = os.path.join(tmp, "bin") + os.pathsep + env["PATH"]
    env["QUACK_SITE"] = os.path.join(tmp, "bin", "quack_site.sh")
    env.update(env_extra)
    return subprocess.run(["bash", SCRIPT] + args, env=env, capture_output=True, text=True)


def calls(log, word):
    if not os.path.exists(log):
        return 0
    with open(log) as f:
        return sum(1 for line in f if line.startswith(word))


def main():
    tmp = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(tmp, "bin"))
        wheels = os.path.join(tmp, "wheels")
        os.makedirs(wheels)
        log = os.path.join(tmp, "calls.log")
        stand_ins(os.path.join(tmp, "bin"), wheels, log)
        make_wheel(os.path.join(wheels, "liger-kernel.whl"),
                   ["liger_kernel/__init__.py", "liger_kernel/ops/rms_norm.py"])
        make_wheel(os.path.join(wheels, "flashinfer-python.whl"),
                   ["flashinfer/__init__.py", "flashinfer/data/include/flashinfer/norm.cuh",
                    "flashinfer/data/include/flashinfer/utils.cuh"])

        deps = os.path.join(tmp, "deps")
        r = run([deps], {}, tmp)
        check(r.returncode == 0, f"a full run exits 0 (rc {r.returncode}: {r.stderr.strip()[-300:]})")
        for rel in ("root/usr/include/catch2", "root/usr/include/librapidcheck-dev", "pylib/liger_kernel/ops/rms_norm.py",
                    "flashinfer/include/flashinfer/norm.cuh", "quack/part1/ir.so.xz", "quack/part2/rt.so.xz"):
            check(os.path.exists(os.path.join(deps, rel)), f"{rel} is there")
        check(not os.path.exists(os.path.join(deps, "flashinfer", "include", "flashinfer", "__init__.py")) and
              not os.path.exists(os.path.join(deps, "flashinfer", "__init__.py")),
              "only FlashInfer's headers are kept")
        check("quack/part1" in r.stdout and "root" in r.stdout, "each part's size is printed")
        with open(log) as f:
            text = f.read()
        check("liger-kernel==0.8.5" in text and "flashinfer-python==0.7.4" in text, "the pinned versions are asked for")
        check("--python-version 3.12" in text and "--no-deps" in text, "wheels for the GPU host's Python, no dependencies")

        before = {w: calls(log, w) for w in ("apt-get", "pip", "quack_site")}
        r = run([deps], {}, tmp)
        check(r.returncode == 0, "a second run exits 0")
        check(all(calls(log, w) == n for w, n in before.items()), "a second run fetches nothing that is there")

        os.remove(log)
        deps2 = os.path.join(tmp, "deps2")
        r = run([deps2], {"SKIP": "quack flashinfer"}, tmp)
        check(r.returncode == 0 and os.path.isdir(os.path.join(deps2, "root")) and
              os.path.isdir(os.path.join(deps2, "pylib")), "SKIP: the other parts are fetched")
        check(not os.path.exists(os.path.join(deps2, "quack")) and not os.path.exists(os.path.join(deps2, "flashinfer")) and
              calls(log, "quack_site") == 0, "SKIP leaves quack and flashinfer out")

        make_wheel(os.path.join(wheels, "flashinfer-python.whl"), ["flashinfer/__init__.py"])
        r = run([os.path.join(tmp, "deps3")], {"SKIP": "debs liger quack"}, tmp)
        check(r.returncode == 1 and "no flashinfer/data/include" in r.stderr, "a FlashInfer wheel without headers fails, saying so")
        os.remove(os.path.join(wheels, "liger-kernel.whl"))
        r = run([os.path.join(tmp, "deps4")], {"SKIP": "debs flashinfer quack"}, tmp)
        check(r.returncode == 1 and "left no wheel for liger-kernel" in r.stderr, "pip leaving no wheel fails, saying so")

        write_exe(os.path.join(tmp, "bin", "apt-get"), "#!/bin/sh\nexit 100\n")
        r = run([os.path.join(tmp, "deps5")], {"SKIP": "liger flashinfer quack"}, tmp)
        check(r.returncode == 1 and "apt-get download failed" in r.stderr and
              not os.path.exists(os.path.join(tmp, "deps5", "root")), "a failed apt-get download fails, saying so, and leaves no root")

        r = run(["--nope"], {}, tmp)
        check(r.returncode == 2 and "unknown option" in r.stderr, "an unknown option exits 2")
        r = run(["a", "b"], {}, tmp)
        check(r.returncode == 2, "two folders exit 2")
        r = run(["--help"], {}, tmp)
        check(r.returncode == 0 and "quack/part1" in r.stdout and "set -e" not in r.stdout,
              "--help prints the layout, and only the comment")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("gpu_deps:", "FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
