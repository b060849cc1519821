package cri

import (
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// The messages of the four calls this package makes, encoded and decoded
// field by field with protowire (the field numbers are
// k8s.io/cri-api/pkg/apis/runtime/v1/api.proto's; cri_test.go checks them
// against the generated types). Only the fields mntleak reads are
// decoded; every other is skipped, as protobuf's rules say.

// Request fields.
const (
	fieldRequestID         = 1    // ContainerStatusRequest.container_id, PodSandboxStatusRequest.pod_sandbox_id
	fieldFilter            = 1    // List*Request.filter
	fieldSandboxSelector   = 3    // PodSandboxFilter.label_selector
	fieldContainerSelector = 4    // ContainerFilter.label_selector
	fieldMapKey, fieldMap  = 1, 2 // a map<string, string> entry's key and value
)

// sandboxReady is PodSandboxState SANDBOX_READY.
const sandboxReady = 0

// containerStatus is what mntleak reads of a ContainerStatus.
type containerStatus struct {
	id, name, image, userImage, imageRef string
	labels                               map[string]string
}

// sandbox is what mntleak reads of a PodSandbox or a PodSandboxStatus.
type sandbox struct {
	id, name, uid, namespace string
	state                    uint64
}

// idRequest is a ContainerStatusRequest or a PodSandboxStatusRequest.
func idRequest(id string) []byte {
	return protowire.AppendString(protowire.AppendTag(nil, fieldRequestID, protowire.BytesType), id)
}

// listRequest is a ListPodSandboxRequest or a ListContainersRequest whose
// filter holds only a label selector, at field selectorField.
func listRequest(selectorField protowire.Number, selector map[string]string) []byte {
	var filter []byte
	keys := make([]string, 0, len(selector))
	for k := range selector {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		var entry []byte
		entry = protowire.AppendString(protowire.AppendTag(entry, fieldMapKey, protowire.BytesType), k)
		entry = protowire.AppendString(protowire.AppendTag(entry, fieldMap, protowire.BytesType), selector[k])
		filter = protowire.AppendBytes(protowire.AppendTag(filter, selectorField, protowire.BytesType), entry)
	}
	return protowire.AppendBytes(protowire.AppendTag(nil, fieldFilter, protowire.BytesType), filter)
}

// fields calls f with each field of message b: its number, wire type and
// value (a varint's value in v, a length-delimited field's bytes in s);
// f returns an error to stop. A malformed message is an error.
func fields(b []byte, f func(num protowire.Number, typ protowire.Type, v uint64, s []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("malformed message: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v uint64
		var s []byte
		switch typ {
		case protowire.VarintType:
			v, n = protowire.ConsumeVarint(b)
		case protowire.BytesType:
			s, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return fmt.Errorf("malformed field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := f(num, typ, v, s); err != nil {
			return err
		}
	}
	return nil
}

// bytesField returns the message b's length-delimited field num (the
// last one, as protobuf merges a repeated singular field), nil if absent.
func bytesField(b []byte, num protowire.Number) ([]byte, error) {
	var out []byte
	err := fields(b, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
		if n == num && typ == protowire.BytesType {
			out = s
		}
		return nil
	})
	return out, err
}

// repeated returns the message b's length-delimited fields num, in order.
func repeated(b []byte, num protowire.Number) ([][]byte, error) {
	var out [][]byte
	err := fields(b, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
		if n == num && typ == protowire.BytesType {
			out = append(out, s)
		}
		return nil
	})
	return out, err
}

// mapEntry decodes one entry of a map<string, string> into m.
func mapEntry(b []byte, m map[string]string) error {
	var k, v string
	err := fields(b, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
		switch {
		case n == fieldMapKey && typ == protowire.BytesType:
			k = string(s)
		case n == fieldMap && typ == protowire.BytesType:
			v = string(s)
		}
		return nil
	})
	m[k] = v
	return err
}

// decodeContainerStatus decodes a ContainerStatus: id 1, metadata 2
// (ContainerMetadata: name 1), image 8 (ImageSpec: image 1,
// user_specified_image 18), image_ref 9, labels 12.
func decodeContainerStatus(b []byte) (containerStatus, error) {
	c := containerStatus{labels: map[string]string{}}
	err := fields(b, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch n {
		case 1:
			c.id = string(s)
		case 2:
			return fields(s, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
				if n == 1 && typ == protowire.BytesType {
					c.name = string(s)
				}
				return nil
			})
		case 8:
			return fields(s, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
				switch {
				case n == 1 && typ == protowire.BytesType:
					c.image = string(s)
				case n == 18 && typ == protowire.BytesType:
					c.userImage = string(s)
				}
				return nil
			})
		case 9:
			c.imageRef = string(s)
		case 12:
			return mapEntry(s, c.labels)
		}
		return nil
	})
	if err != nil {
		return containerStatus{}, fmt.Errorf("ContainerStatus: %w", err)
	}
	return c, nil
}

// decodeSandbox decodes a PodSandbox or a PodSandboxStatus (the same
// first three fields): id 1, metadata 2 (PodSandboxMetadata: name 1, uid
// 2, namespace 3), state 3.
func decodeSandbox(b []byte) (sandbox, error) {
	var sb sandbox
	err := fields(b, func(n protowire.Number, typ protowire.Type, v uint64, s []byte) error {
		switch {
		case n == 1 && typ == protowire.BytesType:
			sb.id = string(s)
		case n == 3 && typ == protowire.VarintType:
			sb.state = v
		case n == 2 && typ == protowire.BytesType:
			return fields(s, func(n protowire.Number, typ protowire.Type, _ uint64, s []byte) error {
				if typ != protowire.BytesType {
					return nil
				}
				switch n {
				case 1:
					sb.name = string(s)
				case 2:
					sb.uid = string(s)
				case 3:
					sb.namespace = string(s)
				}
				return nil
			})
		}
		return nil
	})
	if err != nil {
		return sandbox{}, fmt.Errorf("PodSandbox: %w", err)
	}
	return sb, nil
}

// decodeSandboxes decodes a ListPodSandboxResponse: items 1.
func decodeSandboxes(b []byte) ([]sandbox, error) {
	items, err := repeated(b, 1)
	if err != nil {
		return nil, fmt.Errorf("ListPodSandboxResponse: %w", err)
	}
	out := make([]sandbox, 0, len(items))
	for _, it := range items {
		sb, err := decodeSandbox(it)
		if err != nil {
			return nil, err
		}
		out = append(out, sb)
	}
	return out, nil
}

// decodeContainerIDs decodes the ids of a ListContainersResponse:
// containers 1 (Container: id 1).
func decodeContainerIDs(b []byte) ([]string, error) {
	items, err := repeated(b, 1)
	if err != nil {
		return nil, fmt.Errorf("ListContainersResponse: %w", err)
	}
	out := make([]string, 0, len(items))
	for _, it := range items {
		id, err := bytesField(it, 1)
		if err != nil {
			return nil, fmt.Errorf("Container: %w", err)
		}
		out = append(out, string(id))
	}
	return out, nil
}
