"""Shared parts of scripts/perf-bench/generative and stream-memory: the
stubllm mock OpenAI-compatible server (from PyPI) streaming with fixed
delays, the word-level tokenizer AIPerf needs offline, a probe that times
one stream, and the CPU time of a tool's whole process tree.

stubllm is the mock because it streams with steady, configured delays: it
waits `latency_ms` before the first chunk, then `stream_chunk_delay_ms`
between chunks, and it splits the content into chunks at whitespace or
every 4 characters. The content here is words `w0 w1 ...` of at most 3
letters followed by a space, so one chunk is one word, and one word is one
token of the tokenizer below: AIPerf's token count (its tokenizer on the
text) and tritonctl's (one response per chunk; the mock sends no `usage`)
are the same number. (mockllm, the mock named in
docs/spec/reference-harness.md, sends one character per chunk with a
random delay of 50-150 % of its base gap, and no separate first-token
delay.)
"""

import ctypes
import json
import os
import resource
import signal
import socket
import subprocess
import sys
import time

PR_SET_CHILD_SUBREAPER = 36


def log(msg=""):
    print(msg, flush=True)


def words(n):
    """The mock's answer: n one-token words."""
    return "".join(f"w{i % 100} " for i in range(n))


def build_tokenizer(path):
    """A word-level tokenizer saved as a Hugging Face tokenizer directory
    (AIPerf's `--tokenizer DIR`): every `wN` is one token, anything else
    [UNK]; built offline from the `tokenizers` and `transformers` packages."""
    if os.path.exists(os.path.join(path, "tokenizer.json")):
        return
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0}
    for i in range(100):
        vocab[f"w{i}"] = len(vocab)
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]").save_pretrained(path)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Mock:
    """stubllm serving one fixture on 127.0.0.1 (every chat request gets the
    same answer): `tokens` words, the first after `first_ms`, then one every
    `gap_ms`."""

    def __init__(self, work, tokens, first_ms, gap_ms, cpus=None):
        self.tokens, self.first_ms, self.gap_ms = tokens, first_ms, gap_ms
        fixture = os.path.join(work, f"stream-{tokens}x{gap_ms}ms.json")
        with open(fixture, "w") as f:
            json.dump({"fixtures": [{"name": "stream", "response": {
                "content": words(tokens), "latency_ms": first_ms,
                "stream_chunk_delay_ms": gap_ms}}]}, f)
        self.port = free_port()
        stubllm = os.path.join(os.path.dirname(sys.executable), "stubllm")
        cmd = [stubllm, "serve", "--host", "127.0.0.1", "--port", str(self.port),
               "--fixture-file", fixture, "--log-level", "warning"]
        if cpus:
            cmd = ["taskset", "-c", cpus] + cmd
        self.log_path = os.path.join(work, "stubllm.log")
        self.proc = subprocess.Popen(cmd, stdout=open(self.log_path, "w"),
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.url = f"127.0.0.1:{self.port}"
        deadline = time.monotonic() + 30
        while True:
            if self.proc.poll() is not None:
                raise SystemExit(f"the mock server exited at start-up: {self.tail()}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the mock server did not listen in 30 s: {self.tail()}")
                time.sleep(0.2)

    def tail(self):
        try:
            with open(self.log_path) as f:
                return f.read()[-1500:]
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def probe(self):
        """One streamed request with a plain socket: (ms to the first chunk,
        [ms between chunks], chunks). The mock's own pace, without load."""
        body = ('{"model": "mock", "stream": true, '
                '"messages": [{"role": "user", "content": "hello"}]}').encode()
        req = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: {self.url}\r\n"
               "Content-Type: application/json\r\nConnection: close\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        arrivals = []
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            t0 = time.perf_counter()
            s.sendall(req)
            while True:
                data = s.recv(65536)
                if not data:
                    break
                now = time.perf_counter()
                arrivals += [now] * data.count(b'"content": "w')
        if not arrivals:
            raise SystemExit("the mock server streamed no chunk with content")
        gaps = [(b - a) * 1e3 for a, b in zip(arrivals, arrivals[1:])]
        return (arrivals[0] - t0) * 1e3, gaps, len(arrivals)


def become_subreaper():
    """Orphaned grandchildren (a tool's worker processes whose parent exits
    first) are re-parented to this process instead of init, so that their
    CPU time can still be collected (`reap_orphans`)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _children(exclude):
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in exclude:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name may hold spaces and parentheses: split after it
        if int(stat.rsplit(")", 1)[1].split()[1]) == me:
            out.append(int(d))
    return out


def reap_orphans(exclude, wait_s=10.0):
    """Waits for (then kills) the children left behind by a tool, so that
    their CPU time lands in RUSAGE_CHILDREN."""
    deadline = time.monotonic() + wait_s
    while True:
        kids = _children(exclude)
        if not kids:
            return
        for pid in kids:
            try:
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if time.monotonic() > deadline:
            for pid in _children(exclude):
                try:
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                except (ProcessLookupError, ChildProcessError):
                    pass
            return
        time.sleep(0.05)


def run_measured(cmd, exclude, env=None, timeout=None):
    """Runs cmd to its end and returns (exit code, stdout, stderr, CPU
    seconds (user+sys) of its whole process tree, wall seconds)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=timeout)
    wall = time.monotonic() - t0
    reap_orphans(exclude)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return (p.returncode, p.stdout.decode(errors="replace"),
            p.stderr.decode(errors="replace"), cpu, wall)
