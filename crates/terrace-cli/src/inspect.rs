//! `terrace inspect`: a database's levels and files, or one table's properties and entries.

use std::io::Write;
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

pub fn table(out: &mut impl Write, path: &Path, keys: bool, verify: bool) -> anyhow::Result<()> {
    let storage = FsStorage::new();
    let file = storage.open(path)?;
    let reader = Arc::new(
        SstReader::open(file, path.to_path_buf(), 0, None)
            .with_context(|| format!("opening {}", path.display()))?,
    );
    let p = reader.properties();
    writeln!(out, "file:               {}", path.display())?;
    writeln!(out, "format version:     {}", p.format_version)?;
    writeln!(out, "entries:            {}", p.num_entries)?;
    writeln!(out, "deletions:          {}", p.num_deletions)?;
    writeln!(out, "range deletions:    {}", p.num_range_deletions)?;
    writeln!(out, "smallest key:       {}", show_ikey(&p.smallest_key))?;
    writeln!(out, "largest key:        {}", show_ikey(&p.largest_key))?;
    writeln!(
        out,
        "sequence range:     {} .. {}",
        p.smallest_seq, p.largest_seq
    )?;
    writeln!(out, "data blocks:        {}", p.num_data_blocks)?;
    writeln!(out, "data bytes:         {}", p.data_size)?;
    writeln!(out, "index bytes:        {}", p.index_size)?;
    writeln!(out, "filter bytes:       {}", p.filter_size)?;
    writeln!(out, "compression:        {}", p.compression)?;
    if verify {
        reader.verify()?;
        writeln!(out, "checksums:          ok")?;
    }
    if keys {
        writeln!(out)?;
        for t in reader.range_tombstones() {
            writeln!(
                out,
                "range deletion [{}, {}) @{}",
                show(&t.start),
                show(&t.end),
                t.seq
            )?;
        }
        let mut it = reader.iter(IoClass::Foreground, false);
        it.seek_to_first()?;
        while it.valid() {
            writeln!(out, "{} => {}", show_ikey(it.key()), show(it.value()))?;
            it.next()?;
        }
    }
    Ok(())
}

pub fn database(out: &mut impl Write, dir: &Path, verify: bool) -> anyhow::Result<()> {
    let storage: Arc<dyn Storage> = Arc::new(FsStorage::new());
    let layout = terrace::inspect_database(storage.clone(), dir)
        .with_context(|| format!("reading the manifest of {}", dir.display()))?;
    writeln!(out, "database:        {}", dir.display())?;
    writeln!(out, "manifest:        {}", layout.manifest)?;
    writeln!(out, "last sequence:   {}", layout.last_sequence)?;
    writeln!(out, "log number:      {}", layout.log_number)?;
    writeln!(out, "next file:       {}", layout.next_file_number)?;
    let total: u64 = layout.levels.iter().flatten().map(|f| f.size).sum::<u64>()
        + layout.rows.iter().map(|r| r.size).sum::<u64>();
    writeln!(out, "total bytes:     {total}")?;
    rows(out, dir, &layout.rows)?;
    for (level, files) in layout.levels.iter().enumerate() {
        if files.is_empty() {
            continue;
        }
        let bytes: u64 = files.iter().map(|f| f.size).sum();
        writeln!(out, "\nlevel {level}: {} files, {bytes} bytes", files.len())?;
        for f in files {
            let vol = if f.replicas.is_empty() {
                f.volume.to_string()
            } else {
                let copies: Vec<String> = f.copies().map(|v| v.to_string()).collect();
                copies.join("+")
            };
            writeln!(
                out,
                "  {:06}.sst vol {} {:>10} bytes  seq {}..{}  [{} .. {}]",
                f.number,
                vol,
                f.size,
                f.smallest_seq,
                f.largest_seq,
                show_ikey(f.smallest.encoded()),
                show_ikey(f.largest.encoded())
            )?;
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
        writeln!(out, "\nchecksums: ok")?;
        if !layout.rows.is_empty() {
            writeln!(
                out,
                "level-0 rows: not checked here (opening the database checks every row)"
            )?;
        }
    }
    Ok(())
}

/// The rows of a matrix level 0, and where their region file is expected.
fn rows(
    out: &mut impl Write,
    dir: &Path,
    rows: &[terrace::level0::matrix::RowMeta],
) -> anyhow::Result<()> {
    if rows.is_empty() {
        return Ok(());
    }
    let bytes: u64 = rows.iter().map(|r| r.size).sum();
    let entries: u64 = rows.iter().map(|r| r.num_entries).sum();
    writeln!(
        out,
        "\nlevel 0 (matrix container on persistent memory): {} rows, {bytes} bytes, {entries} entries",
        rows.len()
    )?;
    let region = dir.join(terrace::level0::DEFAULT_REGION_FILE);
    if region.exists() {
        writeln!(out, "  region: {}", region.display())?;
    } else {
        writeln!(
            out,
            "  region: not in this directory (the database's matrix options name it)"
        )?;
    }
    for r in rows {
        let trim = r
            .trim
            .as_deref()
            .map_or(String::new(), |t| format!("  trimmed below {}", show(t)));
        writeln!(
            out,
            "  row {:06} group {} {:>10} bytes {:>8} entries  seq {}..{}  [{} .. {}]{trim}",
            r.number,
            r.group,
            r.size,
            r.num_entries,
            r.smallest_seq,
            r.largest_seq,
            show_ikey(r.smallest.encoded()),
            show_ikey(r.largest.encoded())
        )?;
    }
    Ok(())
}
