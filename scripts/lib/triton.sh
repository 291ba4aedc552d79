# shellcheck shell=bash
# Shared helper for scripts that run a real Triton Inference Server 2.51 (the
# CPU build inside the nvidia-pytriton wheel, see
# docs/spec/reference-harness.md). Source it from a bash script:
#
#   . "$root/scripts/lib/triton.sh"
#   TRITON_LOG_PREFIX=my-script      # prefix of the messages (default triton)
#   triton_venv                      # python venv in the cache
#   triton_venv_require numpy 'numpy<2'   # module to import, pip requirement
#   triton_setup                     # download + unpack tritonserver
#   triton_env                       # LD_LIBRARY_PATH and PATH for the server
#   triton_install_trap              # stop every server on exit / signal
#   triton_start REPO [tritonserver args...]
#   ... use $TRITON_URL ...
#   triton_stop
#
# Settings (environment or shell variables, read when a function runs):
#   TRITON_CACHE           wheel, unpacked server, venv; the default is the
#                          one scripts/triton-oracle uses, so one download
#                          serves both (${TMPDIR:-/tmp}/oracle/cache)
#   TRITON_PYTRITON_VERSION  nvidia-pytriton wheel version (default 0.7.0)
#   TRITON_MODEL_CONTROL   explicit (default) | poll | none
#   TRITON_POLL_SECS       repository poll interval for `poll` (default 1)
#   TRITON_LOG_FILE        server log (default ${TMPDIR:-/tmp}/tritonserver-PID.log)
#   TRITON_PID_FILE        where triton_start writes the server's pid (default
#                          none); triton_kill_pidfile ends a server from it
#   TRITON_START_TIMEOUT   seconds to wait for readiness (default 60)
#   TRITON_STRICT_READINESS  true (default) | false
#   TRITON_GRPC            1 to also open gRPC (default 0: HTTP only)
#   TRITON_METRICS         1 to also open metrics (default 0)
#
# Set by the functions:
#   TRITON_PY              the venv's python (triton_venv)
#   TRITON_HOME            .../pytriton/tritonserver (bin/, backends/)
#   TRITON_SERVER_BIN      the tritonserver binary (triton_setup)
#   TRITON_PID             the running server (also its process group)
#   TRITON_HTTP_PORT, TRITON_GRPC_PORT, TRITON_METRICS_PORT  (exported;
#                          0 when that endpoint is off), TRITON_URL
#                          (exported, http://127.0.0.1:PORT)
#
# Every function returns non-zero (after a message on stderr) on failure;
# none exits the calling script.

TRITON_LOG_PREFIX="${TRITON_LOG_PREFIX:-triton}"
TRITON_PYTRITON_VERSION="${TRITON_PYTRITON_VERSION:-0.7.0}"
TRITON_PID=""
TRITON_PGID=""
TRITON_SHM_TOKEN=""
TRITON_HTTP_PORT=0
TRITON_GRPC_PORT=0
TRITON_METRICS_PORT=0
TRITON_URL=""

triton_log() { echo "$TRITON_LOG_PREFIX: $*" >&2; }

# The cache directory (shared default with scripts/triton-oracle).
triton_cache_dir() {
  printf '%s' "${TRITON_CACHE:-${TMPDIR:-/tmp}/oracle/cache}"
}

# Create the venv in the cache if missing; sets TRITON_PY.
triton_venv() {
  local cache venv
  cache="$(triton_cache_dir)"
  venv="$cache/venv"
  mkdir -p "$cache" || return 1
  if [ ! -x "$venv/bin/python" ]; then
    triton_log "creating $venv"
    python3 -m venv "$venv" || { triton_log "python3 -m venv failed"; return 1; }
  fi
  TRITON_PY="$venv/bin/python"
}

# triton_venv_require MODULE REQUIREMENT: pip-install REQUIREMENT into the
# venv unless `import MODULE` already works there.
triton_venv_require() {
  local module="$1" requirement="$2"
  [ -n "${TRITON_PY:-}" ] || triton_venv || return 1
  "$TRITON_PY" -c "import $module" 2>/dev/null && return 0
  "$TRITON_PY" -m pip install -q --disable-pip-version-check "$requirement" ||
    { triton_log "pip install $requirement failed"; return 1; }
}

