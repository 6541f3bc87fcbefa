package exposition

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// Collector is what a [Registry] gathers: the metrics of this package.
type Collector interface {
	// families are the names of the families it reports.
	families() []string
	// collect appends its families (empty ones included) to out.
	collect(out []*dto.MetricFamily) ([]*dto.MetricFamily, error)
}

// desc is a family's identity: name, help, type and label names.
type desc struct {
	name   string
	help   string
	typ    dto.MetricType
	labels []string // in declaration order: the order of label values
	order  []int    // indexes of labels sorted by name: the exposed order
}

// newDesc checks name and labels and panics on an invalid one: they are
// constants of the caller's code, like client_golang's.
func newDesc(name, help string, typ dto.MetricType, labels []string) *desc {
	if !model.LegacyValidation.IsValidMetricName(name) {
		panic(fmt.Sprintf("exposition: invalid metric name %q: use letters, digits, _ and :, not starting with a digit", name))
	}
	if help == "" {
		panic(fmt.Sprintf("exposition: metric %s has no help text", name))
	}
	seen := map[string]bool{}
	for _, l := range labels {
		switch {
		case !model.LegacyValidation.IsValidLabelName(l):
			panic(fmt.Sprintf("exposition: metric %s: invalid label name %q: use letters, digits and _, not starting with a digit", name, l))
		case strings.HasPrefix(l, model.ReservedLabelPrefix):
			panic(fmt.Sprintf("exposition: metric %s: label name %q is reserved (prefix %s)", name, l, model.ReservedLabelPrefix))
		case typ == dto.MetricType_HISTOGRAM && l == model.BucketLabel:
			panic(fmt.Sprintf("exposition: histogram %s: label name %q is the bucket label", name, l))
		case seen[l]:
			panic(fmt.Sprintf("exposition: metric %s: label name %q declared twice", name, l))
		}
		seen[l] = true
	}
	d := &desc{name: name, help: help, typ: typ, labels: slices.Clone(labels), order: make([]int, len(labels))}
	for i := range d.order {
		d.order[i] = i
	}
	slices.SortFunc(d.order, func(a, b int) int { return strings.Compare(labels[a], labels[b]) })
	return d
}

// family is an empty family of d.
func (d *desc) family() *dto.MetricFamily {
	return &dto.MetricFamily{Name: &d.name, Help: &d.help, Type: d.typ.Enum()}
}

// pairs are the label pairs of values, sorted by label name.
func (d *desc) pairs(values []string) []*dto.LabelPair {
	if len(values) == 0 {
		return nil
	}
	out := make([]*dto.LabelPair, len(values))
	for i, j := range d.order {
		out[i] = &dto.LabelPair{Name: &d.labels[j], Value: &values[j]}
	}
	return out
}

// checkValues panics when values do not match d's labels in number (the
// number is fixed by the caller's code) and returns them as valid UTF-8.
func (d *desc) checkValues(values []string) []string {
	if len(values) != len(d.labels) {
		panic(fmt.Sprintf("exposition: %s takes %d label values (%s), got %d", d.name, len(d.labels),
			strings.Join(d.labels, ", "), len(values)))
	}
	return validValues(values)
}

// validValues returns values with invalid UTF-8 replaced by U+FFFD (a copy
// when one changes).
func validValues(values []string) []string {
	out, copied := values, false
	for i, v := range values {
		if utf8.ValidString(v) {
			continue
		}
		if !copied {
			out, copied = slices.Clone(values), true
		}
		out[i] = strings.ToValidUTF8(v, string(utf8.RuneError))
	}
	return out
}

// key identifies a series by its label values. Valid UTF-8 never holds the
// byte 0xff, so the separator cannot be forged.
func key(values []string) string { return strings.Join(values, "\xff") }

// sortMetrics orders a family's series by label values in the exposed
// (label-name) order, as client_golang does.
func sortMetrics(ms []*dto.Metric) {
	slices.SortFunc(ms, func(a, b *dto.Metric) int {
		for i := range a.Label {
			if c := strings.Compare(a.Label[i].GetValue(), b.Label[i].GetValue()); c != 0 {
				return c
			}
		}
		return 0
	})
}

// Counter is a monotonic counter, safe for concurrent use.
type Counter struct {
	n       atomic.Uint64
	created *timestamppb.Timestamp
}

// Inc adds one.
func (c *Counter) Inc() { c.n.Add(1) }

// Value is the count.
func (c *Counter) Value() float64 { return float64(c.n.Load()) }

func (c *Counter) metric(labels []*dto.LabelPair) *dto.Metric {
	v := c.Value()
	return &dto.Metric{Label: labels, Counter: &dto.Counter{Value: &v, CreatedTimestamp: c.created}}
}

// series is one series of a family: a [Counter] or a [Histogram].
type series interface {
	metric(labels []*dto.LabelPair) *dto.Metric
}

// vec is a family of series with fixed label names, each created on first
// use by newSeries.
type vec[S series] struct {
	d         *desc
	newSeries func() S
	mu        sync.RWMutex
	children  map[string]child[S]
}

// child is one series of a vec, with its label values.
type child[S series] struct {
	s      S
	values []string
}

