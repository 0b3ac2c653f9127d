package proxy

import (
	"slices"
	"sort"
	"strings"

	"github.com/tairkv/tair/internal/command"
	"github.com/tairkv/tair/internal/glob"
	"github.com/tairkv/tair/resp"
)

// COMMAND and its subcommands: the command table described as Redis 7
// describes its own (internal/command keyspec.go: Redis 7.0's flags, ACL
// categories, key specifications and subcommands for the commands Redis
// has), so that cluster clients find every command's keys: go-redis
// reads the key range, redis-py asks COMMAND GETKEYS for movablekeys
// commands (LMPOP, ZUNIONSTORE, SORT ...).
//
// One deliberate difference: the request_policy and response_policy tips
// are left out. Every proxy serves the whole cluster (DBSIZE, KEYS, SCAN,
// FLUSHALL already span every dataserver), so a client that fanned such a
// command out to every proxy, as those tips ask, would count each key
// once per proxy.

// COMMAND, COMMAND COUNT|INFO|DOCS|LIST|GETKEYS|GETKEYSANDFLAGS|HELP.
func cmdCommand(ss *session, r *request) {
	if len(r.args) == 1 {
		allCommandInfo(r)
		return
	}
	sub := strings.ToLower(string(r.args[1]))
	arity := map[string]int{"count": 2, "list": -2, "info": -2, "docs": -2, "getkeys": -4, "getkeysandflags": -4, "help": 2}
	if a, ok := arity[sub]; ok && (a > 0 && len(r.args) != a || a < 0 && len(r.args) < -a) {
		r.setError("ERR wrong number of arguments for 'command|" + sub + "' command")
		return
	}
	switch sub {
	case "count":
		r.integer(int64(len(command.All())))
	case "list":
		commandList(r)
	case "info":
		names := r.args[2:]
		if len(names) == 0 {
			allCommandInfo(r)
			return
		}
		b := resp.AppendArray(r.reply[:0], len(names))
		for _, n := range names {
			if s, sub := lookupFull(n); sub != nil {
				b = appendInfo(b, sub.Name, sub.Arity, &sub.Info, r.proto)
			} else if s != nil && strings.IndexByte(string(n), '|') < 0 {
				b = appendCommandInfo(b, s, r.proto)
			} else {
				b = resp.AppendNull(b, r.proto)
			}
		}
		r.raw(b)
	case "docs":
		commandDocs(r)
	case "getkeys", "getkeysandflags":
		commandGetKeys(r, sub == "getkeysandflags")
	case "help":
		r.raw(helpReply("COMMAND", []string{
			"(no subcommand)",
			"    Return details about all Redis commands.",
			"COUNT",
			"    Return the total number of commands in this Redis server.",
			"LIST",
			"    Return a list of all commands in this Redis server.",
			"INFO [<command-name> ...]",
			"    Return details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"DOCS [<command-name> ...]",
			"    Return documentation details about multiple Redis commands.",
			"    If no command names are given, documentation details for all",
			"    commands are returned.",
			"GETKEYS <full-command>",
			"    Return the keys from a full Redis command.",
			"GETKEYSANDFLAGS <full-command>",
			"    Return the keys and the access flags from a full Redis command.",
			"HELP",
			"    Prints this help.",
		}))
	default:
		r.setError("ERR unknown subcommand '" + quotedArg(r.args[1]) + "'. Try COMMAND HELP.")
	}
}

// lookupFull finds a command by name, or a subcommand by container|sub.
func lookupFull(name []byte) (*command.Spec, *command.Sub) {
	i := strings.IndexByte(string(name), '|')
	if i < 0 {
		return command.Lookup(name), nil
	}
	s := command.Lookup(name[:i])
	if s == nil {
		return nil, nil
	}
	return s, findSub(s, name[i+1:])
}

// findSub finds s's subcommand sub (case-insensitively).
func findSub(s *command.Spec, sub []byte) *command.Sub {
	full := s.Name + "|" + strings.ToLower(string(sub))
	for _, c := range s.Info.Subcommands {
		if c.Name == full {
			return c
		}
	}
	return nil
}

