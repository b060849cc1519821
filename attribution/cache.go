package attribution

import "time"

// cache holds answers by key, at most max of them (the oldest entry goes
// first). An answer is kept until evicted: a container id or a pod UID
// never names another object. A miss or an error is kept until its expiry
// (the negative TTL), then asked again.
type cache[V any] struct {
	max     int
	entries map[string]entry[V]
	order   []string // keys, oldest first; may hold keys deleted since
}

type entry[V any] struct {
	val     V
	err     error     // the miss or error remembered
	expires time.Time // for an error entry
}

func newCache[V any](max int) *cache[V] {
	return &cache[V]{max: max, entries: map[string]entry[V]{}}
}

// get returns the entry for key at now; ok is false for none or an
// expired error entry.
func (c *cache[V]) get(key string, now time.Time) (entry[V], bool) {
	e, ok := c.entries[key]
	if !ok {
		return e, false
	}
	if e.err != nil && !now.Before(e.expires) {
		delete(c.entries, key)
		return e, false
	}
	return e, true
}

func (c *cache[V]) put(key string, e entry[V]) {
	if _, ok := c.entries[key]; !ok {
		c.order = append(c.order, key)
	}
	c.entries[key] = e
	for len(c.entries) > c.max && len(c.order) > 0 {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
	if len(c.order) > 2*c.max {
		// Keys deleted by expiry pile up in order: compact it.
		live := make([]string, 0, len(c.entries))
		for _, k := range c.order {
			if _, ok := c.entries[k]; ok {
				live = append(live, k)
			}
		}
		c.order = live
	}
}

func (c *cache[V]) len() int { return len(c.entries) }
