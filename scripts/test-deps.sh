#!/usr/bin/env bash
# Installs, on Debian, the system tools `npm test` needs and nothing else; does nothing when they are
# there. Run by `npm test` (and so by .ci/run). Without root (or sudo) it names what is missing.
#   chromium                      the dashboard's browser test (playwright-core drives it; never downloads one)
#   libvirtd, virt-ssh-helper     libvirt-daemon: the libvirt and kvm tests start a real daemon (test/support/libvirtd.ts)
#   virsh                         libvirt-clients (also the libvirt bench)
#   qemu-img                      qemu-utils: qcow2 overlays
#   isoinfo                       genisoimage: reads the kvm seed ISO back
#   openssl, ssh, sshd            TLS certificates, and the ssh transport test's own sshd on loopback
set -euo pipefail

declare -A package_of=(
  [/usr/bin/chromium]=chromium
  [/usr/sbin/libvirtd]=libvirt-daemon
  [/usr/bin/virsh]=libvirt-clients
  [/usr/bin/qemu-img]=qemu-utils
  [/usr/bin/isoinfo]=genisoimage
  [/usr/bin/openssl]=openssl
  [/usr/bin/ssh]=openssh-client
  [/usr/sbin/sshd]=openssh-server
)

missing=()
for tool in "${!package_of[@]}"; do
  [ -x "$tool" ] || missing+=("${package_of[$tool]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo="sudo"
  else
    echo "npm test needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi
command -v apt-get >/dev/null || {
  echo "npm test needs: ${missing[*]} (Debian package names); no apt-get here to install them" >&2
  exit 1
}
echo "installing what the tests need: ${missing[*]}"
$sudo apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
