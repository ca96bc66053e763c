#!/bin/sh
# Installs Debian packages a part of the test suite needs, when we may: root, or
# passwordless sudo, with apt-get. Otherwise it prints the one command to run and exits 0:
# those tests then skip (under CI they fail instead, and say why).
#
# Usage: scripts/debian_install.sh "WHAT NEEDS THEM" PACKAGE...
set -e
needs="$1"
shift
if ! command -v apt-get >/dev/null; then
  echo "make: $needs: no apt-get here to install $*; install it yourself"
  exit 0
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=""
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  sudo="sudo -n"
else
  echo "make: $needs: run 'sudo apt-get install $*'"
  exit 0
fi
echo "make: installing Debian's $* for $needs"
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@"
