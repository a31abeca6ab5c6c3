package service

import (
	"os"
	"strings"
)

func systemdBooted() bool {
	fi, err := os.Stat("/run/systemd/system")
	return err == nil && fi.IsDir()
}

func pid1() string {
	b, err := os.ReadFile("/proc/1/comm")
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(b))
}
