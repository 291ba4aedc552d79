"""Driver of scripts/perf-bench/side-by-side (run through that script, which
starts Triton and downloads perf_analyzer, then passes them here in the
environment).

For each model and concurrency it runs perf_analyzer (-p window,
--concurrency-range C, -f CSV) and tritonctl perf (same window, --format
json and -f CSV) against the same server, one after the other, --rounds
times (alternating, so that both tools see the machine in the same states),
prints both tables, each tool's median and its own spread over the rounds,
and the ratios of the medians tritonctl/perf_analyzer of throughput, p50
and p99; exits 1 when a ratio is outside 1 +- the tolerance (the models
sleep per batch, so the server, not the client, sets these numbers). A
single p99 of a few thousand requests on a shared 2-core machine moves by
more than 10% from run to run of the same tool; the spread columns show
by how much.
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys


def log(msg=""):
    print(msg, flush=True)


def run(cmd, env=None):
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    return p.returncode, p.stdout.decode(errors="replace")


def pa_level(args, model, conc, seq, rnd):
    path = os.path.join(args.work, f"pa-{model}-c{conc}-r{rnd}.csv")
    cmd = [args.pa, "-m", model, "-u", args.url, "--concurrency-range", str(conc),
           "-p", str(args.window_ms), "-f", path]
    if seq:
        cmd += ["--sequence-length", str(args.sequence_length),
                "--sequence-length-variation", "0"]
    if args.pa_mode:
        cmd.append("--" + args.pa_mode)
    code, out = run(cmd, dict(os.environ, LD_LIBRARY_PATH=args.pa_ld_path))
    with open(path + ".log", "w") as f:
        f.write(" ".join(cmd) + "\n" + out)
    if code != 0 or not os.path.exists(path):
        sys.exit(f"side-by-side: perf_analyzer failed (exit {code}): {out[-1500:]}")
    with open(path) as f:
        text = f.read()
    row = list(csv.DictReader(text.splitlines()))[-1]
    # the server's statistics over the level: requests per execution
    inf = re.search(r"Inference count: (\d+)", out)
    exe = re.search(r"Execution count: (\d+)", out)
    batch = int(inf.group(1)) / int(exe.group(1)) if inf and exe and int(exe.group(1)) else 0
    return {
        "batch": batch,
        "cmd": " ".join(cmd),
        "csv": text,
        "rate": float(row["Inferences/Second"]),
        "p50": int(row["p50 latency"]),
        "p90": int(row["p90 latency"]),
        "p99": int(row["p99 latency"]),
        "errors": 0,
    }


def tritonctl_level(args, model, conc, seq, rnd):
    path = os.path.join(args.work, f"tritonctl-{model}-c{conc}-r{rnd}.csv")
    cmd = [args.tritonctl, "perf", "-q", "-m", model, "-u", args.url,
           "--concurrency-range", str(conc), "-p", str(args.window_ms),
           "--warmup", str(args.warmup), "--format", "json", "-f", path]
    if seq:
        cmd += ["--sequence-length", str(args.sequence_length)]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        sys.exit(f"side-by-side: tritonctl failed (exit {p.returncode}): "
                 f"{p.stderr.decode(errors='replace')[-1500:]}")
    doc = json.loads(p.stdout)
    with open(path.replace(".csv", ".json"), "wb") as f:
        f.write(p.stdout)
    lv = doc["levels"][0]
    srv = lv["server"] or {}
    batch = srv["inference_count"] / srv["execution_count"] if srv.get("execution_count") else 0
    with open(path) as f:
        text = f.read()
    return {
        "batch": batch,
        "cmd": " ".join(cmd),
        "csv": text,
        "rate": lv["throughput_per_s"],
        "p50": lv["latency_us"]["p50"],
        "p90": lv["latency_us"]["p90"],
        "p99": lv["latency_us"]["p99"],
        "errors": lv["errors"],
    }


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def combine(runs):
    """The medians of a tool's rounds, with the spread (max/min) of each
    metric and every round's command and CSV."""
    out = {k: median([r[k] for r in runs]) for k in ("rate", "p50", "p90", "p99", "batch")}
    out["spread"] = {k: max(r[k] for r in runs) / max(min(r[k] for r in runs), 1e-9)
                     for k in ("rate", "p50", "p99")}
    out["errors"] = sum(r["errors"] for r in runs)
    out["cmd"] = runs[0]["cmd"]
    out["csv"] = "\n".join(r["csv"].rstrip() for r in runs)
    return out


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 8])
    p.add_argument("--models", nargs="+", default=["sleep", "sleep_batch", "sleep_seq"])
    p.add_argument("--window-ms", type=int, default=3000)
    p.add_argument("--warmup", type=float, default=1.0)
    p.add_argument("--sequence-length", type=int, default=20)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--rounds", type=int, default=3,
                   help="runs of each tool per model and concurrency, alternating; "
                   "the medians are compared")
    p.add_argument("--pa-mode", choices=["sync", "async"],
                   help="perf_analyzer --sync or --async (default: its own choice, "
                   "sync except for sequence models)")
    args = p.parse_args()
    args.tritonctl = os.environ["BENCH_TRITONCTL"]
    args.pa = os.environ["BENCH_PA"]
    args.pa_ld_path = os.environ["BENCH_PA_LD_PATH"]
    args.url = os.environ["BENCH_URL"]
    args.work = os.environ["BENCH_WORK"]

    results = []
    for model in args.models:
        seq = model.endswith("_seq")
        for conc in args.concurrency:
            pas, tcs = [], []
            for rnd in range(1, max(args.rounds, 1) + 1):
                pa = pa_level(args, model, conc, seq, rnd)
                tc = tritonctl_level(args, model, conc, seq, rnd)
                log(f"  {model} c={conc} round {rnd}: perf_analyzer {pa['rate']:.0f}/s "
                    f"p50 {pa['p50']} p99 {pa['p99']} | tritonctl {tc['rate']:.0f}/s "
                    f"p50 {tc['p50']} p99 {tc['p99']}")
                pas.append(pa)
                tcs.append(tc)
            results.append((model, conc, combine(pas), combine(tcs)))
    log()
    log("perf_analyzer commands and CSV (-f):")
    for model, conc, pa, _ in results:
        log(f"$ {pa['cmd']}")
        log(pa["csv"].rstrip())
    log()
    log("tritonctl commands and CSV (-f):")
    for model, conc, _, tc in results:
        log(f"$ {tc['cmd']}")
        log(tc["csv"].rstrip())
    log()
    tol = args.tolerance
    log(f"{'model':<10} {'conc':>4} | {'PA infer/s':>10} {'p50':>6} {'p99':>6} | "
        f"{'tc infer/s':>10} {'p50':>6} {'p99':>6} | {'ratio rate':>10} {'p50':>6} {'p99':>6} | "
        f"{'batch PA/tc':>11} | {'p99 spread PA/tc':>16}")
    ok = True
    for model, conc, pa, tc in results:
        ratios = [tc["rate"] / pa["rate"], tc["p50"] / max(pa["p50"], 1),
                  tc["p99"] / max(pa["p99"], 1)]
        bad = [abs(r - 1) > tol for r in ratios]
        mark = lambda r, b: f"{r:.3f}" + ("!" if b else "")
        log(f"{model:<10} {conc:>4} | {pa['rate']:>10.1f} {pa['p50']:>6} {pa['p99']:>6} | "
            f"{tc['rate']:>10.1f} {tc['p50']:>6} {tc['p99']:>6} | "
            f"{mark(ratios[0], bad[0]):>10} {mark(ratios[1], bad[1]):>6} "
            f"{mark(ratios[2], bad[2]):>6} | {pa['batch']:>5.2f}/{tc['batch']:<5.2f}"
            f" | {pa['spread']['p99']:>7.2f}/{tc['spread']['p99']:<7.2f}"
            + (f"  tritonctl errors {tc['errors']}" if tc["errors"] else ""))
        ok = ok and not any(bad) and tc["errors"] == 0
    log()
    log(f"medians of {max(args.rounds, 1)} alternating rounds; latencies in us; "
        f"ratio = tritonctl / perf_analyzer; '!' = outside 1 +- {tol}; "
        "batch = the server's inferences per execution during the run; "
        "spread = a tool's own max/min over its rounds")
    log("side-by-side: " + ("all within tolerance" if ok else "SOME RATIOS OUTSIDE TOLERANCE"))
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
