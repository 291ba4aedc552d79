# shellcheck shell=bash
# Helpers shared by the scripts in scripts/perf-bench/. Source from bash.
#
#   pa_setup        download perf_analyzer (tritonclient 2.41.0 wheel), the
#                   CUDA runtime it links against (nvidia-cuda-runtime-cu12
#                   wheel) and libb64 (Debian), once, into $PERF_BENCH_CACHE;
#                   sets PA_BIN, and PA_LD_PATH to the LD_LIBRARY_PATH it
#                   needs (use: LD_LIBRARY_PATH=$PA_LD_PATH $PA_BIN ...)
#   bench_tritonctl pick the tritonctl binary; sets TRITONCTL_BIN
#   genai_venv      a venv in $PERF_BENCH_CACHE with AIPerf, the stubllm mock
#                   OpenAI-compatible server and the tokenizer packages
#                   (versions pinned below), once; sets GENAI_PY, its python
#
# Settings:
#   PERF_BENCH_CACHE   downloads (default ${TMPDIR:-/tmp}/perf-bench/cache)
#   TRITONCTL          tritonctl binary (default target/dist/tritonctl,
#                      built with `cargo build --profile dist`, the
#                      shipped build, when missing)

# The generative benches' packages from PyPI, pinned so that runs compare.
GENAI_PACKAGES="aiperf==0.13.0 stubllm==0.1.5 tokenizers==0.23.3 transformers==5.24.0"

bench_log() { echo "${BENCH_LOG_PREFIX:-perf-bench}: $*" >&2; }

bench_cache_dir() {
  echo "${PERF_BENCH_CACHE:-${TMPDIR:-/tmp}/perf-bench/cache}"
}

bench_as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null; then
    sudo "$@"
  else
    bench_log "need root (or sudo) to run: $*"
    return 1
  fi
}

# pip download into the cache unless a matching wheel is there already.
# bench_pip_download PATTERN PIP-DOWNLOAD-ARGS...
bench_pip_download() {
  local pattern="$1"; shift
  local dir; dir="$(bench_cache_dir)/wheels"
  mkdir -p "$dir"
  # shellcheck disable=SC2086
  if ! ls "$dir"/$pattern >/dev/null 2>&1; then
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$dir" "$@" >&2 \
      || { bench_log "pip download $* failed"; return 1; }
  fi
  # shellcheck disable=SC2086,SC2012
  ls "$dir"/$pattern | head -n 1
}

pa_setup() {
  local cache; cache="$(bench_cache_dir)"
  mkdir -p "$cache"
  local whl
  whl=$(bench_pip_download 'tritonclient-2.41.0-*.whl' --platform manylinux1_x86_64 \
    --python-version 3.11 tritonclient==2.41.0) || return 1
  PA_BIN="$cache/pa/tritonclient-2.41.0.data/data/bin/perf_analyzer"
  if [ ! -x "$PA_BIN" ]; then
    python3 -m zipfile -e "$whl" "$cache/pa.tmp" >/dev/null \
      || { bench_log "cannot unpack $whl"; return 1; }
    mkdir -p "$(dirname "$PA_BIN")"
    mv "$cache/pa.tmp/tritonclient-2.41.0.data/data/bin/perf_analyzer" "$PA_BIN"
    rm -rf "$cache/pa.tmp"
    chmod +x "$PA_BIN"
  fi
  local cudart
  cudart=$(bench_pip_download 'nvidia_cuda_runtime_cu12-*.whl' --platform manylinux2014_x86_64 \
    --python-version 3.11 nvidia-cuda-runtime-cu12) || return 1
  if ! ls "$cache"/cudart/nvidia/cuda_runtime/lib/libcudart.so.12* >/dev/null 2>&1; then
    python3 -m zipfile -e "$cudart" "$cache/cudart" >/dev/null \
      || { bench_log "cannot unpack $cudart"; return 1; }
  fi
  if ! ldconfig -p | grep -q 'libb64\.so\.0d'; then
    bench_log "installing libb64-0d (Debian) for perf_analyzer"
    bench_as_root apt-get update -qq >&2 || true
    bench_as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libb64-0d >&2 \
      || { bench_log "apt-get install libb64-0d failed"; return 1; }
  fi
  PA_LD_PATH="$cache/cudart/nvidia/cuda_runtime/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  local missing
  missing=$(LD_LIBRARY_PATH="$PA_LD_PATH" ldd "$PA_BIN" | grep 'not found' || true)
  if [ -n "$missing" ]; then
    bench_log "perf_analyzer is missing libraries: $missing"
    return 1
  fi
}

bench_tritonctl() {
  local root="$1"
  TRITONCTL_BIN="${TRITONCTL:-}"
  if [ -z "$TRITONCTL_BIN" ]; then
    if [ -x "$root/target/dist/tritonctl" ]; then
      TRITONCTL_BIN="$root/target/dist/tritonctl"
    else
      (cd "$root" && cargo build --profile dist --quiet) || { bench_log "build failed"; return 1; }
      TRITONCTL_BIN="$root/target/dist/tritonctl"
    fi
  fi
  [ -x "$TRITONCTL_BIN" ] || { bench_log "no tritonctl binary at $TRITONCTL_BIN"; return 1; }
}

genai_venv() {
  local venv; venv="$(bench_cache_dir)/genai-venv"
  mkdir -p "$(dirname "$venv")"
  # a marker names the packages installed, so a new pin reinstalls
  if [ "$(cat "$venv/.packages" 2>/dev/null)" != "$GENAI_PACKAGES" ]; then
    bench_log "installing $GENAI_PACKAGES into $venv"
    rm -rf "$venv"
    python3 -m venv "$venv" || { bench_log "cannot create $venv"; return 1; }
    # shellcheck disable=SC2086
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $GENAI_PACKAGES >&2 \
      || { bench_log "pip install $GENAI_PACKAGES failed"; return 1; }
    printf '%s' "$GENAI_PACKAGES" > "$venv/.packages"
  fi
  # shellcheck disable=SC2034  # read by the scripts that source this file
  GENAI_PY="$venv/bin/python"
  for tool in aiperf stubllm; do
    [ -x "$venv/bin/$tool" ] || { bench_log "$venv/bin/$tool is missing"; return 1; }
  done
}
