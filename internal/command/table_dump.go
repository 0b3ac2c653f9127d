package command

// DUMP and RESTORE (dataserver/exec dump.go): a value in Redis's
// serialization format (RDB object encoding, RDB version, CRC64), so that
// values move between this store and Redis 7.0 both ways. DUMP reads;
// RESTORE writes one key (its relative TTL reaches slaves as ABSTTL).
func init() {
	Register(
		&Spec{Name: "dump", Arity: 2, Flags: ReadOnly, FirstKey: 1, LastKey: 1, Step: 1},
		&Spec{Name: "restore", Arity: -4, Flags: Write, FirstKey: 1, LastKey: 1, Step: 1},
		// TAIR.RESTOREREC key record: tair ctl restore's write of one
		// record of a backup (dataserver/exec restorerec.go).
		&Spec{Name: "tair.restorerec", Arity: 3, Flags: Write | Tair, FirstKey: 1, LastKey: 1, Step: 1},
	)
}
