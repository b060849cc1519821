package tracer

// syscallPrefix starts the kernel's syscall functions on x86_64.
const syscallPrefix = "__x64_sys_"
