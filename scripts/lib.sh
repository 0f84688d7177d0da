# Shared by scripts/demo, scripts/test and scripts/bench: the packages cairn needs, and installing them.
# Sourced, not run.

# Debian 12 packages. The demo needs the first list; tests and benchmarks need both.
CAIRN_DEMO_PACKAGES="g++ cmake ninja-build nlohmann-json3-dev libfmt-dev libsqlite3-dev"
CAIRN_TEST_PACKAGES="catch2 libgtest-dev libbenchmark-dev python3-jsonschema libyaml-cpp-dev libcli11-dev
  libcpp-httplib-dev libjwt-dev openssl pkgconf libre2-dev json-schema-test-suite libspdlog-dev libhnswlib-dev
  clang-format-14"
# Sanitizer builds and fuzzing use clang 14 and its runtimes.
CAIRN_SANITIZER_PACKAGES="clang libclang-rt-14-dev"
# The durable stores (cairn::sqlite, cairn::postgres) and the throwaway PostgreSQL server their tests run against.
CAIRN_STORE_PACKAGES="libsqlite3-dev libpq-dev postgresql"

cairn_root() { cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd; }

# cairn_ensure_packages PKG... — installs what is missing with apt-get when root; otherwise prints the exact
# command and stops.
cairn_ensure_packages() {
  local missing=()
  local pkg
  for pkg in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
      missing+=("$pkg")
    fi
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ]; then
    echo "cairn: installing ${missing[*]}" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >&2
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
  else
    echo "cairn: missing packages. Install them with:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
}

cairn_jobs() { nproc 2>/dev/null || echo 2; }

# cairn_start_postgres — starts a throwaway PostgreSQL cluster (scripts/postgres) in a new temporary folder, exports
# CAIRN_TEST_PG_CONNINFO and CAIRN_TEST_PG_DIR, and stops and removes it when the calling script exits, however it
# exits. A server that cannot start stops the script with an error.
cairn_start_postgres() {
  local dir exports
  dir=$(mktemp -d "${TMPDIR:-/tmp}/cairn-pg.XXXXXX")
  CAIRN_PG_CLEANUP_DIR="$dir"
  # The script's absolute path, taken now: lib.sh may have been sourced by a relative path, and the caller may change
  # directory before it exits.
  CAIRN_PG_SCRIPT="$(cairn_root)/scripts/postgres"
  trap '"$CAIRN_PG_SCRIPT" stop "$CAIRN_PG_CLEANUP_DIR"' EXIT
  if ! exports=$("$CAIRN_PG_SCRIPT" start "$dir"); then
    echo "cairn: the PostgreSQL test server did not start" >&2
    exit 1
  fi
  eval "$exports"
  echo "cairn: PostgreSQL test server running ($CAIRN_TEST_PG_CONNINFO)" >&2
}
