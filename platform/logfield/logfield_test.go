package logfield

import (
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// TestFieldsAreZaps holds each constructor to zap's own: the same field,
// so a line logged through either reads the same.
func TestFieldsAreZaps(t *testing.T) {
	err := errors.New("boom")
	for _, c := range []struct {
		name      string
		got, want zapcore.Field
	}{
		{"String", String("k", "v"), zap.String("k", "v")},
		{"String empty", String("k", ""), zap.String("k", "")},
		{"ByteString", ByteString("k", []byte("a\xffb")), zap.ByteString("k", []byte("a\xffb"))},
		{"Int", Int("k", -7), zap.Int("k", -7)},
		{"Bool true", Bool("k", true), zap.Bool("k", true)},
		{"Bool false", Bool("k", false), zap.Bool("k", false)},
		{"Duration", Duration("k", 1500*time.Millisecond), zap.Duration("k", 1500*time.Millisecond)},
		{"Stringer", Stringer("k", time.Second), zap.Stringer("k", time.Second)},
		{"Error", Error(err), zap.Error(err)},
		{"Error nil", Error(nil), zap.Error(nil)},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !c.got.Equals(c.want) {
				t.Fatalf("%+v, zap makes %+v", c.got, c.want)
			}
		})
	}
}

// The promise the package makes to its callers, checked as it compiles:
// the supervisor's *zap.Logger, and Nop, are Loggers.
var (
	_ Logger = (*zap.Logger)(nil)
	_ Logger = Nop{}
)
