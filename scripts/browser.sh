#!/usr/bin/env bash
# The browser the status page's browser test drives: Debian's chromium and its chromedriver
# (Selenium talks to /usr/bin/chromedriver; Playwright's and Selenium Manager's own browser
# downloads cannot be reached from these machines, Debian's mirror can).
#
#   scripts/browser.sh ensure    install chromium and chromium-driver when either is missing
#                                (apt-get; a few milliseconds when both are there)
#
# `apt-get update` runs only when the install fails without it (a stale or empty package list):
# on a machine whose lists are fresh, installing is one apt-get call. Needs root to install.
set -euo pipefail

PACKAGES=(chromium chromium-driver)

present() {
    command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1
}

install() {
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${PACKAGES[@]}"
}

ensure() {
    present && return 0
    echo "installing ${PACKAGES[*]} (apt-get)"
    if ! install; then
        DEBIAN_FRONTEND=noninteractive apt-get update -q
        install
    fi
    present || { echo "chromium or chromedriver still missing after apt-get" >&2; exit 1; }
}

case "${1:-}" in
    ensure) ensure ;;
    *)
        echo "usage: $0 ensure" >&2
        exit 2
        ;;
esac
