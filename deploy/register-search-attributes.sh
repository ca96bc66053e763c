#!/bin/sh
# Create the namespace if needed and register durable-tools' search attributes on it.
# Runs in the temporalio/admin-tools image (it has the `temporal` CLI); idempotent.
set -eu

: "${TEMPORAL_ADDRESS:=temporal:7233}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${NAMESPACE_RETENTION:=7d}"

echo "waiting for the Temporal frontend at ${TEMPORAL_ADDRESS} ..."
tries=0
until temporal operator cluster health --address "${TEMPORAL_ADDRESS}" >/dev/null 2>&1; do
  tries=$((tries + 1))
  [ "$tries" -lt 90 ] || { echo "Temporal never became healthy"; exit 1; }
  sleep 2
done

if ! temporal operator namespace describe --address "${TEMPORAL_ADDRESS}" \
    --namespace "${TEMPORAL_NAMESPACE}" >/dev/null 2>&1; then
  temporal operator namespace create --address "${TEMPORAL_ADDRESS}" \
    --namespace "${TEMPORAL_NAMESPACE}" --retention "${NAMESPACE_RETENTION}"
fi

# The names and types durable_tools/search_attributes.py declares.
for attribute in AgentStatus:Keyword AgentName:Keyword PendingApprovals:Int AwaitingTool:Keyword; do
  name=${attribute%%:*}
  type=${attribute##*:}
  tries=0
  # A fresh namespace takes a few seconds to reach every frontend cache: retry.
  until temporal operator search-attribute list --address "${TEMPORAL_ADDRESS}" \
      --namespace "${TEMPORAL_NAMESPACE}" | grep -qw "$name" \
    || temporal operator search-attribute create --address "${TEMPORAL_ADDRESS}" \
      --namespace "${TEMPORAL_NAMESPACE}" --name "$name" --type "$type"; do
    tries=$((tries + 1))
    [ "$tries" -lt 30 ] || { echo "could not register $name"; exit 1; }
    sleep 2
  done
  echo "search attribute $name ($type) is registered"
done
