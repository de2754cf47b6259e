//! The engine crate's modules import each other without cycles.
//!
//! A module depends on another when its code uses an item defined there: `use` paths and
//! inline `crate::` paths are followed through `pub use` re-exports to the module that
//! defines the item, so a parent that re-exports its children's items is not made to
//! depend on them. Re-exports themselves are not dependencies, and test modules are left
//! out. The scan is textual (the crate keeps one `use` per statement group and defines
//! items at the start of a line), which is enough for this crate's sources.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Module = Vec<String>;

struct Source {
    /// The code, up to its inline test module.
    code: String,
    /// Paths its `use` statements bring in, and whether each is a `pub use`.
    uses: Vec<(Vec<String>, Option<String>, bool)>,
}

fn module_of(src: &Path, file: &Path) -> Module {
    let rel = file.strip_prefix(src).unwrap_or(file);
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Strips `//` comments and cuts the file at its inline test module.
fn code_of(text: &str) -> String {
    let mut out = String::new();
    let mut lines = text.lines().peekable();
    while let Some(line) = lines.next() {
        let t = line.trim_start();
        if t.starts_with("#[cfg(test)]")
            && lines
                .peek()
                .is_some_and(|n| n.trim_start().starts_with("mod tests {"))
        {
            break;
        }
        let code = match line.find("//") {
            Some(i) => &line[..i],
            None => line,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

/// Expands a use tree (`a::{b, c::{d as e}}`) into paths with their `as` names.
fn expand(tree: &str, prefix: &[String], out: &mut Vec<(Vec<String>, Option<String>)>) {
    let tree = tree.trim();
    if tree.is_empty() {
        return;
    }
    if let Some(open) = tree.find('{') {
        let head: Vec<String> = tree[..open]
            .split("::")
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(String::from)
            .collect();
        let close = tree.rfind('}').filter(|&c| c > open).unwrap_or(tree.len());
        let inner = &tree[open + 1..close];
        let mut p = prefix.to_vec();
        p.extend(head);
        let mut depth = 0;
        let mut start = 0;
        for (i, c) in inner.char_indices() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    expand(&inner[start..i], &p, out);
                    start = i + 1;
                }
                _ => {}
            }
        }
        expand(&inner[start..], &p, out);
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((p, a)) => (p, Some(a.trim().to_string())),
        None => (tree, None),
    };
    let mut p = prefix.to_vec();
    p.extend(path.split("::").map(|s| s.trim().to_string()));
    out.push((p, alias));
}

fn parse(text: &str) -> Source {
    let code = code_of(text);
    let mut uses = Vec::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("use ") {
        let before = &rest[..i];
        let line_start = before.rfind('\n').map_or(0, |n| n + 1);
        let lead = before[line_start..].trim_start();
        // `use` opens a statement only at the start of a line, after a visibility.
        let at_start = lead.is_empty() || (lead.starts_with("pub") && lead.ends_with(' '));
        let Some(end) = rest[i..].find(';') else {
            break;
        };
        let stmt = &rest[i + 4..i + end];
        if at_start {
            let is_pub = lead.starts_with("pub");
            let mut paths = Vec::new();
            expand(stmt, &[], &mut paths);
            for (p, a) in paths {
                uses.push((p, a, is_pub));
            }
        }
        rest = &rest[i + end + 1..];
    }
    Source { code, uses }
}

struct Crate {
    modules: BTreeMap<Module, Source>,
}

impl Crate {
    /// An absolute path for `path` as written in module `m`.
    fn absolute(&self, m: &Module, path: &[String]) -> Option<Vec<String>> {
        let mut out: Vec<String> = Vec::new();
        let mut it = path.iter().peekable();
        match it.peek().map(|s| s.as_str()) {
            Some("crate") => {
                it.next();
            }
            Some("self") => {
                it.next();
                out = m.clone();
            }
            Some("super") => {
                out = m.clone();
                while it.peek().is_some_and(|s| s.as_str() == "super") {
                    it.next();
                    out.pop();
                }
            }
            _ => return None,
        }
        out.extend(it.cloned());
        Some(out)
    }

    fn defines(&self, m: &Module, item: &str) -> bool {
        let Some(src) = self.modules.get(m) else {
            return false;
        };
        src.code.lines().any(|l| {
            let t = l.trim_start();
            let t = t
                .strip_prefix("pub(crate) ")
                .or_else(|| t.strip_prefix("pub(super) "))
                .or_else(|| t.strip_prefix("pub "))
                .unwrap_or(t);
            let t = t
                .split_once(") ")
                .filter(|_| t.starts_with("pub(in "))
                .map_or(t, |(_, r)| r);
            [
                "struct ",
                "enum ",
                "trait ",
                "fn ",
                "type ",
                "const ",
                "static ",
                "union ",
                "unsafe fn ",
                "unsafe trait ",
            ]
            .iter()
            .any(|k| {
                t.strip_prefix(k).is_some_and(|r| {
                    r.starts_with(item)
                        && !r[item.len()..].starts_with(|c: char| c.is_alphanumeric() || c == '_')
                })
            })
        })
    }

    /// The module defining what absolute `path` names.
    fn resolve(&self, path: &[String], depth: usize) -> Module {
        let mut m: Module = Vec::new();
        let mut i = 0;
        while i < path.len() {
            let mut next = m.clone();
            next.push(path[i].clone());
            if self.modules.contains_key(&next) {
                m = next;
                i += 1;
            } else {
                break;
            }
        }
        let Some(item) = path.get(i) else {
            return m;
        };
        if depth > 8 || self.defines(&m, item) {
            return m;
        }
        let Some(src) = self.modules.get(&m) else {
            return m;
        };
        for (p, alias, is_pub) in &src.uses {
            let name = alias.as_ref().or(p.last());
            if *is_pub && name.is_some_and(|n| n == item) {
                if let Some(abs) = self.absolute(&m, p) {
                    return self.resolve(&abs, depth + 1);
                }
            }
        }
        m
    }

    fn dependencies(&self, m: &Module) -> BTreeSet<Module> {
        let mut out = BTreeSet::new();
        let Some(src) = self.modules.get(m) else {
            return out;
        };
        for (p, _, is_pub) in &src.uses {
            if *is_pub {
                continue;
            }
            if let Some(abs) = self.absolute(m, p) {
                out.insert(self.resolve(&abs, 0));
            }
        }
        // Inline paths: `crate::a::b::item`.
        let code = &src.code;
        let mut rest = code.as_str();
        while let Some(i) = rest.find("crate::") {
            let tail = &rest[i..];
            let end = tail
                .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
                .unwrap_or(tail.len());
            let path: Vec<String> = tail[..end]
                .split("::")
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            out.insert(self.resolve(&path[1..], 0));
            rest = &tail[end..];
        }
        out.remove(m);
        // A module's own submodules are parts of it.
        out.retain(|d| !d.starts_with(m) || m.is_empty() && d.is_empty());
        out
    }
}

/// Strongly connected components of more than one module (Tarjan's algorithm).
fn cycles(graph: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct T<'a> {
        g: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<&'a Module, usize>,
        low: BTreeMap<&'a Module, usize>,
        stack: Vec<&'a Module>,
        on: BTreeSet<&'a Module>,
        next: usize,
        out: Vec<Vec<Module>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a Module) {
        t.index.insert(v, t.next);
        t.low.insert(v, t.next);
        t.next += 1;
        t.stack.push(v);
        t.on.insert(v);
        if let Some(ds) = t.g.get(v) {
            for w in ds {
                let Some((w, _)) = t.g.get_key_value(w) else {
                    continue;
                };
                if !t.index.contains_key(w) {
                    visit(t, w);
                    let lw = t.low[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(lw);
                } else if t.on.contains(w) {
                    let iw = t.index[w];
                    let lv = t.low.get_mut(v).unwrap();
                    *lv = (*lv).min(iw);
                }
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.clone());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g: graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        next: 0,
        out: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v) {
            visit(&mut t, v);
        }
    }
    t.out
}

#[test]
fn the_engine_crate_has_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut modules = BTreeMap::new();
    for f in files {
        let m = module_of(&src, &f);
        if m.iter().any(|s| s == "tests") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        modules.insert(m, parse(&text));
    }
    let krate = Crate { modules };
    let graph: BTreeMap<Module, BTreeSet<Module>> = krate
        .modules
        .keys()
        .map(|m| (m.clone(), krate.dependencies(m)))
        .collect();
    // The scan must see the crate's real dependencies, or it proves nothing.
    let deps = |m: &str| graph.get(&vec![m.to_string()]).cloned().unwrap_or_default();
    assert!(
        deps("db").contains(&vec!["version".to_string()]),
        "{:?}",
        deps("db")
    );
    let found = cycles(&graph);
    // Each cycle with the dependencies that close it.
    let shown: Vec<String> = found
        .iter()
        .map(|c| {
            let mut lines = vec![c
                .iter()
                .map(|m| m.join("::"))
                .collect::<Vec<_>>()
                .join(" <-> ")];
            for m in c {
                for d in graph.get(m).into_iter().flatten().filter(|d| c.contains(d)) {
                    lines.push(format!("  {} -> {}", m.join("::"), d.join("::")));
                }
            }
            lines.join("\n")
        })
        .collect();
    assert!(found.is_empty(), "import cycles:\n{}", shown.join("\n"));
}
