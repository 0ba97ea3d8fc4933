"""python -m rmsnorm_cert report DIR [--out DIR]"""
import argparse
import sys

from . import report


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m rmsnorm_cert")
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="HTML report with plots of the certificates in DIR (rmsnorm-cert certify --out DIR)")
    rep.add_argument("dir")
    rep.add_argument("--out", help="where report.html and its plots go (default: DIR)")
    args = parser.parse_args(argv)
    if args.command == "report":
        try:
            path = report.write_report(args.dir, args.out or args.dir)
        except report.ReportError as e:
            print(f"rmsnorm_cert report: {e}", file=sys.stderr)
            return 3
        print(f"report: {path}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
