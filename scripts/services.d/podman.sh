# shellcheck shell=bash
# Podman, whose Docker-compatible API over TCP stands in for a remote Docker host in the
# docker-sandbox tests (plugins/docker-sandbox/tests/test_remote_host.py starts the service on
# a free loopback port under a private root). catatonit is the init `init = true` runs.
start_podman() {
    _svc_apt_install podman:podman catatonit:catatonit
}
