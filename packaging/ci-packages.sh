#!/usr/bin/env bash
# Installs the Debian packages named as arguments that are not installed
# yet (apt-get update only when one is missing), for CI and for a
# developer who wants the browser tests to run:
#
#   packaging/ci-packages.sh chromium libkrb5-dev
#
# Needs Debian or Ubuntu and root or sudo.
set -euo pipefail

missing=()
for pkg in "$@"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

SUDO=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { echo "ci-packages: run as root or install sudo" >&2; exit 1; }
	SUDO=(sudo)
fi
echo "ci-packages: installing ${missing[*]}" >&2
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