# Download and unpack tritonserver (once, into the cache); sets TRITON_HOME
# and TRITON_SERVER_BIN. The python backend stub matching the venv's python
# is copied next to the python backend.
triton_setup() {
  local cache version server_dir
  [ -n "${TRITON_PY:-}" ] || triton_venv || return 1
  cache="$(triton_cache_dir)"
  version="$TRITON_PYTRITON_VERSION"
  server_dir="$cache/pytriton-$version"
  TRITON_HOME="$server_dir/pytriton/tritonserver"
  TRITON_SERVER_BIN="$TRITON_HOME/bin/tritonserver"
  [ -x "$TRITON_SERVER_BIN" ] && return 0

  local wheels="$cache/wheels" whl="" found
  mkdir -p "$wheels" || return 1
  found=("$wheels"/nvidia_pytriton-"$version"-*.whl)
  [ -f "${found[0]}" ] && whl="${found[0]}"
  if [ -z "$whl" ]; then
    triton_log "downloading nvidia-pytriton==$version (about 55 MB)"
    "$TRITON_PY" -m pip download -q --disable-pip-version-check --no-deps \
      --only-binary=:all: --platform manylinux_2_35_x86_64 \
      --python-version 3.11 -d "$wheels" "nvidia-pytriton==$version" ||
      { triton_log "pip download nvidia-pytriton failed"; return 1; }
    found=("$wheels"/nvidia_pytriton-"$version"-*.whl)
    [ -f "${found[0]}" ] && whl="${found[0]}"
    [ -n "$whl" ] || { triton_log "no wheel in $wheels after pip download"; return 1; }
  fi
  rm -rf "$server_dir.tmp"
  "$TRITON_PY" -m zipfile -e "$whl" "$server_dir.tmp" ||
    { triton_log "cannot unpack $whl"; return 1; }
  local pyver stub tmp_home="$server_dir.tmp/pytriton/tritonserver"
  pyver="$("$TRITON_PY" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')"
  stub="$tmp_home/python_backend_stubs/$pyver/triton_python_backend_stub"
  if [ -f "$stub" ]; then
    cp "$stub" "$tmp_home/backends/python/"
    chmod +x "$tmp_home/backends/python/triton_python_backend_stub"
  else
    triton_log "no python backend stub for python $pyver (python models will not load)"
  fi
  chmod +x "$tmp_home/bin/tritonserver"
  rm -rf "$server_dir"
  mv "$server_dir.tmp" "$server_dir"
}

# Export what the server and its python stub need: the wheel's shared
# libraries and libpython on LD_LIBRARY_PATH, and the venv first on PATH
# (the stub's embedded interpreter finds its site-packages, e.g. numpy,
# through the first python3 on PATH).
triton_env() {
  local server_dir pylibdir venv_bin
  server_dir="$(triton_cache_dir)/pytriton-$TRITON_PYTRITON_VERSION"
  pylibdir="$("$TRITON_PY" -c 'import sysconfig; print(sysconfig.get_config_var("LIBDIR") or "")')"
  export LD_LIBRARY_PATH="$server_dir/nvidia_pytriton.libs${pylibdir:+:$pylibdir}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  venv_bin="$(dirname "$TRITON_PY")"
  export PATH="$venv_bin:$PATH"
}

