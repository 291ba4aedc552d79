#!/usr/bin/env python3
"""Driver of scripts/triton-fidelity (see README.md beside this file).

Subcommands:
  replay   load each case's model into a running Triton (explicit model
           control), replay its trace at the arrival times, read the model's
           batch log and write what Triton did as <trace>.runN.triton.json
  compare  run `tritonctl simulate` on each case and compare its batches with
           the observed ones (from replay, or the recorded testdata files)

Only the standard library: replay runs with the venv's python, compare with
any python3.
"""

import argparse
import glob
import http.client
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
TRITON_VERSION = "2.51.0 (nvidia-pytriton 0.7.0, CPU, python backend)"
EXIT_HARNESS = 2


def log(*args):
    print("triton-fidelity:", *args, file=sys.stderr, flush=True)


class HarnessError(Exception):
    pass


# --------------------------------------------------------------------------
# cases and traces
# --------------------------------------------------------------------------

def load_cases(path, only, skip=()):
    with open(path) as fh:
        doc = json.load(fh)
    cases = doc["cases"]
    if only:
        names = {c["trace"] for c in cases}
        unknown = [o for o in only if o not in names]
        if unknown:
            raise HarnessError("unknown trace(s): " + ", ".join(unknown)
                               + " (known: " + ", ".join(sorted(names)) + ")")
        cases = [c for c in cases if c["trace"] in only]
    unknown = [o for o in skip if o not in {c["trace"] for c in doc["cases"]}]
    if unknown:
        raise HarnessError("unknown trace(s) to skip: " + ", ".join(unknown))
    cases = [c for c in cases if c["trace"] not in skip]
    for c in cases:
        c.setdefault("model", c["trace"])
        c.setdefault("known", [])
    return doc, cases


def read_trace(path):
    reqs = []
    with open(path) as fh:
        for n, line in enumerate(fh, 1):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            r.setdefault("id", f"line{n}")
            reqs.append(r)
    return reqs


def scheduler_kind(config_text):
    """dynamic | direct | oldest | default, from the config text."""
    text = re.sub(r"#[^\n]*", "", config_text)
    if "sequence_batching" in text:
        return "oldest" if re.search(r"\boldest\b", text) else "direct"
    if "dynamic_batching" in text:
        return "dynamic"
    return "default"


# --------------------------------------------------------------------------
# replay against a running Triton
# --------------------------------------------------------------------------

class Triton:
    def __init__(self, url):
        m = re.match(r"http://([^:/]+):(\d+)$", url)
        if not m:
            raise HarnessError(f"bad url {url}")
        self.host, self.port = m.group(1), int(m.group(2))
        self.url = url

    def call(self, method, path, body=None, timeout=120):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")

    def load(self, model):
        code, body = self.call("POST", f"/v2/repository/models/{model}/load", {})
        if code != 200:
            raise HarnessError(f"loading {model} failed ({code}): {body}")
        code, body = self.call("GET", f"/v2/models/{model}/ready")
        if code != 200:
            raise HarnessError(f"{model} not ready after load ({code}): {body}")

    def unload(self, model, wait_s=30):
        self.call("POST", f"/v2/repository/models/{model}/unload", {})
        deadline = time.time() + wait_s
        while time.time() < deadline:
            code, body = self.call("POST", "/v2/repository/index", {})
            if code == 200:
                states = [e.get("state") for e in json.loads(body or "[]")
                          if e.get("name") == model]
                if not any(s in ("READY", "UNLOADING", "LOADING")
                           for s in states):
                    return
            time.sleep(0.2)
        log(f"warning: {model} still unloading after {wait_s} s")


def request_body(req, rid, max_batch_size):
    b = int(req.get("batch_size", 1) or 1)
    rows = max(1, b)
    shape = [rows, 1] if max_batch_size > 0 else [1]
    body = {"inputs": [{"name": "RID", "datatype": "INT64", "shape": shape,
                        "data": [rid] * (rows if max_batch_size > 0 else 1)}],
            "outputs": [{"name": "OUT"}]}
    params = {}
    if req.get("sequence_id") not in (None, 0, ""):
        params["sequence_id"] = req["sequence_id"]
        params["sequence_start"] = bool(req.get("start", False))
        params["sequence_end"] = bool(req.get("end", False))
    if req.get("priority"):
        params["priority"] = int(req["priority"])
    if req.get("timeout_us"):
        params["timeout"] = int(req["timeout_us"])
    if params:
        body["parameters"] = params
    return json.dumps(body).encode(), shape


