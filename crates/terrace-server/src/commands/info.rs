//! INFO: Redis's sections (server, clients, memory, persistence, stats, replication,
//! cluster, keyspace) plus `engine`, the Terrace engine's statistics.

use std::fmt::Write as _;
use std::sync::atomic::Ordering;

use super::server::{commands_processed, connected, REDIS_VERSION};
use super::{Ctx, Fail};

const DEFAULT_SECTIONS: &[&str] = &[
    "server",
    "clients",
    "memory",
    "persistence",
    "stats",
    "replication",
    "cluster",
    "keyspace",
    "engine",
];

/// The INFO text for `wanted` sections (all default ones when empty or `all`/`everything`).
pub(crate) fn render(ctx: &Ctx<'_>, wanted: &[String]) -> Result<String, Fail> {
    let all = wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "everything" || w == "default");
    let mut out = String::new();
    for &section in DEFAULT_SECTIONS {
        if !all && !wanted.iter().any(|w| w == section) {
            continue;
        }
        if !out.is_empty() {
            out.push_str("\r\n");
        }
        let mut title = section.to_string();
        if let Some(first) = title.get_mut(..1) {
            first.make_ascii_uppercase();
        }
        let _ = write!(out, "# {title}\r\n");
        section_body(ctx, section, &mut out)?;
    }
    Ok(out)
}

