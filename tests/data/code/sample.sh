#!/usr/bin/env bash
set -euo pipefail

BACKUP_DIR=/var/backups

# Prints a message { not a brace }.
log() {
  echo "[$(date)] $*"
}

# Rotates old backups.
function rotate {
  local keep=${1:-7}
  ls -t "$BACKUP_DIR" | tail -n +"$keep" | xargs -r rm --
}

function cleanup() {
  rm -rf /tmp/work
}

log "starting"
rotate 5