class Sender(threading.Thread):
    """One request: connect early, sleep until the arrival time, send."""

    def __init__(self, triton, model, req, rid, mbs, go, t0_box):
        super().__init__(daemon=True)
        self.triton, self.model, self.req, self.rid = triton, model, req, rid
        self.body, self.shape = request_body(req, rid, mbs)
        self.go, self.t0_box = go, t0_box
        self.result = None

    def run(self):
        res = {"id": self.req["id"], "rid": self.rid}
        try:
            conn = http.client.HTTPConnection(self.triton.host, self.triton.port,
                                              timeout=120)
            conn.connect()
            self.go.wait()
            due = self.t0_box[0] + self.req["arrival_us"] / 1e6
            delay = due - time.time()
            if delay > 0:
                time.sleep(delay)
            res["sent"] = time.time()
            conn.request("POST", f"/v2/models/{self.model}/infer", self.body,
                         {"Content-Type": "application/json"})
            resp = conn.getresponse()
            data = resp.read().decode("utf-8", "replace")
            res["answered"] = time.time()
            res["http"] = resp.status
            res["body"] = data
            conn.close()
        except Exception as exc:  # reported as a harness problem
            res["exception"] = f"{type(exc).__name__}: {exc}"
        self.result = res


def check_output(res, shape):
    """The model answers every request with its own RID: check it."""
    try:
        doc = json.loads(res["body"])
        out = [o for o in doc.get("outputs", []) if o.get("name") == "OUT"]
        if not out:
            return "no OUT output"
        data = out[0].get("data")
        want = [res["rid"]] * (shape[0] if len(shape) == 2 else 1)
        if data != want:
            return f"OUT is {data}, expected {want}"
    except (ValueError, KeyError, TypeError) as exc:
        return f"unreadable response: {exc}"
    return None


def error_message(body):
    try:
        return json.loads(body).get("error", body)
    except ValueError:
        return body


def read_log_lines(path, offset):
    if not os.path.exists(path):
        return [], 0
    with open(path, "rb") as fh:
        fh.seek(offset)
        data = fh.read()
    lines = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
    return lines, offset + len(data)


def file_size(path):
    return os.path.getsize(path) if os.path.exists(path) else 0


def observe(lines, t0, trace, kind, sleep_us):
    """Triton's batches from the model log, in the shape of simulate's JSON
    (instances relabelled by first use)."""
    by_rid = {i + 1: r for i, r in enumerate(trace)}
    problems = []
    lines = sorted(lines, key=lambda ln: ln["t0"])
    labels = {}
    batches = []
    for ln in lines:
        inst = labels.setdefault(ln["instance"], len(labels))
        start_us = round((ln["t0"] - t0) * 1e6)
        reqs, slots = [], []
        for row_i, row in enumerate(ln["rows"]):
            ready = row.get("ready")
            padding = kind in ("direct", "oldest") and ready == 0
            req_id = None
            if not padding:
                rids = set(row["rid"])
                if len(rids) != 1 or next(iter(rids)) not in by_rid:
                    problems.append(f"batch at {start_us / 1e3:.1f} ms: "
                                    f"row with RID {row['rid']}")
                    continue
                req = by_rid[next(iter(rids))]
                req_id = req["id"]
                want_rows = max(1, int(req.get("batch_size", 1) or 1))
                if len(row["rid"]) != want_rows:
                    problems.append(f"{req_id}: {len(row['rid'])} rows, "
                                    f"batch_size {want_rows}")
                reqs.append(req_id)
            if kind in ("direct", "oldest"):
                slot = {"request": req_id,
                        "start": bool(row.get("start")),
                        "end": bool(row.get("end")),
                        "ready": bool(ready),
                        "corrid": int(row.get("corrid") or 0) if not padding else 0}
                if kind == "direct":
                    slot = {"slot": row_i, **slot}
                slots.append(slot)
        b = {"instance": inst, "start_us": start_us, "requests": reqs}
        if slots:
            b["slots"] = slots
        b["_t0"] = ln["t0"]
        b["_instance_name"] = ln["instance"]
        batches.append(b)
    # overhead between back-to-back batches of one instance: a first
    # estimate (a gap of 10 ms or more is taken for an idle instance), which
    # compare refines from the batches simulate runs back to back
    gaps = []
    last = {}
    for b in batches:
        prev = last.get(b["instance"])
        if prev is not None:
            gap = (b["_t0"] - prev) * 1e6 - sleep_us
            if 0 <= gap < 10000:
                gaps.append(gap)
        last[b["instance"]] = b["_t0"]
    for b in batches:
        del b["_t0"]
        del b["_instance_name"]
    overhead = round(statistics.median(gaps)) if gaps else None
    return batches, overhead, problems, len(labels)


