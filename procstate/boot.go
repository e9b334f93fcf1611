package procstate

// BootID returns a string that names the current boot of the machine: a
// record carrying another boot's id names processes that no longer exist,
// whatever their pids now run. On Linux it is the kernel's random boot_id;
// elsewhere the boot time, which a reboot changes.
func BootID() (string, error) { return bootID() }
