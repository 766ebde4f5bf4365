#!/usr/bin/env bash
# Make sure the PostgreSQL the compensation-ledger tests use is up: 127.0.0.1:5432, trust auth, database "test".
# An existing installation's authentication is never changed; only a server this script installs itself is set
# to trust loopback connections. ROCKETMQ_RETRY_TEST_PG_URL points the tests at another server instead.
set -uo pipefail
say() { printf '[postgres] %s\n' "$*"; }

if [ -n "${ROCKETMQ_RETRY_TEST_PG_URL:-}" ]; then
  say "tests use ROCKETMQ_RETRY_TEST_PG_URL; not touching a local server"
  exit 0
fi

installed_here=0
if ! pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then
  if ! command -v pg_ctlcluster >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
      say "no PostgreSQL found: installing Debian's postgresql package"
      apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql >/dev/null
      installed_here=1
    else
      say "WARNING: no PostgreSQL on 127.0.0.1:5432 and none installable here; the PostgreSQL ledger tests will"
      say "fail. Start one (trust auth, database 'test') or set ROCKETMQ_RETRY_TEST_PG_URL."
      exit 0
    fi
  fi
  version=$(ls /etc/postgresql | sort -V | tail -1)
  if [ "$installed_here" = 1 ]; then
    hba=/etc/postgresql/$version/main/pg_hba.conf
    printf 'local all all trust\nhost all all 127.0.0.1/32 trust\n' | cat - "$hba" > "$hba.new" && mv "$hba.new" "$hba"
  fi
  say "starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  say "WARNING: PostgreSQL did not come up on 127.0.0.1:5432; the PostgreSQL ledger tests will fail"
  exit 0
fi
if ! psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'test'" 2>/dev/null | grep -q 1; then
  psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE test" >/dev/null 2>&1 \
    || say "WARNING: could not create database 'test' as postgres@127.0.0.1 (is loopback auth trust?)"
fi
say "ready on 127.0.0.1:5432"