# A free TCP port on 127.0.0.1 (the kernel's choice; tritonserver binds it a
# moment later, so triton_start retries on a clash).
triton_free_port() {
  "${TRITON_PY:-python3}" -c 'import socket
s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# HTTP status of GET $TRITON_URL$1 (000 when nothing answers).
triton_http_status() {
  "${TRITON_PY:-python3}" - "$TRITON_URL$1" <<'EOF' 2>/dev/null || echo 000
import sys, urllib.request, urllib.error
try:
    with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
        print(r.status)
except urllib.error.HTTPError as e:
    print(e.code)
except Exception:
    print("000")
EOF
}

# triton_start REPO [extra tritonserver arguments...]
# Starts tritonserver on 127.0.0.1 with free ports in its own process group
# and waits until /v2/health/ready answers 200. Retries twice with new ports
# when the server dies at start-up because a port was taken.
triton_start() {
  local repo="$1"; shift
  [ -n "${TRITON_SERVER_BIN:-}" ] || { triton_log "triton_setup first"; return 1; }
  [ -d "$repo" ] || { triton_log "no model repository $repo"; return 1; }
  [ -z "$TRITON_PID" ] || { triton_log "a server is already running ($TRITON_PID)"; return 1; }
  local logf="${TRITON_LOG_FILE:-${TMPDIR:-/tmp}/tritonserver-$$.log}"
  local control="${TRITON_MODEL_CONTROL:-explicit}" attempt
  for attempt in 1 2 3; do
    TRITON_HTTP_PORT="$(triton_free_port)" || return 1
    TRITON_GRPC_PORT=0
    TRITON_METRICS_PORT=0
    local args=(
      --model-repository "$repo"
      --backend-directory "$TRITON_HOME/backends"
      --http-address 127.0.0.1 --http-port "$TRITON_HTTP_PORT"
      --strict-readiness "${TRITON_STRICT_READINESS:-true}"
      --exit-timeout-secs 5
    )
    case "$control" in
      explicit) args+=(--model-control-mode explicit) ;;
      poll) args+=(--model-control-mode poll
                   --repository-poll-secs "${TRITON_POLL_SECS:-1}") ;;
      none) args+=(--model-control-mode none) ;;
      *) triton_log "TRITON_MODEL_CONTROL must be explicit, poll or none"; return 1 ;;
    esac
    if [ "${TRITON_GRPC:-0}" = 1 ]; then
      TRITON_GRPC_PORT="$(triton_free_port)"
      args+=(--grpc-address 127.0.0.1 --grpc-port "$TRITON_GRPC_PORT")
    else
      args+=(--allow-grpc false)
    fi
    if [ "${TRITON_METRICS:-0}" = 1 ]; then
      TRITON_METRICS_PORT="$(triton_free_port)"
      args+=(--metrics-address 127.0.0.1 --metrics-port "$TRITON_METRICS_PORT"
             --allow-gpu-metrics false)
    else
      args+=(--allow-metrics false --allow-gpu-metrics false)
    fi
    # private shared-memory names for the python backend, removed on stop
    TRITON_SHM_TOKEN="tritonsh$$x$attempt$RANDOM"
    args+=(--backend-config "python,shm-region-prefix-name=$TRITON_SHM_TOKEN")
    TRITON_URL="http://127.0.0.1:$TRITON_HTTP_PORT"
    export TRITON_HTTP_PORT TRITON_GRPC_PORT TRITON_METRICS_PORT TRITON_URL

    # The server leads a process group of its own (its python stubs join
    # it), so that triton_stop can end all of them at once: setpgid, then
    # exec, so the pid stays the server's (setsid(1) would fork when the
    # shell runs with job control).
    "${TRITON_PY:-python3}" -c 'import os, sys
os.setpgid(0, 0)
os.execv(sys.argv[1], sys.argv[1:])' "$TRITON_SERVER_BIN" "${args[@]}" "$@" \
      >"$logf" 2>&1 </dev/null &
    TRITON_PID=$!
    [ -n "${TRITON_PID_FILE:-}" ] && echo "$TRITON_PID" >"$TRITON_PID_FILE"
    # until setpgid has run, the child is still in our process group: only
    # use its group once it leads one
    local i
    for ((i = 0; i < 100; i++)); do
      [ "$(triton_pgrp "$TRITON_PID")" = "$TRITON_PID" ] && break
      kill -0 "$TRITON_PID" 2>/dev/null || break
      sleep 0.05
    done
    if [ "$(triton_pgrp "$TRITON_PID")" = "$TRITON_PID" ]; then
      TRITON_PGID="$TRITON_PID"
    fi

    local deadline=$((SECONDS + ${TRITON_START_TIMEOUT:-60})) status
    while [ "$SECONDS" -lt "$deadline" ]; do
      if ! kill -0 "$TRITON_PID" 2>/dev/null; then
        break
      fi
      status="$(triton_http_status /v2/health/ready)"
      if [ "$status" = 200 ]; then
        triton_log "tritonserver ready at $TRITON_URL (pid $TRITON_PID, log $logf)"
        return 0
      fi
      sleep 0.3
    done
    if kill -0 "$TRITON_PID" 2>/dev/null; then
      triton_log "tritonserver not ready after ${TRITON_START_TIMEOUT:-60} s; see $logf"
      triton_stop
      return 1
    fi
    wait "$TRITON_PID" 2>/dev/null || true
    TRITON_PID=""
    triton_stop  # stubs, shared memory
    if grep -qiE "address already in use|failed to (start|bind)" "$logf"; then
      triton_log "port clash at start-up (attempt $attempt), retrying"
      continue
    fi
    triton_log "tritonserver exited at start-up; see $logf"
    tail -n 20 "$logf" >&2 || true
    return 1
  done
  triton_log "tritonserver did not start (ports kept clashing); see $logf"
  return 1
}

