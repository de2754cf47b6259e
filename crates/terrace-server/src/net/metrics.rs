//! The Prometheus text endpoint (`--metrics-port`): any HTTP GET gets the metrics.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::commands::Engine;

pub(super) async fn serve(
    engine: Arc<Engine>,
    listener: TcpListener,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((mut stream, _)) = accepted else { continue };
                let e = Arc::clone(&engine);
                tokio::spawn(async move {
                    let mut req = [0u8; 4096];
                    let _ = stream.read(&mut req).await;
                    let body = render(&e);
                    let head = format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes()).await;
                    let _ = stream.write_all(body.as_bytes()).await;
                });
            }
            _ = stop.changed() => return,
        }
    }
}

/// The metrics in Prometheus text format.
pub(crate) fn render(engine: &Engine) -> String {
    let mut out = String::new();
    let s = &engine.stats;
    let mut counter = |name: &str, help: &str, v: u64| {
        let _ = write!(
            out,
            "# HELP {name} {help}\n# TYPE {name} counter\n{name} {v}\n"
        );
    };
    counter(
        "terrace_commands_total",
        "Commands processed.",
        s.commands.load(Ordering::Relaxed),
    );
    counter(
        "terrace_connections_total",
        "Connections accepted.",
        s.connections_received.load(Ordering::Relaxed),
    );
    counter(
        "terrace_rejected_connections_total",
        "Connections refused by maxclients.",
        s.rejected_connections.load(Ordering::Relaxed),
    );
    let db = engine.db().stats();
    counter(
        "terrace_engine_user_bytes_written_total",
        "Bytes of keys and values written by clients.",
        db.user_bytes_written,
    );
    counter(
        "terrace_engine_wal_bytes_written_total",
        "Bytes written to the WAL.",
        db.wal_bytes_written,
    );
    counter(
        "terrace_engine_flush_bytes_written_total",
        "Bytes written by flushes.",
        db.flush_bytes_written,
    );
    counter(
        "terrace_engine_compaction_bytes_read_total",
        "Bytes read by compactions.",
        db.compaction_bytes_read,
    );
    counter(
        "terrace_engine_compaction_bytes_written_total",
        "Bytes written by compactions.",
        db.compaction_bytes_written,
    );
    counter(
        "terrace_engine_stalls_total",
        "Write stalls.",
        db.stall_count,
    );
    counter(
        "terrace_engine_stall_micros_total",
        "Microseconds writers spent stalled.",
        db.stall_micros,
    );
    counter(
        "terrace_engine_background_errors_total",
        "Background errors, each of which made the engine read-only.",
        db.background_errors,
    );
    counter(
        "terrace_engine_resumes_total",
        "Resumes from a background error, manual or automatic.",
        db.resumes,
    );
    let _ = write!(
        out,
        "# HELP terrace_engine_read_only 1 while a background error keeps the engine read-only.\n# TYPE terrace_engine_read_only gauge\nterrace_engine_read_only {}\n",
        u8::from(db.background_error.is_some())
    );
    let _ = write!(
        out,
        "# HELP terrace_connected_clients Connected clients.\n# TYPE terrace_connected_clients gauge\nterrace_connected_clients {}\n",
        engine.client_count()
    );
    let _ = write!(
        out,
        "# HELP terrace_engine_write_amplification Bytes written to storage per user byte.\n# TYPE terrace_engine_write_amplification gauge\nterrace_engine_write_amplification {}\n",
        db.write_amplification
    );
    let _ = writeln!(out, "# HELP terrace_engine_level_bytes Bytes of table files per level.\n# TYPE terrace_engine_level_bytes gauge");
    for l in &db.levels {
        let _ = writeln!(
            out,
            "terrace_engine_level_bytes{{level=\"{}\"}} {}",
            l.level, l.bytes
        );
    }
    let _ = writeln!(out, "# HELP terrace_engine_level_files Table files per level.\n# TYPE terrace_engine_level_files gauge");
    for l in &db.levels {
        let _ = writeln!(
            out,
            "terrace_engine_level_files{{level=\"{}\"}} {}",
            l.level, l.files
        );
    }
    compaction_units(&mut out, &db.compaction_units);
    let (buckets, count, sum) = s.latency_buckets();
    let _ = writeln!(out, "# HELP terrace_command_latency_seconds Command execution time.\n# TYPE terrace_command_latency_seconds histogram");
    for (bound, c) in buckets {
        let _ = writeln!(
            out,
            "terrace_command_latency_seconds_bucket{{le=\"{}\"}} {c}",
            bound as f64 / 1e6
        );
    }
    let _ = writeln!(
        out,
        "terrace_command_latency_seconds_bucket{{le=\"+Inf\"}} {count}"
    );
    let _ = writeln!(
        out,
        "terrace_command_latency_seconds_sum {}",
        sum as f64 / 1e6
    );
    let _ = writeln!(out, "terrace_command_latency_seconds_count {count}");
    out
}

/// Per compaction unit (`host`, each remote worker): runs by mode, bytes read, busy and
/// CPU seconds, failures and fallbacks, as counters labelled by unit.
fn compaction_units(out: &mut String, units: &[terrace::compaction::UnitTotals]) {
    type Field = fn(&terrace::compaction::UnitTotals) -> f64;
    let label =
        |u: &terrace::compaction::UnitTotals| u.unit.replace('\\', "\\\\").replace('"', "\\\"");
    let name = "terrace_compaction_runs_total";
    let _ = writeln!(
        out,
        "# HELP {name} Compaction runs installed, by unit and mode.\n# TYPE {name} counter"
    );
    for u in units {
        let unit = label(u);
        for (mode, n) in [("linear", u.linear_runs), ("pipelined", u.pipelined_runs)] {
            let _ = writeln!(out, "{name}{{unit=\"{unit}\",mode=\"{mode}\"}} {n}");
        }
    }
    let families: [(&str, &str, Field); 6] = [
        (
            "terrace_compaction_input_bytes_total",
            "Bytes compaction runs read, by unit.",
            |u| u.input_bytes as f64,
        ),
        (
            "terrace_compaction_output_bytes_total",
            "Bytes compaction runs wrote, by unit.",
            |u| u.output_bytes as f64,
        ),
        (
            "terrace_compaction_busy_seconds_total",
            "Wall-clock seconds of compaction runs, by unit.",
            |u| u.busy_micros as f64 / 1e6,
        ),
        (
            "terrace_compaction_cpu_seconds_total",
            "CPU seconds of compaction runs, by unit.",
            |u| u.cpu_micros as f64 / 1e6,
        ),
        (
            "terrace_compaction_failures_total",
            "Compaction pieces a unit failed or answered wrongly.",
            |u| u.failures as f64,
        ),
        (
            "terrace_compaction_fallbacks_total",
            "Compaction pieces a unit took over from a failed one.",
            |u| u.fallbacks as f64,
        ),
    ];
    for (name, help, field) in families {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} counter");
        for u in units {
            let _ = writeln!(out, "{name}{{unit=\"{}\"}} {}", label(u), field(u));
        }
    }
}
