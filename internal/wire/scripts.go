package wire

import "context"

// Scripts and function libraries are the cluster's, kept by the
// configserver in etcd, so that a script loaded through any proxy runs on
// any dataserver (one that joins later too): a dataserver asked for a sha
// it does not hold fetches the body here (see dataserver/script.go).

// ScriptRequest is POST /v1/scripts.
type ScriptRequest struct {
	// Op: "load" (Body under Sha), "get" (the bodies of Shas), "exists"
	// (Shas), "flush" (every script); for function libraries "fload"
	// (Name, Body; Replace), "fdelete" (Name), "flist" (every library),
	// "fflush".
	Op      string   `json:"op"`
	Sha     string   `json:"sha,omitempty"`
	Shas    []string `json:"shas,omitempty"`
	Body    string   `json:"body,omitempty"`
	Name    string   `json:"name,omitempty"`
	Replace bool     `json:"replace,omitempty"`
}

// ScriptReply answers a ScriptRequest.
type ScriptReply struct {
	// Bodies: for "get", one per sha ("" when unknown).
	Bodies []string `json:"bodies,omitempty"`
	Exists []bool   `json:"exists,omitempty"`
	// Libraries: for "flist", name → code.
	Libraries map[string]string `json:"libraries,omitempty"`
	// Version counts the changes of the function libraries.
	Version int64 `json:"version,omitempty"`
	// Error: the request was refused (a library that exists without
	// Replace, or a missing one): Redis's error text.
	Error string `json:"error,omitempty"`
}

// Scripts sends a scripts request to the leading configserver.
func (c *Client) Scripts(ctx context.Context, req *ScriptRequest) (*ScriptReply, error) {
	return postLeader[ScriptReply](ctx, c, "/v1/scripts", req)
}