# The process group of pid $1 (empty when it is gone).
triton_pgrp() {
  local stat fields
  stat="$(cat "/proc/$1/stat" 2>/dev/null)" || return 0
  stat="${stat##*) }"          # after "pid (comm) ": state ppid pgrp ...
  read -r -a fields <<<"$stat"
  printf '%s' "${fields[2]:-}"
}

# End a process group: SIGTERM, up to $2 seconds (default 20) for the group
# to go, then SIGKILL for whatever is left of it. Never our own group.
triton_kill_group() {
  local pgid="$1" grace="${2:-20}" i
  [ -n "$pgid" ] && [ "$pgid" != "$(triton_pgrp $$)" ] &&
    [ "$pgid" != "$(triton_pgrp "$BASHPID")" ] || return 0
  kill -TERM -- "-$pgid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 -- "-$pgid" 2>/dev/null || return 0
    sleep 0.1
  done
  kill -KILL -- "-$pgid" 2>/dev/null || true
}

# Stop the server triton_start started (and its python stubs); safe to call
# more than once and when nothing runs.
triton_stop() {
  local i
  if [ -n "$TRITON_PGID" ]; then
    triton_kill_group "$TRITON_PGID" 20
  elif [ -n "$TRITON_PID" ]; then
    # never became a group leader: end the process alone
    kill -TERM "$TRITON_PID" 2>/dev/null || true
    for ((i = 0; i < 200; i++)); do
      kill -0 "$TRITON_PID" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$TRITON_PID" 2>/dev/null || true
  fi
  if [ -n "$TRITON_PID" ]; then
    wait "$TRITON_PID" 2>/dev/null || true
  fi
  if [ -n "${TRITON_PID_FILE:-}" ] && [ -f "$TRITON_PID_FILE" ] &&
     [ "$(cat "$TRITON_PID_FILE" 2>/dev/null)" = "$TRITON_PID" ]; then
    rm -f "$TRITON_PID_FILE"
  fi
  if [ -n "$TRITON_SHM_TOKEN" ]; then
    rm -f /dev/shm/"$TRITON_SHM_TOKEN"* 2>/dev/null || true
  fi
  TRITON_PID=""
  TRITON_PGID=""
  TRITON_SHM_TOKEN=""
}

# triton_kill_pidfile FILE: end the process group of the tritonserver whose
# pid FILE holds (written by another process, e.g. a python driver), if that
# process is still a tritonserver; removes FILE.
triton_kill_pidfile() {
  local pidfile="$1" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile" 2>/dev/null || true)"
  if [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] &&
     tr '\0' ' ' < "/proc/$pid/cmdline" | grep -q "tritonserver"; then
    kill -TERM -- "-$pid" 2>/dev/null || true
    sleep 2
    kill -KILL -- "-$pid" 2>/dev/null || true
  fi
  rm -f "$pidfile"
}

# Stop the server on exit and turn INT/TERM into an exit (which runs the
# EXIT trap). Scripts with their own EXIT trap call triton_stop from it
# instead.
triton_install_trap() {
  trap triton_stop EXIT
  trap 'exit 130' INT TERM
}
