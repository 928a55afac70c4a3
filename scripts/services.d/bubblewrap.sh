# shellcheck shell=bash
# bubblewrap (`bwrap`), the namespace sandbox the local provider runs agents, envs and verifiers
# under by default (docs/security.md, "The local provider"); tests/redteam/ attacks through it.
start_bubblewrap() {
    _svc_apt_install bwrap:bubblewrap
}
