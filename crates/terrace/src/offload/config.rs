//! The compaction workers a database shares its compactions with
//! (`Options::compaction_workers`, the server's `[compaction]` table, `terrace bench
//! --compaction_workers`), and the executor they make: the host's executor and the
//! workers, joined by CoPro's share policy or by X-Engine's dispatcher.
//!
//! Owns: the settings, their text forms, and assembling the executors. Must not touch:
//! how any executor runs a task.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use super::{RemoteExecutor, WorkerAddr};
use crate::compaction::{
    CheckingExecutor, CollaborativeExecutor, CompactionExecutor, DispatchPolicy,
    DispatchingExecutor, LinearExecutor, SharePolicy,
};
use crate::error::{Error, Result};

/// How compaction work is shared between the host and its workers.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum Share {
    /// Each task is cut between the host and the workers (CoPro).
    Collaborative(SharePolicy),
    /// Every task goes to a worker; the host runs only what a worker fails (X-Engine's
    /// offload driver).
    All,
}

impl Share {
    /// `R` (the workers' share, 0 < R < 1), `dynamic`, `steal`, `steal:N` or `all`.
    ///
    /// # Errors
    /// `InvalidArgument` for anything else.
    pub fn parse(v: &str) -> Result<Share> {
        let v = v.trim();
        let bad = |why: &str| Error::InvalidArgument(format!("compaction share {v:?}: {why}"));
        match v {
            "all" => return Ok(Share::All),
            "dynamic" => return Ok(Share::Collaborative(SharePolicy::Dynamic)),
            _ => {}
        }
        if let Some(rest) = v.strip_prefix("steal") {
            let pieces = match rest.strip_prefix(':') {
                Some(n) => n.parse().ok().filter(|n| *n >= 2),
                None if rest.is_empty() => Some(8),
                None => None,
            };
            return pieces
                .map(|n| Share::Collaborative(SharePolicy::Steal(n)))
                .ok_or_else(|| bad("steal takes a piece count of at least 2: steal:8"));
        }
        match v.parse::<f64>() {
            Ok(r) if r > 0.0 && r < 1.0 => Ok(Share::Collaborative(SharePolicy::Static(r))),
            _ => Err(bad(
                "expected a share between 0 and 1 (exclusive), dynamic, steal[:N] or all",
            )),
        }
    }
}

impl std::fmt::Display for Share {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Share::All => write!(f, "all"),
            Share::Collaborative(SharePolicy::Dynamic) => write!(f, "dynamic"),
            Share::Collaborative(SharePolicy::Steal(n)) => write!(f, "steal:{n}"),
            Share::Collaborative(SharePolicy::Static(r)) => write!(f, "{r}"),
        }
    }
}

impl TryFrom<String> for Share {
    type Error = Error;
    fn try_from(v: String) -> Result<Share> {
        Share::parse(&v)
    }
}

impl From<Share> for String {
    fn from(s: Share) -> String {
        s.to_string()
    }
}

/// The workers and how work is shared with them.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactionWorkers {
    /// Each worker's address: `host:port` or `unix:PATH` (`terrace compactd --listen`).
    pub workers: Vec<String>,
    /// The secret the workers were started with.
    pub secret: String,
    /// How tasks are shared (default: CoPro's static half).
    pub share: Share,
    /// How the dispatcher picks among several workers (default: least loaded).
    pub dispatch: DispatchPolicy,
    /// Seconds a worker may take to answer one task before the host takes it over.
    pub deadline_secs: u64,
    /// Check mode: every task a worker runs is run again on the host into a scratch
    /// directory (`compaction-check` in the database directory) and compared byte for
    /// byte; a difference is refused and the task runs on the host.
    pub check: bool,
}

impl Default for CompactionWorkers {
    fn default() -> Self {
        CompactionWorkers {
            workers: Vec::new(),
            secret: String::new(),
            share: Share::Collaborative(SharePolicy::Static(0.5)),
            dispatch: DispatchPolicy::LeastLoaded,
            deadline_secs: 120,
            check: false,
        }
    }
}

