#!/usr/bin/env bash
# Builds the etcd Go Mutex adapter offline from Debian's Go sources (golang-etcd-server-dev,
# GOPATH mode: no module proxy), which scripts/install-deps installs.
set -euo pipefail
cd "$(dirname "$0")"
bash ../../scripts/install-deps golang-go golang-etcd-server-dev
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="${GOCACHE:-/tmp/lockbench-gocache}" \
  go build -o etcd-go-adapter adapter.go
