"""Driver of scripts/perf-bench/client-efficiency (run through that script,
which downloads perf_analyzer, builds the loopback responder and picks the
tritonctl binary, then passes them here in the environment).

Efficiency mode: the loopback responder (examples/kserve_loopback.rs) runs
pinned to one core, each client pinned to another (taskset). For every
client run it records
  - the requests the responder answered while the client process lived
    (from the responder's own statistics counter, read before and after),
  - the client's CPU time (user + sys, from wait4's rusage of the process),
  - the throughput the tool itself reports for its measurement window.
Requests per CPU-second (the inverse of CPU time per request) does not
depend on how much of the core other processes took; the reported
throughput does. Both are printed, with the ratio tritonctl/perf_analyzer.

Soak mode (--soak S): one tritonctl run of S seconds against the
responder; the client's RSS is sampled every 10 s from /proc. Fails when
the RSS grows by more than --rss-limit-mb after the first minute.
"""

import argparse
import csv
import io
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request

MODEL = "loopback"


def log(msg):
    print(msg, flush=True)


def start_responder(binary, core):
    cmd = [binary, "--port", "0", "--model", MODEL]
    if core is not None:
        cmd = ["taskset", "-c", str(core)] + cmd
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline().strip()
    if not line.startswith("listening "):
        proc.kill()
        sys.exit(f"client-efficiency: responder did not start ({line!r})")
    return proc, line.split(" ", 1)[1]


def served(url):
    with urllib.request.urlopen(f"http://{url}/v2/models/{MODEL}/stats", timeout=5) as r:
        doc = json.load(r)
    st = doc["model_stats"][0]
    return st["inference_count"], st["inference_stats"]["fail"]["count"]


def run_client(name, cmd, url, core, env=None):
    """Runs one client process; returns a result dict."""
    if core is not None:
        cmd = ["taskset", "-c", str(core)] + cmd
    before, fail_before = served(url)
    t0 = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out_chunks, err_chunks = [], []
    t_out = threading.Thread(target=lambda: out_chunks.append(proc.stdout.read()))
    t_err = threading.Thread(target=lambda: err_chunks.append(proc.stderr.read()))
    t_out.start()
    t_err.start()
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.monotonic() - t0
    t_out.join()
    t_err.join()
    proc.returncode = os.waitstatus_to_exitcode(status)
    after, fail_after = served(url)
    cpu = ru.ru_utime + ru.ru_stime
    requests = after - before
    return {
        "name": name,
        "cmd": " ".join(cmd),
        "exit": proc.returncode,
        "stdout": out_chunks[0].decode(errors="replace"),
        "stderr": err_chunks[0].decode(errors="replace"),
        "wall_s": wall,
        "cpu_s": cpu,
        "user_s": ru.ru_utime,
        "sys_s": ru.ru_stime,
        "max_rss_kb": ru.ru_maxrss,
        "requests": requests,
        "server_failures": fail_after - fail_before,
    }


def tritonctl_cmd(args, url, conc, seconds):
    return [args.tritonctl, "perf", "-q", "-m", MODEL, "-u", url,
            "--concurrency-range", str(conc), "--duration", str(seconds),
            "--format", "json"]


def tritonctl_result(r):
    doc = json.loads(r["stdout"])
    lv = doc["levels"][0]
    r["reported_rate"] = lv["throughput_per_s"]
    r["errors"] = lv["errors"]
    r["p50_us"] = lv["latency_us"]["p50"]
    r["p99_us"] = lv["latency_us"]["p99"]
    return r


def pa_result(r, csv_path):
    rows = list(csv.DictReader(open(csv_path)))
    row = rows[-1]
    r["reported_rate"] = float(row["Inferences/Second"])
    r["errors"] = 0 if r["exit"] == 0 else None
    r["p50_us"] = int(row["p50 latency"])
    r["p99_us"] = int(row["p99 latency"])
    return r


