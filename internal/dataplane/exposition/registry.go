package exposition

import (
	"compress/gzip"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// Registry holds collectors under unique family names.
type Registry struct {
	mu    sync.RWMutex
	cs    []Collector
	names map[string]bool
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry { return &Registry{names: map[string]bool{}} }

// Register adds cs, all or none: a family name registered before, or twice
// among cs, is an error.
func (r *Registry) Register(cs ...Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	added := map[string]bool{}
	for _, c := range cs {
		for _, n := range c.families() {
			if r.names[n] || added[n] {
				return fmt.Errorf("register metrics: %s is registered twice: give each family its own name", n)
			}
			added[n] = true
		}
	}
	for n := range added {
		r.names[n] = true
	}
	r.cs = append(r.cs, cs...)
	return nil
}

// Gather returns the registered families that have series, sorted by name,
// each one's series sorted by label values.
func (r *Registry) Gather() ([]*dto.MetricFamily, error) {
	r.mu.RLock()
	cs := slices.Clone(r.cs)
	r.mu.RUnlock()
	var all []*dto.MetricFamily
	var errs []error
	for _, c := range cs {
		var err error
		if all, err = c.collect(all); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	all = slices.DeleteFunc(all, func(mf *dto.MetricFamily) bool { return len(mf.Metric) == 0 })
	slices.SortFunc(all, func(a, b *dto.MetricFamily) int { return strings.Compare(a.GetName(), b.GetName()) })
	return all, nil
}

// Handler serves the registry in the format the request's Accept header
// negotiates among expfmt's default formats (the text format unless the
// protobuf one is asked for, as client_golang's handler does),
// gzip-compressed when the client accepts gzip.
func (r *Registry) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		mfs, err := r.Gather()
		if err != nil {
			http.Error(w, "gather metrics: "+err.Error(), http.StatusInternalServerError)
			return
		}
		format := expfmt.NegotiateAccept(req.Header, expfmt.DefaultAcceptedFormats()...)
		h := w.Header()
		h.Add("Vary", "Accept")
		h.Add("Vary", "Accept-Encoding")
		h.Set("Content-Type", string(format))
		out := http.ResponseWriter(w)
		if acceptsGzip(req.Header.Get("Accept-Encoding")) {
			h.Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gzipWriter{w, gz}
		}
		enc := expfmt.NewEncoder(out, format)
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				return // the status is sent: a client sees the truncated body fail to parse
			}
		}
		if c, ok := enc.(expfmt.Closer); ok {
			_ = c.Close() // as above
		}
	})
}

// gzipWriter writes the body through gz.
type gzipWriter struct {
	http.ResponseWriter
	gz *gzip.Writer
}

func (g gzipWriter) Write(p []byte) (int, error) { return g.gz.Write(p) }

// acceptsGzip reports whether an Accept-Encoding header accepts gzip (or
// any encoding) with a quality above 0.
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		coding, params, _ := strings.Cut(part, ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := 1.0
		for p := range strings.SplitSeq(params, ";") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(p), "q="); ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

// Desc describes a family whose series a [Func] reports at scrape time.
type Desc struct{ d *desc }

// NewGaugeDesc describes a gauge family with the label names labels. It
// panics on an invalid name or label name.
func NewGaugeDesc(name, help string, labels ...string) *Desc {
	return &Desc{newDesc(name, help, dto.MetricType_GAUGE, labels)}
}

// NewCounterDesc describes a counter family whose values another part of
// the program keeps. It panics on an invalid name or label name.
func NewCounterDesc(name, help string, labels ...string) *Desc {
	return &Desc{newDesc(name, help, dto.MetricType_COUNTER, labels)}
}

// Emit reports the series of d with labelValues (in the order of d's label
// names) at value.
type Emit func(d *Desc, value float64, labelValues ...string)

// Func is a collector whose function reports the series of its families
// each time the registry is gathered.
type Func struct {
	descs []*Desc
	fn    func(Emit)
}

// NewFunc returns the collector of descs whose series fn reports.
func NewFunc(fn func(Emit), descs ...*Desc) *Func { return &Func{descs: descs, fn: fn} }

func (f *Func) families() []string {
	out := make([]string, len(f.descs))
	for i, d := range f.descs {
		out[i] = d.d.name
	}
	return out
}

func (f *Func) collect(out []*dto.MetricFamily) ([]*dto.MetricFamily, error) {
	fams := make(map[*Desc]*dto.MetricFamily, len(f.descs))
	seen := make(map[*Desc]map[string]bool, len(f.descs))
	for _, d := range f.descs {
		fams[d], seen[d] = d.d.family(), map[string]bool{}
	}
	var errs []error
	f.fn(func(d *Desc, value float64, labelValues ...string) {
		mf := fams[d]
		switch {
		case mf == nil:
			errs = append(errs, fmt.Errorf("a collector reported %s, which it does not describe", d.d.name))
			return
		case len(labelValues) != len(d.d.labels):
			errs = append(errs, fmt.Errorf("%s takes %d label values (%s), got %d", d.d.name, len(d.d.labels),
				strings.Join(d.d.labels, ", "), len(labelValues)))
			return
		}
		values := slices.Clone(validValues(labelValues))
		k := key(values)
		if seen[d][k] {
			errs = append(errs, fmt.Errorf("%s%q is reported twice", d.d.name, values))
			return
		}
		seen[d][k] = true
		m := &dto.Metric{Label: d.d.pairs(values)}
		if d.d.typ == dto.MetricType_COUNTER {
			m.Counter = &dto.Counter{Value: &value}
		} else {
			m.Gauge = &dto.Gauge{Value: &value}
		}
		mf.Metric = append(mf.Metric, m)
	})
	if err := errors.Join(errs...); err != nil {
		return out, err
	}
	for _, d := range f.descs {
		sortMetrics(fams[d].Metric)
		out = append(out, fams[d])
	}
	return out, nil
}
