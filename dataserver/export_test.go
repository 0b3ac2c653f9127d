package dataserver

// SetTestHook installs fn as the package's test hook (contain.go) for
// the external tests; the returned func removes it.
func SetTestHook(fn func(point, cmd string)) func() {
	testHook.Store(&fn)
	return func() { testHook.Store(nil) }
}
