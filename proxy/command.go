package proxy

import (
	"sort"
	"strings"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/resp"
)

// COMMAND and its subcommands: the command table described as Redis
// describes its own.

// COMMAND, COMMAND COUNT|INFO|DOCS|LIST|GETKEYS.
func cmdCommand(ss *session, r *request) {
	if len(r.args) == 1 {
		allCommandInfo(r)
		return
	}
	switch strings.ToLower(string(r.args[1])) {
	case "count":
		if len(r.args) != 2 {
			r.setError("ERR wrong number of arguments for 'command|count' command")
			return
		}
		r.integer(int64(len(command.All())))
	case "list":
		all := sortedSpecs()
		b := resp.AppendArray(r.reply[:0], len(all))
		for _, s := range all {
			b = resp.AppendBulkString(b, s.Name)
		}
		r.raw(b)
	case "info":
		names := r.args[2:]
		if len(names) == 0 {
			allCommandInfo(r)
			return
		}
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, n := range names {
			if s := command.Lookup(n); s != nil {
				b = appendCommandInfo(b, s, r.proto)
			} else {
				b = resp.AppendNullArray(b, r.proto)
			}
		}
		r.raw(b)
	case "docs":
		var specs []*command.Spec
		if len(r.args) == 2 {
			specs = sortedSpecs()
		} else {
			for _, n := range r.args[2:] {
				if s := command.Lookup(n); s != nil {
					specs = append(specs, s)
				}
			}
		}
		b := resp.AppendMap(r.reply[:0], len(specs), r.proto)
		for _, s := range specs {
			b = resp.AppendBulkString(b, s.Name)
			b = resp.AppendMap(b, 4, r.proto)
			b = resp.AppendBulkString(b, "summary")
			b = resp.AppendBulkString(b, summaryOf(s))
			b = resp.AppendBulkString(b, "since")
			b = resp.AppendBulkString(b, "1.0.0")
			b = resp.AppendBulkString(b, "group")
			b = resp.AppendBulkString(b, groupOf(s))
			b = resp.AppendBulkString(b, "complexity")
			b = resp.AppendBulkString(b, "")
		}
		r.raw(b)
	case "getkeys":
		if len(r.args) < 4 {
			r.setError("ERR wrong number of arguments for 'command|getkeys' command")
			return
		}
		s := command.Lookup(r.args[2])
		if s == nil {
			r.setError("ERR Invalid command specified")
			return
		}
		if s.Has(command.NoKey) || s.FirstKey <= 0 && s.KeysFunc == nil {
			r.setError("ERR The command has no key arguments")
			return
		}
		if !s.ArityOK(len(r.args) - 2) {
			r.setError("ERR Invalid number of arguments specified for command")
			return
		}
		keys := s.KeyIndexes(r.args[2:])
		if len(keys) == 0 {
			r.setError("ERR Invalid arguments specified for command")
			return
		}
		b := resp.AppendArray(r.reply[:0], len(keys))
		for _, k := range keys {
			b = resp.AppendBulk(b, r.args[2+k])
		}
		r.raw(b)
	case "help":
		r.raw(helpReply("COMMAND", []string{"(no subcommand)", "COUNT", "DOCS [<command-name> ...]", "GETKEYS <full-command>", "INFO [<command-name> ...]", "LIST"}))
	default:
		r.setError("ERR unknown subcommand '" + sanitize(r.args[1]) + "'. Try COMMAND HELP.")
	}
}

// allCommandInfo answers r with every command's info (COMMAND, COMMAND
// INFO).
func allCommandInfo(r *request) {
	all := sortedSpecs()
	b := resp.AppendArray(r.reply[:0], len(all))
	for _, s := range all {
		b = appendCommandInfo(b, s, r.proto)
	}
	r.raw(b)
}

func sortedSpecs() []*command.Spec {
	all := command.All()
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

func groupOf(s *command.Spec) string {
	switch {
	case s.Has(command.Tair):
		return "tair"
	case s.Has(command.NoKey):
		return "server"
	}
	switch s.Name[0] {
	case 'h':
		return "hash"
	case 'l', 'b':
		if strings.HasPrefix(s.Name, "bz") {
			return "sorted_set"
		}
		return "list"
	case 's':
		if s.Name == "set" || strings.HasPrefix(s.Name, "set") || s.Name == "strlen" || s.Name == "substr" {
			return "string"
		}
		return "set"
	case 'z':
		return "sorted_set"
	case 'e':
		if strings.HasPrefix(s.Name, "exh") {
			return "tairhash"
		}
		if strings.HasPrefix(s.Name, "ex") && s.Name != "exists" && s.Name != "expire" && s.Name != "expireat" && s.Name != "expiretime" {
			return "tairstring"
		}
	}
	return "generic"
}

func summaryOf(s *command.Spec) string {
	return strings.ToUpper(s.Name) + " (" + groupOf(s) + ")"
}

func appendCommandInfo(b []byte, s *command.Spec, proto int) []byte {
	b = resp.AppendArray(b, 10)
	b = resp.AppendBulkString(b, s.Name)
	b = resp.AppendInt(b, int64(s.Arity))
	var flags []string
	if s.Has(command.Write) {
		flags = append(flags, "write")
	}
	if s.Has(command.ReadOnly) {
		flags = append(flags, "readonly")
	}
	if s.Has(command.Blocking) {
		flags = append(flags, "blocking")
	}
	if s.Has(command.Admin) {
		flags = append(flags, "admin")
	}
	if authExempt(s.Name) {
		flags = append(flags, "no_auth")
	}
	if s.Has(command.NoKey) && !s.Has(command.Write) && !s.Has(command.ReadOnly) {
		flags = append(flags, "fast")
	}
	b = resp.AppendSet(b, len(flags), proto)
	for _, f := range flags {
		b = resp.AppendStatus(b, f)
	}
	first, last, step := s.FirstKey, s.LastKey, s.Step
	if s.KeysFunc != nil {
		first, last, step = 0, 0, 0
	}
	if first == 0 {
		last, step = 0, 0
	}
	b = resp.AppendInt(b, int64(first))
	b = resp.AppendInt(b, int64(last))
	b = resp.AppendInt(b, int64(step))
	b = resp.AppendSet(b, 0, proto) // ACL categories
	b = resp.AppendSet(b, 0, proto) // tips
	b = resp.AppendArray(b, 0)      // key specs
	return resp.AppendArray(b, 0)   // subcommands
}