def replay_case(triton, case, args, run):
    tdir = args.cases_dir
    model = case["model"]
    trace = read_trace(os.path.join(tdir, case["trace"] + ".jsonl"))
    with open(os.path.join(tdir, "models", model, "config.pbtxt")) as fh:
        config_text = fh.read()
    kind = scheduler_kind(config_text)
    m = re.search(r"max_batch_size\s*:\s*(\d+)", config_text)
    mbs = int(m.group(1)) if m else 0

    # an ensemble: its composing models log the batches (each step is the
    # logging model), the ensemble itself is a config and an empty version
    steps = case.get("steps", [])
    kinds = {}
    for step in steps:
        with open(os.path.join(tdir, "models", step, "config.pbtxt")) as fh:
            kinds[step] = scheduler_kind(fh.read())
    logged = steps or [model]

    # the live model directories: the committed config and the logging model
    for name in logged + ([model] if steps else []):
        live = os.path.join(args.repo, name)
        if os.path.exists(live):
            shutil.rmtree(live)
        os.makedirs(os.path.join(live, "1"))
        shutil.copy(os.path.join(tdir, "models", name, "config.pbtxt"), live)
        if name in logged:
            shutil.copy(os.path.join(HERE, "model.py"), os.path.join(live, "1"))

    log_paths = {name: os.path.join(args.log_dir, name + ".jsonl") for name in logged}
    for path in log_paths.values():
        if os.path.exists(path):
            os.unlink(path)
    t_load = time.time()
    for name in steps:
        triton.load(name)
    triton.load(model)
    load_s = time.time() - t_load
    # warm-up calls ran during the load: the batches of the trace start here
    offsets = {name: file_size(path) for name, path in log_paths.items()}

    go = threading.Event()
    t0_box = [0.0]
    senders = [Sender(triton, model, r, i + 1, mbs, go, t0_box)
               for i, r in enumerate(trace)]
    for s in senders:
        s.start()
    time.sleep(0.3)  # every sender connected
    t0_box[0] = time.time() + 0.2
    go.set()
    span_s = max(r["arrival_us"] for r in trace) / 1e6
    deadline = time.time() + span_s + 60
    for s in senders:
        s.join(max(0.1, deadline - time.time()))
    stuck = [s.req["id"] for s in senders if s.is_alive()]
    if stuck:
        raise HarnessError(f"{case['trace']}: no answer for {', '.join(stuck)}")
    t0 = t0_box[0]
    lines = {name: read_log_lines(path, offsets[name])[0]
             for name, path in log_paths.items()}
    triton.unload(model)
    for name in steps:
        triton.unload(name)

    problems = []
    requests = []
    send_delays = []
    for s in senders:
        res = s.result or {"exception": "no result"}
        if "exception" in res:
            raise HarnessError(f"{case['trace']}: {s.req['id']}: {res['exception']}")
        send_delays.append((res["sent"] - t0) * 1e6 - s.req["arrival_us"])
        entry = {"id": s.req["id"]}
        if res["http"] == 200:
            bad = check_output(res, s.shape)
            if bad:
                problems.append(f"{s.req['id']}: {bad}")
            entry["status"] = "ok"
        else:
            msg = error_message(res["body"])
            entry["status"] = ("timed_out" if "timeout expired" in msg.lower()
                               else "rejected")
            entry["http"] = res["http"]
            entry["reason"] = msg
        requests.append(entry)

    if steps:
        # every composing model's batches, each naming its model; an
        # ensemble request that was answered went through every step once
        batches, overheads, n_instances = [], [], 0
        for name in steps:
            mb, mo, mp, mn = observe(lines[name], t0, trace, kinds[name],
                                     args.sleep_ms * 1000)
            problems += [f"{name}: {p}" for p in mp]
            n_instances += mn
            if mo is not None:
                overheads.append(mo)
            seen = set()
            for b in mb:
                for rid in b["requests"]:
                    if rid in seen:
                        problems.append(f"{name}: {rid} ran twice")
                    seen.add(rid)
            for e in requests:
                if e["status"] == "ok" and e["id"] not in seen:
                    problems.append(f"{e['id']}: answered but not in the log of {name}")
            batches += [{"model": name, **b} for b in mb]
        batches.sort(key=lambda b: (b["start_us"], steps.index(b["model"])))
        overhead = round(statistics.median(overheads)) if overheads else None
    else:
        batches, overhead, log_problems, n_instances = observe(
            lines[model], t0, trace, kind, args.sleep_ms * 1000)
        problems += log_problems
        # where each request ran
        seen = {}
        for i, b in enumerate(batches):
            for j, rid in enumerate(b["requests"]):
                if rid in seen:
                    problems.append(f"{rid} ran twice")
                slot = None
                if kind == "direct":
                    slot = next(s["slot"] for s in b["slots"] if s["request"] == rid)
                seen[rid] = (i, b["instance"], slot)
        for e in requests:
            if e["status"] == "ok" and e["id"] not in seen:
                problems.append(f"{e['id']}: answered but not in the model log")
            if e["id"] in seen:
                i, inst, slot = seen[e["id"]]
                e["batch"], e["instance"] = i, inst
                if slot is not None:
                    e["slot"] = slot
    if problems:
        raise HarnessError(f"{case['trace']}: " + "; ".join(problems))

    sleep_us = args.sleep_ms * 1000
    if overhead is None:
        overhead = args.default_overhead_us
    obs = {
        "trace": case["trace"] + ".jsonl",
        "model": "models/" + model,
        "scheduler": "ensemble" if steps else kind,
        **({"schedulers": kinds} if steps else {}),
        "triton": TRITON_VERSION,
        "sleep_us": sleep_us,
        "overhead_us": overhead,
        "latency_us": sleep_us + overhead,
        "max_send_delay_us": round(max(send_delays)),
        "batches": batches,
        "requests": requests,
    }
    log(f"{case['trace']} run {run}: {len(batches)} batches on "
        f"{n_instances} instance(s), overhead {overhead} µs, "
        f"send delay max {obs['max_send_delay_us']} µs, load {load_s:.1f} s")
    return obs


