//! Quick start: write, read, iterate, snapshot, reopen.
//!
//! Run with `cargo run --release --example quickstart [DIR]`.

use terrace::{Db, Options, ReadOptions, WriteBatch, WriteOptions};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let dir = match std::env::args().nth(1) {
        Some(d) => std::path::PathBuf::from(d),
        None => std::env::temp_dir().join(format!("terrace-quickstart-{}", std::process::id())),
    };
    let opts = Options {
        write_buffer_size: 1 << 20,
        ..Options::default()
    };

    let db = Db::open(&dir, opts.clone())?;
    let n = 200_000u32;
    let started = std::time::Instant::now();
    for i in 0..n {
        db.put(
            format!("key{i:08}").as_bytes(),
            format!("value-{i}").as_bytes(),
        )?;
    }
    println!("wrote {n} keys in {:?}", started.elapsed());

    let mut batch = WriteBatch::new();
    batch.put(b"apple", b"red");
    batch.put(b"banana", b"yellow");
    batch.delete(b"key00000000");
    db.write(
        batch,
        WriteOptions {
            sync: true,
            ..WriteOptions::default()
        },
    )?;
    db.delete_range(b"key00000100", b"key00000200")?;

    let snapshot = db.snapshot();
    db.put(b"apple", b"green")?;
    println!(
        "apple now = {:?}, at the snapshot = {:?}",
        db.get(b"apple")?.map(String::from_utf8),
        db.get_opt(&snapshot.read_options(), b"apple")?
            .map(String::from_utf8)
    );
    drop(snapshot);

    let mut it = db.iter(ReadOptions {
        lower_bound: Some(b"key00000095".to_vec()),
        upper_bound: Some(b"key00000205".to_vec()),
        ..ReadOptions::default()
    })?;
    it.seek_to_first()?;
    let mut shown = Vec::new();
    while it.valid() {
        shown.push(String::from_utf8_lossy(it.key()).into_owned());
        it.next()?;
    }
    println!("keys in [key00000095, key00000205): {shown:?}");

    db.flush()?;
    db.compact_range(None, None)?;
    let stats = db.stats();
    println!(
        "levels: {:?}",
        stats
            .levels
            .iter()
            .map(|l| (l.level, l.files, l.bytes))
            .collect::<Vec<_>>()
    );
    println!("write amplification {:.2}", stats.write_amplification);
    db.close()?;

    let db = Db::open(&dir, opts)?;
    let got = db.get(b"key00199999")?;
    println!(
        "after reopen key00199999 = {:?}",
        got.map(String::from_utf8)
    );
    let mut it = db.iter(ReadOptions::default())?;
    it.seek_to_first()?;
    let mut count = 0u64;
    while it.valid() {
        count += 1;
        it.next()?;
    }
    println!("after reopen the database holds {count} keys");
    db.close()?;
    if std::env::args().nth(1).is_none() {
        std::fs::remove_dir_all(&dir)?;
    }
    Ok(())
}
