#!/usr/bin/env bash
# Installs PostgreSQL if it is missing, starts a cluster listening on
# loopback only, creates the role and database the PostgreSQL trace sink's
# tests use, and prints their DSN on stdout (everything else goes to
# stderr):
#
#   export ORION_TEST_POSTGRES_DSN="$(packaging/ci-postgres.sh)"
#   go test ./internal/trace/tracepg/
#
# Idempotent: a second run finds everything in place and prints the same
# DSN. Needs Debian or Ubuntu (apt, pg_ctlcluster) and root or sudo.
set -euo pipefail

log() { echo "ci-postgres: $*" >&2; }

ROLE=orion_test
PASSWORD=orion_test
DB=orion_test

SUDO=()
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || { log "run as root or install sudo"; exit 1; }
	SUDO=(sudo)
fi

as_postgres() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		sudo -u postgres "$@"
	fi
}

if ! command -v pg_lsclusters >/dev/null || ! ls /usr/lib/postgresql/*/bin/postgres >/dev/null 2>&1; then
	command -v apt-get >/dev/null || {
		log "no apt-get here: install PostgreSQL yourself and set ORION_TEST_POSTGRES_DSN"
		exit 1
	}
	log "installing PostgreSQL"
	"${SUDO[@]}" apt-get update -qq >&2
	"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >&2
fi

# The newest cluster; some container images install the server without
# creating one.
cluster() { pg_lsclusters --no-header 2>/dev/null | sort -k1,1V | tail -n 1; }
if [ -z "$(cluster)" ]; then
	version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
	log "creating cluster $version/main"
	"${SUDO[@]}" pg_createcluster "$version" main >&2
fi
read -r version name port status _ <<<"$(cluster)"

if [ "$status" != online ]; then
	log "starting cluster $version/$name on 127.0.0.1:$port"
	"${SUDO[@]}" pg_ctlcluster "$version" "$name" start -- -o "-c listen_addresses=127.0.0.1" >&2
fi
for _ in $(seq 1 60); do
	pg_isready -q -h 127.0.0.1 -p "$port" && break
	sleep 0.5
done
pg_isready -q -h 127.0.0.1 -p "$port" || { log "cluster $version/$name does not answer on 127.0.0.1:$port"; exit 1; }

listen=$(as_postgres psql -p "$port" -qAtc "SHOW listen_addresses")
case "$listen" in
127.0.0.1 | localhost | ::1 | "127.0.0.1,::1" | "localhost,127.0.0.1") ;;
*) log "warning: the cluster listens on '$listen', not only on loopback (it was started before this script)" ;;
esac

as_postgres psql -p "$port" -v ON_ERROR_STOP=1 -qAt >&2 <<SQL
DO \$\$ BEGIN
	IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '$ROLE') THEN
		CREATE ROLE $ROLE LOGIN PASSWORD '$PASSWORD';
	END IF;
END \$\$;
SQL
if ! as_postgres psql -p "$port" -qAtc "SELECT 1 FROM pg_database WHERE datname = '$DB'" | grep -q 1; then
	as_postgres createdb -p "$port" -O "$ROLE" "$DB" >&2
fi

dsn="postgres://$ROLE:$PASSWORD@127.0.0.1:$port/$DB?sslmode=disable"
psql "$dsn" -qAtc "SELECT 1" >/dev/null || { log "cannot log in as $ROLE over 127.0.0.1:$port"; exit 1; }
log "ready"
echo "$dsn"
