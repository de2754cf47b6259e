//! The server's fuzz checks on random bytes, on mutated seeds, and on the committed
//! corpora; and the generator of the server targets' seed corpora.

use std::path::{Path, PathBuf};

use proptest::prelude::*;

use super::*;

/// The seeds of the server's targets: `(target, file name, bytes)`. RESP requests are
/// what clients send (redis-cli, redis-py, pipelines, inline commands); stored values are
/// written by `StoredValue::encode`.
fn seeds() -> Vec<(&'static str, &'static str, Vec<u8>)> {
    let value = |expire_at_ms, data: &[u8]| {
        StoredValue {
            expire_at_ms,
            data: data.to_vec(),
        }
        .encode()
    };
    vec![
        ("resp_frame", "resp-set-get", b"*3\r\n$3\r\nSET\r\n$8\r\ngreeting\r\n$5\r\nhello\r\n*2\r\n$3\r\nGET\r\n$8\r\ngreeting\r\n".to_vec()),
        ("resp_frame", "resp-set-ex", b"*5\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nEX\r\n$2\r\n60\r\n".to_vec()),
        ("resp_frame", "resp-inline", b"PING\r\nSET k \"a b\"\r\nGET k\nQUIT\r\n".to_vec()),
        ("resp_frame", "resp-hello-auth", b"*4\r\n$5\r\nHELLO\r\n$1\r\n3\r\n$4\r\nAUTH\r\n$7\r\ndefault\r\n*2\r\n$4\r\nAUTH\r\n$6\r\nsecret\r\n".to_vec()),
        ("resp_frame", "resp-multi-exec", b"*1\r\n$5\r\nMULTI\r\n*2\r\n$4\r\nINCR\r\n$1\r\nn\r\n*3\r\n$6\r\nEXPIRE\r\n$1\r\nn\r\n$2\r\n10\r\n*1\r\n$4\r\nEXEC\r\n*0\r\n".to_vec()),
        ("resp_frame", "resp-empty-and-binary-bulk", b"*3\r\n$3\r\nSET\r\n$0\r\n\r\n$4\r\n\x00\r\n\xff\r\n".to_vec()),
        ("stored_value", "value-string", value(None, b"hello")),
        ("stored_value", "value-expiring", value(Some(1_700_000_001_000), b"hi")),
        ("stored_value", "value-empty", value(None, b"")),
        ("stored_value", "value-expiring-empty", value(Some(u64::MAX), b"")),
    ]
}

fn check_by_target(target: &str, data: &[u8]) -> Option<Result<(), Broken>> {
    match target {
        "resp_frame" => Some(check_resp_frame(data)),
        "stored_value" => Some(check_stored_value(data)),
        _ => None,
    }
}

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

proptest! {
    #[test]
    fn random_bytes_break_no_server_decoder(data in proptest::collection::vec(any::<u8>(), 0..256)) {
        prop_assert_eq!(check_resp_frame(&data), Ok(()));
        prop_assert_eq!(check_stored_value(&data), Ok(()));
    }

    #[test]
    fn mutated_seeds_break_no_server_decoder(
        pick in any::<usize>(),
        edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..4),
        cut in any::<usize>(),
    ) {
        let all = seeds();
        let (target, name, seed) = &all[pick % all.len()];
        let mut m = seed.clone();
        for (i, v) in edits {
            let n = m.len();
            if n > 0 {
                m[i % n] = v;
            }
        }
        m.truncate(cut % (m.len() + 1));
        prop_assert_eq!(check_by_target(target, &m), Some(Ok(())), "{}", name);
    }
}

#[test]
fn seeds_decode() {
    for (target, name, bytes) in seeds() {
        let ok = match target {
            "resp_frame" => matches!(
                parse_command(&bytes, &Limits::default()),
                Ok(Parsed::Command { .. })
            ),
            _ => StoredValue::decode(&bytes).is_ok(),
        };
        assert!(ok, "{target}/{name}");
        assert_eq!(check_by_target(target, &bytes), Some(Ok(())));
    }
}

/// Every committed file of the server's corpora passes its check, and the seeds are what
/// `seeds()` makes today.
#[test]
fn committed_corpora_pass_their_checks() {
    let dir = corpus_dir();
    if !dir.is_dir() {
        return; // Not built from the repository.
    }
    for (target, name, bytes) in seeds() {
        let path = dir.join(target).join(format!("seed-{name}"));
        let committed = std::fs::read(&path).unwrap_or_default();
        assert!(
            committed == bytes,
            "{} is stale: regenerate the seeds",
            path.display()
        );
    }
    for target in ["resp_frame", "stored_value"] {
        for file in std::fs::read_dir(dir.join(target)).unwrap() {
            let file = file.unwrap().path();
            let data = std::fs::read(&file).unwrap();
            assert_eq!(
                check_by_target(target, &data),
                Some(Ok(())),
                "{}",
                file.display()
            );
        }
    }
}

/// Writes the server targets' seed corpora under `fuzz/corpus/<target>/` (fuzz/README.md).
#[test]
#[ignore = "writes the seed corpora into the repository"]
fn write_seed_corpus() {
    for (target, name, bytes) in seeds() {
        let dir = corpus_dir().join(target);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(format!("seed-{name}")), bytes).unwrap();
    }
}
