use super::*;
use crate::compaction::fixture::{assert_same, fixture, inputs, task, Fixture};
use crate::compaction::{execute, LinearExecutor};
use crate::error::Error;

/// Stands for a worker: runs the task on this host, reports only its first `reports`
/// finished outputs (the last one damaged in the report if `lie`), then dies.
struct Dying {
    reports: usize,
    lie: bool,
}

struct Forward<'a> {
    to: &'a dyn ProgressSink,
    left: Mutex<usize>,
    lie: bool,
}

impl ProgressSink for Forward<'_> {
    fn finished(&self, output: &FinishedOutput) {
        let mut left = self.left.lock();
        if *left == 0 {
            return;
        }
        *left -= 1;
        let mut o = output.clone();
        if self.lie && *left == 0 {
            o.file.file_checksum ^= 1;
        }
        self.to.finished(&o);
    }
}

impl CompactionExecutor for Dying {
    fn name(&self) -> &str {
        "dying"
    }

    fn trust(&self) -> Trust {
        Trust::Remote
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let sink = env.progress.expect("the takeover asks for progress");
        let forward = Forward {
            to: sink,
            left: Mutex::new(self.reports),
            lie: self.lie,
        };
        let env = ExecutorEnv {
            progress: Some(&forward),
            ..*env
        };
        execute(task, &env)?;
        Err(Error::Internal("the worker died".into()))
    }
}

fn linear(fx: &Fixture, seed: u64) -> (CompactionTask, CompactionResult) {
    let t = task(inputs(fx, seed), 9000, true);
    let r = execute(&t, &fx.env()).unwrap();
    assert!(r.outputs.len() > 4, "several outputs: {}", r.outputs.len());
    (t, r)
}

#[test]
fn the_host_keeps_what_a_dead_worker_finished_and_writes_the_same_bytes() {
    let fx = fixture();
    let (reference, want) = linear(&fx, 7);
    for reports in [0, 1, 3, want.outputs.len() - 1, want.outputs.len()] {
        let mut t = reference.clone();
        t.output.file_numbers = (1000 * reports as u64 + 20_000..).take(200).collect();
        let worker = Dying {
            reports,
            lie: false,
        };
        let got = execute_or_take_over(&worker, &LinearExecutor, &t, &fx.env()).unwrap();
        // Numbers: the worker's from the first half, the host's from the second.
        let (first, second) = t.output.file_numbers.split_at(100);
        let (kept, rest) = got.outputs.split_at(reports);
        assert!(kept.iter().all(|f| first.contains(&f.number)), "{reports}");
        assert!(rest.iter().all(|f| second.contains(&f.number)), "{reports}");
        // The same tables as one linear run, cut at the same places.
        let mut renumbered = got.clone();
        renumbered.stats = want.stats;
        assert_same(&fx, &want, &renumbered);
        // The joined result answers the whole task.
        checked_edit(
            &t,
            std::slice::from_ref(&t),
            std::slice::from_ref(&got),
            fx.storage.as_ref(),
            &fx.tables,
            Trust::Local,
        )
        .unwrap();
        let run = got.runs.first().unwrap();
        assert_eq!(run.fallback_for.as_deref(), Some("dying"));
        assert_eq!(run.kept_outputs, reports as u64);
    }
}

#[test]
fn a_wrong_report_ends_what_is_kept() {
    let fx = fixture();
    let (reference, want) = linear(&fx, 8);
    let mut t = reference.clone();
    t.output.file_numbers = (40_000..40_200).collect();
    let worker = Dying {
        reports: 3,
        lie: true,
    };
    let got = execute_or_take_over(&worker, &LinearExecutor, &t, &fx.env()).unwrap();
    // The third report's checksum is wrong: two outputs kept, the rest rewritten.
    assert_eq!(got.runs.first().unwrap().kept_outputs, 2);
    let mut renumbered = got.clone();
    renumbered.stats = want.stats;
    assert_same(&fx, &want, &renumbered);
}

#[test]
fn numbers_split_in_two_and_a_one_number_task_stays_on_the_host() {
    let fx = fixture();
    let mut t = task(inputs(&fx, 9), 50_000, true);
    t.output.file_numbers = vec![1, 2, 3, 4, 5];
    assert_eq!(worker_task(&t).output.file_numbers, vec![1, 2]);
    assert_eq!(takeover_task(&t).output.file_numbers, vec![3, 4, 5]);
    t.output.file_numbers = vec![60_000];
    let worker = Dying {
        reports: 0,
        lie: false,
    };
    let got = execute_or_take_over(&worker, &LinearExecutor, &t, &fx.env()).unwrap();
    assert!(got.outputs.iter().all(|f| f.number == 60_000));
    assert!(got.runs.iter().all(|r| r.fallback_for.is_none()));
}