impl CompactionWorkers {
    /// Checks the settings.
    ///
    /// # Errors
    /// `InvalidArgument` without a worker, with an empty address or a zero deadline.
    pub fn validate(&self) -> Result<()> {
        if self.workers.is_empty() {
            return Err(Error::InvalidArgument(
                "compaction workers: no worker address given".into(),
            ));
        }
        if let Some(a) = self
            .workers
            .iter()
            .find(|a| a.trim().is_empty() || *a == "unix:")
        {
            return Err(Error::InvalidArgument(format!(
                "compaction workers: {a:?} is not HOST:PORT or unix:PATH"
            )));
        }
        if self.deadline_secs == 0 {
            return Err(Error::InvalidArgument(
                "compaction workers: deadline_secs must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// The executor that shares compactions between `host` (which also runs whatever a
    /// worker fails) and the workers, for the database in `db_dir`.
    pub fn executor(
        &self,
        host: Arc<dyn CompactionExecutor>,
        db_dir: &Path,
    ) -> Arc<dyn CompactionExecutor> {
        let deadline = Duration::from_secs(self.deadline_secs.max(1));
        let mut units: Vec<Arc<dyn CompactionExecutor>> = self
            .workers
            .iter()
            .enumerate()
            .map(|(i, addr)| {
                let remote: Arc<dyn CompactionExecutor> = Arc::new(RemoteExecutor::new(
                    WorkerAddr::parse(addr.trim()),
                    self.secret.clone(),
                    deadline,
                ));
                if self.check {
                    let scratch = db_dir.join("compaction-check").join(i.to_string());
                    Arc::new(CheckingExecutor::new(
                        remote,
                        Arc::new(LinearExecutor),
                        scratch,
                    ))
                } else {
                    remote
                }
            })
            .collect();
        match self.share {
            Share::All => Arc::new(DispatchingExecutor::new(units, host, self.dispatch)),
            Share::Collaborative(policy) => {
                let device: Arc<dyn CompactionExecutor> = if units.len() == 1 {
                    units.remove(0)
                } else {
                    Arc::new(DispatchingExecutor::new(units, host.clone(), self.dispatch))
                };
                Arc::new(CollaborativeExecutor::new(host, device, policy))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_parse_and_print_back() {
        for (text, share) in [
            ("0.3", Share::Collaborative(SharePolicy::Static(0.3))),
            ("dynamic", Share::Collaborative(SharePolicy::Dynamic)),
            ("steal:4", Share::Collaborative(SharePolicy::Steal(4))),
            ("all", Share::All),
        ] {
            assert_eq!(Share::parse(text).unwrap(), share);
            assert_eq!(share.to_string(), text);
        }
        assert_eq!(
            Share::parse("steal").unwrap(),
            Share::Collaborative(SharePolicy::Steal(8))
        );
        for bad in [
            "0", "1", "1.5", "-0.2", "steal:1", "steal:x", "stealing", "most",
        ] {
            assert!(Share::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_executor_follows_the_share_and_the_worker_count() {
        let host: Arc<dyn CompactionExecutor> = Arc::new(LinearExecutor);
        let dir = Path::new("/db");
        let one = CompactionWorkers {
            workers: vec!["127.0.0.1:7400".into()],
            ..CompactionWorkers::default()
        };
        one.validate().unwrap();
        let name = one.executor(host.clone(), dir).name().to_string();
        assert!(
            name.starts_with("collaborative linear + remote 127.0.0.1:7400"),
            "{name}"
        );
        let all = CompactionWorkers {
            workers: vec!["a:1".into(), "unix:/w.sock".into()],
            share: Share::All,
            dispatch: DispatchPolicy::RoundRobin,
            check: true,
            ..CompactionWorkers::default()
        };
        let name = all.executor(host, dir).name().to_string();
        assert!(
            name.starts_with("dispatch RoundRobin over [remote a:1 checked against linear"),
            "{name}"
        );
        for bad in [
            CompactionWorkers::default(),
            CompactionWorkers {
                workers: vec![" ".into()],
                ..CompactionWorkers::default()
            },
            CompactionWorkers {
                deadline_secs: 0,
                ..one.clone()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
