package proxy

import (
	"testing"
)

func TestStreamBlockArg(t *testing.T) {
	for _, c := range []struct {
		line  []string
		block bool
		ms    int64
	}{
		{[]string{"XREAD", "BLOCK", "100", "STREAMS", "s", "$"}, true, 100},
		{[]string{"XREAD", "COUNT", "5", "block", "0", "STREAMS", "s", "$"}, true, 0},
		{[]string{"XREADGROUP", "GROUP", "block", "c", "NOACK", "BLOCK", "7", "STREAMS", "s", ">"}, true, 7},
		{[]string{"XREAD", "STREAMS", "block", "5"}, false, 0},
		{[]string{"XREAD", "BLOCK", "-1", "STREAMS", "s", "$"}, false, 0},
		{[]string{"XREAD", "BLOCK", "x", "STREAMS", "s", "$"}, false, 0},
		{[]string{"XREAD", "COUNT", "1", "STREAMS", "s", "0"}, false, 0},
	} {
		args := make([][]byte, len(c.line))
		for i, a := range c.line {
			args[i] = []byte(a)
		}
		if b, ms := streamBlockArg(args); b != c.block || ms != c.ms {
			t.Errorf("%q: %v %d, want %v %d", c.line, b, ms, c.block, c.ms)
		}
	}
}

func TestLastGeneratedID(t *testing.T) {
	for _, c := range []struct {
		reply, id string
		ok        bool
	}{
		{"*20\r\n$6\r\nlength\r\n:2\r\n$15\r\nradix-tree-keys\r\n:1\r\n$16\r\nradix-tree-nodes\r\n:2\r\n$17\r\nlast-generated-id\r\n$15\r\n1767225600473-0\r\n$20\r\n", "1767225600473-0", true},
		{"-ERR no such key\r\n", "0-0", true},
		{"-WRONGTYPE Operation against a key holding the wrong kind of value\r\n", "", false},
		{"*20\r\n$6\r\nlength\r\n:2\r\n$15\r\nradix", "", false},
		{"", "", false},
	} {
		id, ok := lastGeneratedID([]byte(c.reply))
		if string(id) != c.id || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.reply, id, ok, c.id, c.ok)
		}
	}
}
