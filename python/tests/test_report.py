"""certify --html --junit on host.reference: the report, its plots and what they show, and the
JUnit XML. Usage: test_report.py RMSNORM_CERT WORK_DIR (exit 77, skipped: certify finds no
python3 with matplotlib)."""
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    cert, work = sys.argv[1], sys.argv[2]
    shutil.rmtree(work, ignore_errors=True)
    junit = os.path.join(work, "r.xml")
    run = subprocess.run([cert, "certify", "host.reference", "--cases", "8", "--property-cases", "5", "--out", work,
                          "--junit", junit, "--html"], capture_output=True, text=True)
    if run.returncode == 3 and "needs python3 with matplotlib" in run.stderr:
        print("SKIPPED:", run.stderr.strip())
        return 77
    if run.returncode != 0:
        fail(f"certify exited {run.returncode}\n{run.stdout}\n{run.stderr}")
    with open(os.path.join(work, "host.reference.json"), encoding="utf-8") as f:
        certificate = json.load(f)
    page = open(os.path.join(work, "report.html"), encoding="utf-8").read()
    for png in ("host.reference.ulp.png", "host.reference.err_over_bound.png"):
        path = os.path.join(work, "report", png)
        if not os.path.isfile(path):
            fail(f"{png} was not written")
        with open(path, "rb") as f:
            data = f.read()
        if not data.startswith(b"\x89PNG\r\n\x1a\n") or len(data) < 2000:
            fail(f"{png} is not a drawn PNG ({len(data)} bytes)")
        if f"report/{png}" not in page:
            fail(f"report.html does not show {png}")
    # The plotted series are the certificate's histograms, summed over the corpus and the ops.
    series = json.load(open(os.path.join(work, "report", "series.json"), encoding="utf-8"))["variants"]["host.reference"]
    profiles = [certificate["corpus"]["profile"]] + [op["profile"] for op in certificate["generated"]["ops"]]
    expected = {}
    for p in profiles:
        for dtype, d in p["distributions"].items():
            e = expected.setdefault(dtype, {"ulp": [0] * len(d["ulp_bins"]), "err_over_bound": [0] * len(d["err_over_bound_bins"]), "n": 0})
            e["ulp"] = [a + b for a, b in zip(e["ulp"], d["ulp_bins"])]
            e["err_over_bound"] = [a + b for a, b in zip(e["err_over_bound"], d["err_over_bound_bins"])]
            e["n"] += d["elements"]
    if set(expected) != set(series) or not {"f32", "f16", "bf16"} <= set(series):
        fail(f"plotted types {sorted(series)}, certificate types {sorted(expected)}")
    for dtype, e in expected.items():
        if series[dtype]["ulp"] != e["ulp"] or series[dtype]["err_over_bound"] != e["err_over_bound"]:
            fail(f"{dtype}: the plotted bins differ from the certificate's")
        if sum(e["ulp"]) != e["n"] or sum(e["err_over_bound"]) != e["n"]:
            fail(f"{dtype}: the bins do not add up to the {e['n']} elements judged")
        if e["err_over_bound"][-1] != 0:
            fail(f"{dtype}: a passing certificate with elements above the bound")
    for t in certificate["properties"]["tests"]:
        if t["id"] not in page:
            fail(f"the property table lacks {t['id']}")
    # JUnit: one test case per property, the corpus and each op's generated cases.
    root = ET.parse(junit).getroot()
    cases = root.findall("./testsuite/testcase")
    want = len(certificate["properties"]["tests"]) + 1 + len(certificate["generated"]["ops"])
    if root.tag != "testsuites" or len(cases) != want:
        fail(f"junit: {len(cases)} test cases, expected {want}")
    if int(root.get("failures")) != 0 or int(root.get("errors")) != 0:
        fail("junit: failures in a passing certificate")
    print(f"report: 2 plots, {len(series)} types, {sum(e['n'] for e in expected.values())} elements; junit: {len(cases)} test cases")
    return 0


if __name__ == "__main__":
    sys.exit(main())
