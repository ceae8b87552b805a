# One image for every patchstream service; the compose file picks the command.
FROM python:3.11-slim

# git: the gateway mirrors repositories and the parse workers read blobs from the mirrors.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY src ./src
# EXTRAS=memgraph,embed adds the offline MiniLM embedder (and torch: large).
ARG EXTRAS=memgraph
RUN pip install --no-cache-dir ".[${EXTRAS}]"

RUN useradd --create-home --uid 10001 patchstream \
    && mkdir -p /data && chown patchstream /data
USER patchstream
ENV PATCHSTREAM_EMBEDDED__DATA_DIR=/data \
    PYTHONUNBUFFERED=1
VOLUME ["/data"]
ENTRYPOINT ["patchstream"]
CMD ["--help"]
