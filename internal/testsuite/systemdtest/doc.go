// Package systemdtest runs hermes-supervisor under a real systemd as PID 1:
// the host's own root, booted read-only with systemd-nspawn over a tmpfs,
// with system and user units installed by the shipped binary. It needs
// root, systemd-nspawn (Debian's systemd-container) and cgroups we may
// create; elsewhere it skips and says why.
package systemdtest
