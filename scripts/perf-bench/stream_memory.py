"""Driver of scripts/perf-bench/stream-memory (run through that script,
which installs the stubllm mock server into a venv and runs this file with
the venv's python).

Starts the mock OpenAI-compatible server (genai_mock.py) streaming
`--tokens` chunks per answer (the first after `--first-token-ms`, then one
every `--gap-ms`), runs `tritonctl perf --endpoint openai-chat` against it
for `--duration` seconds at `--concurrency`, samples tritonctl's resident
memory (VmRSS of /proc/PID/status) every `--interval` seconds, prints the
samples, the RSS at the end of the first minute (`--settle`) and the
largest after it, and the load tritonctl reported. Exit 1 when the RSS
after the first minute grows by more than `--rss-limit-mb` and by more than
`--rss-limit-pct` percent of the RSS at the end of the first minute (a
leak per request or per response shows as growth far beyond both), or
when tritonctl reports errors; 2 on a harness problem.
"""

import argparse
import json
import os
import subprocess
import sys
import time

import genai_mock
from genai_mock import log


def die(msg):
    print(f"stream-memory: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    p = argparse.ArgumentParser(prog="scripts/perf-bench/stream-memory")
    p.add_argument("--duration", type=float, default=600, help="seconds of load")
    p.add_argument("--concurrency", type=int, default=64)
    p.add_argument("--tokens", type=int, default=100, help="responses per request")
    p.add_argument("--first-token-ms", type=int, default=50)
    p.add_argument("--gap-ms", type=int, default=20)
    p.add_argument("--interval", type=float, default=10, help="seconds between RSS samples")
    p.add_argument("--settle", type=float, default=60,
                   help="seconds before the reference sample (at most half the duration)")
    p.add_argument("--rss-limit-mb", type=float, default=5)
    p.add_argument("--rss-limit-pct", type=float, default=10)
    args = p.parse_args()
    tritonctl = os.environ["BENCH_TRITONCTL"]
    work = os.environ["BENCH_WORK"]
    os.makedirs(work, exist_ok=True)
    settle = min(args.settle, args.duration / 2)
    started = time.monotonic()

    mock = genai_mock.Mock(work, args.tokens, args.first_token_ms, args.gap_ms)
    try:
        first, gaps, n = mock.probe()
        if n != args.tokens:
            die(f"the mock streamed {n} chunks, not {args.tokens}")
        log(f"mock server (stubllm) at {mock.url}: {n} responses per request, first after "
            f"{first:.1f} ms, then every {sum(gaps) / len(gaps):.1f} ms (one probe request)")
        out_path = os.path.join(work, "tritonctl.json")
        err_path = os.path.join(work, "tritonctl.err")
        cmd = [tritonctl, "perf", "-q", "--endpoint", "openai-chat", "-m", "mock-llm",
               "-u", mock.url, "--concurrency-range", str(args.concurrency),
               "--duration", str(args.duration), "--prompt-words", "100",
               "--progress", "never", "--format", "json"]
        log("$ " + " ".join(cmd))
        with open(out_path, "w") as out, open(err_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=out, stderr=err)
            t0 = time.monotonic()
            samples = []
            next_at = t0 + args.interval
            while proc.poll() is None:
                time.sleep(max(0.0, min(next_at - time.monotonic(), 0.5)))
                if time.monotonic() >= next_at:
                    kib = rss_kib(proc.pid)
                    if kib is not None and proc.poll() is None:
                        samples.append((time.monotonic() - t0, kib))
                        log(f"  t={samples[-1][0]:6.0f} s  RSS {kib / 1024:7.1f} MB")
                    next_at += args.interval
                if time.monotonic() - t0 > args.duration + 120:
                    proc.kill()
                    die("tritonctl did not end within 2 minutes after --duration")
            code = proc.wait()
    finally:
        mock.stop()
    with open(out_path) as f:
        text = f.read()
    if code not in (0, 1) or not text.strip():
        with open(err_path) as f:
            die(f"tritonctl failed (exit {code}): {f.read()[-1500:]}")
    lv = json.loads(text)["levels"][0]
    log(f"tritonctl: {lv['requests']} requests ({lv['requests_per_s']:.1f}/s), "
        f"{lv['responses']} responses, {lv['responses_per_request']['mean']:.1f} per request, "
        f"errors {lv['errors']}, cancelled {lv.get('cancelled', 0)}, first response p50 "
        f"{lv['first_response_us']['p50'] / 1e3:.1f} ms, gaps p50 "
        f"{lv['inter_response_us']['p50'] / 1e3:.1f} ms")

    ok = lv["errors"] == 0
    ref = [kib for t, kib in samples if t <= settle + args.interval / 2]
    later = [kib for t, kib in samples if t > settle + args.interval / 2]
    if not ref or not later:
        die(f"too few RSS samples ({len(samples)}) for a {args.duration} s run "
            f"sampled every {args.interval} s")
    at_settle, peak = ref[-1], max(later)
    growth_mb = (peak - at_settle) / 1024
    limit_mb = max(args.rss_limit_mb, at_settle / 1024 * args.rss_limit_pct / 100)
    log(f"RSS at {settle:.0f} s: {at_settle / 1024:.1f} MB; largest after it: "
        f"{peak / 1024:.1f} MB (growth {growth_mb:+.1f} MB, allowed {limit_mb:.1f} MB); "
        f"largest in the first {settle:.0f} s: {max(ref) / 1024:.1f} MB")
    if growth_mb > limit_mb:
        ok = False
        log("stream-memory: FAIL, RSS grows after the first minute")
    elif lv["errors"]:
        log("stream-memory: FAIL, tritonctl reported errors")
    else:
        log("stream-memory: PASS, RSS flat after the first minute")
    log(f"stream-memory: total time {time.monotonic() - started:.0f} s")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
