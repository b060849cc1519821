package event

// Task is a thread the tracer saw born, or move between mount namespaces,
// since its programs were attached, where it is now: its tid, its process
// (thread group) and its mount namespace. A task that predates tracing and
// never moved is not one; an exited one is gone.
type Task struct {
	TID   int    `json:"tid"`
	PID   int    `json:"pid"`
	MntNS uint32 `json:"mntns"`
}
