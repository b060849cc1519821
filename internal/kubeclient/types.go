package kubeclient

import (
	"bytes"
	"fmt"
	"time"
)

// ObjectMeta is the part of an object's metadata mntleak reads and writes.
type ObjectMeta struct {
	Name            string `json:"name,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Pod is the part of a core/v1 Pod mntleak reads: its name, the node it
// is bound to and its containers' ids.
type Pod struct {
	Metadata ObjectMeta `json:"metadata"`
	Spec     PodSpec    `json:"spec"`
	Status   PodStatus  `json:"status"`
}

// PodSpec is the node the pod is bound to.
type PodSpec struct {
	NodeName string `json:"nodeName,omitempty"`
}

// PodStatus holds the statuses of the pod's containers of every kind.
type PodStatus struct {
	InitContainerStatuses      []ContainerStatus `json:"initContainerStatuses,omitempty"`
	ContainerStatuses          []ContainerStatus `json:"containerStatuses,omitempty"`
	EphemeralContainerStatuses []ContainerStatus `json:"ephemeralContainerStatuses,omitempty"`
}

// ContainerStatus names a container and its runtime id
// ("containerd://<id>").
type ContainerStatus struct {
	Name        string `json:"name"`
	Image       string `json:"image,omitempty"`
	ContainerID string `json:"containerID,omitempty"`
}

// podList is a PodList's items.
type podList struct {
	Items []Pod `json:"items"`
}

// ObjectReference is core/v1's reference to an object (an Event's
// regarding and related).
type ObjectReference struct {
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	APIVersion      string `json:"apiVersion,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	FieldPath       string `json:"fieldPath,omitempty"`
}

// Event types.
const (
	EventTypeWarning = "Warning"
	EventTypeNormal  = "Normal"
)

// Event is an events.k8s.io/v1 Event, the fields mntleak sets.
type Event struct {
	APIVersion          string           `json:"apiVersion,omitempty"`
	Kind                string           `json:"kind,omitempty"`
	Metadata            ObjectMeta       `json:"metadata"`
	EventTime           MicroTime        `json:"eventTime"`
	Series              *EventSeries     `json:"series,omitempty"`
	ReportingController string           `json:"reportingController,omitempty"`
	ReportingInstance   string           `json:"reportingInstance,omitempty"`
	Action              string           `json:"action,omitempty"`
	Reason              string           `json:"reason,omitempty"`
	Regarding           ObjectReference  `json:"regarding"`
	Related             *ObjectReference `json:"related,omitempty"`
	Note                string           `json:"note,omitempty"`
	Type                string           `json:"type,omitempty"`
}

// EventSeries counts the repeats of an Event.
type EventSeries struct {
	Count            int32     `json:"count"`
	LastObservedTime MicroTime `json:"lastObservedTime"`
}

// MicroTime is metav1.MicroTime: RFC 3339 with microseconds, in UTC.
type MicroTime struct {
	time.Time
}

// microLayout is metav1.RFC3339Micro.
const microLayout = "2006-01-02T15:04:05.000000Z07:00"

// MarshalJSON writes the time as the API server does; the zero time is
// null.
func (t MicroTime) MarshalJSON() ([]byte, error) {
	if t.IsZero() {
		return []byte("null"), nil
	}
	return []byte(`"` + t.UTC().Format(microLayout) + `"`), nil
}

// UnmarshalJSON reads an RFC 3339 time (any precision) or null.
func (t *MicroTime) UnmarshalJSON(b []byte) error {
	if bytes.Equal(b, []byte("null")) {
		t.Time = time.Time{}
		return nil
	}
	if len(b) < 2 || b[0] != '"' || b[len(b)-1] != '"' {
		return fmt.Errorf("time %s: not a string", b)
	}
	v, err := time.Parse(time.RFC3339Nano, string(b[1:len(b)-1]))
	if err != nil {
		return fmt.Errorf("time %s: %w", b, err)
	}
	t.Time = v.Local()
	return nil
}
