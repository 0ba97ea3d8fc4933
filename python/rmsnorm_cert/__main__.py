"""python -m rmsnorm_cert: certify Python kernels, replay their failures, draw reports.

    python -m rmsnorm_cert certify TARGET [--kernels GLOB] [rmsnorm-cert certify options]
    python -m rmsnorm_cert repro TARGET --line '...'
    python -m rmsnorm_cert replay TARGET [--kernels GLOB] FILE_OR_DIR...
    python -m rmsnorm_cert time TARGET [--kernels GLOB] [--rows R --dim D --type T --calls N --warmup W]
    python -m rmsnorm_cert report DIR [--out DIR]
    python -m rmsnorm_cert peers DIR... [--out FILE | --update docs/peers.md]
    python -m rmsnorm_cert plots BENCH.csv [PEERS.csv ...] --out DIR

TARGET is "path/adapter.py[:attr]" or "module[:attr]": an adapter module (KERNELS), a Kernel, a
list of Kernels, or a plain forward function (then --array, --device, --dtypes, --no-rstd say
what it takes). docs/certifying-your-kernel.md describes them.
"""
import argparse
import re
import sys

from . import report


def _kernel_options(parser):
    g = parser.add_argument_group("a plain function's claims (ignored for adapters and Kernels)")
    g.add_argument("--array", choices=("torch", "numpy"), default="torch")
    g.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    g.add_argument("--dtypes", default="f32,f16,bf16", help="comma-separated x types it takes")
    g.add_argument("--no-rstd", action="store_true", help="it returns y alone (rstd is not judged)")
    g.add_argument("--same-type-weights", action="store_true", help="it takes weights of x's type only")


def _options(ns):
    return dict(array=ns.array, device=ns.device, dtypes=tuple(filter(None, ns.dtypes.split(","))),
                rstd=not ns.no_rstd, same_type_weights=ns.same_type_weights)


def _option_args(ns):
    """The kernel options again, as arguments (for the launcher of child processes)."""
    args = ["--array", ns.array, "--device", ns.device, "--dtypes", ns.dtypes]
    return args + ["--no-rstd"] * ns.no_rstd + ["--same-type-weights"] * ns.same_type_weights


def _child(argv):
    """_cli TARGET [kernel options] -- ARGS: a process the certification starts for one step of
    the target's kernels (the launcher named in RMSNORM_CERT_LAUNCHER): registers them again
    and runs rmsnorm-cert's ARGS here."""
    import faulthandler

    from . import bridge
    faulthandler.enable()  # a fatal signal prints this process's Python stack, which the crash report quotes
    if "--" not in argv:
        print("rmsnorm_cert _cli: TARGET [options] -- ARGS", file=sys.stderr)
        return 2
    cut = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m rmsnorm_cert _cli")
    parser.add_argument("target")
    _kernel_options(parser)
    ns = parser.parse_args(argv[:cut])
    library, kernels = bridge.load_target(ns.target, **_options(ns))
    bridge.register(library, kernels, f"python -m rmsnorm_cert repro {ns.target}")
    return bridge.run_command(argv[cut + 1:])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["_cli"]:
        return _child(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m rmsnorm_cert", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="HTML report with plots of the certificates in DIR (rmsnorm-cert certify --out DIR)")
    rep.add_argument("dir")
    rep.add_argument("--out", help="where report.html and its plots go (default: DIR)")
    plots = sub.add_parser("plots", help="bandwidth-vs-D plots and ratio heat maps of benchmark CSVs")
    plots.add_argument("csv", nargs="+", help="rmsnorm-bench --csv and bench/peers.py --csv files")
    plots.add_argument("--out", required=True, help="where plots.html, the PNGs and series.json go")
    peers = sub.add_parser("peers", help="the Markdown table of docs/peers.md from certificate directories")
    peers.add_argument("dirs", nargs="+")
    peers.add_argument("--out", help="write it to this file (default: standard output)")
    peers.add_argument("--update", help="replace the generated part of this file (docs/peers.md)")
    for name, what in (("certify", "certify the target's kernels (options after TARGET go to rmsnorm-cert certify)"),
                       ("repro", "rerun a failure line against the target (rmsnorm-cert repro options)"),
                       ("replay", "run case files or directories on the target's kernels (rmsnorm-cert replay options)"),
                       ("time", "time the target's kernels on N cases, every one of them judged (rmsnorm-cert time options)")):
        p = sub.add_parser(name, help=what)
        p.add_argument("target")
        if name != "repro":
            p.add_argument("--kernels", default="*", help="which of the target's kernels (a glob of their names)")
        _kernel_options(p)
    args, rest = parser.parse_known_args(argv)
    if args.command == "plots":
        if rest:
            parser.error("unrecognized arguments: " + " ".join(rest))
        from . import bench_plots
        try:
            print(f"plots: {bench_plots.write_plots(args.csv, args.out)}")
        except bench_plots.PlotError as e:
            print(f"rmsnorm_cert plots: {e}", file=sys.stderr)
            return 3
        return 0
    if args.command == "peers":
        if rest:
            parser.error("unrecognized arguments: " + " ".join(rest))
        from . import peers as peers_table
        return peers_table.main(args.dirs, args.out, args.update)
    if args.command == "report":
        if rest:
            parser.error("unrecognized arguments: " + " ".join(rest))
        try:
            path = report.write_report(args.dir, args.out or args.dir)
        except report.ReportError as e:
            print(f"rmsnorm_cert report: {e}", file=sys.stderr)
            return 3
        print(f"report: {path}")
        return 0

    from . import bridge
    where = f"rmsnorm_cert {args.command}: {args.target}"
    try:
        library, kernels = bridge.load_target(args.target, **_options(args))
    except bridge.CannotRun as e:  # a missing file or module, an import that fails: could not run
        print(f"rmsnorm_cert {args.command}: {e}", file=sys.stderr)  # e names the file or module
        return 3
    except Exception as e:  # a target that names nothing to certify is bad input, not a crash
        print(f"{where}: {type(e).__name__}: {e}", file=sys.stderr)
        return 2
    pattern = f"plugin.{library}.{getattr(args, 'kernels', '*')}"
    if args.command == "repro":  # the kernel the line names, when it names one
        m = re.search(r"variant=(plugin\.[^;'\s]+)", " ".join(rest))
        pattern = m.group(1) if m else pattern
    try:
        # A kernel whose array library is missing could only be skipped or fail every case.
        bridge.check_imports(bridge.select(library, kernels, pattern))
        bridge.register(library, kernels, f"python -m rmsnorm_cert repro {args.target}")
        # Every certification step runs in a child process of its own, which registers the
        # kernels again: a kernel that crashes fails its step, not the run.
        bridge.set_launcher(["_cli", args.target] + _option_args(args) + ["--"])
    except Exception as e:  # no librmsnorm_cert.so, or a kernel table it refuses: could not run
        text = str(e) if isinstance(e, bridge.CannotRun) else f"{type(e).__name__}: {e}"
        print(f"{where}: {text}", file=sys.stderr)
        return 3
    if args.command == "certify":
        return bridge.run_command(["certify", pattern] + rest)
    if args.command == "repro":
        return bridge.run_command(["repro"] + rest)
    if args.command == "time":
        return bridge.run_command(["time", pattern] + rest)
    return bridge.run_command(["replay", "--variant", pattern] + rest)


if __name__ == "__main__":
    sys.exit(main())