def write_json(path, doc):
    tmp = path + ".tmp"
    with open(tmp, "w") as fh:
        fh.write(format_observation(doc))
    os.replace(tmp, path)


def format_observation(doc):
    """JSON with one batch / request per line (stable, readable diffs)."""
    out = ["{"]
    keys = [k for k in doc if k not in ("batches", "requests")]
    for k in keys:
        out.append(f"  {json.dumps(k)}: {json.dumps(doc[k])},")
    for name in ("batches", "requests"):
        items = doc.get(name, [])
        out.append(f"  {json.dumps(name)}: [")
        for i, item in enumerate(items):
            comma = "," if i + 1 < len(items) else ""
            out.append("    " + json.dumps(item) + comma)
        out.append("  ]" + ("," if name == "batches" else ""))
    out.append("}")
    return "\n".join(out) + "\n"


def cmd_replay(args):
    _, cases = load_cases(args.cases, args.only, args.skip)
    args.cases_dir = os.path.dirname(os.path.abspath(args.cases))
    os.makedirs(args.out, exist_ok=True)
    triton = Triton(args.url)
    unstable = []
    for case in cases:
        observations = []
        for run in range(1, args.runs + 1):
            obs = replay_case(triton, case, args, run)
            write_json(os.path.join(args.out, f"{case['trace']}.run{run}.triton.json"), obs)
            observations.append(obs)
        if any(structure(o) != structure(observations[0]) for o in observations):
            unstable.append(case["trace"])
        elif args.record:
            write_json(os.path.join(args.record, f"{case['trace']}.triton.json"),
                       observations[0])
    if args.record and unstable:
        log("not recorded, Triton's batches differ between runs: "
            + ", ".join(unstable))
    return 0


# --------------------------------------------------------------------------
# compare with tritonctl simulate
# --------------------------------------------------------------------------

def simulate(tritonctl, model_dir, trace_path, latency_us):
    cmd = [tritonctl, "simulate", "--config", model_dir, "--trace", trace_path,
           "--latency", str(latency_us), "--format", "json"]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=120)
    if proc.returncode != 0:
        raise HarnessError("tritonctl simulate failed (" + str(proc.returncode)
                           + "): " + proc.stderr.decode("utf-8", "replace").strip())
    return json.loads(proc.stdout)