def efficiency(args):
    ncpu = len(os.sched_getaffinity(0))
    client_core, server_core = (0, 1) if ncpu >= 2 else (None, None)
    responder, url = start_responder(args.responder, server_core)
    results = []
    try:
        pa_env = dict(os.environ, LD_LIBRARY_PATH=args.pa_ld_path)
        for conc in args.concurrency:
            runs = []
            r = run_client("tritonctl", tritonctl_cmd(args, url, conc, args.duration),
                           url, client_core)
            if r["exit"] != 0:
                sys.exit(f"tritonctl failed (exit {r['exit']}): {r['stderr'][-2000:]}")
            runs.append(tritonctl_result(r))
            for mode in args.pa_modes:
                csv_path = os.path.join(args.work, f"pa-c{conc}-{mode}.csv")
                cmd = [args.pa, "-m", MODEL, "-u", url, "--concurrency-range", str(conc),
                       "-p", str(int(args.duration * 1000 / 3)), "-f", csv_path,
                       # the rate on a shared machine wobbles; the per-request
                       # CPU cost does not need stable windows
                       "--stability-percentage", "50"]
                if mode == "async":
                    cmd.append("--async")
                else:
                    cmd.append("--sync")
                r = run_client(f"perf_analyzer --{mode}", cmd, url, client_core, pa_env)
                if r["exit"] != 0:
                    sys.exit(f"perf_analyzer failed (exit {r['exit']}): {r['stdout'][-2000:]}"
                             f"{r['stderr'][-2000:]}")
                runs.append(pa_result(r, csv_path))
            results.append((conc, runs))
    finally:
        responder.kill()
        responder.wait()

    log("")
    log(f"client pinned to core {client_core}, responder to core {server_core} "
        f"({ncpu} cores visible); CPU = user+sys of the client process (wait4)")
    hdr = (f"{'conc':>4} {'client':<22} {'reported/s':>11} {'served':>9} {'wall s':>7} "
           f"{'cpu s':>7} {'user':>6} {'sys':>6} {'us cpu/req':>10} {'req/cpu-s':>10} "
           f"{'p50us':>6} {'p99us':>6} {'maxrss MB':>9}")
    log(hdr)
    ok = True
    summary = []
    for conc, runs in results:
        for r in runs:
            r["req_per_cpu_s"] = r["requests"] / r["cpu_s"] if r["cpu_s"] else 0
            r["cpu_us_per_req"] = 1e6 * r["cpu_s"] / r["requests"] if r["requests"] else 0
            log(f"{conc:>4} {r['name']:<22} {r['reported_rate']:>11.0f} {r['requests']:>9} "
                f"{r['wall_s']:>7.2f} {r['cpu_s']:>7.2f} {r['user_s']:>6.2f} {r['sys_s']:>6.2f} "
                f"{r['cpu_us_per_req']:>10.1f} {r['req_per_cpu_s']:>10.0f} "
                f"{r['p50_us']:>6} {r['p99_us']:>6} {r['max_rss_kb'] / 1024:>9.1f}")
            if r["server_failures"] or r["errors"]:
                log(f"     ^ errors: client {r['errors']}, responder {r['server_failures']}")
                ok = False
        t = runs[0]
        pas = runs[1:]
        best_eff = max(pas, key=lambda r: r["req_per_cpu_s"])
        best_rate = max(pas, key=lambda r: r["reported_rate"])
        eff_ratio = t["req_per_cpu_s"] / best_eff["req_per_cpu_s"]
        rate_ratio = t["reported_rate"] / best_rate["reported_rate"]
        summary.append((conc, eff_ratio, best_eff["name"], rate_ratio, best_rate["name"]))
    log("")
    log("ratios tritonctl / best perf_analyzer mode:")
    # What one client core sustains is measured where the tritonctl client
    # keeps its core busy; at a lower concurrency the client mostly waits
    # for answers (its rate is the round trip's), and CPU per request is
    # mostly the kernel's TCP work on each side, which both tools pay.
    saturated = 0
    for (conc, eff_ratio, eff_name, rate_ratio, rate_name), (_, runs) in zip(summary, results):
        t = runs[0]
        busy = t["cpu_s"] / t["wall_s"] if t["wall_s"] else 0
        if busy >= 0.9:
            saturated += 1
            good = eff_ratio >= args.target and rate_ratio >= args.target
            verdict = f"client core {busy:.0%} busy; target x{args.target}: " + (
                "ok" if good else "BELOW TARGET")
            ok = ok and good
        else:
            verdict = (f"client core {busy:.0%} busy: latency-bound, not what one core "
                       f"sustains; sys {t['sys_s'] / t['cpu_s']:.0%} of its CPU")
        log(f"  c={conc}: requests per CPU-second x{eff_ratio:.2f} (vs {eff_name}); "
            f"reported rate on one core x{rate_ratio:.2f} (vs {rate_name})  [{verdict}]")
    if saturated == 0:
        log("  no concurrency kept the tritonctl client's core busy: raise --concurrency")
        ok = False
    with open(os.path.join(args.work, "client-efficiency.json"), "w") as f:
        json.dump([{"concurrency": c, "runs": [{k: v for k, v in r.items()
                                                  if k not in ("stdout", "stderr")}
                                                 for r in runs]}
                   for c, runs in results], f, indent=1)
    return 0 if ok else 1


