#!/bin/sh
# Make the compose stack's secrets once, in deploy/secrets/ (or the directory given):
#   postgres.env          POSTGRES_PASSWORD / POSTGRES_PWD for postgresql and Temporal
#   codec-keys.json       the AES-256 payload key (DURABLE_TOOLS_CODEC_KEY_FILE format)
#   inbox-session-secret  signs the inbox's login cookies; the codec server accepts them
# Existing files are kept: a new codec key would leave every encrypted history unreadable
# (rotate by editing codec-keys.json, see docs/encryption.md). Safe to re-run.
set -eu

dir=${1:-$(dirname "$0")/secrets}
umask 077
mkdir -p "$dir"
# Other host users must not read the directory; the files inside are mode 644 because
# Compose bind-mounts secrets with their host owner and mode, and the app image runs as
# uid 10001.
chmod 700 "$dir"

random() {
  head -c "$1" /dev/urandom | base64 | tr -d '\n'
}

if [ ! -e "$dir/postgres.env" ]; then
  password=$(random 24 | tr -d '/+=')
  printf 'POSTGRES_PASSWORD=%s\nPOSTGRES_PWD=%s\n' "$password" "$password" >"$dir/postgres.env"
  echo "made $dir/postgres.env"
fi

if [ ! -e "$dir/codec-keys.json" ]; then
  printf '{"current": "k1", "keys": {"k1": "%s"}}\n' "$(random 32)" >"$dir/codec-keys.json"
  chmod 644 "$dir/codec-keys.json"
  echo "made $dir/codec-keys.json"
fi

if [ ! -e "$dir/inbox-session-secret" ]; then
  random 32 >"$dir/inbox-session-secret"
  echo >>"$dir/inbox-session-secret"
  chmod 644 "$dir/inbox-session-secret"
  echo "made $dir/inbox-session-secret"
fi
