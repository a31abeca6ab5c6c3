// Package packaging holds the service units that the packages ship and that
// `oriond service install` renders the units it writes from: one copy of
// each. The files are real units (nfpm installs them as they are, for
// /usr/bin/oriond and /usr/bin/orionctl); internal/service replaces their
// command lines, and for a system service a few lines, and fails loudly if
// an edit here removed a line it needs.
package packaging

import _ "embed"

// SystemdUnit is packaging/systemd/oriond.service: oriond as a systemd
// user service.
//
//go:embed systemd/oriond.service
var SystemdUnit string

// ProxyUnit is packaging/systemd/orionctl-proxy.service: orionctl proxy as
// a systemd user service.
//
//go:embed systemd/orionctl-proxy.service
var ProxyUnit string

// LaunchdPlist is packaging/launchd/com.github.orion-agent.oriond.plist:
// oriond as a launchd agent.
//
//go:embed launchd/com.github.orion-agent.oriond.plist
var LaunchdPlist string
