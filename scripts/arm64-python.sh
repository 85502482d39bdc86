#!/usr/bin/env bash
# An aarch64 CPython 3.11 with NumPy, from Debian's arm64 packages, run on this x86_64 machine
# by qemu-user-static: the interpreter scripts/test-wheels.sh runs the aarch64 wheel's smoke
# test with.
#
#   scripts/arm64-python.sh     prepares it (once; again when this script changes) and prints
#                               the interpreter's path on its last line
#
# 1. qemu-user-static (Debian's package) where /usr/bin/qemu-aarch64-static is missing.
# 2. `dpkg --add-architecture arm64` and `apt-get update`, so that Debian's registry serves
#    arm64 packages.
# 3. python3.11:arm64 and python3-numpy:arm64 with every arm64 library they depend on,
#    downloaded (`apt-get download`) and unpacked into target/arm64-python/root, a folder of
#    their own. They are not installed: python3.11:arm64 and the machine's python3.11:amd64
#    cannot be installed side by side (the same /usr/bin/python3.11), and the machine's own
#    Python must stay as it is. The links that update-alternatives would make for BLAS and
#    LAPACK are made by hand.
# 4. binfmt_misc (mounted where it is not) learns to run aarch64 programs with
#    qemu-aarch64-static, loaded once (flag F), so that the interpreter's own subprocesses
#    (`dlbridge check`'s worker processes) run too; QEMU_LD_PREFIX (set by the caller, see
#    test-wheels.sh) is where qemu finds the aarch64 loader and libraries.
#
# Needs root and apt (Debian's registry); exits 1 saying which step cannot be done here.
set -euo pipefail
cd "$(dirname "$0")/.."

folder=$PWD/target/arm64-python
root=$folder/root
python=$root/usr/bin/python3.11
stamp=$folder/.prepared

fail() {
    echo "arm64-python: $*" >&2
    exit 1
}

if [[ ! -f $stamp || $0 -nt $stamp ]]; then
    [[ $(id -u) -eq 0 ]] || fail "needs root (apt-get, binfmt_misc)"
    command -v apt-get >/dev/null || fail "needs apt-get (Debian's registry)"
    export DEBIAN_FRONTEND=noninteractive
    if [[ ! -x /usr/bin/qemu-aarch64-static ]]; then
        apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null ||
            fail "cannot install qemu-user-static"
    fi
    if ! dpkg --print-foreign-architectures | grep -qx arm64; then
        dpkg --add-architecture arm64
    fi
    apt-get update -qq || fail "apt-get update failed (with the arm64 architecture added)"
    # The arm64 packages the two need, recursively; not the virtual ones (<...>), and not
    # those that only matter to an installation (dpkg, perl, alternative BLAS builds).
    packages=$(apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts \
        --no-breaks --no-replaces --no-enhances --no-pre-depends \
        python3.11:arm64 python3-numpy:arm64 |
        grep -v '^ ' | grep ':arm64$' |
        grep -v -E '^(dpkg|install-info|perl|libperl|readline-common|media-types|mime-support|libblis|libopenblas|libatlas|debconf|tzdata|tar)' |
        sort -u)
    [[ -n $packages ]] || fail "apt-cache lists no arm64 packages for python3.11 and numpy"
    rm -rf "$folder"
    mkdir -p "$folder/debs" "$root"
    # shellcheck disable=SC2086 # one word per package
    (cd "$folder/debs" && apt-get download -qq $packages 2>/dev/null) ||
        fail "apt-get download failed for: $(echo $packages)"
    for deb in "$folder"/debs/*.deb; do
        dpkg-deb -x "$deb" "$root"
    done
    rm -rf "$folder/debs"
    libraries=$root/usr/lib/aarch64-linux-gnu
    ln -sf blas/libblas.so.3 "$libraries/libblas.so.3"
    ln -sf lapack/liblapack.so.3 "$libraries/liblapack.so.3"
    touch "$stamp"
fi

binfmt=/proc/sys/fs/binfmt_misc
if [[ ! -e $binfmt/qemu-aarch64 ]]; then
    if [[ ! -e $binfmt/register ]]; then
        mount -t binfmt_misc binfmt_misc "$binfmt" 2>/dev/null ||
            fail "cannot mount binfmt_misc at $binfmt (a container without the privilege?)"
    fi
    # An ELF64 little-endian executable or shared object for machine 183 (AArch64).
    magic='\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00'
    mask='\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff'
    printf '%s' ":qemu-aarch64:M::$magic:$mask:/usr/bin/qemu-aarch64-static:F" \
        >"$binfmt/register" 2>/dev/null ||
        fail "cannot register qemu-aarch64 with binfmt_misc"
fi

machine=$(QEMU_LD_PREFIX=$root "$python" -c 'import platform; print(platform.machine())') ||
    fail "$python does not run under qemu"
[[ $machine == aarch64 ]] || fail "$python says it runs on $machine, not aarch64"
echo "$python"
