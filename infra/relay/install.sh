#!/bin/sh
# Installs the egress-fleet relay: /opt/egress-relay (the bundle `npm run build` wrote to dist/relay/
# and its npm dependencies), /etc/egress-relay/{config.yaml,relay.env}, the system user and the
# systemd unit. Run as root on the relay host from a checkout that has been built.
#
#   infra/relay/install.sh [--root DIR] [--dist DIR] [--node PATH] [--skip-npm]
#
#   --root DIR   install under DIR instead of / (an image, or a test); systemctl is not called
#   --dist DIR   the build output (default: dist/ of this checkout)
#   --node PATH  Node.js 20 or newer for ExecStart (default: `node` on PATH)
#   --skip-npm   do not run `npm ci` (the dependencies are provided some other way)
#
# An existing config.yaml, relay.env or key.json is never overwritten, nor is a drop-in in
# /etc/systemd/system/egress-relay.service.d/ (local changes to the unit go there). The relay's user
# joins the host groups its config needs (`libvirt` for a kvm host on qemu:///system): run this
# again after such a change to the config.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
root=/
dist="$repo/dist"
node=$(command -v node || true)
skip_npm=no

die() {
  echo "install.sh: $*" >&2
  exit 1
}

while [ $# -gt 0 ]; do
  case "$1" in
    --root) root=${2:?--root needs a directory}; shift 2 ;;
    --dist) dist=${2:?--dist needs a directory}; shift 2 ;;
    --node) node=${2:?--node needs a path}; shift 2 ;;
    --skip-npm) skip_npm=yes; shift ;;
    -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown argument: $1 (see --help)" ;;
  esac
done

[ "$(id -u)" -eq 0 ] || die "run as root (it creates a user and writes /etc)"
[ -d "$root" ] || die "--root $root is not a directory"
for f in main.js host-groups.js; do
  [ -f "$dist/relay/$f" ] || die "$dist/relay/$f is missing: run \`npm run build\` first"
done
[ -n "$node" ] && [ -x "$node" ] || die "no node found: pass --node /path/to/node (Node.js 20 or newer)"
major=$("$node" -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 20 ] || die "$node is Node.js $major; the relay needs 20 or newer"

prefix="${root%/}"
opt="$prefix/opt/egress-relay"
etc="$prefix/etc/egress-relay"

# The host groups the config needs (relay/host-groups.ts), from the config the relay will read: the
# one installed already, else the sample about to be. They must exist: libvirt's package makes its group.
config="$etc/config.yaml"
[ -e "$config" ] || config="$here/config.yaml"
groups=$("$node" "$dist/relay/host-groups.js" "$config") || die "fix $config, then run install.sh again"
for g in $groups; do
  grep -q "^$g:" "$prefix/etc/group" 2>/dev/null ||
    die "$config names a kvm host on this host's libvirt socket, so the relay must join group $g, which does not exist: install libvirt first (Debian: apt install libvirt-daemon-system)"
done

# The user, its group and its memberships, from the sysusers.d entry (works on a directory tree, no
# running systemd needed). Membership lives in the group database: systemd gives a User= service
# that user's groups from there, and polkit (libvirt on Fedora/RHEL) asks it too.
install -d -m 0755 "$prefix/etc"
sysusers="$prefix/usr/lib/sysusers.d/egress-relay.conf"
install -D -m 0644 "$here/sysusers.conf" "$sysusers"
for g in $groups; do printf 'm egress-relay %s\n' "$g" >>"$sysusers"; done
if command -v systemd-sysusers >/dev/null; then
  systemd-sysusers --root="$root" "$sysusers"
elif [ "$root" = / ]; then
  getent passwd egress-relay >/dev/null ||
    useradd --system --home-dir /var/lib/egress-relay --no-create-home --shell /usr/sbin/nologin egress-relay
  for g in $groups; do usermod --append --groups "$g" egress-relay; done
else
  die "systemd-sysusers is needed to create the user under --root"
fi
uid=$(awk -F: '$1 == "egress-relay" { print $3 }' "$prefix/etc/passwd")
gid=$(awk -F: '$1 == "egress-relay" { print $3 }' "$prefix/etc/group")
[ -n "$uid" ] && [ -n "$gid" ] || die "user egress-relay was not created in $prefix/etc/passwd"

# The program: replaced as a whole, owned by root, read-only to the relay.
rm -rf "$opt"
install -d -m 0755 "$opt"
for f in main.js main.js.map; do
  if [ -f "$dist/relay/$f" ]; then install -m 0644 "$dist/relay/$f" "$opt/$f"; fi
done
# The relay's own manifest and lock (scripts/build.mjs#writeRelayPackage): only what main.js imports.
install -m 0644 "$dist/relay/package.json" "$dist/relay/package-lock.json" "$opt/"
if [ "$skip_npm" = no ]; then
  (cd "$opt" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund)
fi

# Configuration: root-owned, readable by the relay's group only. The key stays root's (LoadCredential).
install -d -m 0750 -o 0 -g "$gid" "$etc"
for f in config.yaml relay.env; do
  [ -e "$etc/$f" ] || install -m 0640 -o 0 -g "$gid" "$here/$f" "$etc/$f"
done
install -d -m 0750 -o "$uid" -g "$gid" "$prefix/var/lib/egress-relay"

# The unit is the installer's and replaced every time; drop-ins beside it are the operator's.
install -d -m 0755 "$prefix/etc/systemd/system"
sed "s|@NODE@|$node|" "$here/egress-relay.service" >"$prefix/etc/systemd/system/egress-relay.service"
chmod 0644 "$prefix/etc/systemd/system/egress-relay.service"

if [ "$root" = / ] && [ -d /run/systemd/system ]; then
  systemctl daemon-reload
fi
cat <<EOF
installed the egress relay under $root; egress-relay's host groups: ${groups:-none}
next: put the relay service account's key in $etc/key.json (root, 0600), edit $etc/config.yaml,
then: systemctl enable --now egress-relay   (docs/deploy.md, "The relay")
EOF
