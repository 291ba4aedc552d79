# syntax=docker/dockerfile:1
#
# tritonctl with ONNX Runtime, on Debian bookworm-slim (docs/install.md).
#
#   docker build -t tritonctl .
#   docker run --rm -v "$PWD/model_repository:/models:ro" tritonctl validate /models
#
# Multi-platform images cross-compile on the build machine (no emulated
# compiler): docker buildx build --platform linux/amd64,linux/arm64 .
# The release workflow (.github/workflows/release.yml) builds and pushes it.

# The toolchain is Cargo.toml's rust-version; the build and runtime stages
# share one Debian release, so the binary finds the glibc it was linked
# against.
ARG RUST_VERSION=1.92
ARG DEBIAN_RELEASE=bookworm

# ONNX Runtime's shared library comes from the onnxruntime wheel on PyPI
# (the same library `pip install onnxruntime` gives; the wheel's Python
# version does not matter, only libonnxruntime.so is taken). Version, URLs
# and SHA-256 sums change together.
ARG ORT_VERSION=1.31.1
ARG ORT_WHEEL_AMD64=https://files.pythonhosted.org/packages/b4/1d/0f85ee31a3d93f2243a5cc29252becf858f53ac5cfa6c9c15d9ffe107eea/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_x86_64.whl
ARG ORT_SHA256_AMD64=5752bd508126ae7c49894d3b9d2e83f0c3d487319246d04c444b393308d7ad7f
ARG ORT_WHEEL_ARM64=https://files.pythonhosted.org/packages/02/ee/b173a49293b146b54bd057bf8681a015aef764d8f56d999ad8c6e53ab18d/onnxruntime-1.31.1-cp311-cp311-manylinux_2_28_aarch64.whl
ARG ORT_SHA256_ARM64=da05378364c44d4407e463982d2bf8d5e4cfea873283757e48beeb41df97b7f3

# ---------------------------------------------------------------- build
FROM --platform=$BUILDPLATFORM rust:${RUST_VERSION}-${DEBIAN_RELEASE} AS build
ARG TARGETARCH
ARG BUILDARCH
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
WORKDIR /src

# A C cross compiler only when the target differs from the build machine
# (mimalloc and other -sys crates compile C).
# hadolint ignore=DL3008
RUN case "$TARGETARCH" in \
        amd64) gnu=x86-64-linux-gnu; deb=amd64 ;; \
        arm64) gnu=aarch64-linux-gnu; deb=arm64 ;; \
        *) echo "unsupported architecture: $TARGETARCH" >&2; exit 1 ;; \
    esac \
    && if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
        apt-get update \
        && apt-get install -y --no-install-recommends "gcc-$gnu" "libc6-dev-$deb-cross" \
        && rm -rf /var/lib/apt/lists/*; \
    fi

COPY . .

# Shipped artefacts use the `dist` profile (Cargo.toml); default features
# (`run`, `perf`). The caches outlive the build; target/ keeps one
# directory per target triple, so platforms can share it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    case "$TARGETARCH" in \
        amd64) triple=x86_64-unknown-linux-gnu; cc=x86_64-linux-gnu-gcc ;; \
        arm64) triple=aarch64-unknown-linux-gnu; cc=aarch64-linux-gnu-gcc ;; \
    esac \
    && if [ "$TARGETARCH" != "$BUILDARCH" ]; then \
        upper=$(echo "$triple" | tr 'a-z-' 'A-Z_') \
        && export "CARGO_TARGET_${upper}_LINKER=$cc" "CC_${triple//-/_}=$cc"; \
    fi \
    && rustup target add "$triple" \
    && cargo build --profile dist --locked --target "$triple" \
    && mkdir -p /out \
    && cp "target/$triple/dist/tritonctl" /out/tritonctl

# ---------------------------------------------------------- onnxruntime
FROM --platform=$BUILDPLATFORM debian:${DEBIAN_RELEASE}-slim AS onnxruntime
ARG TARGETARCH
ARG ORT_VERSION
ARG ORT_WHEEL_AMD64
ARG ORT_SHA256_AMD64
ARG ORT_WHEEL_ARM64
ARG ORT_SHA256_ARM64
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates curl unzip \
    && rm -rf /var/lib/apt/lists/*
RUN case "$TARGETARCH" in \
        amd64) url=$ORT_WHEEL_AMD64; sum=$ORT_SHA256_AMD64 ;; \
        arm64) url=$ORT_WHEEL_ARM64; sum=$ORT_SHA256_ARM64 ;; \
        *) echo "unsupported architecture: $TARGETARCH" >&2; exit 1 ;; \
    esac \
    && curl -fsSL --retry 3 -o /tmp/onnxruntime.whl "$url" \
    && echo "$sum  /tmp/onnxruntime.whl" | sha256sum -c - \
    && mkdir -p /out \
    && unzip -q -j /tmp/onnxruntime.whl "onnxruntime/capi/libonnxruntime.so.$ORT_VERSION" -d /out \
    && rm /tmp/onnxruntime.whl

# -------------------------------------------------------------- runtime
FROM debian:${DEBIAN_RELEASE}-slim
ARG ORT_VERSION
# CA certificates for `perf` against https:// endpoints.
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && groupadd --gid 10001 tritonctl \
    && useradd --uid 10001 --gid 10001 --home-dir /home/tritonctl --no-create-home --shell /usr/sbin/nologin tritonctl \
    && mkdir -p /home/tritonctl \
    && chown 10001:10001 /home/tritonctl

COPY --from=onnxruntime /out/ /opt/onnxruntime/lib/
COPY --from=build /out/tritonctl /usr/local/bin/tritonctl

ENV ORT_DYLIB_PATH=/opt/onnxruntime/lib/libonnxruntime.so.${ORT_VERSION}
LABEL org.opencontainers.image.title="tritonctl" \
      org.opencontainers.image.description="Validate, auto-configure, simulate, run and load-test NVIDIA Triton Inference Server models" \
      org.opencontainers.image.licenses="Apache-2.0"

# A numeric user, so that Kubernetes' runAsNonRoot can check it.
USER 10001:10001
WORKDIR /home/tritonctl
ENTRYPOINT ["tritonctl"]
CMD ["--help"]
