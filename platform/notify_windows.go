package platform

// Notify does nothing on Windows: the service control manager learns of
// our state through the service handler instead.
func Notify(state string) error { return nil }
