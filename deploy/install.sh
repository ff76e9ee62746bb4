#!/bin/sh
# Installs edgenode as a system service, from this checkout, on a Linux machine that has Node.js
# and npm (deno is fetched from npm when it is not there). Run it as root; running it again
# updates the installation and keeps the data.
#
#   sudo sh deploy/install.sh             then: sudo systemctl enable --now edgenode
#
# What it puts where (PREFIX /usr/local by default):
#   PREFIX/lib/edgenode/deno          deno 2.9.6, a copy of its own (the service user must be
#                                     able to run it; a deno under root's home is not)
#   PREFIX/lib/edgenode/edgenode.js   the program, bundled from this checkout (deno task bundle)
#   PREFIX/bin/edgenode               the command: that deno runs that bundle with the single
#                                     executable's permissions (src/program/executable_flags.ts)
#   /etc/systemd/system/edgenode.service   deploy/edgenode.service, for PREFIX
#   /var/lib/edgenode                 the data directory (0700), owned by the system user edgenode
#
# Options (or the environment variable in brackets):
#   --prefix DIR      instead of /usr/local [PREFIX]
#   --destdir DIR     stage everything below DIR, for packaging or a test [DESTDIR]
#   --unit-dir DIR    where the unit goes, instead of /etc/systemd/system [UNIT_DIR]
#   --deno FILE       the deno 2.9.6 to copy, instead of looking on PATH or npm [EDGENODE_DENO]
#   --bundle FILE     a bundle already built (deno task bundle), instead of building one
#   --no-user         do not create the system user edgenode [EDGENODE_NO_USER=1]; also when
#                     not root or with --destdir
set -eu

DENO_VERSION=2.9.6
USER_NAME=edgenode
DATA_DIR=/var/lib/edgenode
ROOT=$(cd "$(dirname "$0")/.." && pwd)

PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
UNIT_DIR=${UNIT_DIR:-/etc/systemd/system}
DENO_GIVEN=${EDGENODE_DENO:-}
BUNDLE_GIVEN=
NO_USER=${EDGENODE_NO_USER:-}

fail() {
  echo "install.sh: $*" >&2
  exit 2
}

while [ $# -gt 0 ]; do
  case $1 in
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift 2 ;;
    --destdir) DESTDIR=${2:?--destdir needs a directory}; shift 2 ;;
    --unit-dir) UNIT_DIR=${2:?--unit-dir needs a directory}; shift 2 ;;
    --deno) DENO_GIVEN=${2:?--deno needs a file}; shift 2 ;;
    --bundle) BUNDLE_GIVEN=${2:?--bundle needs a file}; shift 2 ;;
    --no-user) NO_USER=1; shift ;;
    -h | --help) sed -n '2,/^set -eu/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) fail "unknown option '$1' (--help lists them)" ;;
  esac