def sim_batches(doc, kind):
    """simulate's batches in the observed shape: instances relabelled by
    first use, Direct slots cut after the highest busy slot (Triton sends
    `highest busy slot + 1` entries), Oldest slot numbers dropped (the model
    cannot see them)."""
    labels = {}
    out = []
    for b in sorted(doc["batches"], key=lambda b: (b["start_us"], b["id"])):
        inst = labels.setdefault(b["instance"], len(labels))
        nb = {"instance": inst, "start_us": b["start_us"],
              "end_us": b.get("end_us"), "requests": list(b["requests"]),
              "raw_instance": b["instance"]}
        if "slots" in b:
            slots = []
            for s in b["slots"]:
                row = {"request": s.get("request"), "start": bool(s.get("start")),
                       "end": bool(s.get("end")), "ready": bool(s.get("ready")),
                       "corrid": s.get("corrid") or 0}
                if kind == "direct":
                    row = {"slot": s["slot"], **row}
                slots.append(row)
            if kind == "direct":
                busy = [i for i, s in enumerate(slots) if s["request"] is not None]
                slots = slots[:busy[-1] + 1] if busy else []
            nb["slots"] = slots
        out.append(nb)
    return out


def free_choices(batches):
    """Batches (index) where simulate had more than one idle instance to
    choose from and one of them had been used before: Triton's choice
    there is arbitrary (docs/spec/schedulers.md §1), so instance labels
    may differ."""
    out = []
    used = set()
    for i, b in enumerate(batches):
        busy = {o["raw_instance"] for o in batches[:i]
                if o["start_us"] <= b["start_us"] < (o["end_us"] or 0)}
        all_inst = {o["raw_instance"] for o in batches}
        idle = all_inst - busy
        if len(idle) > 1 and idle & used:
            out.append(i)
        used.add(b["raw_instance"])
    return out


def slot_of(batch, rid):
    for s in batch.get("slots", []):
        if s["request"] == rid:
            return s.get("slot")
    return None


def norm_reason(text):
    return (text or "").strip()


def batch_key(b):
    return (b["instance"], tuple(b["requests"]),
            json.dumps(b.get("slots"), sort_keys=True))


def back_to_back(tb, sb):
    """Pairs (previous, batch) of Triton batches that simulate starts the
    moment the batch before it on the same instance ends, where both are
    equal on both sides and follow each other on the instance in Triton too.
    Only the instance's overhead separates their starts."""
    sim_by_first = {}
    for b in sb:
        if b["requests"]:
            sim_by_first.setdefault(b["requests"][0], b)
    sim_prev, last = {}, {}
    for b in sb:
        sim_prev[id(b)] = last.get(b["raw_instance"])
        last[b["raw_instance"]] = b
    last = {}
    pairs = []
    for b in tb:
        p = last.get(b["instance"])
        last[b["instance"]] = b
        if p is None or not b["requests"] or not p["requests"]:
            continue
        s = sim_by_first.get(b["requests"][0])
        ps = sim_by_first.get(p["requests"][0])
        if s is None or ps is None or batch_key(s) != batch_key(b) \
                or batch_key(ps) != batch_key(p):
            continue
        if sim_prev.get(id(s)) is ps and ps["end_us"] == s["start_us"]:
            pairs.append((p, b, ps, s))
    return pairs


# The traces keep their batches for any per-batch overhead up to this
# (tests/cli/fidelity.rs checks it).
DESIGN_OVERHEAD_US = 30000


def refined_overhead(obs, low_doc, high_doc, kind):
    """Triton's per-batch overhead in this run: the median start gap, less
    the sleep, of the batches simulate runs back to back both with no
    overhead and with DESIGN_OVERHEAD_US (so the pair does not depend on the
    overhead being estimated), or None when there are none. A gap above a
    sixth of the sleep is not taken: that is a batch Triton held back, which
    the comparison must show, not absorb."""
    def firsts(doc):
        return {(p["requests"][0], b["requests"][0]): (p, b)
                for p, b, _, _ in back_to_back(obs["batches"], sim_batches(doc, kind))}
    low, high = firsts(low_doc), firsts(high_doc)
    gaps = [b["start_us"] - p["start_us"] - obs["sleep_us"]
            for k, (p, b) in low.items() if k in high]
    gaps = [g for g in gaps if 0 <= g <= obs["sleep_us"] / 6]
    return round(statistics.median(gaps)) if gaps else None


