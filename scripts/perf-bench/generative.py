"""Driver of scripts/perf-bench/generative (run through that script, which
installs AIPerf, the stubllm mock server and the tokenizer packages into a
venv and runs this file with the venv's python).

Starts the mock OpenAI-compatible server streaming `--tokens` one-token
chunks, the first after `--first-token-ms`, then one every `--gap-ms`
(genai_mock.py), times one stream with a plain socket, then for each
concurrency runs AIPerf (`aiperf profile --endpoint-type chat --streaming`,
its summary JSON and per-request export) and `tritonctl perf --endpoint
openai-chat` with the same request count, one after the other, and
compares time to first token (p50, mean), inter-token latency (mean, p50)
and request throughput: ratio tritonctl / AIPerf, PASS within 1 +-
--tolerance. The client CPU time per request of each tool is user+sys of
its whole process tree (RUSAGE_CHILDREN around the run, with orphaned
workers re-parented here and reaped), divided by the requests it measured;
a one-request run of each tool first gives its start-up cost, so that the
CPU per request is also shown without it.

AIPerf's inter-token latency is per request, (latency - TTFT) / (tokens -
1), then summarised over requests; tritonctl's inter_response_us is every
gap between responses. With a mock that streams at a steady pace they
agree; the p50 of every gap in AIPerf's per-request export is shown next to
them. Both tools' request throughput is requests over the time from the
first send to the last response.

Exit 1 when a metric is outside the tolerance or a tool reports an error,
2 on a harness problem.
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import time

import genai_mock
from genai_mock import log


def die(msg):
    print(f"generative: {msg}", file=sys.stderr, flush=True)
    sys.exit(2)


def client_cmd(args, cmd):
    return ["taskset", "-c", args.client_cpus] + cmd if args.client_cpus else cmd


def aiperf_level(args, mock, conc, count, tag):
    art = os.path.join(args.work, f"aiperf-{tag}")
    shutil.rmtree(art, ignore_errors=True)
    aiperf = os.path.join(os.path.dirname(sys.executable), "aiperf")
    cmd = [aiperf, "profile", "-m", args.model, "--url", mock.url,
           "--endpoint-type", "chat", "--streaming", "--tokenizer", args.tokenizer,
           "--concurrency", str(conc), "--request-count", str(count),
           "--isl", str(args.prompt_words), "--isl-stddev", "0", "--random-seed", "0",
           "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry",
           "--artifact-dir", art]
    cmd = client_cmd(args, cmd)
    code, out, err, cpu, wall = genai_mock.run_measured(cmd, {mock.proc.pid}, timeout=600)
    with open(art + ".log", "w") as f:
        f.write(" ".join(cmd) + "\n" + out + err)
    summary = os.path.join(art, "profile_export_aiperf.json")
    if code != 0 or not os.path.exists(summary):
        die(f"aiperf failed (exit {code}), log {art}.log: {(out + err)[-1500:]}")
    with open(summary) as f:
        doc = json.load(f)
    gaps, errors = [], 0
    with open(os.path.join(art, "profile_export.jsonl")) as f:
        for line in f:
            rec = json.loads(line)
            if rec.get("error"):
                errors += 1
            gaps += rec["metrics"].get("inter_chunk_latency", {}).get("value", [])
    return {
        "cmd": " ".join(cmd),
        "requests": int(doc["request_count"]["avg"]),
        "errors": max(errors, sum(e.get("count", 1) for e in doc.get("error_summary") or [])),
        "ttft_p50": doc["time_to_first_token"]["p50"],
        "ttft_mean": doc["time_to_first_token"]["avg"],
        "itl_mean": doc["inter_token_latency"]["avg"],
        "itl_p50": doc["inter_token_latency"]["p50"],
        "rps": doc["request_throughput"]["avg"],
        "tokens_per_s": doc["output_token_throughput"]["avg"],
        "latency_p50": doc["request_latency"]["p50"],
        "gap_p50": statistics.median(gaps) if gaps else 0.0,
        "tokens": doc["output_sequence_length"]["avg"],
        "cpu": cpu,
        "wall": wall,
    }


def tritonctl_level(args, mock, conc, count, tag):
    path = os.path.join(args.work, f"tritonctl-{tag}.json")
    cmd = [args.tritonctl, "perf", "-q", "--endpoint", "openai-chat", "-m", args.model,
           "-u", mock.url, "--concurrency-range", str(conc), "--request-count", str(count),
           "--prompt-words", str(args.prompt_words), "--progress", "never",
           "--format", "json"]
    cmd = client_cmd(args, cmd)
    code, out, err, cpu, wall = genai_mock.run_measured(cmd, {mock.proc.pid}, timeout=600)
    with open(path, "w") as f:
        f.write(out)
    if code not in (0, 1) or not out.strip():
        die(f"tritonctl failed (exit {code}): {err[-1500:]}")
    doc = json.loads(out)
    lv = doc["levels"][0]
    ms = lambda v: v / 1000.0
    return {
        "cmd": " ".join(cmd),
        "requests": lv["requests"],
        "errors": lv["errors"],
        "ttft_p50": ms(lv["first_response_us"]["p50"]),
        "ttft_mean": ms(lv["first_response_us"]["mean"]),
        "itl_mean": ms(lv["inter_response_us"]["mean"]),
        "itl_p50": ms(lv["inter_response_us"]["p50"]),
        "rps": lv["requests_per_s"],
        "tokens_per_s": lv.get("output_tokens_per_s") or 0.0,
        "latency_p50": ms(lv["latency_us"]["p50"]),
        "gap_p50": ms(lv["inter_response_us"]["p50"]),
        "tokens": (lv.get("responses_per_request") or {}).get("mean", 0.0),
        "output_tokens": doc.get("output_tokens"),
        "cpu": cpu,
        "wall": wall,
    }


# (key, label, compared against the tolerance)
METRICS = [
    ("ttft_p50", "TTFT p50 ms", True),
    ("ttft_mean", "TTFT mean ms", True),
    ("itl_mean", "ITL mean ms", True),
    ("itl_p50", "ITL p50 ms", True),
    ("rps", "requests/s", True),
    ("tokens_per_s", "output tokens/s", False),
    ("latency_p50", "latency p50 ms", False),
    ("gap_p50", "every gap p50 ms", False),
    ("tokens", "tokens/request", False),
]


def median_of(runs):
    out = {k: statistics.median(r[k] for r in runs) for k, _, _ in METRICS}
    for k in ("requests", "errors", "cpu", "wall"):
        out[k] = sum(r[k] for r in runs)
    out["cmd"] = runs[0]["cmd"]
    out["output_tokens"] = runs[0].get("output_tokens")
    return out


def main():
    p = argparse.ArgumentParser(prog="scripts/perf-bench/generative")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--requests", type=int, default=20,
                   help="requests per level and per unit of concurrency (c=4: 4 times this)")
    p.add_argument("--tokens", type=int, default=20, help="chunks (tokens) per answer")
    p.add_argument("--first-token-ms", type=int, default=100)
    p.add_argument("--gap-ms", type=int, default=20)
    p.add_argument("--prompt-words", type=int, default=100)
    p.add_argument("--tolerance", type=float, default=0.10)
    p.add_argument("--rounds", type=int, default=1,
                   help="runs of each tool per level, alternating; the medians are compared")
    p.add_argument("--pin", action="store_true",
                   help="mock server on CPU 0, the clients on CPU 1 (taskset)")
    p.add_argument("--only-aiperf", action="store_true",
                   help="run AIPerf's side alone (to try the set-up)")
    args = p.parse_args()
    args.tritonctl = os.environ.get("BENCH_TRITONCTL", "")
    args.work = os.environ["BENCH_WORK"]
    args.model = "mock-llm"
    args.client_cpus = "1" if args.pin else None
    started = time.monotonic()
    os.makedirs(args.work, exist_ok=True)
    genai_mock.become_subreaper()

    args.tokenizer = os.path.join(args.work, "tokenizer")
    genai_mock.build_tokenizer(args.tokenizer)
    mock = genai_mock.Mock(args.work, args.tokens, args.first_token_ms, args.gap_ms,
                           cpus="0" if args.pin else None)
    try:
        first, gaps, n = mock.probe()
        log(f"mock server (stubllm) at {mock.url}: configured {args.tokens} tokens, "
            f"first after {args.first_token_ms} ms, then every {args.gap_ms} ms; one "
            f"probe request: {n} tokens, first after {first:.1f} ms, gaps "
            f"p50 {statistics.median(gaps):.1f} ms mean {statistics.mean(gaps):.1f} ms")
        if n != args.tokens:
            die(f"the mock streamed {n} tokens, not {args.tokens}")
        results = run_levels(args, mock)
    finally:
        mock.stop()
    ok = report(args, results)
    log(f"generative: total time {time.monotonic() - started:.0f} s")
    sys.exit(0 if ok else 1)


def run_levels(args, mock):
    # start-up cost: one request at concurrency 1
    startup = {"aiperf": startup_run(args, mock, aiperf_level)}
    if not args.only_aiperf:
        startup["tritonctl"] = startup_run(args, mock, tritonctl_level)
    log("start-up run (1 request): " + ", ".join(
        f"{k} {v['cpu']:.2f} s CPU, {v['wall']:.1f} s wall" for k, v in startup.items()))
    results = []
    for conc in args.concurrency:
        count = conc * args.requests
        ai, tc = [], []
        for rnd in range(1, max(args.rounds, 1) + 1):
            tag = f"c{conc}-r{rnd}"
            ai.append(aiperf_level(args, mock, conc, count, tag))
            line = (f"  c={conc} round {rnd}: AIPerf TTFT p50 {ai[-1]['ttft_p50']:.1f} ms "
                    f"ITL {ai[-1]['itl_mean']:.2f} ms {ai[-1]['rps']:.2f} req/s "
                    f"({ai[-1]['wall']:.0f} s)")
            if not args.only_aiperf:
                tc.append(tritonctl_level(args, mock, conc, count, tag))
                line += (f" | tritonctl {tc[-1]['ttft_p50']:.1f} ms "
                         f"{tc[-1]['itl_mean']:.2f} ms {tc[-1]['rps']:.2f} req/s "
                         f"({tc[-1]['wall']:.1f} s)")
            log(line)
        results.append((conc, count, median_of(ai), median_of(tc) if tc else None))
    return startup, results


def startup_run(args, mock, level):
    return level(args, mock, 1, 1, "startup")


def report(args, run):
    startup, results = run
    tol = args.tolerance
    ok = True
    log()
    for conc, count, ai, tc in results:
        log(f"concurrency {conc}, {count} requests per run, {max(args.rounds, 1)} run(s) "
            "per tool:")
        log(f"  $ {ai['cmd']}")
        if tc:
            log(f"  $ {tc['cmd']}")
        log(f"  {'metric':<18} {'AIPerf':>10} {'tritonctl':>10} {'ratio':>7}")
        for key, label, gated in METRICS:
            a = ai[key]
            if tc is None:
                log(f"  {label:<18} {a:>10.2f}")
                continue
            t = tc[key]
            r = t / a if a else float("inf")
            verdict = ("PASS" if abs(r - 1) <= tol else "FAIL") if gated else "(info)"
            ok = ok and (verdict != "FAIL")
            log(f"  {label:<18} {a:>10.2f} {t:>10.2f} {r:>7.3f} {verdict}")
        rounds = max(args.rounds, 1)
        for name, res in (("AIPerf", ai), ("tritonctl", tc)):
            if res is None:
                continue
            per = res["cpu"] / max(res["requests"], 1) * 1e3
            base = startup["aiperf" if name == "AIPerf" else "tritonctl"]
            net = (res["cpu"] - rounds * base["cpu"]) / max(res["requests"] - rounds, 1) * 1e3
            log(f"  client CPU {name:<9} {res['cpu']:.2f} s for {res['requests']} requests: "
                f"{per:.3f} ms/request, {net:.3f} ms/request without its start-up")
            if res["errors"]:
                log(f"  {name} reported {res['errors']} errors: FAIL")
                ok = False
        if tc is not None:
            if tc["output_tokens"] != "responses":
                log(f"  tritonctl counted tokens from {tc['output_tokens']!r}, "
                    "expected 'responses' (the mock sends no usage)")
            rounds_count = count * max(args.rounds, 1)
            if tc["requests"] != rounds_count or ai["requests"] != rounds_count:
                log(f"  requests measured: AIPerf {ai['requests']}, tritonctl "
                    f"{tc['requests']}, asked {rounds_count}: FAIL")
                ok = False
            if round(tc["tokens"]) != args.tokens or round(ai["tokens"]) != args.tokens:
                log(f"  tokens per request: AIPerf {ai['tokens']}, tritonctl {tc['tokens']}, "
                    f"the mock sends {args.tokens}: FAIL")
                ok = False
        log()
    if any(tc is not None for _, _, _, tc in results):
        log(f"{'conc':>4} | {'TTFT p50 ms AI/tc':>18} | {'ITL mean ms AI/tc':>18} | "
            f"{'req/s AI/tc':>14} | {'CPU ms/req AI/tc':>18} | ratios ttft itl req/s | "
            "CPU AI/tc")
        for conc, _, ai, tc in results:
            cpu = lambda r: r["cpu"] / max(r["requests"], 1) * 1e3
            log(f"{conc:>4} | {ai['ttft_p50']:>8.1f}/{tc['ttft_p50']:<9.1f} | "
                f"{ai['itl_mean']:>8.2f}/{tc['itl_mean']:<9.2f} | "
                f"{ai['rps']:>6.2f}/{tc['rps']:<7.2f} | {cpu(ai):>8.2f}/{cpu(tc):<9.3f} | "
                f"{tc['ttft_p50'] / ai['ttft_p50']:.3f} {tc['itl_mean'] / ai['itl_mean']:.3f} "
                f"{tc['rps'] / ai['rps']:.3f}       | {cpu(ai) / max(cpu(tc), 1e-9):.0f}x")
        log()
        log(f"ratio = tritonctl / AIPerf; PASS within 1 +- {tol}; latencies in ms; CPU = "
            "user+sys of each tool's process tree per measured request (start-up included)")
        log("generative: " + ("all within tolerance" if ok else "SOME METRICS OUTSIDE TOLERANCE"))
    return ok


if __name__ == "__main__":
    main()
