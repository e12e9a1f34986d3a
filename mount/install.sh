#!/bin/sh
# Installs the mount helper (so `mount -t fuse.quire` and fstab work) and,
# with --user-unit, the systemd user unit for the calling user.
#   sudo mount/install.sh [--quire PATH]
set -e
here=$(cd "$(dirname "$0")" && pwd)
quire=
unit=no
while [ $# -gt 0 ]; do
    case "$1" in
        --quire) quire=$2; shift 2 ;;
        --user-unit) unit=yes; shift ;;
        *) echo "usage: install.sh [--quire PATH] [--user-unit]" >&2; exit 2 ;;
    esac
done
if [ "$unit" = yes ]; then
    mkdir -p "$HOME/.config/systemd/user"
    install -m 0644 "$here/quire-mount@.service" "$HOME/.config/systemd/user/"
    echo "installed ~/.config/systemd/user/quire-mount@.service"
    exit 0
fi
install -m 0755 "$here/mount.quire" /sbin/mount.fuse.quire
echo "installed /sbin/mount.fuse.quire"
if [ -n "$quire" ]; then
    install -m 0755 "$quire" /usr/local/bin/quire
    echo "installed /usr/local/bin/quire"
fi