def compare_one(case, obs, sim_doc, kind, tolerance_us, upstream=None):
    """Returns (row for the table, list of difference strings).

    Start times: a batch that simulate starts the moment the batch before
    it on its instance ends is compared by its distance from that batch
    (Triton's overhead varies from batch to batch and would otherwise add
    up along a chain); likewise, in an ensemble, a batch that simulate
    starts the moment the previous step's batch holding its first request
    ends (`upstream`: that step's observed and simulated batches) is
    compared by its distance from that batch; any other batch (released by
    an arrival or a timer) by its start time."""
    tb = obs["batches"]
    sb = sim_batches(sim_doc, kind)
    diffs = []
    key = batch_key
    chained = {id(b): (p, ps) for p, b, ps, _ in back_to_back(tb, sb)}
    via_step = set()
    if upstream is not None:
        up_t, up_s = upstream
        holding = lambda bs, rid: next((x for x in bs if rid in x["requests"]), None)
        for b in tb:
            if id(b) in chained or not b["requests"]:
                continue
            first = b["requests"][0]
            s_b = next((x for x in sb if x["requests"][:1] == [first]), None)
            p, ps = holding(up_t, first), holding(up_s, first)
            if s_b is not None and p is not None and ps is not None \
                    and ps["end_us"] == s_b["start_us"]:
                chained[id(b)] = (p, ps)
                via_step.add(id(b))

    def show(b):
        txt = f"I{b['instance']} @{b['start_us'] / 1e3:.1f} ms [{' '.join(b['requests'])}]"
        if b.get("slots") is not None:
            txt += " " + " ".join(
                (f"{s['slot']}:" if "slot" in s else "")
                + (s["request"] or "pad")
                + ("S" if s["start"] else "") + ("E" if s["end"] else "")
                + ("" if s["ready"] else "-")
                + (f"#{s['corrid']}" if s["corrid"] else "")
                for s in b["slots"])
        return txt

    # batches: match by their first request
    sim_by_first = {}
    for b in sb:
        if b["requests"]:
            sim_by_first.setdefault(b["requests"][0], b)
    equal = 0
    max_dt = 0
    for b in tb:
        other = sim_by_first.get(b["requests"][0]) if b["requests"] else None
        if other is not None and key(other) == key(b):
            equal += 1
            prev = chained.get(id(b))
            if prev is None:
                dt = abs(other["start_us"] - b["start_us"])
                what = "start differs"
            else:
                p, ps = prev
                dt = abs((b["start_us"] - p["start_us"])
                         - (other["start_us"] - ps["start_us"]))
                what = ("distance from the batch before it on the instance "
                        "differs" if id(b) not in via_step else
                        "distance from the previous step's batch differs")
            max_dt = max(max_dt, dt)
            if dt > tolerance_us:
                diffs.append(("timing", set(b["requests"]),
                              f"same batch, {what} by {dt / 1e3:.1f} ms "
                              f"(tolerance {tolerance_us / 1e3:.0f} ms):\n"
                              f"      triton   {show(b)}\n      simulate {show(other)}"))
        else:
            first = (b["requests"] or ["?"])[0]
            theirs = show(other) if other else f"(no batch starting with {first})"
            involved = set(b["requests"]) | set(other["requests"] if other else [])
            diffs.append(("batch", involved,
                          f"triton   {show(b)}\n      simulate {theirs}"))
    tb_first = {b["requests"][0] for b in tb if b["requests"]}
    for b in sb:
        if b["requests"] and b["requests"][0] not in tb_first:
            first = b["requests"][0]
            diffs.append(("batch", set(b["requests"]),
                          f"simulate {show(b)}\n"
                          f"      triton   (no batch starting with {first})"))

    # requests: instance, slot, batch-mates, status
    def where(batches):
        out = {}
        for b in batches:
            for rid in b["requests"]:
                out[rid] = (b["instance"], slot_of(b, rid), tuple(b["requests"]))
        return out

    tw, sw = where(tb), where(sb)
    sim_req = {r["id"]: r for r in sim_doc["requests"]}
    n_req = len(obs["requests"])
    same_inst = same_slot = same_batch = same_status = 0
    for r in obs["requests"]:
        rid = r["id"]
        s = sim_req.get(rid, {})
        if r["status"] == s.get("status") and (
                r["status"] == "ok"
                or norm_reason(r.get("reason")) == norm_reason(s.get("reason"))):
            same_status += 1
        else:
            diffs.append(("status", {rid},
                          f"{rid}: triton {r['status']} {r.get('reason', '')!r}, "
                          f"simulate {s.get('status')} {s.get('reason', '')!r}"))
        t, m = tw.get(rid), sw.get(rid)
        if t is None and m is None:
            same_inst += 1
            same_slot += 1
            same_batch += 1
            continue
        if t and m and t[0] == m[0]:
            same_inst += 1
        if t and m and t[1] == m[1]:
            same_slot += 1
        if t and m and t[2] == m[2]:
            same_batch += 1
    # sequence batchers: the slot decides the instance
    free = free_choices(sb) if kind in ("dynamic", "default") else []
    if free:
        diffs.append(("design", set(),
                      "simulate chose among several idle instances at batch(es) "
                      + ", ".join(show(sb[i]) for i in free)
                      + ": Triton's choice there is arbitrary; change the trace"))
    row = {
        "trace": case["trace"],
        "batches": f"{len(tb)}/{len(sb)}",
        "equal": equal,
        "requests": n_req,
        "instance": same_inst,
        "slot": same_slot if kind == "direct" else "-",
        "batch": same_batch,
        "status": same_status,
        "dt_ms": f"{max_dt / 1e3:.1f}",
    }
    return row, diffs


