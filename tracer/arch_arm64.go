package tracer

// syscallPrefix starts the kernel's syscall functions on arm64.
const syscallPrefix = "__arm64_sys_"
