#!/usr/bin/env python3
"""Reference oracle for `tritonctl validate`: real Triton versus tritonctl.

Sub-commands (scripts/triton-oracle drives them):

  prepare  pick a deterministic sample of the config corpus and lay it out as
           one small model repository per group under WORK/sample/
  triton   start a real tritonserver (127.0.0.1 only, explicit model control),
           load every group, classify Triton's verdict per model and write
           WORK/triton-verdicts.tsv; keep the config of every model that
           loaded (GET /v2/models/<m>/config) in WORK/configs/
  compare  run `tritonctl validate --format json` on every group and compare
           its errors with Triton's verdicts (exit 1 on any false alarm),
           then the loaded configs (config-diff)
  config-diff
           only the loaded-config comparison: `tritonctl validate
           --print-config` against Triton's configs, field by field
           (WORK/config-diff.tsv; exit 1 on an unexplained difference)
  export   Triton's verdicts keyed by corpus file (testdata/oracle format)

Everything here is standard library, except that `prepare` needs the
`protobuf` package (to read the configs the way Triton does) and Triton's
python stub needs numpy (only with --real-python or the python-based
stand-ins); the wrapper installs them into a private virtual environment.
See README.md next to this file.
"""

import argparse
import hashlib
import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from concurrent.futures import ThreadPoolExecutor

# A do-nothing python model: `model.py` of python models (used with
# --real-python) and the implementation of the python-based stand-in
# backends (--python-stand-ins, or when no C compiler is found).
STUB_MODEL = '''\
# Placeholder model written by scripts/triton-oracle: it only lets Triton
# finish loading so that every core check on the configuration runs. A
# request (only warm-up requests reach it) gets an empty final response.
import json

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args.get("model_config") or "{}")
        policy = config.get("model_transaction_policy") or {}
        self.decoupled = bool(policy.get("decoupled"))

    def execute(self, requests):
        if self.decoupled:
            for request in requests:
                request.get_response_sender().send(
                    flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
            return None
        return [pb_utils.InferenceResponse(output_tensors=[])
                for _ in requests]

    def finalize(self):
        pass
'''

PLATFORM_BACKEND = {
    "tensorflow_graphdef": "tensorflow",
    "tensorflow_savedmodel": "tensorflow",
    "tensorrt_plan": "tensorrt",
    "onnxruntime_onnx": "onnxruntime",
    "pytorch_libtorch": "pytorch",
    "libtorch": "pytorch",
    "torch_aoti": "pytorch",
}

SAFE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.\-]*$")

VERDICT_COLUMNS = [
    "file", "repo", "group", "model", "role", "verdict", "tag", "message",
]


