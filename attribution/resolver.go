package attribution

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Options tunes a Resolver. Zero values take the defaults.
type Options struct {
	// Timeout bounds each call to a source. Default 2s.
	Timeout time.Duration
	// NegativeTTL is how long a miss or an error is remembered before the
	// sources are asked again. Default 30s.
	NegativeTTL time.Duration
	// MaxEntries bounds each cache (containers, pods). Default 4096.
	MaxEntries int
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.Timeout == 0 {
		o.Timeout = 2 * time.Second
	}
	if o.NegativeTTL == 0 {
		o.NegativeTTL = 30 * time.Second
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = 4096
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Stats counts what a Resolver did.
type Stats struct {
	Hits, Misses uint64 // answered from the cache (a remembered miss is a hit), or asked
	Errors       uint64 // sources' errors other than not-found and unavailable
}

// Resolver answers from its cache, or asks its sources in order and caches
// the first answer. It is safe for concurrent use; the lock is not held
// while a source is asked.
type Resolver struct {
	sources []Source
	opts    Options

	mu         sync.Mutex
	containers *cache[Container]
	pods       *cache[Pod]
	stats      Stats
}

// NewResolver returns a Resolver over sources, asked in order.
func NewResolver(opts Options, sources ...Source) *Resolver {
	opts.defaults()
	return &Resolver{sources: sources, opts: opts,
		containers: newCache[Container](opts.MaxEntries), pods: newCache[Pod](opts.MaxEntries)}
}

// Container implements Lookup.
func (r *Resolver) Container(ctx context.Context, id string) (Container, error) {
	return resolve(ctx, r, r.containers, "container "+id, id, func(ctx context.Context, s Source) (Container, error) {
		return s.Container(ctx, id)
	})
}

// Pod implements Lookup.
func (r *Resolver) Pod(ctx context.Context, uid string) (Pod, error) {
	return resolve(ctx, r, r.pods, "pod "+uid, uid, func(ctx context.Context, s Source) (Pod, error) {
		return s.Pod(ctx, uid)
	})
}

// Stats returns the counters so far.
func (r *Resolver) Stats() Stats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.stats
}

// resolve is Container and Pod: the cache, else each source in turn. The
// first answer wins; not-found and unavailable sources are passed over; an
// error is returned when no source answered and one failed. A miss and an
// error are both remembered for the negative TTL.
func resolve[V any](ctx context.Context, r *Resolver, c *cache[V], what, key string, ask func(context.Context, Source) (V, error)) (V, error) {
	r.mu.Lock()
	if e, ok := c.get(key, r.opts.Now()); ok {
		r.stats.Hits++
		r.mu.Unlock()
		return e.val, e.err
	}
	r.stats.Misses++
	r.mu.Unlock()

	var zero V
	var errs []error
	for _, s := range r.sources {
		if err := ctx.Err(); err != nil {
			return zero, fmt.Errorf("%s: %w", what, err) // stopping: nothing remembered
		}
		call, cancel := context.WithTimeout(ctx, r.opts.Timeout)
		v, err := ask(call, s)
		cancel()
		switch {
		case err == nil:
			r.mu.Lock()
			c.put(key, entry[V]{val: v})
			r.mu.Unlock()
			return v, nil
		case errors.Is(err, ErrNotFound), errors.Is(err, ErrUnavailable):
		default:
			if ctx.Err() != nil {
				return zero, fmt.Errorf("%s: %w", what, ctx.Err())
			}
			errs = append(errs, fmt.Errorf("%s: %w", s.Name(), err))
		}
	}
	err := fmt.Errorf("%s: %w", what, ErrNotFound)
	if len(errs) > 0 {
		err = fmt.Errorf("%s: %w", what, errors.Join(errs...))
	}
	r.mu.Lock()
	if len(errs) > 0 {
		r.stats.Errors++
	}
	c.put(key, entry[V]{err: err, expires: r.opts.Now().Add(r.opts.NegativeTTL)})
	r.mu.Unlock()
	return zero, err
}
