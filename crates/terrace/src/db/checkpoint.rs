//! Checkpoints: a consistent copy of the database in another directory.
//!
//! The memtables are flushed first, so the copy needs no log. Then, under the state lock
//! (no version can change and no file can be collected meanwhile), every live table file
//! is hard-linked (or copied) into the target, the MANIFEST is copied up to its current
//! end, and CURRENT is written last. Table files of every volume land in the target's
//! own directory; a database opened there without extra volumes finds them (unconfigured
//! volumes fall back to the database directory).

use std::path::Path;

use super::DbInner;
use crate::error::{Error, Result};
use crate::storage::IoClass;
use crate::version::{manifest_file_name, table_file_name};

impl DbInner {
    pub(crate) fn checkpoint(&self, target: &Path) -> Result<()> {
        if self.storage.exists(target)? {
            return Err(Error::InvalidArgument(format!(
                "checkpoint directory {} already exists",
                target.display()
            )));
        }
        self.flush_and_wait()?;
        let st = self.state.lock();
        let tmp = target.with_extension("checkpoint-tmp");
        self.storage.create_dir_all(&tmp)?;
        let version = st.versions.current();
        for level in version.levels() {
            for f in level {
                let name = table_file_name(f.number);
                self.storage
                    .link_or_copy(&self.tables.path(f.volume, f.number), &tmp.join(&name))?;
            }
        }
        let manifest = manifest_file_name(st.versions.manifest_number());
        let bytes = self
            .storage
            .read_all(&self.dir.join(&manifest), IoClass::Manifest)?;
        let mut out = self
            .storage
            .create(&tmp.join(&manifest), IoClass::Manifest)?;
        out.append(&bytes)?;
        out.sync()?;
        drop(out);
        self.storage.write_atomic(
            &tmp.join("CURRENT"),
            format!("{manifest}\n").as_bytes(),
            IoClass::Manifest,
        )?;
        drop(st);
        self.storage.rename(&tmp, target)?;
        if let Some(parent) = target.parent() {
            self.storage.sync_dir(parent)?;
        }
        Ok(())
    }
}
