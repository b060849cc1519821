package kubeclient

import (
	"context"
	"net/url"
	"strings"
)

// eventsPath is the events.k8s.io/v1 Events of a namespace.
func eventsPath(namespace string) string {
	return "/apis/events.k8s.io/v1/namespaces/" + url.PathEscape(namespace) + "/events"
}

// selectorValue escapes a field selector's value as the API server reads
// it (apimachinery's fields.EscapeValue).
func selectorValue(v string) string {
	return strings.NewReplacer(`\`, `\\`, `,`, `\,`, `=`, `\=`).Replace(v)
}

// ListPodsOnNode lists the pods bound to node (fieldSelector
// spec.nodeName=NODE, in every namespace).
func (c *Client) ListPodsOnNode(ctx context.Context, node string) ([]Pod, error) {
	var list podList
	q := url.Values{"fieldSelector": {"spec.nodeName=" + selectorValue(node)}}
	if err := c.do(ctx, "GET", "/api/v1/pods", q, "", nil, &list); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// GetPod reads one pod.
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*Pod, error) {
	var p Pod
	path := "/api/v1/namespaces/" + url.PathEscape(namespace) + "/pods/" + url.PathEscape(name)
	if err := c.do(ctx, "GET", path, nil, "", nil, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// CreateEvent creates ev in its namespace (apiVersion and kind are set
// here) and returns what the server stored.
func (c *Client) CreateEvent(ctx context.Context, ev *Event) (*Event, error) {
	body := *ev
	body.APIVersion, body.Kind = "events.k8s.io/v1", "Event"
	body.Metadata.ResourceVersion = ""
	var out Event
	if err := c.do(ctx, "POST", eventsPath(ev.Metadata.Namespace), nil, "application/json", &body, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// seriesPatch is the merge patch that sets an Event's series.
type seriesPatch struct {
	Series EventSeries `json:"series"`
}

// PatchEventSeries sets the series (count, last observed) of the Event
// namespace/name.
func (c *Client) PatchEventSeries(ctx context.Context, namespace, name string, s EventSeries) (*Event, error) {
	var out Event
	path := eventsPath(namespace) + "/" + url.PathEscape(name)
	if err := c.do(ctx, "PATCH", path, nil, "application/merge-patch+json", seriesPatch{Series: s}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}
