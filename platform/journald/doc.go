// Package journald writes zap log entries to journald over its native
// protocol, one journal field per log field.
package journald
