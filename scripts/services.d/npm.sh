# npm for the CLI coding agents (plugins/cli-agents, tests/test_cli_agents_e2e.py): it installs
# each CLI and the pinned Node.js it runs with from the npm registry, so any npm works (Debian's
# is enough; a Node.js already on the machine, with its npm, is kept).
start_npm() {
    _svc_apt_install npm:npm || return 1
    command -v npm >/dev/null 2>&1 || _svc_fail "npm installed but not on PATH"
}
