# shellcheck shell=bash
# Builds go_probe.go (sourced by handover.sh and bench.sh, which set $here and $work).
# shellcheck disable=SC2154 # $here and $work: the sourcing script's

# build_go_probe: builds $work/go_probe offline (no module downloads: the probe uses only the
# standard library), static (CGO_ENABLED=0, so it calls the vDSO the way Go programs do);
# 0 on success, else 1 with the compiler's messages in $work/go.err.
build_go_probe() {
  mkdir -p "$work/go"
  cp "$here/go_probe.go" "$work/go/main.go"
  printf 'module goprobe\n\ngo 1.19\n' >"$work/go/go.mod"
  (cd "$work/go" && GOCACHE=$work/go/cache GOPATH=$work/go/path GOFLAGS='' GOPROXY=off \
    CGO_ENABLED=0 go build -o "$work/go_probe" . 2>"$work/go.err")
}
