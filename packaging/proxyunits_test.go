package packaging_test

import (
	"encoding/xml"
	"slices"
	"strings"
	"testing"

	"github.com/orion-agent/orion/packaging"
)

// The proxy's units serve with the secret: neither turns it off, and the
// launchd agent, which has no XDG_CONFIG_HOME, names the file the shell's
// `orionctl proxy --print-env` reads.
func TestProxyUnitsUseTheSecret(t *testing.T) {
	if strings.Contains(packaging.ProxyUnit, "--no-token") || strings.Contains(packaging.ProxyUnit, "--token ") {
		t.Errorf("systemd/orionctl-proxy.service serves without the secret file:\n%s", packaging.ProxyUnit)
	}
	var plist struct {
		Dict struct {
			Inner []byte `xml:",innerxml"`
		} `xml:"dict"`
	}
	text := read(t, "launchd/com.github.orion-agent.orionctl-proxy.plist")
	if err := xml.Unmarshal([]byte(text), &plist); err != nil {
		t.Fatalf("the proxy's plist is not well-formed: %v", err)
	}
	var args struct {
		Strings []string `xml:"array>string"`
	}
	if err := xml.Unmarshal([]byte("<d>"+string(plist.Dict.Inner)+"</d>"), &args); err != nil {
		t.Fatal(err)
	}
	i := slices.Index(args.Strings, "--token-file")
	if !slices.Contains(args.Strings, "proxy") || i < 0 || i+1 >= len(args.Strings) ||
		!strings.HasSuffix(args.Strings[i+1], "/.config/orion/proxy-token") || slices.Contains(args.Strings, "--no-token") {
		t.Errorf("the proxy's plist runs %q, want orionctl proxy with --token-file ~/.config/orion/proxy-token", args.Strings)
	}
}
