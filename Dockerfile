# The durable-tools image: `docker compose up` builds it for the `worker`, `inbox` and
# `codec-server` services.
#   docker build -t durable-tools .
#   docker run -e TEMPORAL_ADDRESS=temporal:7233 -e DURABLE_TOOLS_TOOLS=mycompany.tools \
#       durable-tools
# Tool modules of your own: install them into this image (another `pip install`), or
# build FROM it.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md constraints.txt ./
COPY src ./src
# Extras: inbox (`serve`, `codec-server`), otel (tracing), s3 (an s3:// artifact store).
# constraints.txt pins every dependency to the versions the test suite ran with.
RUN pip install --constraint constraints.txt ".[inbox,otel,s3]" \
    && useradd --system --uid 10001 --create-home --home-dir /var/lib/durable-tools durable \
    && mkdir -p /var/lib/durable-tools/artifacts /var/lib/durable-tools/inbox \
    && chown -R durable /var/lib/durable-tools

USER durable
WORKDIR /var/lib/durable-tools
ENV DURABLE_TOOLS_HOME=/var/lib/durable-tools \
    DURABLE_TOOLS_ARTIFACTS=/var/lib/durable-tools/artifacts \
    DURABLE_TOOLS_TOOLS=durable_tools.demo.tools

# exec: the worker replaces the shell as PID 1, so SIGTERM reaches it (graceful shutdown).
CMD ["sh", "-c", "exec durable-tools worker --tools \"$DURABLE_TOOLS_TOOLS\""]
