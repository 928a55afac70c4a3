# shellcheck shell=bash
# Start the real components the tests need (CONTRIBUTING.md, "Test tiers"). Sourced by scripts/test.
# Each start_* function is idempotent: it reuses what is already running or cached, so a
# rerun on the same machine takes seconds. Log lines (with timings) go to stderr.
#
# Knobs (environment):
#   AGENTENV_CI_CACHE        cache folder (rootfs tarballs, registry storage, logs)
#                            default /var/cache/agentenv-ci
#   AGENTENV_SKIP_SERVICES=1 start nothing (tests that need Docker then skip, or fail on CI)
#   AGENTENV_DOCKER_WAIT     seconds to wait for dockerd (default 60)
#   AGENTENV_REGISTRY_ADDR   local OCI registry address (default 127.0.0.1:5000)
#
# Exports for the tests: AGENTENV_TEST_REGISTRY, AGENTENV_TEST_BASE_IMAGE.

AGENTENV_CI_CACHE="${AGENTENV_CI_CACHE:-/var/cache/agentenv-ci}"
AGENTENV_REGISTRY_ADDR="${AGENTENV_REGISTRY_ADDR:-127.0.0.1:5000}"
AGENTENV_BASE_SUITE="bookworm"
AGENTENV_BASE_PACKAGES="python3,python3-venv,python3-pip,python-is-python3,ca-certificates"
AGENTENV_BASE_TAGS="python:3.11-slim agentenv/base:py3.11"
_SVC_APT_UPDATED=""

_svc_log() {
    printf '[services %s] %s\n' "$(date -u +%H:%M:%S)" "$*" >&2
}

_svc_fail() {
    _svc_log "ERROR: $*"
    return 1
}

# Run "$@" and log how long it took under the label $1.
_svc_timed() {
    local label="$1" t0 rc
    shift
    t0=$(date +%s.%N)
    "$@"
    rc=$?
    _svc_log "$label: $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1fs", b-a}')$([ "$rc" -eq 0 ] || echo " (FAILED rc=$rc)")"
    return "$rc"
}

# _svc_apt_install CMD:PACKAGE ... installs each PACKAGE whose CMD is not on PATH.
_svc_apt_install() {
    local pair missing=()
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
    done
    [ "${#missing[@]}" -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        _svc_fail "need root to install ${missing[*]} (apt-get); install them or run as root"
        return 1
    fi
    if [ -z "$_SVC_APT_UPDATED" ]; then
        # A broken third-party source must not stop the install from the Debian mirror.
        _svc_timed "apt-get update" apt-get update -qq >/dev/null ||
            _svc_log "apt-get update reported errors; trying the install anyway"
        _SVC_APT_UPDATED=1
    fi
    _svc_log "installing ${missing[*]}"
    # policy-rc.d 101: the packages' init scripts must not start daemons we start ourselves.
    local policy=/usr/sbin/policy-rc.d created_policy=""
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
    fi
    DEBIAN_FRONTEND=noninteractive _svc_timed "apt-get install ${missing[*]}" \
        apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    local rc=$?
    [ -n "$created_policy" ] && rm -f "$policy"
    return "$rc"
}

_svc_docker_ok() {
    timeout 10 docker info >/dev/null 2>&1
}

start_docker() {
    _svc_docker_ok && return 0
    _svc_apt_install dockerd:docker.io docker:docker.io iptables:iptables || return 1
    local log="$AGENTENV_CI_CACHE/logs/dockerd.log" wait="${AGENTENV_DOCKER_WAIT:-60}" i
    mkdir -p "$(dirname "$log")"
    if ! pgrep -x dockerd >/dev/null 2>&1; then
        _svc_log "starting dockerd (log: $log)"
        setsid dockerd >>"$log" 2>&1 </dev/null 9>&- &
        disown 2>/dev/null || true
    else
        _svc_log "dockerd is running but not answering yet; waiting"
    fi
    local t0=$SECONDS
    for ((i = 0; i < wait * 4; i++)); do
        if _svc_docker_ok; then
            _svc_log "dockerd ready: $((SECONDS - t0))s"
            return 0
        fi
        sleep 0.25
    done
    _svc_fail "dockerd did not answer 'docker info' within ${wait}s; see $log:"
    tail -n 20 "$log" >&2 2>/dev/null
    return 1
}

# The Debian mirror the machine's apt sources name (deb822 or one-line format).
_svc_debian_mirror() {
    local uri
    uri=$(
        {
            cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
                awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}'
            cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
                awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; break}}'
        } | grep -E '/debian/?$' | head -n 1 || true
    )
    echo "${uri:-http://deb.debian.org/debian}"
}

