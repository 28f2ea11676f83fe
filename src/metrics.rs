//! The process's Prometheus metrics (`GET /metrics` on the daemon): one registry of counters,
//! gauges and histograms, updated where the events happen (the agent loop, the approval gate,
//! the sandbox, the gateway, the audit writer) and encoded as Prometheus text on a scrape.
//! Labels are tool names, backends, outcomes, answers and stages: never session ids,
//! principals, arguments or secrets. Each family is listed in `docs/operations.md`.
//! [`file`] writes them to a file for `zeroclaw acp --metrics-file`.

pub mod file;

use std::sync::OnceLock;
use std::time::Duration;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolLabels {
    tool: String,
    backend: String,
    outcome: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ToolName {
    tool: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct Answer {
    answer: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TokenKind {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StageLabel {
    stage: String,
}

fn seconds_histogram() -> Histogram {
    // 100 µs .. ~54 min.
    Histogram::new(exponential_buckets(0.0001, 4.0, 13))
}

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    sessions_active: Gauge,
    sessions_created: Counter,
    turns: Counter,
    turn_duration: Histogram,
    model_requests: Counter,
    tokens: Family<TokenKind, Counter>,
    tool_executions: Family<ToolLabels, Counter>,
    tool_duration: Family<ToolName, Histogram, fn() -> Histogram>,
    approvals: Family<Answer, Counter>,
    sandbox_failures: Family<StageLabel, Counter>,
    auth_failures: Counter,
    audit_write: Histogram,
    store_write: Histogram,
    ws_connections: Gauge,
}

static METRICS: OnceLock<Metrics> = OnceLock::new();

/// The process's metrics, created on first use.
pub fn get() -> &'static Metrics {
    METRICS.get_or_init(Metrics::new)
}

impl Metrics {
    fn new() -> Metrics {
        let mut m = Metrics {
            registry: Registry::with_prefix("zeroclaw"),
            sessions_active: Gauge::default(),
            sessions_created: Counter::default(),
            turns: Counter::default(),
            turn_duration: seconds_histogram(),
            model_requests: Counter::default(),
            tokens: Family::default(),
            tool_executions: Family::default(),
            tool_duration: Family::new_with_constructor(seconds_histogram),
            approvals: Family::default(),
            sandbox_failures: Family::default(),
            auth_failures: Counter::default(),
            audit_write: seconds_histogram(),
            store_write: seconds_histogram(),
            ws_connections: Gauge::default(),
        };
        let r = &mut m.registry;
        r.register(
            "sessions_active",
            "Sessions in memory",
            m.sessions_active.clone(),
        );
        r.register(
            "sessions_created",
            "Sessions created",
            m.sessions_created.clone(),
        );
        r.register("turns", "Prompt turns ended", m.turns.clone());
        r.register(
            "turn_duration_seconds",
            "Duration of a prompt turn",
            m.turn_duration.clone(),
        );
        r.register(
            "model_requests",
            "Model requests (one per step)",
            m.model_requests.clone(),
        );
        r.register(
            "tokens",
            "Model tokens by kind (input, output, cached), as the provider reported them",
            m.tokens.clone(),
        );
        r.register(
            "tool_executions",
            "Tool calls by tool, sandbox backend and outcome",
            m.tool_executions.clone(),
        );
        r.register(
            "tool_duration_seconds",
            "Duration of a tool call",
            m.tool_duration.clone(),
        );
        r.register(
            "approvals",
            "Approval questions by answer (asked, allow_once, allow_always, reject_once, none)",
            m.approvals.clone(),
        );
        r.register(
            "sandbox_setup_failures",
            "Confinement set-up failures by stage",
            m.sandbox_failures.clone(),
        );
        r.register(
            "auth_failures",
            "Refused daemon connections",
            m.auth_failures.clone(),
        );
        r.register(
            "audit_write_seconds",
            "Latency of one audit record append",
            m.audit_write.clone(),
        );
        r.register(
            "store_write_seconds",
            "Latency of one session store write",
            m.store_write.clone(),
        );
        r.register(
            "websocket_connections",
            "Open WebSocket connections",
            m.ws_connections.clone(),
        );
        m
    }

    /// The metrics as Prometheus text, with the gauges set to `sessions` and `connections`.
    pub fn encode(&self, sessions: usize, connections: usize) -> String {
        self.sessions_active.set(sessions as i64);
        self.ws_connections.set(connections as i64);
        let mut text = String::new();
        if let Err(error) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::error!(%error, "encoding the metrics failed");
        }
        to_prometheus_text(&text)
    }

    pub fn session_created(&self) {
        self.sessions_created.inc();
    }

    pub fn turn(&self, took: Duration) {
        self.turns.inc();
        self.turn_duration.observe(took.as_secs_f64());
    }

    pub fn model_request(&self) {
        self.model_requests.inc();
    }

    /// The token counts of one model request's usage report: `cached` is the part of `input`
    /// the provider served from its prompt cache (0 when it does not say). The one place a
    /// provider's usage enters the metrics.
    pub fn tokens(&self, input: u64, output: u64, cached: u64) {
        for (kind, count) in [("input", input), ("output", output), ("cached", cached)] {
            self.tokens.get_or_create(&TokenKind { kind }).inc_by(count);
        }
    }

    pub fn tool_execution(&self, tool: &str, backend: &str, outcome: &str, took: Duration) {
        let labels = ToolLabels {
            tool: tool.to_owned(),
            backend: backend.to_owned(),
            outcome: outcome.to_owned(),
        };
        self.tool_executions.get_or_create(&labels).inc();
        let name = ToolName {
            tool: tool.to_owned(),
        };
        self.tool_duration
            .get_or_create(&name)
            .observe(took.as_secs_f64());
    }

    /// `answer`: `asked` when a question goes out, then its answer's option kind (or `none`).
    pub fn approval(&self, answer: &str) {
        let labels = Answer {
            answer: answer.to_owned(),
        };
        self.approvals.get_or_create(&labels).inc();
    }

    pub fn sandbox_failure(&self, stage: &str) {
        let labels = StageLabel {
            stage: stage.to_owned(),
        };
        self.sandbox_failures.get_or_create(&labels).inc();
    }

    pub fn auth_failure(&self) {
        self.auth_failures.inc();
    }

    pub fn audit_write(&self, took: Duration) {
        self.audit_write.observe(took.as_secs_f64());
    }

    pub fn store_write(&self, took: Duration) {
        self.store_write.observe(took.as_secs_f64());
    }
}

/// OpenMetrics text (what `prometheus-client` writes) as Prometheus text format 0.0.4, which
/// every scraper and `promtool` read: a counter family `x` (samples `x_total`) is named
/// `x_total` in its `# HELP`/`# TYPE` lines, and the `# EOF` marker goes.
fn to_prometheus_text(openmetrics: &str) -> String {
    let counters: Vec<&str> = openmetrics
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE ")?.strip_suffix(" counter"))
        .collect();
    let mut out = String::with_capacity(openmetrics.len());
    for line in openmetrics.lines() {
        if line == "# EOF" {
            continue;
        }
        let renamed = ["# HELP ", "# TYPE "].iter().find_map(|prefix| {
            let rest = line.strip_prefix(prefix)?;
            let (name, tail) = rest.split_once(' ')?;
            counters
                .contains(&name)
                .then(|| format!("{prefix}{name}_total {tail}"))
        });
        out.push_str(renamed.as_deref().unwrap_or(line));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counters_are_renamed_for_the_prometheus_text_format() {
        let om =
            "# HELP a_x Xs.\n# TYPE a_x counter\na_x_total 1\n# TYPE a_g gauge\na_g 2\n# EOF\n";
        assert_eq!(
            to_prometheus_text(om),
            "# HELP a_x_total Xs.\n# TYPE a_x_total counter\na_x_total 1\n# TYPE a_g gauge\na_g 2\n"
        );
    }
}
