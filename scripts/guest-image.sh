#!/usr/bin/env bash
# Builds the kvm test guest image from Debian's packages only, once: a bookworm root file system with
# cloud-init (NoCloud), tinyproxy, nftables (the egress fence), stunnel4 and openssl (the TLS listener)
# and the QEMU guest agent, as a
# compressed qcow2 plus the kernel and initrd for direct kernel boot. Cached outside the checkout under a key that is the hash of this
# recipe, so a second run does nothing. Prints the image directory on stdout. cloud-init's grub_dpkg
# and locale modules and its default user are off (no grub, no locale, nobody logs in): 3–4 s of
# each boot under TCG.
#   scripts/guest-image.sh            build when absent, print the directory
#   scripts/guest-image.sh --path     print the directory the current recipe builds into (no build)
# Needs root and the Debian packages mmdebstrap, e2fsprogs and qemu-utils (scripts/test-deps.sh).
set -euo pipefail

cache_root=${EGRESS_GUEST_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/egress-fleet/guest-image}
packages=linux-image-cloud-amd64,systemd-sysv,udev,dbus,cloud-init,tinyproxy,nftables,stunnel4,openssl,qemu-guest-agent,ifupdown,isc-dhcp-client,iproute2,netbase,e2fsprogs,curl,ca-certificates

build() {
  local dir=$1 root=$1/rootfs
  TMPDIR=$dir mmdebstrap --variant=apt --mode=root --aptopt='APT::Install-Recommends "false"' \
    --include="$packages" \
    --essential-hook='mkdir -p "$1/etc/initramfs-tools/conf.d"; echo MODULES=list > "$1/etc/initramfs-tools/conf.d/egress.conf"; printf "virtio_pci\nvirtio_blk\nvirtio_net\nvirtio_scsi\next4\n" > "$1/etc/initramfs-tools/modules"' \
    --customize-hook='echo egress-guest > "$1/etc/hostname"; echo "127.0.0.1 localhost" > "$1/etc/hosts"; echo "/dev/vda / ext4 defaults,noatime 0 1" > "$1/etc/fstab"' \
    --customize-hook='printf "datasource_list: [ NoCloud, None ]\ngrub_dpkg: { enabled: false }\nlocale: false\nusers: []\n" > "$1/etc/cloud/cloud.cfg.d/05_egress.cfg"' \
    --customize-hook='chroot "$1" systemctl mask apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer systemd-timesyncd.service' \
    --customize-hook='rm -f "$1"/etc/apt/sources.list "$1"/etc/apt/sources.list.d/*; rm -rf "$1"/var/lib/apt/lists/*' \
    --customize-hook='rm -f "$1/etc/machine-id"; touch "$1/etc/machine-id"' \
    --customize-hook='cp -L "$1"/boot/vmlinuz-* "$1/../vmlinuz"; cp -L "$1"/boot/initrd.img-* "$1/../initrd.img"' \
    bookworm "$root" /etc/apt/sources.list.d/debian.sources >"$dir/mmdebstrap.log" 2>&1 ||
    { tail -n 30 "$dir/mmdebstrap.log" >&2; return 1; }
  truncate -s 2G "$dir/base.raw"
  mkfs.ext4 -q -F -L egress-root -d "$root" "$dir/base.raw"
  qemu-img convert -c -f raw -O qcow2 "$dir/base.raw" "$dir/base.qcow2"
  rm -rf "$root" "$dir/base.raw"
}

# The key covers everything above this line that shapes the image.
key=$(sed -n '/^packages=/,/^}/p' "$0" | sha256sum | cut -c1-16)
image=$cache_root/$key
if [ "${1:-}" = --path ]; then echo "$image"; exit 0; fi
if [ ! -f "$image/base.qcow2" ]; then
  started=$(date +%s)
  echo "building the kvm test guest image $key (Debian packages, about a minute)" >&2
  mkdir -p "$cache_root"
  work=$(mktemp -d "$cache_root/.build-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  build "$work"
  mkdir -p "$image.new" && mv "$work/base.qcow2" "$work/vmlinuz" "$work/initrd.img" "$image.new/"
  rm -rf "$image" && mv "$image.new" "$image"
  echo "built $image in $(( $(date +%s) - started )) s ($(du -sh "$image" | cut -f1))" >&2
fi
echo "$image"