// commandList answers COMMAND LIST [FILTERBY MODULE m|ACLCAT c|PATTERN p]:
// every command and subcommand name.
func commandList(r *request) {
	var filter, arg string
	for i := 2; i < len(r.args); i++ {
		if strings.EqualFold(string(r.args[i]), "filterby") && len(r.args)-1-i == 2 {
			filter, arg = strings.ToLower(string(r.args[i+1])), string(r.args[i+2])
			if filter != "module" && filter != "aclcat" && filter != "pattern" {
				r.setError("ERR syntax error")
				return
			}
			i += 2
			continue
		}
		r.setError("ERR syntax error")
		return
	}
	keep := func(name string, in *command.Info) bool {
		switch filter {
		case "module":
			return false // no modules
		case "aclcat":
			for _, c := range in.ACL {
				if strings.EqualFold(c, "@"+arg) {
					return true
				}
			}
			return false
		case "pattern":
			return glob.Match([]byte(arg), []byte(name), true)
		}
		return true
	}
	var names []string
	for _, s := range sortedSpecs() {
		if keep(s.Name, s.Info) {
			names = append(names, s.Name)
		}
		for _, c := range s.Info.Subcommands {
			if keep(c.Name, &c.Info) {
				names = append(names, c.Name)
			}
		}
	}
	b := resp.AppendArray(r.reply[:0], len(names))
	for _, n := range names {
		b = resp.AppendBulkString(b, n)
	}
	r.raw(b)
}

// commandDocs answers COMMAND DOCS [name ...]: summary, since, group,
// complexity (and subcommands'), unknown names left out.
func commandDocs(r *request) {
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
		b = appendDocs(b, s.Group, s.Info, r.proto)
	}
	r.raw(b)
}

func appendDocs(b []byte, group string, in *command.Info, proto int) []byte {
	n := 4
	if len(in.Subcommands) > 0 {
		n++
	}
	b = resp.AppendMap(b, n, proto)
	b = resp.AppendBulkString(b, "summary")
	b = resp.AppendBulkString(b, in.Summary)
	b = resp.AppendBulkString(b, "since")
	b = resp.AppendBulkString(b, in.Since)
	b = resp.AppendBulkString(b, "group")
	b = resp.AppendBulkString(b, group)
	b = resp.AppendBulkString(b, "complexity")
	b = resp.AppendBulkString(b, in.Complexity)
	if len(in.Subcommands) > 0 {
		b = resp.AppendBulkString(b, "subcommands")
		b = resp.AppendMap(b, len(in.Subcommands), proto)
		for _, c := range in.Subcommands {
			b = resp.AppendBulkString(b, c.Name)
			b = appendDocs(b, group, &c.Info, proto)
		}
	}
	return b
}

// hasKeys reports whether a key spec of in names keys: Redis's
// doesCommandHaveKeys leaves out not_key specs (SPUBLISH's channel).
func hasKeys(in *command.Info) bool {
	for _, ks := range in.KeySpecs {
		if !slices.Contains(ks.Flags, "not_key") {
			return true
		}
	}
	return false
}

// commandGetKeys answers COMMAND GETKEYS|GETKEYSANDFLAGS cmd arg ...:
// the keys the table finds (Spec.KeyIndexes), with their key-spec flags.
func commandGetKeys(r *request, withFlags bool) {
	args := r.args[2:]
	s := command.Lookup(args[0])
	if s == nil {
		r.setError("ERR Invalid command specified")
		return
	}
	arity, in := s.Arity, s.Info
	if len(in.Subcommands) > 0 && len(args) > 1 {
		sub := findSub(s, args[1])
		if sub == nil {
			r.setError("ERR Invalid command specified")
			return
		}
		arity, in = sub.Arity, &sub.Info
	}
	if !hasKeys(in) && s.KeysFunc == nil {
		r.setError("ERR The command has no key arguments")
		return
	}
	if arity > 0 && len(args) != arity || len(args) < -arity {
		r.setError("ERR Invalid number of arguments specified for command")
		return
	}
	var keys []int
	if !in.BadKeyCount(args) {
		keys = s.KeyIndexes(args)
	}
	if len(keys) == 0 {
		if hasFlag(in, "no_mandatory_keys") {
			r.raw(resp.AppendArray(r.reply[:0], 0))
			return
		}
		r.setError("ERR Invalid arguments specified for command")
		return
	}
	b := resp.AppendArray(r.reply[:0], len(keys))
	for _, k := range keys {
		if !withFlags {
			b = resp.AppendBulk(b, args[k])
			continue
		}
		flags := variableFlags(s.Name, args)
		if flags == nil {
			flags = in.KeyFlags(args, k)
		}
		b = resp.AppendArray(b, 2)
		b = resp.AppendBulk(b, args[k])
		b = appendStatusSet(b, flags, r.proto)
	}
	r.raw(b)
}

// variableFlags are the key flags of the commands whose key spec is
// marked variable_flags, as Redis's getkeys procedures find them: SET's
// key is read when GET is given, BITFIELD's only read when it only GETs.
func variableFlags(name string, args [][]byte) []string {
	switch name {
	case "set":
		for _, a := range args[3:] {
			if strings.EqualFold(string(a), "get") {
				return []string{"RW", "access", "update"}
			}
		}
		return []string{"OW", "update"}
	case "bitfield":
		for i := 2; i < len(args); i++ {
			rest := len(args) - i - 1
			switch a := strings.ToLower(string(args[i])); {
			case a == "get" && rest >= 2:
				i += 2
			case a == "overflow" && rest >= 1:
				i++
			default:
				return []string{"RW", "access", "update"}
			}
		}
		return []string{"RO", "access"}
	}
	return nil
}