def rss_kb(pid):
    """VmRSS of the client, None before taskset has exec'd it or after it ended."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            if f.read().strip() == "taskset":
                return None
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def soak(args):
    ncpu = len(os.sched_getaffinity(0))
    client_core, server_core = (0, 1) if ncpu >= 2 else (None, None)
    responder, url = start_responder(args.responder, server_core)
    try:
        cmd = tritonctl_cmd(args, url, args.soak_concurrency, args.soak)
        if client_core is not None:
            cmd = ["taskset", "-c", str(client_core)] + cmd
        log(f"soak: {' '.join(cmd)}")
        before, _ = served(url)
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = []
        reader = threading.Thread(target=lambda: out.append(proc.stdout.read()))
        reader.start()
        errs = []
        err_reader = threading.Thread(target=lambda: errs.append(proc.stderr.read()))
        err_reader.start()
        samples = []
        while proc.poll() is None:
            # taskset execs the client, so the pid is the client's
            kb = rss_kb(proc.pid)
            t = time.monotonic() - t0
            if kb is not None:
                n, _ = served(url)
                samples.append((t, kb, n - before))
                log(f"  t={t:6.0f}s rss={kb / 1024:7.2f} MB served={n - before}")
            for _ in range(args.sample_every * 10):
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
        reader.join()
        err_reader.join()
        wall = time.monotonic() - t0
    finally:
        responder.kill()
        responder.wait()
    if proc.returncode != 0:
        log(f"soak: tritonctl exited {proc.returncode}: {errs[0][-2000:].decode(errors='replace')}")
        return 1
    doc = json.loads(out[0])
    lv = doc["levels"][0]
    late = [s for s in samples if s[0] >= 60]
    if not late:
        log("soak: the run was shorter than a minute: no RSS check")
        return 1
    base = late[0][1]
    start = samples[0][1]
    mx = max(s[1] for s in samples)
    end = samples[-1][1]
    growth = max(s[1] for s in late) - base
    log(f"soak: {wall:.0f} s, {lv['requests']} requests measured, {lv['errors']} errors, "
        f"{lv['throughput_per_s']:.0f} infer/s, p50 {lv['latency_us']['p50']} us, "
        f"p99 {lv['latency_us']['p99']} us")
    log(f"soak: RSS start {start / 1024:.2f} MB, at {late[0][0]:.0f} s {base / 1024:.2f} MB, "
        f"max {mx / 1024:.2f} MB, end {end / 1024:.2f} MB; growth after the first minute "
        f"{growth / 1024:.2f} MB (limit {args.rss_limit_mb} MB)")
    with open(os.path.join(args.work, "soak.json"), "w") as f:
        json.dump({"samples": samples, "report": doc}, f)
    ok = growth <= args.rss_limit_mb * 1024 and lv["errors"] == 0
    log("soak: " + ("ok" if ok else "FAIL"))
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--duration", type=float, default=6.0,
                   help="seconds of measurement per client run")
    p.add_argument("--pa-modes", nargs="+", default=["sync", "async"])
    p.add_argument("--target", type=float, default=2.0)
    p.add_argument("--soak", type=int, default=0)
    p.add_argument("--soak-concurrency", type=int, default=8)
    p.add_argument("--sample-every", type=int, default=10)
    p.add_argument("--rss-limit-mb", type=float, default=4.0)
    args = p.parse_args()
    args.tritonctl = os.environ["BENCH_TRITONCTL"]
    args.responder = os.environ["BENCH_RESPONDER"]
    args.pa = os.environ.get("BENCH_PA", "")
    args.pa_ld_path = os.environ.get("BENCH_PA_LD_PATH", "")
    args.work = os.environ["BENCH_WORK"]
    sys.exit(soak(args) if args.soak else efficiency(args))


if __name__ == "__main__":
    main()
