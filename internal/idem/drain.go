package idem

import "context"

// Drain waits until every drive that outlived its request has recorded its
// result, or until ctx ends. A server calls it after it stopped taking
// requests and before it closes the pool; a drive still running past ctx
// leaves its action running, for the reconciler once its lease expires.
func (c *Core) Drain(ctx context.Context) error {
	done := make(chan struct{})
	go func() {
		c.background.Wait()
		close(done)
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
