package committer

import (
	"github.com/prometheus/client_golang/prometheus"

	pb "fabricrepro/internal/protos/peer"
)

// Metrics are the committer's Prometheus metrics.
type Metrics struct {
	// Height is the ledger height (committed blocks, genesis included).
	Height prometheus.Gauge
	// Phase is each pipeline phase's duration per block, label phase =
	// vscc | mvcc | block_commit | state_commit | history_commit | total.
	Phase *prometheus.HistogramVec
	// Transactions counts committed transactions by validation code name.
	Transactions *prometheus.CounterVec
	// BlockTxs is the number of transactions per block.
	BlockTxs prometheus.Histogram
}

// NewMetrics registers the committer's metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Height: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "ledger", Name: "blockchain_height",
			Help: "Height of the chain in blocks (the next block's number)."}),
		Phase: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: "committer", Name: "block_phase_seconds",
			Help:    "Time a block spent in each commit phase.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16)}, []string{"phase"}),
		Transactions: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "committer", Name: "transactions_total",
			Help: "Committed transactions by validation code."}, []string{"code"}),
		BlockTxs: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "committer", Name: "block_transactions",
			Help: "Transactions per committed block.", Buckets: prometheus.ExponentialBuckets(1, 2, 12)}),
	}
	reg.MustRegister(m.Height, m.Phase, m.Transactions, m.BlockTxs)
	return m
}

func (m *Metrics) observe(st *Stats) {
	m.Height.Set(float64(st.Number + 1))
	m.Phase.WithLabelValues("vscc").Observe(st.VSCC.Seconds())
	m.Phase.WithLabelValues("mvcc").Observe(st.MVCC.Seconds())
	m.Phase.WithLabelValues("block_commit").Observe(st.BlockCommit.Seconds())
	m.Phase.WithLabelValues("state_commit").Observe(st.StateCommit.Seconds())
	m.Phase.WithLabelValues("history_commit").Observe(st.History.Seconds())
	m.Phase.WithLabelValues("total").Observe(float64(st.CommittedNs-st.ReceivedNs) / 1e9)
	m.BlockTxs.Observe(float64(st.TxCount))
	for i := range st.Filter {
		m.Transactions.WithLabelValues(pb.TxValidationCode_name[int32(st.Filter[i])]).Inc()
	}
}
