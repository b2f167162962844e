# celmut: the webhook (`celmut serve`) and the controller (`celmut controller`) in one image.
#   docker build -t celmut:0.1.0 .
# Non-root (uid 10001, numeric so Kubernetes can check runAsNonRoot), read-only root filesystem
# friendly (no bytecode written at run time), with OpenTelemetry tracing (the `tracing` extra: off
# unless the chart's tracing.otlpEndpoint is set).
# The hot path is compiled by mypyc (CELMUT_MYPYC=1): the C compiler lives in the build stage only;
# `celmut version` in the image says "Build: compiled", and CELMUT_PURE=1 runs the Python sources.
FROM python:3.11-slim AS build
RUN apt-get update -qq \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends gcc libc6-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY pyproject.toml setup.py README.md ./
COPY build_backend ./build_backend
COPY celmut ./celmut
RUN CELMUT_MYPYC=1 pip wheel --no-cache-dir --no-deps --wheel-dir /wheels . \
    && pip install --no-cache-dir --root-user-action=ignore --prefix=/install "$(ls /wheels/celmut-*.whl)[tracing]"

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 celmut \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin celmut
COPY --from=build /install /usr/local
# Fails the build unless the compiled modules are what the image runs.
RUN celmut version | grep -q '^Build: compiled'
USER 10001:10001
EXPOSE 8443 8444
ENTRYPOINT ["celmut"]
CMD ["--help"]