done
case $PREFIX in /*) ;; *) fail "--prefix must be an absolute path (got '$PREFIX')" ;; esac

LIB=$PREFIX/lib/edgenode
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# Whether $1 is deno $DENO_VERSION.
is_wanted_deno() {
  [ -x "$1" ] && "$1" --version 2>/dev/null | head -n 1 | grep -qx "deno $DENO_VERSION.*"
}

# The deno to copy: given, already installed here, on PATH, or fetched from npm. Printed is
# the binary itself (npm's bin/deno may be a link or a Node.js wrapper around it).
find_deno() {
  if [ -n "$DENO_GIVEN" ]; then
    is_wanted_deno "$DENO_GIVEN" || fail "$DENO_GIVEN is not deno $DENO_VERSION"
    candidate=$DENO_GIVEN
  elif is_wanted_deno "$DESTDIR$LIB/deno"; then
    candidate=$DESTDIR$LIB/deno
  elif command -v deno >/dev/null 2>&1 && is_wanted_deno "$(command -v deno)"; then
    candidate=$(command -v deno)
  else
    command -v npm >/dev/null 2>&1 || fail "no deno $DENO_VERSION and no npm to get it: install Node.js and npm"
    echo "fetching deno $DENO_VERSION from npm" >&2
    npm install --no-save --no-audit --no-fund --prefer-offline --loglevel=error \
      --prefix "$WORK/npm" "deno@$DENO_VERSION" >&2 || fail "npm could not install deno@$DENO_VERSION"
    candidate=$WORK/npm/node_modules/.bin/deno
  fi
  "$candidate" eval --no-config 'console.log(Deno.execPath())'
}

DENO=$(find_deno)
mkdir -p "$DESTDIR$LIB" "$DESTDIR$PREFIX/bin"
# Put in place by a rename: a running node keeps the files it started with.
place() { # FILE MODE TARGET
  install -m "$2" "$1" "$3.new"
  mv -f "$3.new" "$3"
}
cmp -s "$DENO" "$DESTDIR$LIB/deno" || place "$DENO" 0755 "$DESTDIR$LIB/deno"
DENO=$DESTDIR$LIB/deno

if [ -n "$BUNDLE_GIVEN" ]; then
  cp "$BUNDLE_GIVEN" "$WORK/edgenode.js"
else
  echo "bundling $ROOT/src/executable.ts" >&2
  # deno task bundle's command, written elsewhere.
  (cd "$ROOT" && "$DENO" bundle --quiet --node-modules-dir=none --platform=deno \
    -o "$WORK/edgenode.js" src/executable.ts) || fail "deno bundle failed"
fi
place "$WORK/edgenode.js" 0644 "$DESTDIR$LIB/edgenode.js"

FLAGS=$(cd "$ROOT" && "$DENO" eval --no-config \
  'const { EXECUTABLE_FLAGS } = await import("./src/program/executable_flags.ts");
   console.log(EXECUTABLE_FLAGS.join(" "))')
cat > "$WORK/edgenode" <<EOF
#!/bin/sh
# edgenode, installed by deploy/install.sh: the bundled program, run by its own deno with the
# single executable's permissions (src/program/executable_flags.ts).
lib=\$(dirname "\$(readlink -f "\$0")")/../lib/edgenode
exec "\$lib/deno" run $FLAGS --no-config "\$lib/edgenode.js" "\$@"
EOF
place "$WORK/edgenode" 0755 "$DESTDIR$PREFIX/bin/edgenode"

SYSTEM=
[ -n "$DESTDIR" ] || [ "$(id -u)" != 0 ] || SYSTEM=1
if [ -n "$SYSTEM" ] && [ -z "$NO_USER" ] && ! id "$USER_NAME" >/dev/null 2>&1; then
  useradd --system --user-group --home-dir "$DATA_DIR" --no-create-home \
    --shell /usr/sbin/nologin "$USER_NAME" || fail "could not create the user $USER_NAME"
  echo "created the system user $USER_NAME" >&2
fi
mkdir -p "$DESTDIR$DATA_DIR"
chmod 0700 "$DESTDIR$DATA_DIR"
if [ -n "$SYSTEM" ] && id "$USER_NAME" >/dev/null 2>&1; then
  chown "$USER_NAME:" "$DESTDIR$DATA_DIR"
fi

mkdir -p "$DESTDIR$UNIT_DIR"
sed "s#/usr/local/lib/edgenode#$LIB#g" "$ROOT/deploy/edgenode.service" > "$WORK/edgenode.service"
place "$WORK/edgenode.service" 0644 "$DESTDIR$UNIT_DIR/edgenode.service"
if [ -z "$DESTDIR" ] && [ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1; then
  systemctl daemon-reload
fi

echo "installed $("$DESTDIR$PREFIX/bin/edgenode" version | head -n 1) in $DESTDIR$LIB," \
  "the command $DESTDIR$PREFIX/bin/edgenode and the unit $DESTDIR$UNIT_DIR/edgenode.service"
[ -n "$DESTDIR" ] || echo "start it with: systemctl enable --now edgenode"
