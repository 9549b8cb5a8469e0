# The worker image: every role in one image, chosen by the command (`worker --role brain|hands|tools`,
# `codec-server`, `doctor`). It builds with no registry: the base is an image already on the engine (the
# sandbox image, itself an mmdebstrap rootfs brought in with `docker import`), and the context, which
# `npm run image` assembles (src/infra/worker-image.ts), holds the host's Node 20 binary and the app with its
# production dependencies. The base must have git (the hands host's git) and ca-certificates.
ARG BASE_IMAGE=managed-agents/sandbox:latest
FROM ${BASE_IMAGE}
USER root
COPY node /usr/local/bin/node
COPY app/ /opt/managed-agents/
# DATA_DIR holds the session archive (brain), vaults (hands, tools) and git mirrors (hands); compose mounts
# volumes there. Keys never come from files in a container: each replica would generate its own.
RUN mkdir -p /var/lib/managed-agents/archive /var/lib/managed-agents/vaults /var/lib/managed-agents/mirrors \
 && chown -R 1000:1000 /var/lib/managed-agents \
 && node --version
ENV NODE_ENV=production DATA_DIR=/var/lib/managed-agents KEY_FILES=off
LABEL org.opencontainers.image.title=managed-agents-worker
WORKDIR /opt/managed-agents
USER 1000
ENTRYPOINT ["node", "/opt/managed-agents/dist/client.js"]
CMD ["worker", "--role", "all"]
