# otelcol-dsh, the collector distribution of this repository, as a container
# image: a static binary (CGO_ENABLED=0) on an empty base, run as a non-root
# user.
#
#   docker build -t otelcol-dsh .
#   docker run --rm -p 4320:4320 -p 8889:8889 \
#     -v ~/.dsh/sessions:/var/lib/dsh/sessions:ro otelcol-dsh
#
# Without arguments it runs deploy/collector/container.yaml, installed as
# /etc/otelcol-dsh/config.yaml: the built-in configuration's pipelines on
# 0.0.0.0 (HTTP ingest :4320, metrics :8889, own metrics :8888, health
# :13133), tailing /var/lib/dsh/sessions, state in /var/lib/otelcol-dsh.
# Any other configuration: mount it and pass --config=FILE (deploy/compose
# does so with deploy/collector/jaeger.yaml and tempo.yaml).

ARG GO_VERSION=1.26

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
ENV CGO_ENABLED=0 GOFLAGS=-buildvcs=false GOTOOLCHAIN=local
# Modules first, so that a source change does not download them again.
COPY go.mod go.sum ./
COPY cmd/otelcol-dsh/go.mod cmd/otelcol-dsh/go.sum cmd/otelcol-dsh/
RUN cd cmd/otelcol-dsh && go mod download
COPY . .
RUN cd cmd/otelcol-dsh && go build -trimpath -ldflags="-s -w" -o /out/otelcol-dsh . \
 && /out/otelcol-dsh validate --config=/src/deploy/collector/container.yaml
# The image's writable and mountable folders, owned by the runtime user.
RUN mkdir -p /out/root/var/lib/otelcol-dsh /out/root/var/lib/dsh/sessions /out/root/etc/otelcol-dsh \
 && cp deploy/collector/container.yaml /out/root/etc/otelcol-dsh/config.yaml \
 && chown -R 10001:10001 /out/root/var/lib

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/root/ /
COPY --from=build /out/otelcol-dsh /usr/local/bin/otelcol-dsh
USER 10001:10001
WORKDIR /var/lib/otelcol-dsh
VOLUME ["/var/lib/otelcol-dsh"]
EXPOSE 4320 8888 8889 13133
ENTRYPOINT ["/usr/local/bin/otelcol-dsh"]
CMD ["--config=/etc/otelcol-dsh/config.yaml"]
