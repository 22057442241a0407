#!/usr/bin/env bash
# System packages the tests use: linuxptp (a real ptp4l pair in network namespaces), chrony
# (a real NTP server on loopback), redis-server (the shared speech cache) and Chromium (the
# browser tests drive Debian's build; no browser is downloaded). Installed with apt when
# running as root; otherwise the tests that need them say why they are skipped, and the
# browser tests fail without Chromium.
set -euo pipefail
need=()
command -v ptp4l >/dev/null 2>&1 || [ -x /usr/sbin/ptp4l ] || need+=(linuxptp)
command -v chronyd >/dev/null 2>&1 || [ -x /usr/sbin/chronyd ] || need+=(chrony)
command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
command -v ip >/dev/null 2>&1 || [ -x /usr/sbin/ip ] || [ -x /sbin/ip ] || need+=(iproute2)
command -v chromium >/dev/null 2>&1 || [ -n "${ALLNIGHTER_CHROMIUM:-}" ] || need+=(chromium)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "note: ${need[*]} not installed (needs root and apt); their tests will be skipped"
  exit 0
fi
echo "== installing ${need[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
