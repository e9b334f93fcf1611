package service

// rootOnly: Windows has no root, and Command never looks (os.Geteuid is
// -1 there).
func rootOnly(string) bool { return false }
