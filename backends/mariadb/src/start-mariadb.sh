# --- The same for both servers (backends/mariadb/src/start-mariadb.sh, included by server.rs) ---
#
# One server of the pair comes up the way its data directory and its peer say:
# - data that is a replica's (master.info) while a peer serves as primary: start it as that
#   peer's replica (it resumes from its own GTID position);
# - data that is a primary's while a peer already serves as primary: this server is a former
#   primary (the peer was promoted while it was down) whose last transactions the peer may
#   never have received, so its data is made again and it replays the new primary's binary
#   log from the start: a pair never has two primaries by our hand;
# - data and no peer serving as primary: start it as what it was;
# - no data: the first member (id 1) starts as the primary unless a peer already is; any
#   other member waits for a primary and replays its binary log from the start.
#
# Every server keeps its whole binary log (log_slave_updates, no expiry), so any of them can
# bring a new replica up to date; the binary log holds little besides the fencing
# sequence's blocks (GET_LOCK writes nothing). Users, the database and the sequence are made
# by the init file on every start with sql_log_bin=0: the same on both, never replicated.
set -euo pipefail

say() { echo "lockbench start-mariadb ($name): $*" >&2; }

# Temporary tables of this server's own: two installs sharing /tmp at once collide there
# ("Unknown table 'mysql.tmp_user_sys'").
mkdir -p "$root/tmp"

client=(mariadb --no-defaults --connect-timeout=2 -N -B)
# A secure cluster (tls_key set above; backends/mariadb/src/secure.rs): the certificates in
# this server's own tls/ (mode 0600), the peer asked over TLS as the administrator (the
# password in the environment of that one command, never on a command line).
if [ -n "${tls_key:-}" ]; then
  mkdir -p "$root/tls"
  install -m 600 "$tls_ca" "$root/tls/ca.pem"
  install -m 600 "$tls_cert" "$root/tls/server.pem"
  install -m 600 "$tls_key" "$root/tls/server.key"
  client+=(--ssl --ssl-ca="$root/tls/ca.pem" --ssl-cert="$root/tls/server.pem"
    --ssl-key="$root/tls/server.key" --ssl-verify-server-cert -u root)
else
  client+=(-u lockbench)
fi

# A killed server's leftovers: whatever still runs with this data directory as its working
# directory is an earlier incarnation of this server (the cluster starts a server only when
# it is not running).
real_data=$(realpath -m "$data")
for _ in $(seq 100); do
  pids=""
  for p in /proc/[0-9]*; do
    if [ "$(readlink "$p/cwd" 2>/dev/null)" = "$real_data" ]; then pids="$pids ${p#/proc/}"; fi
  done
  [ -z "$pids" ] && break
  say "stopping leftovers of an earlier run in $data:$pids"
  kill -9 $pids 2>/dev/null || true
  sleep 0.1
done

is_primary() {
  [ "$(MYSQL_PWD="${admin_password:-}" "${client[@]}" -h "${1%:*}" -P "${1##*:}" \
        -e 'SELECT @@read_only' 2>/dev/null)" = 0 ]
}

current_primary() {
  local peer
  for peer in $peers; do
    if is_primary "$peer"; then echo "$peer"; return 0; fi
  done
  return 1
}

# Each data directory made gets a server id of its own (the member's id * 1000 + how many this
# member has made): a replica skips events carrying its own server id, so a former primary
# made again under its old id would skip its own old transactions in the new primary's log.
fresh() {
  echo $(($(cat "$root/generation" 2>/dev/null || echo 0) + 1)) >"$root/generation"
  rm -rf "$data.new"
  mariadb-install-db --no-defaults --datadir="$data.new" --tmpdir="$root/tmp" --user=root \
    --skip-test-db --skip-name-resolve \
    --innodb-log-file-size=16M >"$root/install-db.log" 2>&1 || {
    say "mariadb-install-db failed:"; cat "$root/install-db.log" >&2; exit 1; }
  rm -rf "$data"
  mv "$data.new" "$data"
}

# The init file: the same setup on every start, then the role.
replica_of() {
  say "starting as the replica of $1"
  {
    cat "$root/setup.sql"
    echo "SET GLOBAL read_only = 1;"
    echo "STOP SLAVE;"
    echo "CHANGE MASTER TO MASTER_HOST='${1%:*}', MASTER_PORT=${1##*:}, $master_auth, MASTER_CONNECT_RETRY=1, MASTER_USE_GTID=slave_pos;"
    echo "START SLAVE;"
  } >"$root/init.sql"
}

as_primary() {
  say "starting as the primary"
  { cat "$root/setup.sql"; echo "SET GLOBAL read_only = 0;"; } >"$root/init.sql"
}

if [ -d "$data/mysql" ]; then
  if primary=$(current_primary); then
    if [ -e "$data/master.info" ]; then
      replica_of "$primary"
    else
      say "$primary serves as primary and this data is a former primary's: made again"
      fresh
      replica_of "$primary"
    fi
  elif [ -e "$data/master.info" ]; then
    say "no peer answers as primary; starting as a replica that waits for one"
    { cat "$root/setup.sql"; echo "SET GLOBAL read_only = 1;"; } >"$root/init.sql"
  else
    as_primary
  fi
elif [ "$id" = 1 ] && ! primary=$(current_primary); then
  fresh
  as_primary
else
  deadline=$((SECONDS + 120))
  until primary=$(current_primary); do
    if [ "$SECONDS" -ge "$deadline" ]; then
      say "no primary among $peers answered within 120 s: start the primary first"
      exit 1
    fi
    sleep 0.5
  done
  fresh
  replica_of "$primary"
fi
cd "$data"
exec mariadbd --defaults-file="$conf" --user=root \
  --server-id=$((id * 1000 + $(cat "$root/generation" 2>/dev/null || echo 0)))
