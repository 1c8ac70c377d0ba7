# Brushfire's server: `brushfire serve` with Java 17 for the Spark driver that captures
# lineage, and the browser frontend when frontend/ exists. docker-compose.yml runs it
# next to a Spark standalone cluster; docs/deploy.md explains both.
FROM python:3.11-slim-bookworm

# Must equal the cluster's Spark version (docker-compose.yml passes the same value to
# both): a driver and a standalone master of different versions do not talk.
ARG SPARK_VERSION=4.3.0

# Java for the Spark driver (pyspark starts a JVM); Node.js and npm only build the frontend.
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless nodejs npm \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY . /app

# The frontend (vega-embed bundle) is built when the source tree has one.
RUN if [ -f frontend/package.json ]; then \
        cd frontend && npm ci --no-audit --no-fund && npm run build && rm -rf node_modules; \
    fi
RUN pip install --no-cache-dir . "pyspark==${SPARK_VERSION}"

# Not root; /cache (the lineage cache, a volume in docker-compose.yml) is its own.
RUN useradd --create-home --uid 1000 brushfire && mkdir /cache && chown brushfire /cache
USER brushfire

# The package is installed, not editable: tell the server where the built frontend is.
ENV BRUSHFIRE_CACHE=/cache \
    BRUSHFIRE_FRONTEND=/app/frontend/dist \
    NUMBA_CACHE_DIR=/cache/numba

EXPOSE 8000
ENTRYPOINT ["brushfire", "serve", "--host", "0.0.0.0", "--port", "8000"]
CMD ["dashboards/flights.yaml"]
