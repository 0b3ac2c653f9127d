package errs

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRESPText(t *testing.T) {
	cases := []struct {
		err  *Error
		want string
	}{
		{ErrVersion, "VERERROR version mismatch (tair -3997)"},
		{New(MigrateBusy, "bucket 3 is migrating"), "TRYAGAIN bucket 3 is migrating (tair -3984)"},
		{New(WriteNotOnMaster, "bucket 1 table 9"), "NOTMASTER bucket 1 table 9 (tair -3986)"},
		{ErrWrongType, "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{ErrKeyTooLong, "KEYTOOLONG key too long (tair -5)"},
		{New(InvalidArgument, "bad\r\nline"), "ERR bad  line (tair -3982)"},
	}
	for _, c := range cases {
		if got := c.err.RESP(); got != c.want {
			t.Errorf("RESP() = %q, want %q", got, c.want)
		}
	}
}

func TestIsAndCodeOf(t *testing.T) {
	err := fmt.Errorf("wrapped: %w", New(VersionError, "other text"))
	if !errors.Is(err, ErrVersion) {
		t.Fatal("errors.Is must compare codes")
	}
	if errors.Is(err, ErrNotFound) {
		t.Fatal("different codes must not match")
	}
	if CodeOf(err) != VersionError || CodeOf(nil) != OK || CodeOf(errors.New("x")) != Unknown {
		t.Fatal("CodeOf")
	}
	cause := errors.New("disk")
	if !errors.Is(Wrap(Timeout, cause), cause) {
		t.Fatal("Wrap must keep the cause")
	}
}

func TestReplyCode(t *testing.T) {
	cases := map[string]Code{
		"-VERERROR version mismatch (tair -3997)\r\n":           VersionError,
		"-CLUSTERDOWN no dataserver available (tair -3987)\r\n": ServerCanNotWork,
		"-CLUSTERDOWN no code here\r\n":                         OK,
		"-ERR syntax error\r\n":                                 OK,
		"+OK\r\n":                                               OK,
		"$5\r\n(tair -3997)\r\n":                                OK,
		"-X (tair 99999999999)\r\n":                             OK,
		"":                                                      OK,
	}
	for reply, want := range cases {
		if got := ReplyCode([]byte(reply)); got != want {
			t.Errorf("ReplyCode(%q) = %d, want %d", reply, got, want)
		}
	}
	if got := ReplyCode([]byte("-" + ErrQuota.RESP() + "\r\n")); got != Quota {
		t.Errorf("ReplyCode of a rendered error = %d", got)
	}
}

func TestQuoted(t *testing.T) {
	long := strings.Repeat("x", 130)
	for in, want := range map[string]string{"abc": "abc", "fo\x00o": "fo", long: long[:128], "\x00": ""} {
		if got := Quoted([]byte(in), 128); got != want {
			t.Errorf("Quoted(%q) = %q, want %q", in, got, want)
		}
	}
}
