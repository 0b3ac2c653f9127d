package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// `tair up` puts its configserver on a free port (unless --base-port), so
// `tair ctl`, run with no --configserver, could not find the cluster that
// `make run` started. up writes where its parts listen to a file of the
// user's (upInfoPath) while it runs; ctl reads it when no address is
// given, and falls back to the documented defaults when the file is
// missing or its process is gone.

// upInfo is what a running `tair up` tells `tair ctl`.
type upInfo struct {
	PID           int      `json:"pid"`
	ConfigServers []string `json:"configservers"`
	Proxy         string   `json:"proxy"`
	Dir           string   `json:"dir"`
	// AdminToken is the configserver's admin credential, which `tair up`
	// makes itself unless told one (the file is the user's alone, 0600).
	AdminToken string `json:"admin_token,omitempty"`
}

// upInfoPath is the user's discovery file: $TAIR_UP_FILE, else in
// $XDG_RUNTIME_DIR, else in the temporary directory.
func upInfoPath() string {
	if p := os.Getenv("TAIR_UP_FILE"); p != "" {
		return p
	}
	dir := os.Getenv("XDG_RUNTIME_DIR")
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, fmt.Sprintf("tair-up-%d.json", os.Getuid()))
}

// writeUpInfo records info (replacing a file left by a process that is
// gone) and returns a function that removes it again, if it is still ours.
func writeUpInfo(info upInfo) (remove func(), err error) {
	path := upInfoPath()
	if old, ok := readUpInfo(); ok && old.PID != info.PID {
		return func() {}, fmt.Errorf("another `tair up` (pid %d) runs already; `tair ctl` finds that one (%s)", old.PID, path)
	}
	b, err := json.MarshalIndent(info, "", "  ")
	if err != nil {
		return nil, err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	return func() {
		if cur, ok := readUpInfoFile(path); ok && cur.PID == info.PID {
			_ = os.Remove(path)
		}
	}, nil
}

// readUpInfo returns the running `tair up`'s addresses, if there is one.
func readUpInfo() (upInfo, bool) {
	info, ok := readUpInfoFile(upInfoPath())
	if !ok || !processAlive(info.PID) {
		return upInfo{}, false
	}
	return info, true
}

func readUpInfoFile(path string) (upInfo, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return upInfo{}, false
	}
	var info upInfo
	if json.Unmarshal(b, &info) != nil || info.PID <= 0 || len(info.ConfigServers) == 0 {
		return upInfo{}, false
	}
	return info, true
}

// processAlive reports whether pid names a running process (signal 0
// checks without sending; EPERM means it runs under another user).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
