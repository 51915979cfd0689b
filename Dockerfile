# syntax=docker/dockerfile:1
# To pin the base image, put its digest after the tag, as
# `docker buildx imagetools inspect python:3.11-slim` prints it (the "Digest:" line):
# FROM python:3.11-slim@sha256:<digest>. Update it the same way when Python releases.
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /app

# Dependencies in their own layer: it is rebuilt only when the lock changes. What
# `gpu-bot serve` runs: the dependencies and the charts extra (its in-process worker draws
# the approval card's chart); not the memory extra (it serves on redis://) nor dev.
# requirements.lock pins each of them, and what they need, by version and hash.
COPY requirements.lock ./
RUN pip install --require-hashes --no-deps -r requirements.lock

COPY pyproject.toml ./

COPY README.md ./
COPY bot ./bot
COPY handlers ./handlers
COPY aws_sandbox ./aws_sandbox
RUN pip install --no-deps . && rm -rf build ./*.egg-info

RUN useradd --create-home --uid 10001 --user-group gpubot
# Numeric: Kubernetes checks runAsNonRoot against a user id, not a name.
USER 10001:10001

EXPOSE 3000
# serve and worker answer /healthz on their --port, in HTTP and Socket Mode alike: a
# container started with another port (the worker's 8081) sets GPU_BOT_HEALTH_PORT to it.
# Kubernetes ignores this and probes each role's own port (deploy/kubernetes/).
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import os,urllib.request,sys; port=os.environ.get('GPU_BOT_HEALTH_PORT','3000'); sys.exit(0 if urllib.request.urlopen(f'http://127.0.0.1:{port}/healthz', timeout=2).status == 200 else 1)"]

CMD ["gpu-bot", "serve", "--port", "3000"]
