#!/usr/bin/env bash
# Nightly backup of every bare git repository as a bundle.
set -euo pipefail

backup_repo() {
  local repo="$1"
  git -C "$repo" bundle create "/backups/$(basename "$repo").bundle" --all
}

for repo in /srv/git/*.git; do
  backup_repo "$repo"
done
