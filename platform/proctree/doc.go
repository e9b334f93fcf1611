// Package proctree starts, kills and reaps process trees: a child and every
// process it spawns, held by its process group, a kill-on-close job object
// on Windows, and on Linux a delegated cgroup and child subreaping.
package proctree
