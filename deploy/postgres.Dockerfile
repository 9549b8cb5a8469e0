# PostgreSQL from Debian's own packages, for the compose stack where images cannot be pulled (docker-compose.local.yml).
# The base is the sandbox image (an mmdebstrap rootfs of Debian bookworm brought in with `docker import`); the
# packages come from the Debian mirror this machine's apt uses. `npm run compose:build` builds it
# (src/infra/compose-images.ts). It takes the published image's variables: POSTGRES_USER, POSTGRES_PASSWORD, PGDATA.
ARG BASE_IMAGE=managed-agents/sandbox:latest
FROM ${BASE_IMAGE}
USER root
ARG DEBIAN_MIRROR=http://deb.debian.org/debian
# No cluster made at install: the entrypoint makes one in the volume on first start, with the operator's password.
RUN mkdir -p /etc/postgresql-common \
 && echo 'create_main_cluster = false' > /etc/postgresql-common/createcluster.conf \
 && echo "deb ${DEBIAN_MIRROR} bookworm main" > /etc/apt/sources.list \
 && rm -f /etc/apt/sources.list.d/* \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends postgresql-15 \
 && rm -rf /var/lib/apt/lists/* /var/cache/apt/archives/*.deb \
 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \
 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql \
 && chmod 700 /var/lib/postgresql/data
COPY postgres-entrypoint.sh /usr/local/bin/postgres-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH PGDATA=/var/lib/postgresql/data
LABEL org.opencontainers.image.title=managed-agents-postgres
USER postgres
WORKDIR /var/lib/postgresql
EXPOSE 5432
STOPSIGNAL SIGINT
ENTRYPOINT ["/usr/local/bin/postgres-entrypoint.sh"]