func newVec[S series](d *desc, newSeries func() S) vec[S] {
	return vec[S]{d: d, newSeries: newSeries, children: map[string]child[S]{}}
}

// with returns the series of values (in the order of the label names),
// creating it. It panics when the number of values is not the number of
// label names.
func (v *vec[S]) with(values []string) S {
	values = v.d.checkValues(values)
	k := key(values)
	v.mu.RLock()
	c, ok := v.children[k]
	v.mu.RUnlock()
	if ok {
		return c.s
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if c, ok = v.children[k]; !ok {
		c = child[S]{s: v.newSeries(), values: slices.Clone(values)}
		v.children[k] = c
	}
	return c.s
}

func (v *vec[S]) families() []string { return []string{v.d.name} }

func (v *vec[S]) collect(out []*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	mf := v.d.family()
	v.mu.RLock()
	for _, c := range v.children {
		mf.Metric = append(mf.Metric, c.s.metric(v.d.pairs(c.values)))
	}
	v.mu.RUnlock()
	sortMetrics(mf.Metric)
	return append(out, mf), nil
}

// CounterVec is a family of counters with fixed label names.
type CounterVec struct{ vec[*Counter] }

// PlainCounter is a counter family of one series without labels; it
// exists (at 0) from the start.
type PlainCounter struct {
	*Counter
	vec *CounterVec
}

// NewCounter returns a counter without labels. It panics on an invalid
// name.
func NewCounter(name, help string) *PlainCounter {
	vec := NewCounterVec(name, help)
	return &PlainCounter{Counter: vec.WithLabelValues(), vec: vec}
}

func (c *PlainCounter) families() []string { return c.vec.families() }

func (c *PlainCounter) collect(out []*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	return c.vec.collect(out)
}

// NewCounterVec returns a counter family with the label names labels. It
// panics on an invalid name or label name.
func NewCounterVec(name, help string, labels ...string) *CounterVec {
	d := newDesc(name, help, dto.MetricType_COUNTER, labels)
	return &CounterVec{newVec(d, func() *Counter { return &Counter{created: timestamppb.New(time.Now())} })}
}

// WithLabelValues returns the series of values (given in the order of the
// label names), creating it at 0. It panics when the number of values is
// not the number of label names.
func (v *CounterVec) WithLabelValues(values ...string) *Counter { return v.with(values) }

// Histogram counts observations into fixed buckets, safe for concurrent
// use. A scrape during an observation may see its bucket count and not yet
// its sum; the count is always the buckets' total.
type Histogram struct {
	bounds  []float64       // upper bounds, increasing, without +Inf
	counts  []atomic.Uint64 // per bucket, not cumulative; the last is +Inf
	sumBits atomic.Uint64
	created *timestamppb.Timestamp
}

// Observe records one observation.
func (h *Histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v) // the first bound >= v: le is inclusive
	h.counts[i].Add(1)
	for {
		old := h.sumBits.Load()
		if h.sumBits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

func (h *Histogram) metric(labels []*dto.LabelPair) *dto.Metric {
	buckets := make([]*dto.Bucket, len(h.bounds))
	var cum uint64
	for i := range h.bounds {
		cum += h.counts[i].Load()
		buckets[i] = &dto.Bucket{CumulativeCount: new(cum), UpperBound: &h.bounds[i]}
	}
	cum += h.counts[len(h.bounds)].Load()
	sum := math.Float64frombits(h.sumBits.Load())
	return &dto.Metric{Label: labels, Histogram: &dto.Histogram{SampleCount: &cum, SampleSum: &sum, Bucket: buckets,
		CreatedTimestamp: h.created}}
}

// HistogramVec is a family of histograms with fixed label names and
// buckets.
type HistogramVec struct{ vec[*Histogram] }

// NewHistogramVec returns a histogram family with the upper bounds buckets
// (increasing; a last +Inf is implied and may be given) and the label names
// labels. It panics on an invalid name, label name or bucket list.
func NewHistogramVec(name, help string, buckets []float64, labels ...string) *HistogramVec {
	d := newDesc(name, help, dto.MetricType_HISTOGRAM, labels)
	bounds := slices.Clone(buckets)
	if n := len(bounds); n > 0 && math.IsInf(bounds[n-1], +1) {
		bounds = bounds[:n-1]
	}
	if len(bounds) == 0 {
		panic(fmt.Sprintf("exposition: histogram %s has no buckets", name))
	}
	for i, b := range bounds {
		if math.IsNaN(b) || math.IsInf(b, 0) || (i > 0 && b <= bounds[i-1]) {
			panic(fmt.Sprintf("exposition: histogram %s: buckets must be finite and increasing, got %v", name, buckets))
		}
	}
	return &HistogramVec{newVec(d, func() *Histogram {
		return &Histogram{bounds: bounds, counts: make([]atomic.Uint64, len(bounds)+1), created: timestamppb.New(time.Now())}
	})}
}

// WithLabelValues returns the histogram of values (in the order of the
// label names), creating it empty. It panics when the number of values is
// not the number of label names.
func (v *HistogramVec) WithLabelValues(values ...string) *Histogram { return v.with(values) }
