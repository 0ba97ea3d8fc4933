"""The HTML report of a certificate directory.

For each certificate (DIR/<variant>.json, written by `rmsnorm-cert certify`) it draws, per output
type, the histogram of the distance to the exact value in ulps and the distribution of
err/bound over every element the corpus and the generated cases judged, and lists the property
table. The plots are PNG files beside report.html; series.json holds the numbers each plot
shows, so that a test can check them against the certificates.
"""
import html
import json
import os

# oracle::Profile's bins (docs/certificates.md#distributions).
ULP_LABELS = ["<=1/2"] + ["<=%d" % 2 ** (b - 1) if b <= 10 else "<=2^%d" % (b - 1) for b in range(1, 27)] + [">2^25"]
BOUND_LABELS = ["rounded"] + ["[%.1f,%.1f)" % (b / 10, (b + 1) / 10) for b in range(9)] + ["[0.9,1]", ">1"]


class ReportError(Exception):
    pass


def load_certificates(directory):
    if not os.path.isdir(directory):
        raise ReportError(f"{directory} is not a directory")
    certs = []
    for name in sorted(os.listdir(directory)):
        if not name.endswith(".json") or name in ("SUMMARY.json", "series.json"):
            continue
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            try:
                data = json.load(f)
            except json.JSONDecodeError as e:
                raise ReportError(f"{name}: not JSON ({e})")
        if isinstance(data, dict) and "variant" in data and "properties" in data:
            certs.append(data)
    if not certs:
        raise ReportError(f"no certificate (<variant>.json from rmsnorm-cert certify) in {directory}")
    return certs


def distributions(cert):
    """Per output type: the ulp and err/bound bins summed over the corpus and every op's cases."""
    profiles = [cert.get("corpus", {}).get("profile", {})]
    profiles += [op.get("profile", {}) for op in cert.get("generated", {}).get("ops", [])]
    out = {}
    for p in profiles:
        for dtype, d in p.get("distributions", {}).items():
            acc = out.setdefault(dtype, {"ulp": [0] * len(ULP_LABELS), "err_over_bound": [0] * len(BOUND_LABELS)})
            for i, c in enumerate(d.get("ulp_bins", [])):
                acc["ulp"][i] += c
            for i, c in enumerate(d.get("err_over_bound_bins", [])):
                acc["err_over_bound"][i] += c
    return out


def _plot(path, title, labels, series, xlabel):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    last = max((i for counts in series.values() for i, c in enumerate(counts) if c), default=0)
    shown = labels[: last + 1]
    fig, ax = plt.subplots(figsize=(7.5, 3.2), dpi=100)
    width = 0.8 / max(1, len(series))
    for k, (dtype, counts) in enumerate(sorted(series.items())):
        xs = [i + (k - (len(series) - 1) / 2) * width for i in range(len(shown))]
        ax.bar(xs, counts[: len(shown)], width=width, label=dtype)
    ax.set_xticks(range(len(shown)))
    ax.set_xticklabels(shown, rotation=60, fontsize=7)
    ax.set_yscale("symlog", linthresh=1)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("elements")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _cases(t):
    asked, checked = t.get("cases_asked", -1), t.get("cases_checked", -1)
    if asked is None or asked < 0:
        return ""
    if checked is None or checked < 0:
        return f"{asked} asked"
    return f"{checked} of {asked}"


def write_report(directory, out_dir):
    certs = load_certificates(directory)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise ReportError("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    plots = os.path.join(out_dir, "report")
    os.makedirs(plots, exist_ok=True)
    series = {}
    sections = []
    rows = []
    for cert in certs:
        variant = cert["variant"]
        dist = distributions(cert)
        series[variant] = dist
        verdict = str(cert.get("verdict", "")).upper()
        rows.append(f"<tr><td><a href='#{html.escape(variant)}'>{html.escape(variant)}</a></td><td class='{verdict.lower()}'>{verdict}</td></tr>")
        body = [f"<h2 id='{html.escape(variant)}'>{html.escape(variant)} <span class='{verdict.lower()}'>{verdict}</span></h2>",
                f"<p>{html.escape(cert.get('description', ''))}</p>"]
        if dist:
            ulp_png, bound_png = f"{variant}.ulp.png", f"{variant}.err_over_bound.png"
            _plot(os.path.join(plots, ulp_png), f"{variant}: |got - exact| in ulps of the output type",
                  ULP_LABELS, {t: d["ulp"] for t, d in dist.items()}, "ulps")
            _plot(os.path.join(plots, bound_png), f"{variant}: |got - exact| / allowed (<= 1 passes)",
                  BOUND_LABELS, {t: d["err_over_bound"] for t, d in dist.items()}, "err / bound")
            body.append(f"<img src='report/{html.escape(ulp_png)}' alt='ulp histogram of {html.escape(variant)}'>")
            body.append(f"<img src='report/{html.escape(bound_png)}' alt='err/bound distribution of {html.escape(variant)}'>")
        else:
            body.append("<p>No element was judged on a range (no corpus or generated case ran).</p>")
        body.append("<table><tr><th>property</th><th>verdict</th><th>cases checked</th><th>s</th><th>note</th></tr>")
        for t in cert.get("properties", {}).get("tests", []):
            v = str(t.get("verdict", ""))
            body.append(f"<tr><td>{html.escape(str(t.get('id', '')))}</td><td class='{html.escape(v.replace(' ', '_'))}'>{html.escape(v)}</td>"
                        f"<td>{html.escape(_cases(t))}</td><td>{t.get('seconds', 0):.1f}</td><td>{html.escape(str(t.get('message', ''))[:200])}</td></tr>")
        body.append("</table>")
        sections.append("\n".join(body))
    with open(os.path.join(plots, "series.json"), "w", encoding="utf-8") as f:
        json.dump({"ulp_labels": ULP_LABELS, "err_over_bound_labels": BOUND_LABELS, "variants": series}, f, indent=1)
    first = certs[0]
    device = first.get("device", {})
    header = f"commit {html.escape(str(first.get('commit', '')))}, device {html.escape(device.get('name') or 'none (' + str(device.get('reason', '')) + ')')}"
    page = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>rmsnorm-cert report</title>
<style>body{{font-family:sans-serif;max-width:980px;margin:auto}} table{{border-collapse:collapse;margin:8px 0}}
td,th{{border:1px solid #ccc;padding:2px 6px;font-size:13px}} .pass{{color:#070}} .fail{{color:#b00;font-weight:bold}}
img{{max-width:100%}}</style></head><body>
<h1>Certificates</h1><p>{header}</p>
<table><tr><th>variant</th><th>verdict</th></tr>
{chr(10).join(rows)}
</table>
{chr(10).join(sections)}
</body></html>
"""
    path = os.path.join(out_dir, "report.html")
    with open(path, "w", encoding="utf-8") as f:
        f.write(page)
    return path
