package conformance

// onLinux: start times are /proc clock ticks, compared exactly, and Hermes
// sees the stopped state.
const onLinux = true
