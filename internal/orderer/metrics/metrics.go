// Package metrics holds the Prometheus metrics of one orderer instance. Each
// instance has its own registry so several orderers can run in one process
// (tests) without clashing.
package metrics

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the orderer's counters, gauges and histograms.
type Metrics struct {
	Registry *prometheus.Registry

	// BroadcastRequests counts broadcast messages by channel, header type
	// and returned status (Fabric's broadcast_processed_count).
	BroadcastRequests *prometheus.CounterVec
	// BroadcastValidateSeconds is the time to classify and check a message
	// before it is handed to the consenter (Fabric's
	// broadcast_validate_duration).
	BroadcastValidateSeconds *prometheus.HistogramVec
	// BlocksCut counts blocks by the reason their batch was cut.
	BlocksCut *prometheus.CounterVec
	// EnvelopesOrdered counts envelopes written into blocks.
	EnvelopesOrdered *prometheus.CounterVec
	// LedgerHeight is the height of each channel's ledger.
	LedgerHeight *prometheus.GaugeVec
	// BatchFill is each block's envelope count divided by MaxMessageCount.
	BatchFill *prometheus.HistogramVec
	// BlockBytes is the marshaled size of each block's data.
	BlockBytes *prometheus.HistogramVec
	// DeliverBlocksSent counts blocks sent to Deliver clients.
	DeliverBlocksSent *prometheus.CounterVec
	// DeliverStreams is the number of open Deliver streams.
	DeliverStreams prometheus.Gauge
}

// New creates and registers the orderer's metrics (plus Go runtime and
// process collectors) on a fresh registry.
func New() *Metrics {
	r := prometheus.NewRegistry()
	m := &Metrics{
		Registry: r,
		BroadcastRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderer_broadcast_requests_total",
			Help: "Broadcast messages processed, by channel, header type and status.",
		}, []string{"channel", "type", "status"}),
		BroadcastValidateSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orderer_broadcast_validate_duration_seconds",
			Help:    "Time to validate a broadcast message before ordering.",
			Buckets: prometheus.ExponentialBuckets(1e-5, 2, 16),
		}, []string{"channel", "status"}),
		BlocksCut: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderer_blocks_cut_total",
			Help: "Blocks cut, by channel and reason (count, bytes, isolated, timeout, forced).",
		}, []string{"channel", "reason"}),
		EnvelopesOrdered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderer_envelopes_ordered_total",
			Help: "Envelopes written into blocks.",
		}, []string{"channel"}),
		LedgerHeight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "orderer_ledger_height",
			Help: "Number of blocks in the channel's ledger.",
		}, []string{"channel"}),
		BatchFill: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orderer_batch_fill_ratio",
			Help:    "Envelopes per block divided by BatchSize.MaxMessageCount.",
			Buckets: []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.99, 1},
		}, []string{"channel"}),
		BlockBytes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "orderer_block_data_bytes",
			Help:    "Bytes of envelopes per block.",
			Buckets: prometheus.ExponentialBuckets(1024, 2, 16),
		}, []string{"channel"}),
		DeliverBlocksSent: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "orderer_deliver_blocks_sent_total",
			Help: "Blocks sent to Deliver clients.",
		}, []string{"channel"}),
		DeliverStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "orderer_deliver_streams_open",
			Help: "Open Deliver streams.",
		}),
	}
	r.MustRegister(m.BroadcastRequests, m.BroadcastValidateSeconds, m.BlocksCut, m.EnvelopesOrdered,
		m.LedgerHeight, m.BatchFill, m.BlockBytes, m.DeliverBlocksSent, m.DeliverStreams,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Handler serves the registry in Prometheus' text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
