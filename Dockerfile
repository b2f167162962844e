# celmut: the webhook (`celmut serve`) and the controller (`celmut controller`) in one image.
#   docker build -t celmut:0.1.0 .
# Non-root (uid 10001, numeric so Kubernetes can check runAsNonRoot), read-only root filesystem
# friendly (no bytecode written at run time), with OpenTelemetry tracing (the `tracing` extra: off
# unless the chart's tracing.otlpEndpoint is set).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY celmut ./celmut
RUN pip install --no-cache-dir --root-user-action=ignore --prefix=/install ".[tracing]"

FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
RUN groupadd --system --gid 10001 celmut \
    && useradd --system --uid 10001 --gid 10001 --no-create-home --shell /usr/sbin/nologin celmut
COPY --from=build /install /usr/local
USER 10001:10001
EXPOSE 8443 8444
ENTRYPOINT ["celmut"]
CMD ["--help"]