func hasFlag(in *command.Info, f string) bool {
	for _, g := range in.Flags {
		if g == f {
			return true
		}
	}
	return false
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

func appendCommandInfo(b []byte, s *command.Spec, proto int) []byte {
	return appendInfo(b, s.Name, s.Arity, s.Info, proto)
}

// appendInfo appends one 10-element COMMAND INFO entry.
func appendInfo(b []byte, name string, arity int, in *command.Info, proto int) []byte {
	b = resp.AppendArray(b, 10)
	b = resp.AppendBulkString(b, name)
	b = resp.AppendInt(b, int64(arity))
	b = appendStatusSet(b, in.Flags, proto)
	b = resp.AppendInt(b, int64(in.FirstKey))
	b = resp.AppendInt(b, int64(in.LastKey))
	b = resp.AppendInt(b, int64(in.Step))
	b = appendStatusSet(b, in.ACL, proto)
	tips := in.Tips[:0:0]
	for _, t := range in.Tips {
		if !strings.HasPrefix(t, "request_policy:") && !strings.HasPrefix(t, "response_policy:") {
			tips = append(tips, t)
		}
	}
	b = resp.AppendSet(b, len(tips), proto)
	for _, t := range tips {
		b = resp.AppendBulkString(b, t)
	}
	b = resp.AppendSet(b, len(in.KeySpecs), proto)
	for i := range in.KeySpecs {
		b = appendKeySpec(b, &in.KeySpecs[i], proto)
	}
	if len(in.Subcommands) == 0 {
		return resp.AppendSet(b, 0, proto) // as Redis 7.0 answers
	}
	b = resp.AppendArray(b, len(in.Subcommands))
	for _, c := range in.Subcommands {
		b = appendInfo(b, c.Name, c.Arity, &c.Info, proto)
	}
	return b
}

func appendStatusSet(b []byte, l []string, proto int) []byte {
	b = resp.AppendSet(b, len(l), proto)
	for _, f := range l {
		b = resp.AppendStatus(b, f)
	}
	return b
}

// appendSearchStep opens one of a key spec's two steps (begin_search,
// find_keys): its name, then a map of its type and its spec, whose value
// the caller appends.
func appendSearchStep(b []byte, step, typ string, proto int) []byte {
	b = resp.AppendBulkString(b, step)
	b = resp.AppendMap(b, 2, proto)
	b = resp.AppendBulkString(b, "type")
	b = resp.AppendBulkString(b, typ)
	return resp.AppendBulkString(b, "spec")
}

// appendIntEntry appends one name: integer entry of a search step's spec.
func appendIntEntry(b []byte, name string, v int) []byte {
	b = resp.AppendBulkString(b, name)
	return resp.AppendInt(b, int64(v))
}

// appendKeySpec appends one key specification as Redis 7.0 does.
func appendKeySpec(b []byte, ks *command.KeySpec, proto int) []byte {
	n := 3
	if ks.Notes != "" {
		n++
	}
	b = resp.AppendMap(b, n, proto)
	if ks.Notes != "" {
		b = resp.AppendBulkString(b, "notes")
		b = resp.AppendBulkString(b, ks.Notes)
	}
	b = resp.AppendBulkString(b, "flags")
	b = appendStatusSet(b, ks.Flags, proto)
	b = appendSearchStep(b, "begin_search", ks.BeginSearch, proto)
	switch ks.BeginSearch {
	case "index":
		b = resp.AppendMap(b, 1, proto)
		b = appendIntEntry(b, "index", ks.Index)
	case "keyword":
		b = resp.AppendMap(b, 2, proto)
		b = resp.AppendBulkString(b, "keyword")
		b = resp.AppendBulkString(b, ks.Keyword)
		b = appendIntEntry(b, "startfrom", ks.StartFrom)
	default:
		b = resp.AppendMap(b, 0, proto)
	}
	b = appendSearchStep(b, "find_keys", ks.FindKeys, proto)
	switch ks.FindKeys {
	case "range":
		b = resp.AppendMap(b, 3, proto)
		b = appendIntEntry(b, "lastkey", ks.LastKey)
		b = appendIntEntry(b, "keystep", ks.KeyStep)
		b = appendIntEntry(b, "limit", ks.Limit)
	case "keynum":
		b = resp.AppendMap(b, 3, proto)
		b = appendIntEntry(b, "keynumidx", ks.KeyNumIdx)
		b = appendIntEntry(b, "firstkey", ks.FirstKey)
		b = appendIntEntry(b, "keystep", ks.KeyStep)
	default:
		b = resp.AppendMap(b, 0, proto)
	}
	return b
}
