package main

import (
	"context"
	"fmt"
	"io"
	"net/http"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// heapCount is what oncecall's /metrics says it has allocated so far and how
// many requests it has answered: Go's own counters, which do not depend on
// how fast the machine is, so a run's allocations per request move only
// when oncecall's code does.
type heapCount struct {
	objects, bytes, requests float64
}

// heapCounts reads oncecall's /metrics at base (go_memstats_mallocs_total,
// go_memstats_alloc_bytes_total and the sum of oncecall_http_requests_total
// but for the readings of /metrics themselves, so that a run whose requests
// went to another server counts none).
func heapCounts(ctx context.Context, client *http.Client, base string) (heapCount, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return heapCount{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return heapCount{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body) //nolint:errcheck // drained for reuse only
		return heapCount{}, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		return heapCount{}, fmt.Errorf("GET /metrics: %w", err)
	}
	var h heapCount
	for name, dst := range map[string]*float64{
		"go_memstats_mallocs_total":     &h.objects,
		"go_memstats_alloc_bytes_total": &h.bytes,
		"oncecall_http_requests_total":  &h.requests,
	} {
		f := fams[name]
		if f == nil {
			return heapCount{}, fmt.Errorf("GET /metrics: no %s", name)
		}
		*dst = sum(f)
	}
	return h, nil
}

// sum adds up a family's counters, or its untyped or gauge samples, but for
// those of the /metrics route.
func sum(f *dto.MetricFamily) float64 {
	var s float64
next:
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "route" && l.GetValue() == "/metrics" {
				continue next
			}
		}
		s += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
	}
	return s
}

// perRequest is what oncecall allocated per request it answered between
// from and to (a run, its warm-up included: its requests are the same
// kind); ok is false when it answered none (the run's requests went to
// another server). Its own count of requests is the divisor. The window
// holds one reading of /metrics, a few hundred KB: well under 0.1 KB per
// request in a run of thousands.
func (to heapCount) perRequest(from heapCount) (objects, bytes float64, ok bool) {
	n := to.requests - from.requests
	if n < 1 {
		return 0, 0, false
	}
	return (to.objects - from.objects) / n, (to.bytes - from.bytes) / n, true
}
