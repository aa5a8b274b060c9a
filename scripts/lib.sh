# Shared by scripts/* and scripts/check.d/* (sourced, never run): the repository root, the gateway
# jar, the up-to-date check and the Python venvs. Defines:
#   root       the repository root (absolute)
#   jar        the gateway's jar; its dependencies are in gateway-server/target/lib
#   java_bin   java of JAVA_HOME, else the one on PATH
#   versitygw_bin  the versitygw binary scripts/setup.d/30-versitygw.sh builds (TRANSIT_VERSITYGW,
#              else a cache under XDG_CACHE_HOME or the user's home, the password file's when HOME
#              is unset, as the JVM's user.home is)
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jar=gateway-server/target/gateway-server-0.1.0-SNAPSHOT.jar
java_bin=${JAVA_HOME:+$JAVA_HOME/bin/}java
versitygw_version=v1.8.0
versitygw_bin=${TRANSIT_VERSITYGW:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/transit-flight/versitygw-$versitygw_version/versitygw}

# needs_build JAR...: true when a JAR (relative to root) or its target/lib is missing, or when a
# source, proto, pom or resource (a migration, the log configuration) of the gateway or of a
# JAR's own module is newer than the oldest JAR.
needs_build() {
  local oldest="" dirs="pom.xml proto gateway-core gateway-server" j
  for j in "$@"; do
    [ -f "$root/$j" ] && [ -d "$root/$(dirname "$j")/lib" ] || return 0
    if [ -z "$oldest" ] || [ "$root/$j" -ot "$root/$oldest" ]; then oldest=$j; fi
    case " $dirs " in *" ${j%%/*} "*) ;; *) dirs="$dirs ${j%%/*}" ;; esac
  done
  # shellcheck disable=SC2086
  [ -n "$(cd "$root" && find $dirs -newer "$oldest" \
      \( -name '*.java' -o -name '*.proto' -o -name 'pom.xml' -o -path '*/src/main/resources/*' \) \
      -type f -not -path '*/target/*' -print -quit)" ]
}

# ensure_venv DIR REQUIREMENTS [PIP_ARGS...]: DIR becomes a venv with the pins of REQUIREMENTS
# (installed again only when that file or its lock changed since) and then PIP_ARGS installed,
# every time: local packages change without a version bump. REQUIREMENTS' sibling .lock pins
# every other package, transitive ones and a local package's build backend included
# (PIP_CONSTRAINT reaches pip's isolated build environments too), so a new release of a
# dependency's dependency changes nothing here until the lock does.
ensure_venv() {
  local venv=$1 req=$2 lock=${2%.txt}.lock pins
  shift 2
  pins=("$req")
  # A venv cut short (no pip) is made again whole, not left to fail every later run.
  [ -x "$venv/bin/python" ] && [ -x "$venv/bin/pip" ] || python3 -m venv --clear "$venv"
  (
    if [ -f "$lock" ]; then
      pins+=("$lock")
      PIP_CONSTRAINT="$(cd "$(dirname "$lock")" && pwd)/$(basename "$lock")"
      export PIP_CONSTRAINT
    fi
    if ! cat "${pins[@]}" | cmp -s - "$venv/.requirements.txt"; then
      "$venv/bin/pip" install -q --disable-pip-version-check -r "$req"
      cat "${pins[@]}" > "$venv/.requirements.txt"
    fi
    if [ $# -gt 0 ]; then
      "$venv/bin/pip" install -q --disable-pip-version-check "$@"
    fi
  )
}

# test_venv: the venv scripts/test made (TRANSIT_VENV, else .venv; never a shared path such as
# /tmp, which another local user could have created).
test_venv() {
  echo "${TRANSIT_VENV:-$root/.venv}"
}
