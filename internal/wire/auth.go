package wire

import "errors"

// ErrUnauthorized is returned (wrapped, with the configserver's reason)
// when the configserver wants the admin credential and none or a wrong
// one was sent: see Client.SetAdminToken.
var ErrUnauthorized = errors.New("wire: admin credential refused")

// AuthError is the body of a 401 reply: the configserver was started with
// an admin credential and the request did not carry it.
type AuthError struct {
	Error string `json:"error"`
}

// SetAdminToken makes the client send tok as "Authorization: Bearer tok"
// with every request ("" sends none). Call it before the client is used.
func (c *Client) SetAdminToken(tok string) { c.adminToken = tok }
