// Package ctlsock is the supervisor's control endpoint: a unix socket or
// named pipe per Hermes home that only the supervisor's user (and root or
// SYSTEM) can reach.
package ctlsock
