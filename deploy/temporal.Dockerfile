# The production Temporal server on PostgreSQL, for the compose stack where images cannot be pulled
# (docker-compose.local.yml). The base is the sandbox image (an mmdebstrap rootfs of Debian bookworm); the context,
# which `npm run compose:build` assembles (src/infra/compose-images.ts), holds `temporal-server` and
# `temporal-sql-tool` built from the Go module proxy, the release's PostgreSQL schema files and the Temporal CLI.
# It takes the variables of the published auto-setup image the compose file names: POSTGRES_SEEDS, DB_PORT,
# POSTGRES_USER, POSTGRES_PWD, DEFAULT_NAMESPACE, DYNAMIC_CONFIG_FILE_PATH.
ARG BASE_IMAGE=managed-agents/sandbox:latest
FROM ${BASE_IMAGE}
USER root
COPY temporal-server temporal-sql-tool temporal /usr/local/bin/
COPY schema/ /etc/temporal/schema/
COPY temporal-entrypoint.sh /usr/local/bin/temporal-entrypoint.sh
ARG SEARCH_ATTRIBUTES
RUN mkdir -p /etc/temporal/config/dynamicconfig \
 && touch /etc/temporal/config/dynamicconfig/empty.yaml \
 && chown -R 1000:1000 /etc/temporal/config \
 && temporal-server --version && temporal --version
ENV SEARCH_ATTRIBUTES=${SEARCH_ATTRIBUTES}
LABEL org.opencontainers.image.title=managed-agents-temporal
USER 1000
WORKDIR /etc/temporal
EXPOSE 7233
ENTRYPOINT ["/usr/local/bin/temporal-entrypoint.sh"]
