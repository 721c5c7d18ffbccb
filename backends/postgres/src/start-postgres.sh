# --- The same for both servers (backends/postgres/src/start-postgres.sh, included by server.rs) ---
#
# One server of the pair comes up the way its data directory and its peer say:
# - data that is a replica's (standby.signal): start it; it resumes streaming from the
#   primary its postgresql.auto.conf names (written by pg_basebackup -R);
# - data that is a primary's while the peer already serves as primary: this server is a
#   former primary (the peer was promoted while it was down), so its data is re-cloned from
#   the peer and it starts as the peer's replica: a pair never has two primaries by our hand;
# - data that is a primary's and no peer is primary: start it as the primary;
# - no data: the first member (id 1) runs initdb (database `lockbench`, extension
#   pg_stat_statements, in single-user mode, before anyone can connect) unless a peer is
#   already primary; any other member waits for a primary and clones it.
set -euo pipefail
bin=/usr/lib/postgresql/15/bin
export PGCONNECT_TIMEOUT=2

say() { echo "lockbench start-postgres ($name): $*" >&2; }

# A secure cluster (tls_key set above; backends/postgres/src/secure.rs): the certificates in
# this server's own tls/ (mode 0600, before a container's chown below), every psql and
# pg_basebackup over TLS with the server's certificate as its client certificate, and the
# passwords from pgpass (mode 0600). pg_basebackup -R writes these into primary_conninfo.
pg_user=postgres
if [ -n "${tls_key:-}" ]; then
  mkdir -p "$root/tls"
  install -m 600 "$tls_ca" "$root/tls/ca.pem"
  install -m 600 "$tls_cert" "$root/tls/server.pem"
  install -m 600 "$tls_key" "$root/tls/server.key"
  export PGSSLMODE=verify-full PGSSLROOTCERT="$root/tls/ca.pem" \
    PGSSLCERT="$root/tls/server.pem" PGSSLKEY="$root/tls/server.key" PGPASSFILE="$root/pgpass"
  pg_user=lockbench_replication
fi

# PostgreSQL refuses to run as root: initdb and postgres exit at once. As root, every
# PostgreSQL program runs as the `postgres` user: in a user namespace that maps it to root
# outside (managed mode: the files stay root's, so a state directory under /root, mode 700,
# still works, and the cluster signals the process as it does any server), or, where user
# namespaces are refused (Docker's default seccomp profile), with setpriv (which execs, so
# the pid stays the server's) after chowning this server's directory to `postgres`.
as_pg=()
if [ "$(id -u)" = 0 ]; then
  if unshare --user --map-user=postgres --map-group=postgres true 2>/dev/null; then
    as_pg=(unshare --user --map-user=postgres --map-group=postgres --)
  else
    chown -R postgres:postgres "$root"
    as_pg=(setpriv --reuid=postgres --regid=postgres --init-groups --)
  fi
fi

# A killed server's children (backends, walwriter, ...) exit once they notice the postmaster
# died; until they do, a new postmaster refuses the data directory ("pre-existing shared
# memory block is still in use"), and a postmaster.pid naming a pid not yet reaped stops it
# too. Whatever still runs in the data directory is a leftover of this server (the cluster
# starts a server only when it is not running): SIGKILL it, then drop the stale pid file.
real_data=$(realpath -m "$data")
leftovers() {
  local p
  for p in /proc/[0-9]*; do
    if [ "$(readlink "$p/cwd" 2>/dev/null)" = "$real_data" ]; then echo "${p#/proc/}"; fi
  done
}
for _ in $(seq 100); do
  pids=$(leftovers)
  [ -z "$pids" ] && break
  say "stopping leftovers of an earlier run in $data: $pids"
  kill -9 $pids 2>/dev/null || true
  sleep 0.1
done
rm -f "$data/postmaster.pid"

is_primary() {
  [ "$("$bin/psql" -h "${1%:*}" -p "${1##*:}" -U postgres -d lockbench -tAqX \
        -c 'SELECT pg_is_in_recovery()' 2>/dev/null)" = f ]
}

current_primary() {
  local peer
  for peer in $peers; do
    if is_primary "$peer"; then echo "$peer"; return 0; fi
  done
  return 1
}

clone_from() {
  say "cloning the primary at $1 (pg_basebackup -R): starting as its replica"
  rm -rf "$data.new"
  "${as_pg[@]}" "$bin/pg_basebackup" -h "${1%:*}" -p "${1##*:}" -U "$pg_user" -D "$data.new" \
    -R -X stream -c fast
  rm -rf "$data"
  mv "$data.new" "$data"
}

init() {
  say "initdb, database lockbench, extension pg_stat_statements: starting as the primary"
  rm -rf "$data.new"
  "${as_pg[@]}" "$bin/initdb" -D "$data.new" -U postgres --auth=trust -E UTF8 --no-locale \
    --no-sync --no-instructions >/dev/null
  echo "CREATE DATABASE lockbench" |
    "${as_pg[@]}" "$bin/postgres" --single -D "$data.new" template1 >/dev/null
  echo "CREATE EXTENSION pg_stat_statements" |
    "${as_pg[@]}" "$bin/postgres" --single -D "$data.new" lockbench >/dev/null
  if [ -n "${tls_key:-}" ]; then
    say "roles: lockbench, lockbench_replication, postgres's password (roles.sql)"
    "${as_pg[@]}" "$bin/postgres" --single -D "$data.new" lockbench <"$root/roles.sql" >/dev/null
  fi
  rm -rf "$data"
  mv "$data.new" "$data"
}

if [ -s "$data/PG_VERSION" ]; then
  if [ ! -e "$data/standby.signal" ] && primary=$(current_primary); then
    say "$primary serves as primary and this data is a former primary's"
    clone_from "$primary"
  fi
elif [ "$id" = 1 ] && ! primary=$(current_primary); then
  init
else
  deadline=$((SECONDS + 120))
  until primary=$(current_primary); do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "no primary among $peers answered within 120 s: nothing to clone; start the primary first"
      exit 1
    fi
    sleep 0.5
  done
  clone_from "$primary"
fi
exec "${as_pg[@]}" "$bin/postgres" -D "$data" -c config_file="$conf"
