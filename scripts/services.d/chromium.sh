# Chromium for the explorer's browser tests (plugins/explorer/tests/test_browser.py): Debian's
# `chromium` at /usr/bin/chromium, driven by the Python `playwright` of the dev group. Never
# `playwright install` (it downloads a browser build).
start_chromium() {
    _svc_apt_install chromium:chromium || return 1
    [ -x /usr/bin/chromium ] || _svc_fail "chromium installed but /usr/bin/chromium is missing"
}
