# syntax=docker/dockerfile:1
FROM python:3.11-slim AS base

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

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
RUN pip install --no-deps . && rm -rf build *.egg-info

RUN useradd --create-home --uid 10001 gpubot
USER gpubot

EXPOSE 3000
# serve answers /healthz on its port in both HTTP and Socket Mode.
HEALTHCHECK --interval=30s --timeout=3s --start-period=20s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(0 if urllib.request.urlopen('http://127.0.0.1:3000/healthz', timeout=2).status == 200 else 1)"

CMD ["gpu-bot", "serve", "--port", "3000"]