_svc_image_exists() {
    docker image inspect "$1" >/dev/null 2>&1
}

# Build the Debian rootfs tarball with mmdebstrap (debootstrap as a fallback) into $1.
_svc_build_rootfs() {
    local out="$1" mirror="$2" tmp="${1%.tar}.partial.tar"
    rm -rf "$tmp"
    local cert=/etc/ssl/certs/ca-certificates.crt
    if command -v mmdebstrap >/dev/null 2>&1; then
        mmdebstrap --quiet --format=tar --variant=minbase --include="$AGENTENV_BASE_PACKAGES" \
            --customize-hook="cp $cert \"\$1/etc/ssl/certs/ca-certificates.crt\"" \
            --customize-hook="rm -f \"\$1\"/usr/lib/python3*/EXTERNALLY-MANAGED" \
            --customize-hook="rm -rf \"\$1\"/var/lib/apt/lists/* \"\$1\"/var/cache/apt/*.bin" \
            "$AGENTENV_BASE_SUITE" "$tmp" "$mirror" >&2 || return 1
    else
        local root="$out.root"
        rm -rf "$root"
        mkdir -p "$AGENTENV_CI_CACHE/debootstrap-debs"
        debootstrap --variant=minbase --include="$AGENTENV_BASE_PACKAGES" \
            --cache-dir="$AGENTENV_CI_CACHE/debootstrap-debs" \
            "$AGENTENV_BASE_SUITE" "$root" "$mirror" >/dev/null || return 1
        cp "$cert" "$root/etc/ssl/certs/ca-certificates.crt"
        rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
        rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/archives/*.deb
        tar -C "$root" -cf "$tmp" . || return 1
        rm -rf "$root"
    fi
    mv "$tmp" "$out"
}

# python:3.11-slim (and agentenv/base:py3.11) from Debian bookworm, no registry involved.
build_base_image() {
    local tag missing="" mirror key tarball
    mirror=$(_svc_debian_mirror)
    # The cache key: what goes into the rootfs (suite, mirror, packages, the host CA bundle).
    key=$(printf '%s\n' "$AGENTENV_BASE_SUITE" "$mirror" "$AGENTENV_BASE_PACKAGES" v1 |
        cat - /etc/ssl/certs/ca-certificates.crt | sha256sum | cut -c1-16)
    for tag in $AGENTENV_BASE_TAGS; do
        docker image inspect -f '{{.Comment}}' "$tag" 2>/dev/null | grep -qF "($key)" || missing=1
    done
    [ -z "$missing" ] && return 0
    tarball="$AGENTENV_CI_CACHE/rootfs/$AGENTENV_BASE_SUITE-python-$key.tar"
    mkdir -p "$(dirname "$tarball")"
    if [ ! -s "$tarball" ]; then
        _svc_apt_install mmdebstrap:mmdebstrap || _svc_apt_install debootstrap:debootstrap || return 1
        _svc_log "building the $AGENTENV_BASE_SUITE rootfs from $mirror (cached at $tarball)"
        _svc_timed "rootfs build" _svc_build_rootfs "$tarball" "$mirror" || return 1
    fi
    local first="" cert=/etc/ssl/certs/ca-certificates.crt
    for tag in $AGENTENV_BASE_TAGS; do
        if [ -z "$first" ]; then
            _svc_timed "docker import $tag" docker import \
                --change "ENV LANG=C.UTF-8" \
                --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
                --change "ENV PIP_CERT=$cert" \
                --change "ENV REQUESTS_CA_BUNDLE=$cert" \
                --change "ENV SSL_CERT_FILE=$cert" \
                --change "ENV PIP_DISABLE_PIP_VERSION_CHECK=1" \
                --change "ENV PIP_ROOT_USER_ACTION=ignore" \
                --change 'CMD ["python3"]' \
                --message "agentenv base image: debian $AGENTENV_BASE_SUITE + python3 ($key)" \
                "$tarball" "$tag" >/dev/null || return 1
            first="$tag"
        else
            docker tag "$first" "$tag" || return 1
        fi
    done
}

_svc_listening() {
    local host="${1%:*}" port="${1##*:}"
    timeout 2 bash -c "exec 3<>/dev/tcp/$host/$port" 2>/dev/null
}

start_registry() {
    local addr="$AGENTENV_REGISTRY_ADDR"
    _svc_listening "$addr" && return 0
    _svc_apt_install docker-registry:docker-registry || return 1
    local dir="$AGENTENV_CI_CACHE/registry" i
    mkdir -p "$dir/data" "$AGENTENV_CI_CACHE/logs"
    cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: $addr
EOF
    local log="$AGENTENV_CI_CACHE/logs/registry.log"
    _svc_log "starting docker-registry on $addr (log: $log)"
    setsid docker-registry serve "$dir/config.yml" >>"$log" 2>&1 </dev/null 9>&- &
    disown 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do
        _svc_listening "$addr" && return 0
        sleep 0.25
    done
    _svc_fail "docker-registry did not listen on $addr within 10s; see $log:"
    tail -n 20 "$log" >&2 2>/dev/null
    return 1
}

_svc_start_all() {
    start_docker || return 1
    build_base_image || return 1
    start_registry || return 1
    _svc_start_extras
}

# Each scripts/services.d/NAME.sh defines start_NAME (idempotent, like the ones above); a
# capability that needs its own component (a browser, podman, a Ray head...) adds one file
# there. A failed extra is logged and does not stop the others.
_svc_start_extras() {
    local file name dir
    dir="$(dirname "${BASH_SOURCE[0]}")/services.d"
    for file in "$dir"/*.sh; do
        [ -e "$file" ] || continue
        name="$(basename "$file" .sh)"
        name="${name//-/_}"
        # shellcheck disable=SC1090
        source "$file"
        _svc_timed "start_$name" "start_$name" || _svc_log "start_$name failed; its tests will fail on CI"
    done
    return 0
}

start_services() {
    export AGENTENV_TEST_REGISTRY="$AGENTENV_REGISTRY_ADDR"
    export AGENTENV_TEST_BASE_IMAGE="agentenv/base:py3.11"
    if [ -n "${AGENTENV_SKIP_SERVICES:-}" ]; then
        _svc_log "AGENTENV_SKIP_SERVICES set: starting nothing"
        return 0
    fi
    local t0=$SECONDS rc=0
    # A subshell with errexit off (scripts/test runs under `set -euo pipefail`): a failed
    # service must not stop the rest of the suite; the tests that need it fail on CI with
    # a reason. Daemons are started with setsid, so they outlive the subshell.
    (
        set +e +u +o pipefail
        mkdir -p "$AGENTENV_CI_CACHE" || exit 1
        # One setup at a time on a machine (several checkouts may run their tests at once).
        exec 9>"$AGENTENV_CI_CACHE/.services.lock"
        flock -w 900 9 || _svc_log "could not lock $AGENTENV_CI_CACHE/.services.lock; going on"
        _svc_start_all
    ) || rc=$?
    if [ "$rc" -ne 0 ]; then
        _svc_log "services FAILED after $((SECONDS - t0))s; the tests that need them will fail (CI=true) or skip"
        return 0
    fi
    _svc_log "services ready in $((SECONDS - t0))s (registry $AGENTENV_TEST_REGISTRY, base image $AGENTENV_TEST_BASE_IMAGE)"
}
