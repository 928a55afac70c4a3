# shellcheck shell=bash
# Start the real components the tests need (TESTING.md). Sourced by scripts/test.
# Each start_* function is idempotent: it reuses what is already running or cached.

start_services() {
    :
}