def model_part(doc, model):
    """An ensemble's document (observed or simulated) cut down to one
    composing model's batches; the whole document when model is None."""
    if model is None:
        return doc
    return dict(doc, batches=[{k: v for k, v in b.items() if k != "model"}
                              for b in doc["batches"] if b.get("model") == model])


def classify(diffs, known):
    """Split differences into known (listed in cases.json) and unexplained."""
    out_known, out_new = [], []
    for kind, reqs, text in diffs:
        hit = None
        if reqs:
            for k in known:
                if k.get("kind", kind) == kind and reqs <= set(k.get("requests", [])):
                    hit = k
                    break
        if hit:
            out_known.append(text + f"\n      known: {hit['reason']}")
        else:
            out_new.append(text)
    return out_known, out_new


def structure(obs):
    return [(b.get("model"), b["instance"], b["requests"], b.get("slots"))
            for b in obs["batches"]], \
        [(r["id"], r["status"]) for r in obs["requests"]]


def cmd_compare(args):
    _, cases = load_cases(args.cases, args.only, args.skip)
    cases_dir = os.path.dirname(os.path.abspath(args.cases))
    rows = []
    failed = False
    details = []
    for case in cases:
        files = sorted(glob.glob(os.path.join(args.observed, case["trace"] + ".run*.triton.json")),
                       key=lambda p: int(re.search(r"\.run(\d+)\.", p).group(1)))
        if not files:
            single = os.path.join(args.observed, case["trace"] + ".triton.json")
            if os.path.exists(single):
                files = [single]
        if not files:
            raise HarnessError(f"no observation of {case['trace']} in {args.observed}")
        observations = []
        for path in files:
            with open(path) as fh:
                observations.append(json.load(fh))
        model_dir = os.path.join(cases_dir, "models", case["model"])
        trace_path = os.path.join(cases_dir, case["trace"] + ".jsonl")
        kind = observations[0]["scheduler"]
        stable = all(structure(o) == structure(observations[0]) for o in observations)
        for n, obs in enumerate(observations, 1):
            # an ensemble is compared model by model: each composing
            # model's batches against simulate's batches of that model
            parts = ([(m, obs["schedulers"][m]) for m in case["steps"]]
                     if kind == "ensemble" else [(None, kind)])
            # the overhead measured on the batches simulate runs back to back
            low = simulate(args.tritonctl, model_dir, trace_path, obs["sleep_us"])
            high = simulate(args.tritonctl, model_dir, trace_path,
                            obs["sleep_us"] + DESIGN_OVERHEAD_US)
            overheads = [refined_overhead(model_part(obs, m), model_part(low, m),
                                          model_part(high, m), k)
                         for m, k in parts]
            overheads = [o for o in overheads if o is not None]
            if overheads:
                overhead = round(statistics.median(overheads))
                obs = dict(obs, overhead_us=overhead,
                           latency_us=obs["sleep_us"] + overhead)
            sim_doc = simulate(args.tritonctl, model_dir, trace_path, obs["latency_us"])
            for i, (m, k) in enumerate(parts):
                part_case = case if m is None else dict(case, trace=f"{case['trace']}/{m}")
                upstream = None
                if i > 0:
                    # the steps form a chain: the step before is the one
                    # listed before
                    pm, pk = parts[i - 1]
                    upstream = (model_part(obs, pm)["batches"],
                                sim_batches(model_part(sim_doc, pm), pk))
                row, diffs = compare_one(part_case, model_part(obs, m),
                                         model_part(sim_doc, m), k,
                                         args.tolerance_ms * 1000, upstream)
                row["run"] = n if len(observations) > 1 else "-"
                row["latency"] = obs["latency_us"]
                known, new = classify(diffs, case["known"])
                row["result"] = "agree" if not diffs else ("known" if not new else "DIFFER")
                rows.append(row)
                if new:
                    failed = True
                if known or new:
                    details.append((part_case["trace"], n if len(observations) > 1 else 0,
                                    known, new))
        if not stable:
            failed = True
            details.append((case["trace"], 0, [], [
                "Triton's batches differ between runs (a race in Triton: "
                "move the trace's arrivals away from batch boundaries)"]))
    cols = [("trace", 19), ("run", 3), ("latency", 7), ("batches", 7), ("equal", 5),
            ("requests", 8), ("instance", 8), ("slot", 4), ("batch", 5),
            ("status", 6), ("dt_ms", 5), ("result", 6)]
    head = {"latency": "lat µs", "batches": "tri/sim", "instance": "same-ins",
            "slot": "slot", "batch": "mates", "dt_ms": "Δt ms"}
    print("Triton 2.51 (real server) vs tritonctl simulate: batches equal, and "
          "per request the same instance / slot / batch-mates / status")
    print("  ".join(head.get(c, c).ljust(w) for c, w in cols))
    for r in rows:
        print("  ".join(str(r[c]).ljust(w) for c, w in cols))
    tot_b = sum(int(r["batches"].split("/")[0]) for r in rows)
    tot_e = sum(r["equal"] for r in rows)
    tot_r = sum(r["requests"] for r in rows)
    tot_i = sum(r["instance"] for r in rows)
    tot_m = sum(r["batch"] for r in rows)
    print(f"total: {tot_e}/{tot_b} batches equal; {tot_i}/{tot_r} requests on the "
          f"same instance, {tot_m}/{tot_r} with the same batch-mates")
    # the same difference in several runs is printed once (times aside)
    grouped = {}
    for trace, run, known, new in details:
        for label, texts in (("DIFFERENCE", new), ("known difference", known)):
            for text in texts:
                key = (trace, label, re.sub(r"[\d.]+ ms", "_ ms", text))
                grouped.setdefault(key, (text, []))[1].append(run)
    for (trace, label, _), (text, runs) in grouped.items():
        where = trace
        if any(runs):
            where += (" run " if len(runs) == 1 else " runs ") + \
                ", ".join(str(r) for r in runs)
        print(f"\n{label} ({where}):\n      {text}")
    print("\nresult: " + ("DISAGREE" if failed else "ok"))
    return 1 if failed else 0


