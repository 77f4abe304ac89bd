# Sourced by the tests that need a clean Debian root (check_packages.sh,
# check_static_root.sh): ct_clean_root ROOT fills ROOT with a debootstrap
# --variant=minbase of this machine's release, from the mirror its apt uses,
# kept as a tarball (with apt's package lists) in $CT_PACKAGES_CACHE
# (default ~/.cache/ctensor-packages) so that later runs need no network.
# Calls skip (defined by the caller; exits 77) where it cannot: not root, no
# debootstrap, or no cached root and no mirror to make one from.
ct_cache=${CT_PACKAGES_CACHE:-${HOME:-/root}/.cache/ctensor-packages}

ct_clean_root() {
  local root=$1 suite arch url stamp tarball log
  [ "$(id -u)" = 0 ] || skip "needs root (chroot)"
  suite=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$suite" ] || skip "no VERSION_CODENAME in /etc/os-release"
  arch=$(dpkg --print-architecture)
  stamp=v1-$suite-$arch-minbase
  tarball=$ct_cache/root-$stamp.tar.gz
  log=$(mktemp)
  mkdir -p "$ct_cache/archives" "$root"
  if [ ! -f "$tarball" ]; then
    command -v debootstrap >/dev/null || skip "no debootstrap (scripts/install-deps.sh --tests installs it)"
    url=$(ct_mirror "$suite" 2>/dev/null | head -n1 || true)
    [ -n "$url" ] || skip "no Debian mirror for $suite in /etc/apt/sources.list*"
    echo "clean root: debootstrap --variant=minbase $suite from $url (cached in $ct_cache)"
    if ! debootstrap --variant=minbase "$suite" "$root" "$url" >"$log" 2>&1; then
      tail -5 "$log"
      skip "debootstrap failed (no network to $url?)"
    fi
    cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
    chroot "$root" apt-get update -qq >"$log" 2>&1 || { tail -5 "$log"; skip "apt-get update failed in the root"; }
    chroot "$root" apt-get clean
    tar -C "$root" -czf "$tarball.part" . && mv "$tarball.part" "$tarball"
  else
    echo "clean root: from $tarball"
    tar -C "$root" -xzf "$tarball"
  fi
  rm -f "$log"
  cp /etc/resolv.conf "$root/etc/resolv.conf" 2>/dev/null || true
}

# The mirror of this machine's apt sources for suite $1 (deb822 or one-line).
ct_mirror() {
  local f suite=$1
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk -v s="$suite" 'BEGIN{RS=""} $0 ~ "Suites:[^\n]*(^|[ \t])" s "([ \t]|$)" {
      for (i = 1; i <= NF; i++) if ($i == "URIs:") { print $(i+1); exit } }' "$f"
  done
  cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
    sed -nE "s/^deb[[:space:]]+(\[[^]]*\][[:space:]]+)?([a-z]+:\/\/[^ ]+)[[:space:]]+$suite[[:space:]].*/\2/p"
}
