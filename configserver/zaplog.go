package configserver

import (
	"context"
	"log/slog"
	"strings"
	"sync/atomic"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// slogCore sends etcd's zap logs (warn and above) to the configserver's
// slog logger, so they carry its fields and go where its logs go. Known
// harmless messages (etcd's warnings about its own defaults, and the
// listener errors it logs while it is being closed) are demoted to debug.
type slogCore struct {
	log     *slog.Logger
	fields  []zapcore.Field
	closing *atomic.Bool
}

var benignEtcd = []string{
	"Running http and grpc server on single port",
	"simple token is not cryptographically signed",
}

func newZapLogger(log *slog.Logger, closing *atomic.Bool) *zap.Logger {
	return zap.New(&slogCore{log: log.With("component", "etcd"), closing: closing})
}

func (c *slogCore) Enabled(l zapcore.Level) bool { return l >= zapcore.WarnLevel }

func (c *slogCore) With(fields []zapcore.Field) zapcore.Core {
	return &slogCore{log: c.log, fields: append(append([]zapcore.Field(nil), c.fields...), fields...), closing: c.closing}
}

func (c *slogCore) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

func (c *slogCore) Write(e zapcore.Entry, fields []zapcore.Field) error {
	level := slog.LevelWarn
	if e.Level >= zapcore.ErrorLevel {
		level = slog.LevelError
	}
	if c.closing != nil && c.closing.Load() {
		level = slog.LevelDebug
	}
	for _, b := range benignEtcd {
		if strings.Contains(e.Message, b) {
			level = slog.LevelDebug
		}
	}
	if !c.log.Enabled(context.Background(), level) {
		return nil
	}
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range append(append([]zapcore.Field(nil), c.fields...), fields...) {
		f.AddTo(enc)
	}
	attrs := make([]any, 0, 2*len(enc.Fields))
	for k, v := range enc.Fields {
		attrs = append(attrs, k, v)
	}
	c.log.Log(context.Background(), level, e.Message, attrs...)
	return nil
}

func (c *slogCore) Sync() error { return nil }