fn section_body(ctx: &Ctx<'_>, section: &str, out: &mut String) -> Result<(), Fail> {
    let e = ctx.engine;
    let cfg = e.config.read().clone();
    let mut kv = |k: &str, v: String| {
        let _ = write!(out, "{k}:{v}\r\n");
    };
    match section {
        "server" => {
            kv("redis_version", REDIS_VERSION.to_string());
            kv("terrace_version", env!("CARGO_PKG_VERSION").to_string());
            kv("redis_mode", "standalone".to_string());
            kv("os", std::env::consts::OS.to_string());
            kv("arch_bits", (usize::BITS).to_string());
            kv("process_id", std::process::id().to_string());
            kv("tcp_port", cfg.port.to_string());
            kv(
                "uptime_in_seconds",
                e.started.elapsed().as_secs().to_string(),
            );
            kv("executable", "terrace".to_string());
        }
        "clients" => {
            kv("connected_clients", connected(ctx).to_string());
            kv("maxclients", cfg.maxclients.to_string());
            kv("blocked_clients", "0".to_string());
        }
        "memory" => {
            let s = e.db().stats();
            kv("used_memory", s.memtable_bytes.to_string());
            kv("maxmemory", "0".to_string());
            kv("maxmemory_policy", "noeviction".to_string());
        }
        "persistence" => {
            kv("loading", "0".to_string());
            kv("rdb_changes_since_last_save", "0".to_string());
            kv("rdb_bgsave_in_progress", "0".to_string());
            kv("aof_enabled", "1".to_string());
            kv("aof_rewrite_in_progress", "0".to_string());
            let s = e.db().stats();
            // Redis's field for "the last write to the log failed"; here: the engine is
            // read-only after a background error (it may recover by itself once space
            // returns, docs/errors.md).
            let status = if s.background_error.is_some() {
                "err"
            } else {
                "ok"
            };
            kv("aof_last_write_status", status.to_string());
            kv(
                "terrace_write_status",
                match s.background_error {
                    Some(_) => "read-only".to_string(),
                    None => "ok".to_string(),
                },
            );
            // One line: INFO's format has no escapes.
            let last = s
                .background_error
                .as_deref()
                .unwrap_or("")
                .replace(['\r', '\n'], " ");
            kv("terrace_last_background_error", last);
            kv("terrace_background_errors", s.background_errors.to_string());
            kv("terrace_resumes", s.resumes.to_string());
            kv("terrace_fsync", cfg.fsync.as_str().to_string());
        }
        "stats" => {
            let s = &e.stats;
            let get = |a: &std::sync::atomic::AtomicU64| a.load(Ordering::Relaxed).to_string();
            kv("total_connections_received", get(&s.connections_received));
            kv(
                "total_commands_processed",
                commands_processed(ctx).to_string(),
            );
            kv("total_net_input_bytes", get(&s.net_input_bytes));
            kv("total_net_output_bytes", get(&s.net_output_bytes));
            kv("rejected_connections", get(&s.rejected_connections));
            kv("keyspace_hits", get(&s.keyspace_hits));
            kv("keyspace_misses", get(&s.keyspace_misses));
            kv("expired_keys", e.store.counts.expired_total().to_string());
            kv(
                "expire_cycle_cpu_milliseconds",
                e.active_expiry.busy_millis().to_string(),
            );
            kv(
                "terrace_expire_cycle_passes",
                e.active_expiry.passes().to_string(),
            );
        }
        "replication" => {
            kv("role", "master".to_string());
            kv("connected_slaves", "0".to_string());
        }
        "cluster" => kv("cluster_enabled", "0".to_string()),
        "keyspace" => {
            let (keys, expires) = e.key_counts(ctx.now_ms)?;
            if keys > 0 {
                kv("db0", format!("keys={keys},expires={expires},avg_ttl=0"));
            }
        }
        "engine" => {
            let s = e.db().stats();
            kv("engine_last_sequence", s.last_sequence.to_string());
            kv("engine_memtable_bytes", s.memtable_bytes.to_string());
            kv(
                "engine_immutable_memtables",
                s.immutable_memtables.to_string(),
            );
            kv(
                "engine_user_bytes_written",
                s.user_bytes_written.to_string(),
            );
            kv("engine_wal_bytes_written", s.wal_bytes_written.to_string());
            kv(
                "engine_flush_bytes_written",
                s.flush_bytes_written.to_string(),
            );
            kv(
                "engine_compaction_bytes_read",
                s.compaction_bytes_read.to_string(),
            );
            kv(
                "engine_compaction_bytes_written",
                s.compaction_bytes_written.to_string(),
            );
            kv(
                "engine_write_amplification",
                format!("{:.3}", s.write_amplification),
            );
            kv("engine_flushes", s.flushes.to_string());
            kv("engine_compactions", s.compactions.to_string());
            kv("engine_stall_count", s.stall_count.to_string());
            kv("engine_stall_micros", s.stall_micros.to_string());
            kv("engine_block_cache_hits", s.block_cache_hits.to_string());
            kv(
                "engine_block_cache_misses",
                s.block_cache_misses.to_string(),
            );
            kv(
                "engine_compaction_fallbacks",
                s.compaction_fallbacks.to_string(),
            );
            for (i, u) in s.compaction_units.iter().enumerate() {
                // INFO has no escapes: the unit's name loses separators it may hold.
                let unit = u.unit.replace([',', '\r', '\n'], "_");
                kv(
                    &format!("engine_compaction_unit{i}"),
                    format!(
                        "unit={unit},runs={},linear={},pipelined={},input_bytes={},busy_micros={},cpu_micros={},mb_per_sec={:.2},mb_per_cpu_second={:.2},failures={},fallbacks={}",
                        u.runs,
                        u.linear_runs,
                        u.pipelined_runs,
                        u.input_bytes,
                        u.busy_micros,
                        u.cpu_micros,
                        u.mb_per_sec(),
                        u.mb_per_cpu_second(),
                        u.failures,
                        u.fallbacks
                    ),
                );
            }
            for v in &s.volumes {
                kv(
                    &format!("engine_volume{}", v.id),
                    format!(
                        "files={},file_bytes={},bytes={},ios={},waits={},wait_micros={},bytes_per_sec_limit={},iops_limit={},heat={:.1},heat_iops={:.1}",
                        v.files,
                        v.file_bytes,
                        v.bytes,
                        v.ios,
                        v.waits,
                        v.wait_micros,
                        v.bytes_per_sec_limit,
                        v.iops_limit,
                        v.heat,
                        v.heat_iops
                    ),
                );
            }
            for l in &s.levels {
                kv(
                    &format!("engine_level{}", l.level),
                    format!(
                        "files={},bytes={},target_bytes={}",
                        l.files, l.bytes, l.target_bytes
                    ),
                );
            }
        }
        _ => {}
    }
    Ok(())
}
