#!/usr/bin/env bash
# Builds the oriond Debian package with nfpm from packaging/nfpm.yaml, then
# checks what is in it. CI runs it; so can you:
#
#   packaging/build-deb.sh [OUTDIR]      # default OUTDIR: dist
#
# Needs Go and dpkg-deb (Debian/Ubuntu: the dpkg package); nfpm itself comes
# from the Go module proxy at the version pinned below. ORION_VERSION
# overrides the version derived from git.
set -euo pipefail
cd "$(dirname "$0")/.."

# v2.46 and later need modules (go.digitalxero.dev) the module proxy refused
# here; v2.45.2 builds from the proxy alone.
NFPM=github.com/goreleaser/nfpm/v2/cmd/nfpm@v2.45.2

out=${1:-dist}
build="$out/build"
rm -rf "$build"
mkdir -p "$build/man" "$build/completions" "$build/doc"
out=$(cd "$out" && pwd)
build="$out/build"

log() { echo "build-deb: $*" >&2; }

# Version: from a v* tag when there is one, else 0.0.0~git<date>.<commit>.
if [ -z "${ORION_VERSION:-}" ]; then
	if tag=$(git describe --tags --match 'v[0-9]*' 2>/dev/null); then
		ORION_VERSION=$(echo "${tag#v}" | sed 's/-/~/g')
	elif commit=$(git log -1 --format='%cd.%h' --date=format:%Y%m%d 2>/dev/null); then
		ORION_VERSION="0.0.0~git$commit"
	else
		ORION_VERSION="0.0.0~dev"
	fi
fi
# Reproducible: files dated at the last commit.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
	SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || date +%s)
fi
export ORION_VERSION SOURCE_DATE_EPOCH
export ORION_ARCH="${ORION_ARCH:-$(go env GOARCH)}"
export ORION_DEB_BUILD="$build"
date=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%d)

log "version $ORION_VERSION, $ORION_ARCH, into $out"
CGO_ENABLED=0 GOOS=linux GOARCH="$ORION_ARCH" go build -trimpath -ldflags "-s -w" -o "$build/" ./daemon/cmd/oriond ./client/cmd/orionctl

# Completions and man pages come from the binaries themselves; run the ones
# for this machine when cross-building.
hostbin="$build"
if [ "$ORION_ARCH" != "$(go env GOHOSTARCH)" ]; then
	hostbin="$build/host"
	CGO_ENABLED=0 go build -trimpath -o "$hostbin/" ./daemon/cmd/oriond ./client/cmd/orionctl
fi
for prog in oriond orionctl; do
	"$hostbin/$prog" completion bash >"$build/completions/$prog.bash"
	"$hostbin/$prog" completion zsh >"$build/completions/_$prog"
	"$hostbin/$prog" completion fish >"$build/completions/$prog.fish"
done
go run ./packaging/genman -bin "$hostbin/oriond" -date "$date" -extra packaging/man/oriond.extra \
	-summary "the Orion write-session daemon" | gzip -9n >"$build/man/oriond.1.gz"
go run ./packaging/genman -bin "$hostbin/orionctl" -date "$date" -extra packaging/man/orionctl.extra \
	-summary "control oriond, the Orion write-session daemon" | gzip -9n >"$build/man/orionctl.1.gz"

# The documents, their links fixed for /usr/share/doc/oriond: to what the
# package ships, or to the repository at this revision.
ref=$(git describe --tags --exact-match --match 'v[0-9]*' 2>/dev/null || git rev-parse HEAD 2>/dev/null || echo main)
go run ./packaging/debdocs -out "$build/doc" -repo "https://github.com/orion-agent/orion/blob/$ref"