# --------------------------------------------------------------------------

def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("replay")
    r.add_argument("--url", required=True)
    r.add_argument("--cases", required=True)
    r.add_argument("--repo", required=True, help="the server's model repository")
    r.add_argument("--log-dir", required=True, help="FIDELITY_LOG_DIR of the server")
    r.add_argument("--out", required=True)
    r.add_argument("--record", help="also write <trace>.triton.json (run 1) here")
    r.add_argument("--runs", type=int, default=1)
    r.add_argument("--sleep-ms", type=int, required=True)
    r.add_argument("--default-overhead-us", type=int, default=1400)
    r.add_argument("--only", action="append", default=[])
    r.add_argument("--skip", action="append", default=[])
    c = sub.add_parser("compare")
    c.add_argument("--cases", required=True)
    c.add_argument("--observed", required=True)
    c.add_argument("--tritonctl", required=True)
    c.add_argument("--only", action="append", default=[])
    c.add_argument("--skip", action="append", default=[])
    c.add_argument("--tolerance-ms", type=float, default=40,
                   help="largest start-time difference of an equal batch "
                        "(default 40: on a loaded 2-core machine Triton starts "
                        "a batch up to ~20 ms late; the traces' timers and "
                        "sleep are 200 ms and more)")
    args = p.parse_args()
    try:
        if args.cmd == "replay":
            return cmd_replay(args)
        return cmd_compare(args)
    except HarnessError as exc:
        log(f"harness problem: {exc}")
        return EXIT_HARNESS
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
