//! The saved pages the extraction and language-model benches run over: `BENCH_PAGES` (a
//! folder of `<name>/source.html`), default `../shared/datasets/extraction-A/pages`
//! relative to the crate root, else the extraction test fixtures (a checkout without the
//! data set still runs the benches' smoke tests).

use std::path::{Path, PathBuf};

/// The files of `dir` that `pick` maps to a page file, in name order, read as text.
fn read_sorted(dir: &Path, pick: impl Fn(PathBuf) -> Option<PathBuf>) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut paths: Vec<PathBuf> = entries.filter_map(Result::ok).filter_map(|e| pick(e.path())).collect();
    paths.sort();
    paths
        .iter()
        .filter_map(|p| std::fs::read(p).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect()
}

/// The pages, as text.
pub fn load() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = std::env::var_os("BENCH_PAGES")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("../shared/datasets/extraction-A/pages"));
    let pages = read_sorted(&dir, |p| Some(p.join("source.html")).filter(|s| s.is_file()));
    if !pages.is_empty() {
        return pages;
    }
    read_sorted(&root.join("tests/fixtures/extract"), |p| {
        p.extension().is_some_and(|e| e == "html").then_some(p)
    })
}