rm -f "$out"/*.deb
go run "$NFPM" package --packager deb --config packaging/nfpm.yaml --target "$out/" >&2
deb=$(ls "$out"/*.deb)
log "built $deb"

# Check the package: control fields, every file where it belongs with its
# mode, nothing else.
fail() { log "FAIL: $*"; exit 1; }
[ "$(dpkg-deb -f "$deb" Package)" = oriond ] || fail "package name"
[ "$(dpkg-deb -f "$deb" Version)" = "$ORION_VERSION" ] || fail "version $(dpkg-deb -f "$deb" Version)"
[ "$(dpkg-deb -f "$deb" Architecture)" = "$(dpkg --print-architecture 2>/dev/null || echo "$ORION_ARCH")" ] ||
	[ "$ORION_ARCH" != "$(go env GOHOSTARCH)" ] || fail "architecture $(dpkg-deb -f "$deb" Architecture)"
dpkg-deb -c "$deb" | tee "$out/contents.txt" >&2
want=(
	"-rwxr-xr-x ./usr/bin/oriond"
	"-rwxr-xr-x ./usr/bin/orionctl"
	"-rw-r--r-- ./usr/lib/systemd/user/oriond.service"
	"-rw-r--r-- ./usr/lib/systemd/user/orionctl-proxy.service"
	"-rw-r--r-- ./usr/share/man/man1/oriond.1.gz"
	"-rw-r--r-- ./usr/share/man/man1/orionctl.1.gz"
	"-rw-r--r-- ./usr/share/bash-completion/completions/orionctl"
	"-rw-r--r-- ./usr/share/bash-completion/completions/oriond"
	"-rw-r--r-- ./usr/share/zsh/vendor-completions/_orionctl"
	"-rw-r--r-- ./usr/share/zsh/vendor-completions/_oriond"
	"-rw-r--r-- ./usr/share/fish/vendor_completions.d/orionctl.fish"
	"-rw-r--r-- ./usr/share/fish/vendor_completions.d/oriond.fish"
	"-rw-r--r-- ./usr/share/doc/oriond/examples/oriond.toml"
	"-rw-r--r-- ./usr/share/doc/oriond/README.md"
	"-rw-r--r-- ./usr/share/doc/oriond/README.packaging.md"
	"-rw-r--r-- ./usr/share/doc/oriond/copyright"
)
# The documents the README links to: every file of docs/, as git tracks it
# (or as it is, outside a git work tree).
while IFS= read -r f; do
	want+=("-rw-r--r-- ./usr/share/doc/oriond/$f")
done < <(git ls-files docs 2>/dev/null | grep . || find docs -type f | sort)
files=$(dpkg-deb -c "$deb" | awk '$1 !~ /^d/ {print $1, $6}')
for w in "${want[@]}"; do
	grep -qxF -- "$w" <<<"$files" || fail "missing or wrong mode: $w"
done
[ "$(wc -l <<<"$files")" -eq "${#want[@]}" ] || fail "unexpected files:
$(grep -vxF -f <(printf '%s\n' "${want[@]}") <<<"$files")"
dpkg-deb -c "$deb" | awk '{print $2}' | grep -qvx 'root/root' && fail "files not owned by root"

# What was packaged works: the binaries run, the unit is the one `oriond
# service install` writes, the man pages format without warnings.
x=$(mktemp -d)
trap 'rm -rf "$x"' EXIT
dpkg-deb -x "$deb" "$x"
if [ "$ORION_ARCH" = "$(go env GOHOSTARCH)" ]; then
	"$x/usr/bin/oriond" --help >/dev/null
	"$x/usr/bin/orionctl" --help >/dev/null
	# The unit install writes from defaults alone: install carries the
	# environment's settings (ORION_SOCKET, ORION_ALLOW_ROOTS, ...), the
	# config file's path and a running daemon's flags into the unit, so it
	# runs with an empty HOME, no ORION_* variable and a runtime directory
	# where no daemon listens, whatever runs on this machine.
	mkdir -p "$x/defaults/home" "$x/defaults/run" "$x/defaults/tmp"
	chmod 700 "$x/defaults/run"
	defaults() {
		env -i PATH="$PATH" HOME="$x/defaults/home" XDG_RUNTIME_DIR="$x/defaults/run" TMPDIR="$x/defaults/tmp" "$@"
	}
	diff <(defaults "$x/usr/bin/oriond" service install --print --platform systemd | sed "s#$x/usr/bin/oriond#/usr/bin/oriond#") \
		"$x/usr/lib/systemd/user/oriond.service" || fail "the packaged unit is not what oriond service install writes"
	# --with-proxy finds the orionctl next to oriond, and prints its unit after oriond's.
	diff <(defaults "$x/usr/bin/oriond" service install --print --platform systemd --with-proxy | sed -n '/^# orionctl-proxy.service:/,$p' |
		sed "s#$x/usr/bin/orionctl#/usr/bin/orionctl#") \
		"$x/usr/lib/systemd/user/orionctl-proxy.service" || fail "the packaged proxy unit is not what oriond service install --with-proxy writes"
fi
grep -qx 'License: Expat' "$x/usr/share/doc/oriond/copyright" || fail "copyright: no Expat (MIT) license"
# Every link of the installed documents leads to a file, and to a heading
# of it.
w=$(go run ./packaging/debdocs -check "$x/usr/share/doc/oriond" 2>&1) || fail "links of the installed documents: $w"
if command -v groff >/dev/null; then
	for page in oriond orionctl; do
		w=$(zcat "$x/usr/share/man/man1/$page.1.gz" | groff -man -Tutf8 -ww -z 2>&1)
		[ -z "$w" ] || fail "$page.1: $w"
		# The options fit an 80-column terminal.
		long=$(zcat "$x/usr/share/man/man1/$page.1.gz" | MANWIDTH=80 groff -man -Tutf8 -rLL=80n 2>/dev/null | col -bx |
			awk '/^[A-Z]/ {s=$0} s=="OPTIONS" && length($0)>80')
		[ -z "$long" ] || fail "$page.1: OPTIONS lines over 80 columns: $long"
	done
fi
if command -v systemd-analyze >/dev/null && [ "$ORION_ARCH" = "$(go env GOHOSTARCH)" ]; then
	# The user manager's other units put sockets in the runtime directory:
	# a short name, whatever TMPDIR's length.
	run=$(mktemp -d /tmp/sa.XXXXXX)
	trap 'rm -rf "$x" "$run"' EXIT
	sed "s#/usr/bin/oriond#$x/usr/bin/oriond#" "$x/usr/lib/systemd/user/oriond.service" >"$x/oriond.service"
	w=$(XDG_RUNTIME_DIR="$run" systemd-analyze verify --user --man=no "$x/oriond.service" 2>&1) || fail "systemd-analyze: $w"
	[ -z "$w" ] || fail "systemd-analyze: $w"
	sed "s#/usr/bin/orionctl#$x/usr/bin/orionctl#" "$x/usr/lib/systemd/user/orionctl-proxy.service" >"$x/orionctl-proxy.service"
	w=$(XDG_RUNTIME_DIR="$run" systemd-analyze verify --user --man=no "$x/orionctl-proxy.service" 2>&1) || fail "systemd-analyze (proxy): $w"
	[ -z "$w" ] || fail "systemd-analyze (proxy): $w"
fi
bash -n "$x/usr/share/bash-completion/completions/orionctl" || fail "bash completion does not parse"
log "ok: $deb"
echo "$deb"