def log(*args):
    print(*args, file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# prepare
# --------------------------------------------------------------------------

def model_config_class(desc_path):
    from google.protobuf import descriptor_pb2, descriptor_pool
    from google.protobuf import message_factory

    fds = descriptor_pb2.FileDescriptorSet()
    with open(desc_path, "rb") as fh:
        fds.ParseFromString(fh.read())
    pool = descriptor_pool.DescriptorPool()
    for f in fds.file:
        pool.Add(f)
    desc = pool.FindMessageTypeByName("inference.ModelConfig")
    return message_factory.GetMessageClass(desc)


def read_manifest(corpus):
    rows = []
    with open(os.path.join(corpus, "manifest.tsv"), encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            vals = line.rstrip("\n").split("\t")
            vals += [""] * (len(header) - len(vals))
            rows.append(dict(zip(header, vals)))
    return rows


def sanitize(name):
    out = re.sub(r"[^A-Za-z0-9_.\-]", "_", name).strip(".")
    return out or "model"


def file_key(path):
    return hashlib.sha256(path.encode("utf-8")).hexdigest()


def describe(row, cfg):
    """What `prepare` needs to know about one parsed config."""
    parent = os.path.basename(os.path.dirname(row["path_in_repo"]))
    name = cfg.name
    if name:
        dirname = name if (SAFE_NAME.match(name) and name not in (".", ".."))\
            else sanitize(name)
    else:
        dirname = sanitize(parent) if parent else "model"
    sched = cfg.WhichOneof("scheduling_choice")
    steps = []
    if sched == "ensemble_scheduling":
        for st in cfg.ensemble_scheduling.step:
            steps.append((st.model_name, int(st.model_version)))
    versions = {1}
    if cfg.version_policy.WhichOneof("policy_choice") == "specific":
        versions.update(int(v) for v in cfg.version_policy.specific.versions
                        if int(v) >= 0)
    backend = cfg.backend
    derived = backend or PLATFORM_BACKEND.get(cfg.platform, "")
    if not derived and not cfg.platform and "." in dirname:
        derived = dirname.split(".", 1)[1]
    return {
        "file": row["file"],
        "repo": row["repo"],
        "path": row["path_in_repo"],
        "name": name,
        "dir": dirname,
        "platform": cfg.platform,
        "backend": backend,
        "derived_backend": derived,
        "python": backend == "python",
        "default_model_filename": cfg.default_model_filename,
        "ensemble": sched == "ensemble_scheduling" or cfg.platform == "ensemble",
        "steps": steps,
        "versions": versions,
        "historical": "historical" in row["flags"].split(","),
        "labels": sorted({o.label_filename for o in cfg.output
                          if o.label_filename}),
        "n_inputs": len(cfg.input),
        "n_outputs": len(cfg.output),
    }


def common_prefix_len(a, b):
    pa, pb = a.split("/")[:-1], b.split("/")[:-1]
    n = 0
    for x, y in zip(pa, pb):
        if x != y:
            break
        n += 1
    return n


def resolve_group(root, by_repo_name):
    """The root config plus, for an ensemble, its composing models found in
    the same source repository (closest path first), recursively."""
    members = {root["dir"]: root}
    missing = []
    need_versions = {}
    todo = [root]
    while todo:
        cur = todo.pop()
        for model_name, version in cur["steps"]:
            if not model_name:
                continue
            if version > 0:
                need_versions.setdefault(model_name, set()).add(version)
            if model_name in members:
                continue
            cands = by_repo_name.get((root["repo"], model_name), [])
            if not cands:
                missing.append(model_name)
                continue
            best = sorted(
                cands,
                key=lambda c: (-common_prefix_len(c["path"], root["path"]),
                               c["historical"] != root["historical"],
                               c["path"]))[0]
            members[model_name] = best
            todo.append(best)
    return members, sorted(set(missing)), need_versions


def extra_groups(models_dir, sample_dir, first, cls):
    """One group per model directory under `models_dir` (hand-written cases
    with their data files, see testdata/oracle/models/README.md), copied as
    they are; `file` is the path of their config.pbtxt relative to the
    crate."""
    from google.protobuf import text_format

    crate = os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    groups = []
    for name in sorted(os.listdir(models_dir)):
        mdir = os.path.join(models_dir, name)
        cfg_path = os.path.join(mdir, "config.pbtxt")
        if not os.path.isfile(cfg_path):
            continue
        with open(cfg_path, encoding="utf-8") as fh:
            cfg = cls()
            text_format.Parse(fh.read(), cfg)
        rel = os.path.relpath(cfg_path, crate)
        info = describe({"file": rel, "repo": "tritonctl",
                         "path_in_repo": f"{name}/config.pbtxt",
                         "flags": ""}, cfg)
        gid = f"g{first + len(groups):04d}"
        shutil.copytree(mdir, os.path.join(sample_dir, gid, name))
        groups.append({
            "group": gid, "root": name, "root_file": rel, "repo": "tritonctl",
            "ensemble": info["ensemble"], "missing": [], "extra": True,
            "members": [{"dir": name, "file": rel,
                         "backend": info["derived_backend"],
                         "n_inputs": info["n_inputs"],
                         "n_outputs": info["n_outputs"]}],
        })
    log(f"prepare: {len(groups)} hand-written models from {models_dir}")
    return groups


def cmd_prepare(args):
    corpus = args.corpus
    cls = model_config_class(os.path.join(corpus, "model_config.desc"))
    from google.protobuf import text_format

    rows = read_manifest(corpus)
    parsed = []
    for row in rows:
        if row["oracle"] != "ok" or "partial" in row["flags"].split(","):
            continue
        with open(os.path.join(corpus, row["file"]), "rb") as fh:
            raw = fh.read()
        text = raw.decode("utf-8", errors="replace")
        cfg = cls()
        try:
            text_format.Parse(text, cfg)
        except Exception as exc:  # the manifest says ok; report and skip
            log(f"prepare: cannot parse {row['file']}: {exc}")
            continue
        info = describe(row, cfg)
        info["bytes"] = raw
        parsed.append(info)

    by_repo_name = {}
    for info in parsed:
        by_repo_name.setdefault((info["repo"], info["dir"]), []).append(info)

    # Deterministic sample: order by a hash of the corpus path, then take
    # files from triton-inference-server/* first and the others after them,
    # up to --sample (0 = everything).
    def rank(info):
        tis = info["repo"].startswith("triton-inference-server/")
        return (0 if tis else 1, file_key(info["file"]))

    chosen = sorted(parsed, key=rank)
    if args.no_ensembles:
        chosen = [i for i in chosen if not i["ensemble"]]
    if args.sample and args.sample < len(chosen):
        tis = [i for i in chosen if i["repo"].startswith("triton-inference-server/")]
        other = [i for i in chosen if not i["repo"].startswith("triton-inference-server/")]
        n_other = min(len(other), max(args.sample // 4, args.sample - len(tis)))
        chosen = tis[: args.sample - n_other] + other[:n_other]
    chosen.sort(key=lambda i: i["file"])

    sample_dir = os.path.join(args.work, "sample")
    if os.path.exists(sample_dir):
        shutil.rmtree(sample_dir)
    os.makedirs(sample_dir)

    groups = []
    for gi, root in enumerate(chosen):
        gid = f"g{gi:04d}"
        if root["ensemble"]:
            members, missing, need_versions = resolve_group(root, by_repo_name)
        else:
            members, missing, need_versions = {root["dir"]: root}, [], {}
        gdir = os.path.join(sample_dir, gid)
        for dirname, info in members.items():
            mdir = os.path.join(gdir, dirname)
            os.makedirs(mdir)
            with open(os.path.join(mdir, "config.pbtxt"), "wb") as fh:
                fh.write(info["bytes"])
            # label files live next to config.pbtxt in the source repository
            # and Triton reads them at load time: give it empty ones
            for label in info["labels"]:
                lpath = os.path.normpath(os.path.join(mdir, label))
                if lpath.startswith(mdir + os.sep) and not os.path.exists(lpath):
                    os.makedirs(os.path.dirname(lpath), exist_ok=True)
                    open(lpath, "w").close()
            versions = set(info["versions"]) | need_versions.get(dirname, set())
            for v in sorted(versions):
                vdir = os.path.join(mdir, str(v))
                os.makedirs(vdir)
                if info["python"]:
                    fname = info["default_model_filename"] or "model.py"
                    if "/" not in fname:
                        with open(os.path.join(vdir, fname), "w") as fh:
                            fh.write(STUB_MODEL)
        groups.append({
            "group": gid,
            "root": root["dir"],
            "root_file": root["file"],
            "repo": root["repo"],
            "ensemble": root["ensemble"],
            "missing": missing,
            "members": [
                {"dir": d, "file": i["file"], "backend": i["derived_backend"],
                 "n_inputs": i["n_inputs"], "n_outputs": i["n_outputs"]}
                for d, i in members.items()
            ],
        })
    for models_dir in args.models:
        groups.extend(extra_groups(models_dir, sample_dir, len(groups), cls))
    backends = sorted({m["backend"] for g in groups for m in g["members"]
                       if m["backend"]})
    plan = {"corpus": os.path.abspath(corpus), "groups": groups,
            "backends": backends}
    with open(os.path.join(args.work, "plan.json"), "w") as fh:
        json.dump(plan, fh, indent=1)
    n_ens = sum(1 for g in groups if g["ensemble"])
    log(f"prepare: {len(groups)} groups ({n_ens} ensembles) from "
        f"{len(parsed)} parseable corpus files; sample in {sample_dir}")


# --------------------------------------------------------------------------
# triton
# --------------------------------------------------------------------------

class Server:
    def __init__(self, args, plan):
        self.args = args
        self.plan = plan
        self.proc = None
        self.port = args.port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.log_path = os.path.join(args.work, "tritonserver.log")
        self.live = os.path.join(args.work, "live")
        self.backends = os.path.join(args.work, "backends")
        self.token = f"oracle{os.getpid()}"
        self.stopping = False

    def setup_backends(self):
        """Every backend the sample names gets a stand-in that accepts any
        model (see README.md): a no-op native library when a C compiler is
        there, else a python-based backend (backends/<b>/model.py)."""
        if os.path.exists(self.backends):
            shutil.rmtree(self.backends)
        os.makedirs(self.backends)
        real_python = os.path.join(self.args.triton, "backends", "python")
        noop = None if self.args.python_stand_ins else build_noop(self.args.work)
        wanted = [b for b in self.plan["backends"] if SAFE_NAME.match(b)]
        if self.args.real_python or noop is None:
            shutil.copytree(real_python, os.path.join(self.backends, "python"),
                            symlinks=True)
            wanted = [b for b in wanted if b != "python"]
        elif "python" not in wanted:
            wanted.append("python")
        if self.args.no_stand_ins:
            wanted = []
            if not os.path.isdir(os.path.join(self.backends, "python")):
                shutil.copytree(real_python,
                                os.path.join(self.backends, "python"),
                                symlinks=True)
        for b in wanted:
            bdir = os.path.join(self.backends, b)
            os.makedirs(bdir)
            if noop:
                shutil.copy(noop, os.path.join(bdir, f"libtriton_{b}.so"))
            else:
                with open(os.path.join(bdir, "model.py"), "w") as fh:
                    fh.write(STUB_MODEL)
        kind = "no-op native" if noop else "python-based"
        real = os.path.isdir(os.path.join(self.backends, "python")) and \
            "python" not in wanted
        log(f"triton: {kind} stand-in backends: "
            f"{', '.join(sorted(wanted)) or '-'}"
            + ("; real python backend for python models" if real else ""))

    def start(self):
        if self.stopping:
            raise RuntimeError("interrupted")
        if os.path.exists(self.live):
            shutil.rmtree(self.live)
        os.makedirs(self.live)
        self.setup_backends()
        exe = os.path.join(self.args.triton, "bin", "tritonserver")
        cmd = [
            exe,
            "--model-repository", self.live,
            "--backend-directory", self.backends,
            "--model-control-mode", "explicit",
            "--strict-readiness", "false",
            "--http-address", "127.0.0.1",
            "--http-port", str(self.port),
            "--allow-grpc", "false",
            "--allow-metrics", "false",
            "--allow-gpu-metrics", "false",
            "--exit-timeout-secs", "5",
            "--log-verbose", "0",
            "--model-load-thread-count", str(self.args.jobs),
            "--backend-config",
            f"python,shm-region-prefix-name={self.token}",
        ]
        if self.args.disable_auto_complete:
            cmd.append("--disable-auto-complete-config")
        log("triton: " + " ".join(cmd))
        self.logf = open(self.log_path, "wb")
        self.proc = subprocess.Popen(cmd, stdout=self.logf,
                                     stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL,
                                     start_new_session=True)
        with open(os.path.join(self.args.work, "tritonserver.pid"), "w") as fh:
            fh.write(f"{self.proc.pid}\n")
        deadline = time.time() + 60
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("tritonserver exited at start; see "
                                   + self.log_path)
            try:
                code, _ = self.request("GET", "/v2/health/live", timeout=2)
                if code == 200:
                    return
            except OSError:
                pass
            time.sleep(0.3)
        raise RuntimeError("tritonserver did not become live; see "
                           + self.log_path)

    def stop(self):
        if not self.proc or self.proc.poll() is not None:
            return
        pgid = self.proc.pid
        try:
            os.killpg(pgid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait(timeout=10)
        # the python stubs live in the same process group; make sure none
        # outlives the server
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        try:
            os.unlink(os.path.join(self.args.work, "tritonserver.pid"))
        except OSError:
            pass
        for entry in os.listdir("/dev/shm"):
            if entry.startswith(self.token):
                try:
                    os.unlink(os.path.join("/dev/shm", entry))
                except OSError:
                    pass

    def request(self, method, path, body=None, timeout=30):
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data,
                                     method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as err:
            return err.code, err.read().decode("utf-8", "replace")
        except (OSError, http.client.HTTPException) as err:
            if self.proc is not None and self.proc.poll() is not None:
                raise ServerDied(f"tritonserver exited ({self.proc.returncode})")
            if isinstance(err, (socket.timeout, TimeoutError)) or isinstance(
                    getattr(err, "reason", None), (socket.timeout, TimeoutError)):
                raise LoadTimeout(str(err))
            raise

    def index(self):
        code, body = self.request("POST", "/v2/repository/index", {})
        if code != 200:
            return {}
        out = {}
        for ent in json.loads(body or "[]"):
            out.setdefault(ent.get("name"), []).append(ent)
        return out

    def read_log(self, offset=0):
        with open(self.log_path, "rb") as fh:
            fh.seek(max(0, offset - 1))
            data = fh.read()
        # start at a line boundary
        if offset:
            cut = data.find(b"\n")
            data = data[cut + 1:] if cut >= 0 else b""
        return data.decode("utf-8", "replace")


NOOP_BACKEND_C = r"""
/* Stand-in Triton backend written by scripts/triton-oracle. Triton only
 * requires a backend library to export the execute entry point. This one
 * accepts every model configuration; a request (only warm-up requests reach
 * it) gets one final, empty, successful response and is released. The
 * TRITONBACKEND_* functions below come from the server process. */
#include <stddef.h>
#include <stdint.h>
void *TRITONBACKEND_ResponseNew(void **response, void *request);
void *TRITONBACKEND_ResponseSend(void *response, uint32_t send_flags,
                                 void *error);
void *TRITONBACKEND_RequestRelease(void *request, uint32_t release_flags);

void *TRITONBACKEND_ModelInstanceExecute(void *instance, void **requests,
                                         const uint32_t request_count) {
  (void)instance;
  for (uint32_t i = 0; i < request_count; ++i) {
    void *response = NULL;
    if (TRITONBACKEND_ResponseNew(&response, requests[i]) == NULL &&
        response != NULL) {
      TRITONBACKEND_ResponseSend(response, 1 /* COMPLETE_FINAL */, NULL);
    }
    TRITONBACKEND_RequestRelease(requests[i], 1 /* RELEASE_ALL */);
  }
  return NULL;
}
"""


def build_noop(work):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return None
    src = os.path.join(work, "noop_backend.c")
    lib = os.path.join(work, "libnoop_backend.so")
    with open(src, "w") as fh:
        fh.write(NOOP_BACKEND_C)
    res = subprocess.run([cc, "-shared", "-fPIC", "-O2", "-o", lib, src],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if res.returncode != 0:
        log("triton: cannot build the no-op backend: "
            + res.stdout.decode("utf-8", "replace"))
        return None
    return lib


class ServerDied(Exception):
    pass


class LoadTimeout(Exception):
    pass


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


LOG_LINE = re.compile(r'^([EWI])\d{4} [\d:.]+ +\d+ [\w.]+:\d+\] "(.*)"$')


def unquote_log(s):
    try:
        return json.loads('"' + s + '"')
    except ValueError:
        return s.replace('\\"', '"').replace("\\n", "\n")


def poll_failures(log_text):
    """model name -> list of 'Poll failed' messages, in log order."""
    out = {}
    for line in log_text.splitlines():
        m = LOG_LINE.match(line)
        if not m or m.group(1) != "E":
            continue
        text = unquote_log(m.group(2))
        pm = re.match(r"Poll failed for model directory '(.*?)': (.*)$", text,
                      re.S)
        if pm:
            out.setdefault(pm.group(1), []).append(pm.group(2))
    return out


ENV_RULES = [
    # (tag, pattern): errors that depend on this machine or this harness,
    # not on the configuration itself.
    ("backend-absent", re.compile(r"unable to find backend library for backend")),
    ("runtime-absent", re.compile(r"unable to find backend library '")),
    ("python-env", re.compile(
        r"Python model file not found|Failed to (pre)?initialize Python stub|"
        r"Stub process|\bstub\b|EXECUTION_ENV_PATH|Python environment|"
        r"ModuleNotFoundError|Traceback|python_backend|"
        r"Failed to create environment", re.I)),
    ("triton-2.51-schema", re.compile(
        r"failed to read text proto|Error parsing text-format")),
    ("timeout", re.compile(r"^load timed out")),
    ("repoagent-absent", re.compile(r"for repo agent '")),
]

# Triton's verdict on the ensemble in this very repository (tritonctl sees
# the same directory), but caused by a composing model
ENSEMBLE_RULES = [
    ("ensemble-dependency", re.compile(
        r"which has no loaded version|whose required version \S+ is not loaded"
        r"|depends on '.*?' which is not valid")),
    ("ensemble-incomplete", re.compile(
        r"contains models that are not available or ambiguous")),
]

COMPOSING_IO = re.compile(
    r"non-existing (?P<kind>input|output) \S+ in model (?P<model>\S+)$")

GPU_RULE = re.compile(
    r"no GPUs are available|server does not support GPUs|"
    r"specifies invalid or unsupported gpu id|but specifies no GPUs")


AUTOCOMPLETE_FILLS = re.compile(
    r"^(Invalid argument: )?model (input|output) '.*' must specify "
    r"'(dims|data_type)' for ")


def classify(message, autocomplete=True):
    """-> (verdict, tag). verdict: core-error | env | accepted."""
    if autocomplete and AUTOCOMPLETE_FILLS.match(message):
        # a real backend's auto-complete may fill these from the model file
        return "env", "needs-backend-autocomplete"
    for tag, pat in ENV_RULES:
        if pat.search(message):
            if tag == "backend-absent":
                return "accepted", tag
            return "env", tag
    for tag, pat in ENSEMBLE_RULES:
        if pat.search(message):
            return "core-error", tag
    if GPU_RULE.search(message):
        return "core-error", "gpu"
    return "core-error", ""


LOAD_FAILED = re.compile(
    r"load failed for model '(?P<m>.*?)': version (?P<v>\d+) is at "
    r"UNAVAILABLE state: (?P<msg>.*)$", re.S)


LOAD_FAILED_OTHER = re.compile(
    r"load failed for model '(?P<m>.*?)': (?P<msg>.*)$", re.S)


def clean_http_error(body):
    try:
        msg = json.loads(body).get("error", body)
    except ValueError:
        msg = body
    return msg.strip()


def run_group(server, group, timeout):
    """Load one group into the live repository; return Triton's verdict on
    its root model and the names that are still unloading."""
    sample = os.path.join(server.args.work, "sample", group["group"])
    names = [m["dir"] for m in group["members"]]
    for d in names:
        dst = os.path.join(server.live, d)
        if os.path.exists(dst):
            shutil.rmtree(dst)
        shutil.copytree(os.path.join(sample, d), dst, symlinks=True)
    root = group["root"]
    path = "/v2/repository/models/" + urllib.parse.quote(root, safe="") + "/load"
    t0 = time.time()
    log_offset = os.path.getsize(server.log_path)
    try:
        code, body = server.request("POST", path, {}, timeout=timeout)
    except LoadTimeout:
        return {"verdict": "env", "tag": "timeout",
                "message": f"load timed out after {timeout}s",
                "seconds": time.time() - t0}, set(names)
    elapsed = time.time() - t0

    if code == 200:
        result = {"verdict": "accepted", "tag": "loaded", "message": ""}
    else:
        raw = clean_http_error(body)
        message = raw
        m = LOAD_FAILED.match(raw) or LOAD_FAILED_OTHER.match(raw)
        if m:
            message = m.group("msg").rstrip().rstrip(";").strip()
        elif "failed to poll from model repository" in raw:
            # the detail is only in the server log
            message = None
            for _ in range(20):
                fails = poll_failures(server.read_log(log_offset))
                mine = fails.get(root)
                if mine:
                    message = mine[-1]
                    break
                others = [(n, fails[n][-1]) for n in names if n in fails]
                if others:
                    n, msg = others[-1]
                    message = (f"ensemble-dependency: composing model '{n}' "
                               f"failed: {msg}")
                    break
                time.sleep(0.1)
            if message is None:
                message = raw
        autocomplete = not server.args.disable_auto_complete
        verdict, tag = classify(message, autocomplete)
        if message.startswith("ensemble-dependency:"):
            verdict, tag = "core-error", "ensemble-dependency"
        m = COMPOSING_IO.search(message)
        if m and autocomplete:
            member = {x["dir"]: x for x in group["members"]}.get(m.group("model"))
            declared = member and member["n_" + m.group("kind") + "s"]
            if member and not declared:
                # the composing model declares no inputs/outputs of that
                # kind: a real backend would auto-complete them
                verdict, tag = "env", "needs-backend-autocomplete"
        result = {"verdict": verdict, "tag": tag, "message": message}
    result["seconds"] = elapsed
    # the configs as Triton holds them after the load (defaults filled in,
    # auto-complete applied), for every model of the group that loaded;
    # fetched before the unload
    result["configs"] = fetch_configs(server, names, timeout)
    # no machine paths in the verdicts
    result["message"] = result["message"].replace(
        server.live + os.sep, "<repository>/").replace(
        server.backends + os.sep, "<backends>/")

    # unload (with the ensemble's dependents); a model that is still busy
    # after two seconds is handed back as "draining": its name stays blocked
    # until it is gone (Triton 2.51 was seen never finishing an unload under
    # concurrent loads; the caller restarts the server then)
    upath = "/v2/repository/models/" + urllib.parse.quote(root, safe="") + "/unload"
    try:
        server.request("POST", upath,
                       {"parameters": {"unload_dependents": True}},
                       timeout=timeout)
        for d in names:
            if d == root:
                continue
            server.request("POST", "/v2/repository/models/"
                           + urllib.parse.quote(d, safe="") + "/unload",
                           {}, timeout=timeout)
        deadline = time.time() + 2.0
        while True:
            busy = busy_names(server.index(), names)
            if not busy or time.time() > deadline:
                break
            time.sleep(0.05)
    except (OSError, LoadTimeout) as exc:
        log(f"triton: {group['group']}: unload failed: {exc}")
        return result, set(names)
    for d in names:
        if d not in busy:
            shutil.rmtree(os.path.join(server.live, d), ignore_errors=True)
    return result, busy


def fetch_configs(server, names, timeout):
    """name -> Triton's `GET /v2/models/<name>/config` JSON (as text) for the
    models of `names` that are loaded; the others answer 400."""
    out = {}
    for d in names:
        path = "/v2/models/" + urllib.parse.quote(d, safe="") + "/config"
        try:
            code, body = server.request("GET", path, timeout=timeout)
        except (OSError, LoadTimeout):
            continue
        if code == 200:
            out[d] = json.loads(body)
    return out


def busy_names(index, names):
    return {n for n in names for e in index.get(n, [])
            if e.get("state") in ("READY", "LOADING", "UNLOADING")}


def cmd_triton(args):
    with open(os.path.join(args.work, "plan.json")) as fh:
        plan = json.load(fh)
    groups = plan["groups"]
    server = Server(args, plan)
    restart_lock = threading.Lock()

    def on_signal(signum, frame):
        server.stopping = True
        with restart_lock:
            server.stop()
        log(f"triton: interrupted (signal {signum}); server stopped")
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    results = {}
    t_start = time.time()
    state = {"generation": 0, "restarts": 0, "done": 0}
    cond = threading.Condition()
    in_flight = set()
    exclusive = [False]
    busy_forever = set()
    draining = {}  # model name -> give-up time
    last_refresh = [0.0]
    pending = list(groups)
    attempts = {}

    def restart(seen_generation, why="server died"):
        with restart_lock:
            if server.stopping:
                raise RuntimeError("interrupted")
            if state["generation"] != seen_generation:
                return
            state["restarts"] += 1
            if state["restarts"] > args.max_restarts:
                raise RuntimeError("tritonserver restarted too often")
            log(f"triton: {why}; restart #{state['restarts']}")
            os.replace(server.log_path,
                       f"{server.log_path}.{state['restarts']}")
            server.stop()
            server.start()
            busy_forever.clear()
            draining.clear()
            state["generation"] += 1

    def take():
        """Next group whose model names are not in flight (an ensemble
        group runs alone when --exclusive-ensembles)."""
        with cond:
            while True:
                if not pending:
                    return None
                if draining and time.time() - last_refresh[0] > 0.3:
                    last_refresh[0] = time.time()
                    try:
                        still = busy_names(server.index(), list(draining))
                    except Exception:
                        still = set(draining)
                    for n in list(draining):
                        if n not in still:
                            del draining[n]
                            shutil.rmtree(os.path.join(server.live, n),
                                          ignore_errors=True)
                    stuck = [n for n, t in draining.items()
                             if time.time() > t]
                    if stuck and not in_flight:
                        # Triton 2.51 sometimes never finishes unloading a
                        # model (seen with sequence batchers under
                        # concurrent loads): a fresh server frees the name
                        try:
                            restart(state["generation"],
                                    f"{', '.join(sorted(stuck))} never "
                                    "finished unloading")
                        except Exception as exc:
                            log(f"triton: restart failed: {exc}")
                            busy_forever.update(stuck)
                            for n in stuck:
                                draining.pop(n, None)
                for i, g in enumerate(pending):
                    ns = {m["dir"] for m in g["members"]}
                    if ns & busy_forever:
                        pending.pop(i)
                        results[g["group"]] = {
                            "verdict": "env", "tag": "skipped",
                            "message": "a model of the same name is stuck "
                                       "in the server", "seconds": 0.0}
                        break
                    solo = g["ensemble"] and args.exclusive_ensembles
                    if exclusive[0] or (solo and in_flight):
                        continue
                    if not ns & in_flight and not ns & draining.keys():
                        pending.pop(i)
                        in_flight.update(ns)
                        exclusive[0] = solo
                        return g
                else:
                    cond.wait(0.5)

    def worker():
        while True:
            g = take()
            if g is None:
                return
            ns = {m["dir"] for m in g["members"]}
            gen = state["generation"]
            busy = set()
            try:
                res, busy = run_group(server, g, args.timeout)
            except ServerDied as exc:
                attempts[g["group"]] = attempts.get(g["group"], 0) + 1
                try:
                    restart(gen)
                except Exception as rexc:  # give up on the whole run
                    res = {"verdict": "env", "tag": "harness-error",
                           "message": f"restart failed: {rexc}",
                           "seconds": 0.0}
                    with cond:
                        pending.clear()
                else:
                    if attempts[g["group"]] < 2:
                        with cond:
                            in_flight.difference_update(ns)
                            exclusive[0] = False
                            pending.insert(0, g)
                            cond.notify_all()
                        continue
                    res = {"verdict": "env", "tag": "server-crash",
                           "message": f"{exc} while loading this group "
                                      "(twice)", "seconds": 0.0}
            except Exception as exc:  # keep going; record the failure
                res = {"verdict": "env", "tag": "harness-error",
                       "message": f"{type(exc).__name__}: {exc}",
                       "seconds": 0.0}
            with cond:
                results[g["group"]] = res
                for n in busy:
                    draining[n] = time.time() + args.drain_timeout
                in_flight.difference_update(ns)
                exclusive[0] = False
                state["done"] += 1
                if state["done"] % 100 == 0:
                    log(f"triton: {state['done']}/{len(groups)} groups "
                        f"({time.time() - t_start:.0f}s)")
                cond.notify_all()

    try:
        server.start()
        log(f"triton: server live on 127.0.0.1:{server.port}; "
            f"loading {len(groups)} groups with {args.jobs} workers")
        threads = [threading.Thread(target=worker, daemon=True)
                   for _ in range(args.jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        server.stop()

    write_configs(args.work, groups, results)
    with open(os.path.join(args.work, "triton-run.json"), "w") as fh:
        json.dump({"disable_auto_complete": bool(args.disable_auto_complete),
                   "real_python": bool(args.real_python)}, fh)
    out = os.path.join(args.work, "triton-verdicts.tsv")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("\t".join(VERDICT_COLUMNS) + "\n")
        for g in groups:
            r = results.get(g["group"], {"verdict": "env", "tag": "not-run",
                                         "message": ""})
            fh.write("\t".join([
                g["root_file"], g["repo"], g["group"], g["root"],
                "ensemble" if g["ensemble"] else "model",
                r["verdict"], r["tag"] or "-", one_line(r["message"]),
            ]) + "\n")
    counts = {}
    for g in groups:
        r = results.get(g["group"], {"verdict": "env", "tag": "not-run"})
        k = r["verdict"] + (f"/{r['tag']}" if r["tag"] else "")
        counts[k] = counts.get(k, 0) + 1
    log(f"triton: {len(results)} verdicts in {time.time() - t_start:.0f}s "
        f"({state['restarts']} server restarts) -> {out}")
    for k in sorted(counts):
        log(f"  {k:40s} {counts[k]}")


def write_configs(work, groups, results):
    """WORK/configs/<group>.json: {model directory: Triton's loaded config}
    for every group where at least one model loaded."""
    cdir = os.path.join(work, "configs")
    if os.path.exists(cdir):
        shutil.rmtree(cdir)
    os.makedirs(cdir)
    n_models = 0
    for g in groups:
        configs = results.get(g["group"], {}).get("configs")
        if not configs:
            continue
        n_models += len(configs)
        with open(os.path.join(cdir, g["group"] + ".json"), "w",
                  encoding="utf-8") as fh:
            json.dump(configs, fh, indent=1, sort_keys=True)
    log(f"triton: {n_models} loaded configs -> {cdir}")


def one_line(s):
    return s.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")


def un_line(s):
    out, i = [], 0
    while i < len(s):
        if s[i] == "\\" and i + 1 < len(s):
            out.append({"n": "\n", "t": "\t", "\\": "\\"}.get(s[i + 1], s[i + 1]))
            i += 2
        else:
            out.append(s[i])
            i += 1
    return "".join(out)


# --------------------------------------------------------------------------
# compare
# --------------------------------------------------------------------------

CODE_PREFIX = re.compile(
    r"^(Invalid argument|Internal|Not found|Unavailable|Unsupported|"
    r"Already exists|Unknown): ")


def strip_code(msg):
    return CODE_PREFIX.sub("", msg)


def triton_run_settings(work):
    """The server settings the triton step recorded ({} for older runs)."""
    path = os.path.join(work, "triton-run.json")
    if not os.path.exists(path):
        return {}
    with open(path) as fh:
        return json.load(fh)


def run_tritonctl(binary, gdir, disable_auto_complete=False):
    flags = ["--disable-auto-complete-config"] if disable_auto_complete else []
    proc = subprocess.run([binary, "validate", "--format", "json"] + flags
                          + [gdir],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, timeout=60)
    out = proc.stdout.decode("utf-8", "replace")
    try:
        doc = json.loads(out)
    except ValueError:
        return None, (f"exit {proc.returncode}, no JSON: "
                      + (proc.stderr.decode("utf-8", "replace") or out)[:300])
    if proc.returncode not in (0, 1):
        return None, (f"exit {proc.returncode}: "
                      + proc.stderr.decode("utf-8", "replace")[:300])
    return doc, None


def diagnostics_for(doc, gdir, model_dir):
    """Diagnostics of <gdir>/<model_dir>/config.pbtxt in tritonctl's JSON."""
    want = os.path.realpath(os.path.join(gdir, model_dir, "config.pbtxt"))
    want_dir = os.path.realpath(os.path.join(gdir, model_dir))
    found = None
    for f in doc.get("files", []):
        p = f.get("path", "")
        cands = [p, os.path.join(gdir, p), os.path.join(os.getcwd(), p)]
        real = {os.path.realpath(c) for c in cands}
        if want in real or want_dir in real:
            found = (found or []) + list(f.get("diagnostics", []))
    return found


def cmd_compare(args):
    with open(os.path.join(args.work, "plan.json")) as fh:
        plan = json.load(fh)
    verdicts = {}
    with open(os.path.join(args.work, "triton-verdicts.tsv"),
              encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            row = dict(zip(header, line.rstrip("\n").split("\t")))
            row["message"] = un_line(row.get("message", ""))
            verdicts[row["group"]] = row

    sample = os.path.join(args.work, "sample")
    groups = [g for g in plan["groups"] if g["group"] in verdicts]
    # tritonctl assumes the server the verdicts came from
    no_ac = bool(triton_run_settings(args.work).get("disable_auto_complete"))

    def one(g):
        gdir = os.path.join(sample, g["group"])
        doc, err = run_tritonctl(args.tritonctl, gdir, no_ac)
        if doc is None:
            return g, None, None, err
        members = {m["dir"]: diagnostics_for(doc, gdir, m["dir"]) or []
                   for m in g["members"] if m["dir"] != g["root"]}
        root = diagnostics_for(doc, gdir, g["root"])
        if root is None:
            return g, None, None, ("the JSON output has no entry for "
                                   f"{g['root']}/config.pbtxt")
        return g, root, members, None

    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        outs = list(ex.map(one, groups))

    rows = []
    for g, diags, member_diags, err in outs:
        v = verdicts[g["group"]]
        row = {"group": g["group"], "file": g["root_file"], "model": g["root"],
               "triton": v["verdict"], "tag": v["tag"],
               "triton_message": v["message"], "extra": g.get("extra", False)}
        if diags is None:
            row["outcome"] = "tritonctl-failed"
            row["ours"] = err
            rows.append(row)
            continue
        errs = [d for d in diags if d.get("severity") == "error"]
        sem = [d for d in errs if d.get("category") == "semantic"]
        parse = [d for d in errs if d.get("category") in ("syntax", "schema")]
        other = [d for d in errs if d not in sem and d not in parse]
        member_errs = [(m, d) for m, ds in sorted(member_diags.items())
                       for d in ds if d.get("severity") == "error"]
        row["ours_semantic"] = sem
        row["ours_other"] = other
        row["ours_parse"] = parse
        row["ours_members"] = member_errs
        tm = strip_code(v["message"])
        # Triton's paths were written as <repository>/ in the verdicts
        gdir = os.path.join(sample, g["group"]) + os.sep

        def ours(text):
            # (the verdicts drop trailing blanks, as after "... got []. ")
            return text.replace(gdir, "<repository>/").strip() \
                if text else text
        row["message_match"] = any(
            tm and (ours(d.get("triton_message")) == tm
                    or ours(d.get("message")) == tm
                    or (ours(d.get("triton_message")) or "\0") in tm)
            for d in sem + other + [d for _, d in member_errs])
        if parse:
            row["outcome"] = "parser-false-alarm"
        elif v["verdict"] == "accepted":
            row["outcome"] = "false-alarm" if sem else "agree-accept"
        elif v["verdict"] == "core-error":
            # a failed composing model fails the ensemble: an error that
            # tritonctl reports on that composing model counts too
            named = blamed_models(v["message"]) \
                if v["tag"] in ("ensemble-dependency", "ensemble-incomplete") \
                else set()
            group_wide = any(m in named for m, _ in member_errs)
            row["outcome"] = "agree-error" if (sem or other or group_wide) \
                else "miss"
        else:
            row["outcome"] = "unverified"
        rows.append(row)

    write_comparison(args, rows)
    status = print_report(rows, no_ac)
    if os.path.isdir(os.path.join(args.work, "configs")):
        print()
        status = max(status, compare_configs(args, plan))
    else:
        log("compare: no WORK/configs (Triton run by an older oracle): "
            "loaded configs not compared")
    return status


def blamed_models(message):
    """Composing models that an ensemble's load error blames."""
    names = set(re.findall(r"depends on '([^']*)'", message))
    names.update(re.findall(r"composing model '([^']*)'", message))
    m = re.search(r"not available or ambiguous: (.*)$", message)
    if m:
        names.update(n.strip() for n in m.group(1).split(","))
    return names


def fmt_diag(d):
    where = f"{d.get('line', '?')}:{d.get('column', '?')}"
    return (f"{d.get('code', '?')} [{d.get('category', '?')}] {where} "
            f"{d.get('message', '')}")


def write_comparison(args, rows):
    out = os.path.join(args.work, "comparison.tsv")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("outcome\tfile\tmodel\ttriton\ttag\ttriton_message\tours\n")
        for r in sorted(rows, key=lambda r: (r["outcome"], r["file"])):
            ours = r.get("ours")
            if ours is None:
                ds = [fmt_diag(d) for d in r.get("ours_parse", [])
                      + r.get("ours_semantic", []) + r.get("ours_other", [])]
                ds += [f"{m}: {fmt_diag(d)}"
                       for m, d in r.get("ours_members", [])]
                ours = " | ".join(ds)
            fh.write("\t".join([
                r["outcome"], r["file"], r["model"], r["triton"], r["tag"],
                one_line(r["triton_message"]), one_line(ours)]) + "\n")
    log(f"compare: details in {out}")


def print_report(rows, no_ac=False):
    def count(kind, tag=None):
        return sum(1 for r in rows if r["outcome"] == kind
                   and (tag is None or r["tag"] == tag))

    def by_tag(kind):
        tags = {}
        for r in rows:
            if r["outcome"] == kind:
                t = r["tag"] if r["tag"] not in ("", "-") else "config"
                tags[t] = tags.get(t, 0) + 1
        return ", ".join(f"{k} {v}" for k, v in sorted(tags.items()))

    agree = count("agree-accept") + count("agree-error")
    disagree = count("false-alarm") + count("miss") + \
        count("parser-false-alarm")
    matched = sum(1 for r in rows
                  if r["outcome"] == "agree-error" and r.get("message_match"))
    print("Triton 2.51 (real server) vs tritonctl validate"
          + (" --disable-auto-complete-config" if no_ac else ""))
    print(f"  models compared   {len(rows)}")
    print(f"  agree             {agree}")
    print(f"    both accept     {count('agree-accept')}")
    print(f"    both error      {count('agree-error')}  ({by_tag('agree-error')})")
    print(f"                    Triton's exact message among ours: {matched}")
    print(f"  disagree          {disagree}")
    print(f"    false alarms    {count('false-alarm')}"
          "  (we report a semantic error, Triton accepts)")
    print(f"    misses          {count('miss')}"
          "  (Triton reports a config error, we do not)")
    print(f"    parse errors    {count('parser-false-alarm')}"
          "  (syntax/schema error on a file protobuf accepts)")
    print(f"  unverified        {count('unverified')}"
          f"  (Triton stopped for an environment reason: {by_tag('unverified')})")
    print(f"  tritonctl failed  {count('tritonctl-failed')}")
    extra = [r for r in rows if r.get("extra")]
    if extra:
        errs = [r for r in extra if r["outcome"] == "agree-error"]
        exact = [r for r in errs if r.get("message_match")]
        agree = sum(1 for r in extra
                    if r["outcome"] in ("agree-accept", "agree-error"))
        print(f"  of which hand-written models (testdata/oracle/models): "
              f"{len(extra)}, agree {agree}, both error {len(errs)} "
              f"(Triton's exact message among ours: {len(exact)})")

    def section(title, select, show):
        sel = sorted((r for r in rows if select(r)),
                     key=lambda r: (r["tag"], r["file"]))
        if not sel:
            return
        print()
        print(f"{title} ({len(sel)}):")
        for r in sel:
            print(f"- {r['file']}  [model {r['model']}]")
            show(r)

    def show_ours(r, key="ours_semantic"):
        for d in r.get(key, []):
            print(f"    ours:   {fmt_diag(d)}")

    def show_fa(r):
        show_ours(r)
        print(f"    triton: accepted ({r['tag']})")

    def show_miss(r):
        tag = "" if r["tag"] in ("", "-") else f" ({r['tag']})"
        print(f"    triton{tag}: {r['triton_message']}")
        for d in r.get("ours_other", []) + r.get("ours_semantic", []):
            print(f"    ours:   {fmt_diag(d)}")

    def show_unverified(r):
        print(f"    triton ({r['tag']}): {r['triton_message'][:200]}")
        show_ours(r)

    def show_inexact(r):
        print(f"    triton: {r['triton_message']}")
        for d in r.get("ours_other", []) + r.get("ours_semantic", []):
            print(f"    ours:   {fmt_diag(d)}")

    section("FALSE ALARMS", lambda r: r["outcome"] == "false-alarm", show_fa)
    section("PARSE ERRORS ON VALID FILES",
            lambda r: r["outcome"] == "parser-false-alarm",
            lambda r: show_ours(r, "ours_parse"))
    section("MISSES", lambda r: r["outcome"] == "miss", show_miss)
    section("TRITONCTL FAILED", lambda r: r["outcome"] == "tritonctl-failed",
            lambda r: print(f"    {r.get('ours')}"))
    section("UNVERIFIED, WITH SEMANTIC ERRORS FROM US (check by hand)",
            lambda r: r["outcome"] == "unverified" and r.get("ours_semantic"),
            show_unverified)
    # the hand-written models are there for their messages: Triton's must
    # be among ours
    section("HAND-WRITTEN MODELS WITHOUT TRITON'S EXACT MESSAGE",
            lambda r: r.get("extra") and r["outcome"] == "agree-error"
            and not r.get("message_match"), show_inexact)
    inexact = sum(1 for r in rows if r.get("extra")
                  and r["outcome"] == "agree-error"
                  and not r.get("message_match"))
    extra_miss = sum(1 for r in rows if r.get("extra")
                     and r["outcome"] not in ("agree-accept", "agree-error"))
    fails = count("false-alarm") + count("parser-false-alarm") + \
        count("tritonctl-failed") + inexact + extra_miss
    print()
    print("result: " + ("FAIL" if fails else "ok") +
          f" ({count('false-alarm')} false alarms)")
    return 1 if fails else 0


# --------------------------------------------------------------------------
# compare: loaded configs (`GET /v2/models/<m>/config` against
# `tritonctl validate --print-config`)
# --------------------------------------------------------------------------

EXPLAINED = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                         "config-diff-explained.tsv")


def read_explained(path=EXPLAINED):
    """field path -> [(values regex or None, reason)]. Lines:
    `path<TAB>reason[<TAB>values]`, `#` comments; `values`, when given, is a
    regular expression that `<Triton's value> | <ours>` must match (values as
    in config-diff.tsv) for the line to explain the difference."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            if len(parts) not in (2, 3) or not parts[1].strip():
                raise SystemExit(
                    f"{path}:{n}: expected 'path<TAB>reason[<TAB>values]'")
            try:
                when = re.compile(parts[2]) if len(parts) == 3 else None
            except re.error as exc:
                raise SystemExit(f"{path}:{n}: bad regular expression: {exc}")
            out.setdefault(parts[0].strip(), []).append(
                (when, parts[1].strip()))
    return out


def explanation(explained, path, triton_value, our_value):
    """The reason that explains this difference, or ''."""
    values = (f"{short_value(triton_value, 1000)} | "
              f"{short_value(our_value, 1000)}")
    for when, reason in explained.get(generic_path(path), []):
        if when is None or when.fullmatch(values):
            return reason
    return ""


def generic_path(path):
    """`input[2].dims` -> `input[].dims`, `parameters{k}.string_value` ->
    `parameters{}.string_value`: the key the differences are counted by."""
    return re.sub(r"\{[^}]*\}", "{}", re.sub(r"\[\d+\]", "[]", path))


def short_value(v, limit=80):
    s = json.dumps(v, sort_keys=True) if not isinstance(v, str) else v
    return s if len(s) <= limit else s[:limit - 3] + "..."


def proto_diff(a, b, path=""):
    """Differences between two messages of one type: a list of
    (field path, value in a, value in b). Repeated messages are compared
    element by element, maps key by key, repeated scalars as a whole; a
    singular message field set on one side only is `<unset>` on the other
    (Triton prints every set message, even an empty one)."""
    from google.protobuf import json_format
    from google.protobuf.descriptor import FieldDescriptor as FD

    def to_plain(msg):
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)

    out = []
    for f in a.DESCRIPTOR.fields:
        p = f"{path}.{f.name}" if path else f.name
        va, vb = getattr(a, f.name), getattr(b, f.name)
        is_msg = f.type == FD.TYPE_MESSAGE
        if f.message_type is not None and f.message_type.GetOptions().map_entry:
            vf = f.message_type.fields_by_name["value"]
            for k in sorted(set(va) | set(vb), key=str):
                kp = f"{p}{{{k}}}"
                if k not in va or k not in vb:
                    def one(m):
                        if k not in m:
                            return "<absent>"
                        v = m[k]
                        return to_plain(v) if vf.type == FD.TYPE_MESSAGE else v
                    out.append((kp, one(va), one(vb)))
                elif vf.type == FD.TYPE_MESSAGE:
                    out.extend(proto_diff(va[k], vb[k], kp))
                elif va[k] != vb[k]:
                    out.append((kp, va[k], vb[k]))
        elif is_repeated(f):
            if is_msg:
                for i in range(max(len(va), len(vb))):
                    ip = f"{p}[{i}]"
                    if i >= len(va) or i >= len(vb):
                        out.append((ip,
                                    to_plain(va[i]) if i < len(va) else "<absent>",
                                    to_plain(vb[i]) if i < len(vb) else "<absent>"))
                    else:
                        out.extend(proto_diff(va[i], vb[i], ip))
            elif list(va) != list(vb):
                out.append((p, enum_names(f, va), enum_names(f, vb)))
        elif is_msg:
            ha, hb = a.HasField(f.name), b.HasField(f.name)
            if ha and hb:
                out.extend(proto_diff(va, vb, p))
            elif ha != hb:
                out.append((p, to_plain(va) if ha else "<unset>",
                            to_plain(vb) if hb else "<unset>"))
        elif va != vb:
            out.append((p, enum_names(f, va), enum_names(f, vb)))
    return out


def is_repeated(field):
    rep = getattr(field, "is_repeated", None)  # protobuf >= 5 (label is gone)
    return rep if rep is not None else field.label == field.LABEL_REPEATED


def enum_names(field, value):
    if field.enum_type is None:
        return list(value) if not isinstance(value, (str, bytes, int, float,
                                                     bool)) else value
    def name(v):
        ev = field.enum_type.values_by_number.get(v)
        return ev.name if ev else v
    if isinstance(value, int):
        return name(value)
    return [name(v) for v in value]


def decode_json_stream(text):
    """Every JSON value in `text`: one pretty-printed object, or JSON Lines."""
    dec = json.JSONDecoder()
    out, i = [], 0
    while True:
        while i < len(text) and text[i].isspace():
            i += 1
        if i >= len(text):
            return out
        obj, i = dec.raw_decode(text, i)
        out.append(obj)


def batches_of(items, size):
    """Chunks of at most `size` items whose model names are distinct, so that
    a model tritonctl prints nothing for cannot shift the others."""
    batch, names = [], set()
    for it in items:
        if len(batch) >= size or it[1] in names:
            yield batch
            batch, names = [], set()
        batch.append(it)
        names.add(it[1])
    if batch:
        yield batch


def print_configs(binary, dirs, disable_auto_complete):
    """Run `tritonctl validate --print-config DIR... --format json`; returns
    (list of JSON objects printed, exit code, stderr)."""
    cmd = [binary, "validate", "--format", "json"]
    if disable_auto_complete:
        cmd.append("--disable-auto-complete-config")
    # the directories right after the flag: works whether --print-config
    # takes them as its values or is a switch before the positional ones
    proc = subprocess.run(cmd + ["--print-config"] + dirs,
                          stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                          timeout=120)
    text = proc.stdout.decode("utf-8", "replace")
    try:
        objs = decode_json_stream(text)
    except ValueError as exc:
        objs = None
        err = f"not JSON ({exc}): {text[:200]}"
        return objs, proc.returncode, err
    return objs, proc.returncode, proc.stderr.decode("utf-8", "replace")


def compare_configs(args, plan):
    """Triton's loaded config of every model it loaded against tritonctl's
    printed loaded config, field by field. Writes WORK/config-diff.tsv;
    1 when a difference is not in the explained list or tritonctl prints no
    config for a model Triton loaded, else 0."""
    from google.protobuf import json_format

    cls = model_config_class(os.path.join(plan["corpus"], "model_config.desc"))
    explained = read_explained(args.explained or EXPLAINED)
    no_ac = bool(triton_run_settings(args.work).get("disable_auto_complete"))
    cdir = os.path.join(args.work, "configs")
    sample = os.path.join(args.work, "sample")
    t0 = time.time()

    items = []  # (group, model dir, Triton's JSON)
    for g in plan["groups"]:
        p = os.path.join(cdir, g["group"] + ".json")
        if not os.path.exists(p):
            continue
        with open(p, encoding="utf-8") as fh:
            for model, cfg in sorted(json.load(fh).items()):
                items.append((g["group"], model, cfg))

    def run_batch(batch):
        dirs = [os.path.join(sample, g, m) for g, m, _ in batch]
        objs, code, err = print_configs(args.tritonctl, dirs, no_ac)
        res = {}
        if objs is None:
            for g, m, _ in batch:
                res[(g, m)] = (None, f"exit {code}: {err.strip()[:300]}")
            return res
        # match the printed configs to the directories in argument order,
        # by name (a directory tritonctl refuses prints nothing)
        j = 0
        for g, m, _ in batch:
            if j < len(objs) and isinstance(objs[j], dict) \
                    and objs[j].get("name") == m:
                res[(g, m)] = (objs[j], None)
                j += 1
            else:
                # the diagnostics about this model, when they can be told
                # apart from the others of the batch
                mine = [ln for ln in err.splitlines()
                        if f"/{g}/{m}/" in ln or f"'{m}'" in ln]
                res[(g, m)] = (None, f"no config printed (exit {code}): "
                               + one_line("\n".join(mine) or err.strip())[:300])
        if j < len(objs):
            for g, m, _ in batch:
                if res[(g, m)][0] is None:
                    res[(g, m)] = (None, "printed configs do not match the "
                                   "directories given")
        return res

    printed = {}
    with ThreadPoolExecutor(max_workers=args.jobs) as ex:
        for res in ex.map(run_batch, list(batches_of(items, 64))):
            printed.update(res)

    rows = []       # (group, model, path, triton, ours, reason)
    refused = []    # (group, model, why)
    identical = differing = 0
    for g, m, tcfg in items:
        ours, why = printed[(g, m)]
        if ours is None:
            refused.append((g, m, why))
            continue
        a, b = cls(), cls()
        try:
            json_format.ParseDict(tcfg, a, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            refused.append((g, m, f"Triton's JSON does not parse: {exc}"))
            continue
        try:
            json_format.ParseDict(ours, b, ignore_unknown_fields=True)
        except json_format.ParseError as exc:
            refused.append((g, m, f"our JSON does not parse: {exc}"))
            continue
        diffs = proto_diff(a, b)
        if not diffs:
            identical += 1
            continue
        differing += 1
        for path, tv, ov in diffs:
            rows.append((g, m, path, tv, ov,
                         explanation(explained, path, tv, ov)))

    out = os.path.join(args.work, "config-diff.tsv")
    with open(out, "w", encoding="utf-8") as fh:
        fh.write("group\tmodel\tpath\ttriton\ttritonctl\texplained\n")
        for g, m, path, tv, ov, reason in rows:
            fh.write("\t".join([g, m, path, one_line(short_value(tv, 1000)),
                                one_line(short_value(ov, 1000)),
                                reason or "-"]) + "\n")
        for g, m, why in refused:
            fh.write("\t".join([g, m, "<no config>", "loaded",
                                one_line(why), "-"]) + "\n")

    table = {}
    for g, m, path, tv, ov, reason in rows:
        key = generic_path(path)
        ent = table.setdefault(key, {"count": 0, "models": set(),
                                     "example": (g, m, path, tv, ov),
                                     "reason": reason})
        ent["count"] += 1
        ent["models"].add((g, m))
    unexplained = sorted(k for k, e in table.items() if not e["reason"])
    with_unexplained = {(g, m) for g, m, _, _, _, r in rows if not r}

    print("Triton 2.51 loaded configs (GET /v2/models/<m>/config) vs "
          "tritonctl validate --print-config"
          + (" --disable-auto-complete-config" if no_ac else ""))
    print(f"  models compared   {len(items)}  (every model Triton loaded)")
    print(f"  identical         {identical}")
    print(f"  differing         {differing}  "
          f"({len(with_unexplained)} with an unexplained difference)")
    print(f"  no config printed {len(refused)}  "
          "(tritonctl refuses a model Triton loads)")
    print(f"  time              {time.time() - t0:.1f}s")
    if table:
        print()
        print(f"  {'field path':44s} {'models':>6s}  example (group/model: "
              "Triton | tritonctl)")
        for key in sorted(table, key=lambda k: (-len(table[k]["models"]), k)):
            e = table[key]
            g, m, path, tv, ov = e["example"]
            mark = "  " if e["reason"] else "! "
            print(f"{mark}{key:44s} {len(e['models']):6d}  {g}/{m} {path}: "
                  f"{short_value(tv, 50)} | {short_value(ov, 50)}")
            if e["reason"]:
                print(f"  {'':44s} {'':6s}  explained: {e['reason']}")
    if refused:
        print()
        print(f"NO CONFIG PRINTED ({len(refused)}):")
        for g, m, why in refused[:30]:
            print(f"- {g}/{m}: {why[:240]}")
        if len(refused) > 30:
            print(f"  ... {len(refused) - 30} more in {out}")
    fail = bool(unexplained) or bool(refused)
    print()
    print("loaded configs: " + ("FAIL" if fail else "ok") +
          f" ({len(unexplained)} unexplained field paths, {len(refused)} "
          f"models without a printed config); details in {out}")
    return 1 if fail else 0


def cmd_export(args):
    """Triton's verdicts keyed by corpus file, without harness details: the
    file to keep next to the tests (see testdata/oracle/README.md)."""
    with open(os.path.join(args.work, "plan.json")) as fh:
        plan = json.load(fh)
    groups = {g["group"]: g for g in plan["groups"]}
    rows = []
    with open(os.path.join(args.work, "triton-verdicts.tsv"),
              encoding="utf-8") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        for line in fh:
            rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))

    def short(f):
        return f[len("configs/"):] if f.startswith("configs/") else f

    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write("# Triton 2.51 verdicts on the shared config corpus, from "
                 "scripts/triton-oracle (see README.md)\n")
        fh.write("file\tmodel_dir\tverdict\ttag\tcomposing\tmessage\n")
        for r in sorted(rows, key=lambda r: r["file"]):
            g = groups[r["group"]]
            if g.get("extra"):
                continue  # hand-written models are not corpus files
            comp = ",".join(f"{m['dir']}={short(m['file'])}"
                            for m in g["members"] if m["dir"] != g["root"])
            fh.write("\t".join([short(r["file"]), r["model"], r["verdict"],
                                r["tag"], comp or "-", r["message"]]) + "\n")
    log(f"export: {sum(1 for r in rows if not groups[r['group']].get('extra'))}"
        f" verdicts -> {args.out}")


# --------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawTextHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)

    p = sub.add_parser("prepare")
    p.add_argument("--corpus", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--sample", type=int, default=0)
    p.add_argument("--no-ensembles", action="store_true")
    p.add_argument("--models", action="append", default=[],
                   help="also load every model directory under this "
                        "directory, as it is (repeatable)")

    p = sub.add_parser("triton")
    p.add_argument("--work", required=True)
    p.add_argument("--triton", required=True,
                   help="the unpacked pytriton/tritonserver directory")
    p.add_argument("--jobs", type=int, default=4)
    p.add_argument("--timeout", type=float, default=20)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--disable-auto-complete", action="store_true",
                   help="run tritonserver with --disable-auto-complete-config")
    p.add_argument("--max-restarts", type=int, default=5)
    p.add_argument("--drain-timeout", type=float, default=30,
                   help="how long a model may take to unload")
    p.add_argument("--exclusive-ensembles", action="store_true",
                   help="load ensemble groups one at a time")
    p.add_argument("--no-stand-ins", action="store_true",
                   help="no stand-in backends: absent backends fail with "
                        "'unable to find backend library'")
    p.add_argument("--python-stand-ins", action="store_true",
                   help="python-based stand-ins instead of the no-op library")
    p.add_argument("--real-python", action="store_true",
                   help="load backend: python models with the real python "
                        "backend (and a placeholder model.py)")

    p = sub.add_parser("compare")
    p.add_argument("--work", required=True)
    p.add_argument("--tritonctl", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--explained", default="",
                   help="explained loaded-config differences (default "
                        "config-diff-explained.tsv next to this script)")

    p = sub.add_parser("config-diff",
                       help="only the loaded-config comparison of compare")
    p.add_argument("--work", required=True)
    p.add_argument("--tritonctl", required=True)
    p.add_argument("--jobs", type=int, default=2)
    p.add_argument("--explained", default="")

    p = sub.add_parser("export")
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True)

    args = ap.parse_args()
    if args.cmd == "prepare":
        cmd_prepare(args)
        return 0
    if args.cmd == "triton":
        cmd_triton(args)
        return 0
    if args.cmd == "export":
        cmd_export(args)
        return 0
    if args.cmd == "config-diff":
        with open(os.path.join(args.work, "plan.json")) as fh:
            return compare_configs(args, json.load(fh))
    return cmd_compare(args)


if __name__ == "__main__":
    sys.exit(main())
