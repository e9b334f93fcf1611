// Package signals names the signals the supervisor handles and sends on
// each OS.
package signals
