# syntax=docker/dockerfile:1
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /app

# Dependencies in their own layer: it is rebuilt only when pyproject.toml changes. What
# `gpu-bot serve` runs: the dependencies and the charts extra (its in-process worker draws
# the approval card's chart); not the memory extra (it serves on redis://) nor dev.
COPY pyproject.toml ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml','rb'))['project']; print('\n'.join(p['dependencies'] + p['optional-dependencies']['charts']))" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt \
    && rm /tmp/requirements.txt

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
