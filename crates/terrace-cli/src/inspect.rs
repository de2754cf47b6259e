//! `terrace inspect`: a database's levels and files, or one table's properties and entries.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use terrace::iter::InternalIterator;
use terrace::key;
use terrace::sst::SstReader;
use terrace::storage::{FsStorage, IoClass, Storage};

/// Shows bytes as text when printable, else as hex.
fn show(bytes: &[u8]) -> String {
    if bytes.iter().all(|b| b.is_ascii_graphic() || *b == b' ') {
        String::from_utf8_lossy(bytes).into_owned()
    } else {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("0x{hex}")
    }
}

fn show_ikey(ikey: &[u8]) -> String {
    match key::try_parse(ikey) {
        Ok(p) => format!("{} @{} {:?}", show(p.user_key), p.seq, p.kind),
        Err(reason) => format!("<bad internal key: {reason}>"),
    }
}

pub fn table(path: &Path, keys: bool, verify: bool) -> anyhow::Result<()> {
    let storage = FsStorage::new();
    let file = storage.open(path)?;
    let reader = Arc::new(
        SstReader::open(file, path.to_path_buf(), 0, None)
            .with_context(|| format!("opening {}", path.display()))?,
    );
    let p = reader.properties();
    println!("file:               {}", path.display());
    println!("format version:     {}", p.format_version);
    println!("entries:            {}", p.num_entries);
    println!("deletions:          {}", p.num_deletions);
    println!("range deletions:    {}", p.num_range_deletions);
    println!("smallest key:       {}", show_ikey(&p.smallest_key));
    println!("largest key:        {}", show_ikey(&p.largest_key));
    println!(
        "sequence range:     {} .. {}",
        p.smallest_seq, p.largest_seq
    );
    println!("data blocks:        {}", p.num_data_blocks);
    println!("data bytes:         {}", p.data_size);
    println!("index bytes:        {}", p.index_size);
    println!("filter bytes:       {}", p.filter_size);
    println!("compression:        {}", p.compression);
    if verify {
        reader.verify()?;
        println!("checksums:          ok");
    }
    if keys {
        println!();
        for t in reader.range_tombstones() {
            println!(
                "range deletion [{}, {}) @{}",
                show(&t.start),
                show(&t.end),
                t.seq
            );
        }
        let mut it = reader.iter(IoClass::Foreground, false);
        it.seek_to_first()?;
        while it.valid() {
            println!("{} => {}", show_ikey(it.key()), show(it.value()));
            it.next()?;
        }
    }
    Ok(())
}

pub fn database(dir: &Path, verify: bool) -> anyhow::Result<()> {
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let layout = terrace::inspect_database(storage.clone(), dir)
        .with_context(|| format!("reading the manifest of {}", dir.display()))?;
    println!("database:        {}", dir.display());
    println!("manifest:        {}", layout.manifest);
    println!("last sequence:   {}", layout.last_sequence);
    println!("log number:      {}", layout.log_number);
    println!("next file:       {}", layout.next_file_number);
    let total: u64 = layout.levels.iter().flatten().map(|f| f.size).sum();
    println!("total bytes:     {total}");
    for (level, files) in layout.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        println!("\nlevel {level}: {} files, {bytes} bytes", files.len());
        for f in files {
            println!(
                "  {:06}.sst vol {} {:>10} bytes  seq {}..{}  [{} .. {}]",
                f.number,
                f.volume,
                f.size,
                f.smallest_seq,
                f.largest_seq,
                show_ikey(f.smallest.encoded()),
                show_ikey(f.largest.encoded())
            );
            if verify {
                let path = layout.table_path(dir, f);
                let reader = SstReader::open(storage.open(&path)?, path.clone(), 0, None)?;
                reader
                    .verify()
                    .with_context(|| format!("verifying {}", path.display()))?;
            }
        }
    }
    if verify {
        println!("\nchecksums: ok");
    }
    Ok(())
}
