use super::*;
use crate::compaction::task::OutputSpec;
use crate::compaction::{
    execute, CompactionInputLevel, CompactionReason, FilterRegistry, LinearExecutor,
    PipelinedExecutor,
};
use crate::key::{self, ValueType};
use crate::sst::{SstBuilder, SstOptions};
use crate::version::FileMeta;

/// Runs linear, then changes one byte of its first output, claiming the new checksum (a
/// result only a second run can tell from a good one) or the old one.
struct ConsistentLiar(bool);

impl CompactionExecutor for ConsistentLiar {
    fn name(&self) -> &str {
        "liar"
    }

    fn execute(&self, task: &CompactionTask, env: &ExecutorEnv<'_>) -> Result<CompactionResult> {
        let mut r = execute(task, env)?;
        if let Some(f) = r.outputs.first_mut() {
            let path = env.tables.path(f.volume, f.number);
            let mut bytes = std::fs::read(&path).map_err(|e| Error::io(&path, e))?;
            if let Some(b) = bytes.get_mut(100) {
                *b ^= 1;
            }
            std::fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
            if self.0 {
                f.file_checksum = crc32c::crc32c(&bytes);
            }
        }
        Ok(r)
    }
}

fn table(storage: &Arc<dyn Storage>, tables: &Tables, number: u64, seq: u64) -> FileMeta {
    let path = tables.path(0, number);
    let file = storage.create(&path, IoClass::Compaction).unwrap();
    let mut b = SstBuilder::new(file, path, SstOptions::default());
    for i in 0..3000u32 {
        let k = key::internal_key(format!("k{i:05}").as_bytes(), seq, ValueType::Value);
        b.add(&k, format!("{seq}-{i}").as_bytes()).unwrap();
    }
    crate::compaction::file_meta(number, 0, &b.finish().unwrap())
}

#[test]
fn only_the_same_bytes_pass_the_check() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("db");
    let scratch = dir.path().join("scratch");
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    storage.create_dir_all(&db).unwrap();
    let tables = Tables::new(storage.clone(), &db, vec![], 16, None);
    let filters = FilterRegistry::new();
    let env = ExecutorEnv {
        storage: storage.as_ref(),
        tables: &tables,
        filters: &filters,
        level0: None,
        progress: None,
    };
    let inputs = vec![
        CompactionInputLevel {
            level: 1,
            files: vec![table(&storage, &tables, 1, 20)],
        },
        CompactionInputLevel {
            level: 2,
            files: vec![table(&storage, &tables, 2, 10)],
        },
    ];
    let task = |first: u64| CompactionTask {
        id: first,
        inputs: inputs.clone(),
        output_level: 2,
        smallest_user_key: None,
        largest_user_key: None,
        snapshots: vec![],
        bottommost: true,
        output: OutputSpec {
            target_file_size: 16 << 10,
            block_size: 4096,
            restart_interval: 16,
            bloom_bits_per_key: 10,
            compression: crate::sst::Compression::None,
            volume: 0,
            file_numbers: (first..first + 50).collect(),
            placement: None,
        },
        filter: None,
        reason: CompactionReason::LevelSize,
        level0: None,
    };
    let checked = CheckingExecutor::new(
        Arc::new(PipelinedExecutor),
        Arc::new(LinearExecutor),
        scratch.clone(),
    );
    let r = checked.execute(&task(100), &env).unwrap();
    assert!(r.outputs.len() > 2);
    // The scratch outputs are gone.
    assert!(storage.list(&scratch).unwrap().is_empty());

    for (claims_new, first, says) in [(true, 200, "checksum"), (false, 300, "bytes")] {
        let liar = CheckingExecutor::new(
            Arc::new(ConsistentLiar(claims_new)),
            Arc::new(LinearExecutor),
            scratch.clone(),
        );
        match liar.execute(&task(first), &env) {
            Err(Error::ResultRefused(why)) => assert!(why.contains(says), "{why}"),
            other => panic!("expected a refusal, got {other:?}"),
        }
        assert!(storage.list(&scratch).unwrap().is_empty());
    }
}
