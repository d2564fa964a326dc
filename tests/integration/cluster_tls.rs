//! Connections to the cluster port: nodes that talk over TLS meet, nodes without the
//! cluster's certificate are kept out, a connection that never finishes its handshake keeps
//! no node out, and one that does not authenticate is closed; a node's connections leave
//! from the address it listens on.

use std::io::Read;
use std::time::{Duration, Instant};

use crate::cluster::Node;

/// A node's TLS files, made for a test: a self-signed certificate for 127.0.0.1 that is
/// also the CA file (so only nodes holding this certificate are accepted).
struct TlsFiles {
    cert: String,
    key: String,
}

impl TlsFiles {
    fn make(dir: &std::path::Path, name: &str) -> Self {
        let made = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_owned()]).expect("certificate");
        let (cert, key) = (dir.join(format!("{name}.crt")), dir.join(format!("{name}.key")));
        std::fs::write(&cert, made.cert.pem()).expect("write cert");
        std::fs::write(&key, made.signing_key.serialize_pem()).expect("write key");
        let path = |p: std::path::PathBuf| p.to_str().expect("utf8").to_owned();
        Self { cert: path(cert), key: path(key) }
    }

    fn env(&self) -> [(&str, &str); 3] {
        [
            ("FERROCRAWL_CLUSTER__TLS_CERT", self.cert.as_str()),
            ("FERROCRAWL_CLUSTER__TLS_KEY", self.key.as_str()),
            ("FERROCRAWL_CLUSTER__TLS_CA", self.cert.as_str()),
        ]
    }
}

/// Nodes with TLS settings talk over TLS: three meet although the third knows only the
/// second (it dials the nodes its peers name), and neither a node without TLS nor one
/// whose certificate the cluster's CA did not sign can join.
#[tokio::test]
async fn nodes_with_tls_meet_and_refuse_nodes_without_the_clusters_certificate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (ours, theirs) = (TlsFiles::make(dir.path(), "cluster"), TlsFiles::make(dir.path(), "other"));
    // Who may join is checked here, not how fast a silent node is noticed: a longer
    // `down_after` keeps a node starved by a busy machine for a moment a member.
    let patient = ("FERROCRAWL_CLUSTER__DOWN_AFTER_MS", "5000");
    fn with_tls<'a>(files: &'a TlsFiles, patient: (&'a str, &'a str)) -> Vec<(&'a str, &'a str)> {
        [files.env().as_slice(), &[patient]].concat()
    }
    let a = Node::start("a", None, &with_tls(&ours, patient));
    let b = Node::start("b", Some(&a.cluster_addr), &with_tls(&ours, patient));
    b.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    let c = Node::start("c", Some(&b.cluster_addr), &with_tls(&ours, patient));
    for node in [&a, &b, &c] {
        node.wait_live(&["a", "b", "c"], Duration::from_secs(20)).await;
    }
    let plain = Node::start("p", Some(&a.cluster_addr), &[patient]);
    let stranger = Node::start("s", Some(&a.cluster_addr), &with_tls(&theirs, patient));
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        for (node, alone) in [(&a, vec!["a", "b", "c"]), (&plain, vec!["p"]), (&stranger, vec!["s"])] {
            let live = node.live().await;
            assert_eq!(live, alone, "{} sees {live:?}; its warnings:\n{}", node.name, node.warnings());
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// A connection to a node's cluster port that never sends its TLS greeting (a stuck peer, a
/// port scanner) does not keep other nodes from joining through that port; and a seed that
/// takes connections but never answers does not keep a node from starting.
#[tokio::test]
async fn a_connection_that_never_greets_keeps_no_node_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    let files = TlsFiles::make(dir.path(), "cluster");
    let a = Node::start("a", None, &files.env());
    let silent: Vec<std::net::TcpStream> =
        (0..3).map(|_| std::net::TcpStream::connect(&a.cluster_addr).expect("connect")).collect();
    let b = Node::start("b", Some(&a.cluster_addr), &files.env());
    for node in [&a, &b] {
        node.wait_live(&["a", "b"], Duration::from_secs(20)).await;
    }
    drop(silent);
    // The kernel completes connections to this socket; nothing ever answers on them.
    let mute = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let mute_addr = mute.local_addr().expect("addr").to_string();
    let alone = Node::start("c", Some(&mute_addr), &files.env());
    assert_eq!(alone.live().await, ["c"]);
}

/// A connection to a node's cluster port that never authenticates (plain TCP here, silent)
/// is closed after some seconds: such connections do not pile up on a node.
#[tokio::test]
async fn a_connection_that_does_not_authenticate_is_closed() {
    let a = Node::start("a", None, &[]);
    let mut silent = std::net::TcpStream::connect(&a.cluster_addr).expect("connect");
    silent.set_read_timeout(Some(Duration::from_secs(30))).expect("read timeout");
    let mut buffer = [0u8; 512];
    loop {
        match silent.read(&mut buffer) {
            Ok(0) => break,
            Ok(_) => continue,
            Err(e) => panic!("the node kept a connection that never spoke open for 30 s: {e}"),
        }
    }
    // The node says why (its log may reach this test a moment after the socket closed).
    crate::common::wait_for("the node's reason in its log", Duration::from_secs(5), || async {
        a.warnings().contains("did not authenticate").then_some(())
    })
    .await;
}

/// A node listening on one address opens its connections from it: the peer (and a firewall
/// between them) sees the address the node is known by, not whichever the system picks.
#[tokio::test]
async fn a_node_dials_from_the_address_it_listens_on() {
    let seed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let seed_addr = seed.local_addr().expect("addr").to_string();
    let listen = format!("127.0.0.2:{}", crate::cluster::free_port());
    let _node = Node::start_at("a", listen, Some(&seed_addr), &[]);
    seed.set_nonblocking(true).expect("nonblocking");
    let deadline = Instant::now() + Duration::from_secs(20);
    let from = loop {
        match seed.accept() {
            Ok((_, from)) => break from,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            Err(e) => panic!("the node never dialled its seed: {e}"),
        }
    };
    assert_eq!(from.ip().to_string(), "127.0.0.2");
}
