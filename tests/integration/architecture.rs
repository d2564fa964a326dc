//! The dependency rule: `extract/` is pure (no network, no disk, no database) and `api/`
//! never touches the database directly.

use std::path::Path;

fn sources(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = entry.path();
        if path.is_dir() {
            out.extend(sources(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push((path.display().to_string(), std::fs::read_to_string(&path).expect("read")));
        }
    }
    out
}

fn check(dir: &str, forbidden: &[&str]) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(dir);
    let files = sources(&root);
    assert!(!files.is_empty(), "no sources under {dir}");
    for (path, text) in files {
        for word in forbidden {
            assert!(!text.contains(word), "{path} names `{word}`, which {dir} must not use");
        }
    }
}

#[test]
fn extract_is_pure() {
    check("src/extract", &["reqwest", "tokio::net", "tokio", "sled", "std::fs", "std::net"]);
}

#[test]
fn api_never_touches_the_database() {
    check("src/api", &["sled"]);
}
