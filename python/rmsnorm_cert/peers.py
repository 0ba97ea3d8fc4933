"""The peers' table (docs/peers.md) from certificate directories:

    python -m rmsnorm_cert peers DIR... [--out FILE]

One row per certified kernel and op: the certificate's verdict, the op's generated cases passed,
the share of elements correctly rounded and the largest err/bound; then every failure found,
each with its one-line repro, grouped by kernel.
"""
import json
import os

from .report import ReportError, load_certificates

MAX_FAILURES = 12  # per kernel; the certificate holds the rest


def _fmt_bound(v):
    if v is None:
        return "inf"
    return f"{v:.3g}"


def _one_line(text, n=220):
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 1] + "…"


def _repro_of(cert, line):
    """The command replaying a property's counterexample, as the corpus failures give it."""
    for f in cert.get("corpus", {}).get("failures", []):
        r = f.get("repro", "")
        if "--line" in r:
            return r[: r.index("--line")] + "--line '" + line + "'"
    return f"rmsnorm-cert repro --line '{line}'"


def table(directories):
    certs = []
    for d in directories:
        certs += [(d, c) for c in load_certificates(d)]
    rows = ["| kernel | op | verdict | generated cases passed | correctly rounded | max err/bound |",
            "| --- | --- | --- | --- | --- | --- |"]
    details = []
    for d, c in certs:
        name, verdict = c["variant"], c.get("verdict", "?").upper()
        for op in c.get("generated", {}).get("ops", []):
            p = op.get("profile", {})
            pct = p.get("percent_correctly_rounded")
            rows.append(f"| `{name}` | {op['op']} | {verdict} | {op.get('passed', 0)}/{op.get('cases', 0)} | "
                        f"{'—' if pct is None else f'{pct:.3f} %'} | {_fmt_bound(p.get('max_err_over_bound'))} |")
        found = []
        for t in c.get("properties", {}).get("tests", []):
            if t.get("verdict") not in ("pass", "n/a"):
                line = t.get("counterexample", "")
                repro = t.get("repro") or (_repro_of(c, line) if line else "")
                found.append((f"{t['id']} {t['verdict']}: {_one_line(t.get('message', ''))}", repro))
        for f in c.get("corpus", {}).get("failures", []):
            found.append((f"corpus {os.path.basename(f.get('file', ''))}: {_one_line(f.get('reason', ''))}",
                          f.get("repro", "")))
        for op in c.get("generated", {}).get("ops", []):
            for f in op.get("failures", []):
                reason, _, repro = str(f).partition("\n")
                found.append((f"generated {op['op']}: {_one_line(reason)}", repro.strip()))
        if found:
            details.append(f"\n### `{name}` ({len(found)} failures)\n")
            for what, repro in found[:MAX_FAILURES]:
                details.append(f"- {what}" + (f"\n  `{repro}`" if repro else ""))
            if len(found) > MAX_FAILURES:
                details.append(f"- … {len(found) - MAX_FAILURES} more in its certificate")
    return "\n".join(rows) + "\n" + ("\n## Failures\n" + "\n".join(details) + "\n" if details else "")


def main(directories, out=None):
    try:
        text = table(directories)
    except ReportError as e:
        raise SystemExit(f"rmsnorm_cert peers: {e}")
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        print(text, end="")
    return 0


if __name__ == "__main__":
    import sys
    sys.exit(main(sys.argv[1:]))
