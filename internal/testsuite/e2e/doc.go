// Package e2e holds end-to-end tests of the supervisor that need a private
// PID namespace, where a pid can be handed to an unrelated process on
// purpose.
package e2e
