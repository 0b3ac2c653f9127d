package luascript

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tairkv/tair/internal/command"
)

type nopCaller struct{ calls int }

func (c *nopCaller) Call(_ *command.Spec, _ [][]byte, _ int) []byte {
	c.calls++
	return []byte("+OK\r\n")
}

func run(t *testing.T, body string, r *Run) string {
	t.Helper()
	s, err := Compile([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if r.Caller == nil {
		r.Caller = &nopCaller{}
	}
	r.Name = s.Sha
	return string(NewEnv(nil).Run(nil, s, r))
}

// An endless loop stops when its context is cancelled (SCRIPT KILL),
// pcall or not.
func TestKillStopsEndlessLoops(t *testing.T) {
	for _, body := range []string{"while true do end",
		"while true do pcall(function() while true do end end) end",
		"local function f() return f() end while true do pcall(f) end"} {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(50*time.Millisecond, cancel)
		done := make(chan string)
		go func() { done <- run(t, body, &Run{Ctx: ctx}) }()
		select {
		case got := <-done:
			if !strings.HasPrefix(got, "-"+Killed+" script: ") {
				t.Errorf("%s: %q", body, got)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: not stopped", body)
		}
	}
}

// Scripts that exhaust the stack or ask for huge strings get an error,
// and the process goes on.
func TestResourceErrors(t *testing.T) {
	for _, body := range []string{
		"local function f() return 1 + f() end return f()",
		"return string.rep('x', 1e12)",
		"return unpack({}, 1, 1e8)",
		"local t = {} t[1] = t return cjson.encode(t)",
	} {
		got := run(t, body, &Run{})
		if !strings.HasPrefix(got, "-ERR ") {
			t.Errorf("%s: %q", body, got)
		}
	}
}

func TestReadOnlyRefusesWrites(t *testing.T) {
	c := &nopCaller{}
	got := run(t, "return redis.call('set', 'k', 'v')", &Run{ReadOnly: true, Caller: c})
	if !strings.HasPrefix(got, "-ERR Write commands are not allowed from read-only scripts. script: ") || c.calls != 0 {
		t.Errorf("%q, %d calls", got, c.calls)
	}
	if got := run(t, "return redis.call('get', 'k')", &Run{ReadOnly: true, Caller: c}); got != "+OK\r\n" {
		t.Errorf("read: %q", got)
	}
}

func TestCompileError(t *testing.T) {
	if _, err := Compile([]byte("return (")); err == nil || !strings.HasPrefix(err.Error(), "Error compiling script (new function): user_script:") {
		t.Fatalf("%v", err)
	}
}

// A pooled state carries nothing from one script to the next.
func TestStatesLeakNothing(t *testing.T) {
	env := NewEnv(nil)
	do := func(body string, keys ...string) string {
		s, err := Compile([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		var ks [][]byte
		for _, k := range keys {
			ks = append(ks, []byte(k))
		}
		return string(env.Run(nil, s, &Run{Keys: ks, Caller: &nopCaller{}, Name: s.Sha}))
	}
	for _, body := range []string{"x = 1", "_G.y = 1", "string.z = 1", "getmetatable('').w = 1",
		"getmetatable('').__index.upper = nil", "redis.call = nil", "rawset(_G, 'v', 1)", "KEYS[2] = 'x' return 1",
		"setmetatable(_G, {})", "getmetatable(_G).u = 1", "redis.setresp(3) return 1"} {
		do(body, "k")
	}
	for body, want := range map[string]string{
		"return {pcall(function() return x end)}": "*2\r\n$-1\r\n",
		"return #KEYS":                    ":0\r\n",
		"return ('a'):upper()":            "$1\r\nA\r\n",
		"return type(string.z)":           "$3\r\nnil\r\n",
		"return type(getmetatable(_G).u)": "$3\r\nnil\r\n",
		"return true":                     ":1\r\n",
		"return type(redis.call)":         "$8\r\nfunction\r\n",
	} {
		got := do(body)
		if body == "return {pcall(function() return x end)}" {
			if !strings.HasPrefix(got, "*2\r\n$-1\r\n") {
				t.Errorf("%s: %q", body, got)
			}
			continue
		}
		if got != want {
			t.Errorf("%s: %q, want %q", body, got, want)
		}
	}
}
