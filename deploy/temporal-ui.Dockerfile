# Temporal's Web UI server, for the compose stack where images cannot be pulled (docker-compose.local.yml). The
# base is the sandbox image (an mmdebstrap rootfs of Debian bookworm); the context, which `npm run compose:build`
# assembles (src/infra/compose-images.ts), holds `ui-server` built from the Go module proxy (the UI's assets are
# embedded in it) and the release's config/docker.yaml, which reads the published image's variables
# (TEMPORAL_ADDRESS, TEMPORAL_CODEC_ENDPOINT, TEMPORAL_UI_PORT, ...).
ARG BASE_IMAGE=managed-agents/sandbox:latest
FROM ${BASE_IMAGE}
USER root
COPY ui-server /home/ui-server/ui-server
COPY config/ /home/ui-server/config/
RUN chown -R 1000:1000 /home/ui-server/config && /home/ui-server/ui-server --help > /dev/null
LABEL org.opencontainers.image.title=managed-agents-temporal-ui
USER 1000
WORKDIR /home/ui-server
EXPOSE 8080
ENTRYPOINT ["/home/ui-server/ui-server", "--root", "/home/ui-server", "--env", "docker", "start"]
