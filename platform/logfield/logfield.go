// Package logfield builds structured log fields and names the logger they
// go to without linking package zap itself: zap's HTTP level handler links
// net/http, whose set-up costs about 0.28 ms of every start of a program
// that links it (a bare program against one that only imports net/http,
// 40 starts each). The demo gateway starts on every restart, and links
// lockstore and termtext, which log through this package; the supervisor
// passes them its *zap.Logger, which is a Logger.
package logfield

import (
	"fmt"
	"time"

	"go.uber.org/zap/zapcore"
)

// Logger is what code that logs through these fields needs of a logger;
// *zap.Logger is one.
type Logger interface {
	Debug(msg string, fields ...zapcore.Field)
	Info(msg string, fields ...zapcore.Field)
	Warn(msg string, fields ...zapcore.Field)
}

// Nop is a Logger that logs nothing.
type Nop struct{}

// Debug logs nothing.
func (Nop) Debug(string, ...zapcore.Field) {}

// Info logs nothing.
func (Nop) Info(string, ...zapcore.Field) {}

// Warn logs nothing.
func (Nop) Warn(string, ...zapcore.Field) {}

// String is zap.String.
func String(key, v string) zapcore.Field {
	return zapcore.Field{Key: key, Type: zapcore.StringType, String: v}
}

// ByteString is zap.ByteString.
func ByteString(key string, v []byte) zapcore.Field {
	return zapcore.Field{Key: key, Type: zapcore.ByteStringType, Interface: v}
}

// Int is zap.Int.
func Int(key string, v int) zapcore.Field {
	return zapcore.Field{Key: key, Type: zapcore.Int64Type, Integer: int64(v)}
}

// Bool is zap.Bool.
func Bool(key string, v bool) zapcore.Field {
	var i int64
	if v {
		i = 1
	}
	return zapcore.Field{Key: key, Type: zapcore.BoolType, Integer: i}
}

// Duration is zap.Duration.
func Duration(key string, v time.Duration) zapcore.Field {
	return zapcore.Field{Key: key, Type: zapcore.DurationType, Integer: int64(v)}
}

// Stringer is zap.Stringer.
func Stringer(key string, v fmt.Stringer) zapcore.Field {
	return zapcore.Field{Key: key, Type: zapcore.StringerType, Interface: v}
}

// Error is zap.Error: a nil err is no field at all.
func Error(err error) zapcore.Field {
	if err == nil {
		return zapcore.Field{Type: zapcore.SkipType}
	}
	return zapcore.Field{Key: "error", Type: zapcore.ErrorType, Interface: err}
}
