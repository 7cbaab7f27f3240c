//! Bad input from the network: a truncated or garbage frame closes that connection with a
//! counted frame error, never a panic, and the host goes on serving.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Group, Kv};
use nr_raft::{Client, Consistency};

/// Sends `bytes` on a new connection, half-closes it, and returns what the host did: whether
/// it closed the connection (read returns end of stream) without answering.
fn send(addr: std::net::SocketAddr, bytes: &[u8], half_close: bool) -> bool {
    let mut s = TcpStream::connect(addr).expect("connects");
    s.set_read_timeout(Some(Duration::from_secs(10)))
        .expect("timeout");
    s.write_all(bytes).expect("writes");
    if half_close {
        s.shutdown(std::net::Shutdown::Write).expect("half-closes");
    }
    let mut rest = Vec::new();
    match s.read_to_end(&mut rest) {
        Ok(_) => rest.is_empty(),
        Err(e) => e.kind() == std::io::ErrorKind::ConnectionReset,
    }
}

fn frame<T: serde::Serialize>(msg: &T) -> Vec<u8> {
    let mut buf = Vec::new();
    nr_raft::encode_frame(&mut buf, msg).expect("encodes");
    buf
}

fn wait_errors(host: &nr_raft::Host<Kv>, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while host.stats().frame_errors < n {
        assert!(
            Instant::now() < deadline,
            "frame errors stay at {:?}",
            host.stats()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn garbage_and_truncated_frames_close_the_connection_and_count_an_error() {
    let g = Group::start(3, 0);
    let host = g.host(g.leader());
    let mut errors = 0;
    // Garbage: bad magic, then valid magic with a huge length, then a bad checksum.
    let mut bad_crc = frame(&0u32); // the greeting `Hello::Peer { from: 0 }`... any payload
    let last = bad_crc.len() - 1;
    bad_crc[last] ^= 0x55;
    let mut huge = b"NRRF".to_vec();
    huge.extend_from_slice(&u32::MAX.to_le_bytes());
    huge.extend_from_slice(&[0; 4]);
    let cases: Vec<(&str, Vec<u8>, bool)> = vec![
        ("garbage", vec![0xAB; 64], false),
        ("huge length", huge, false),
        ("bad checksum", bad_crc, false),
        // Truncated: a valid client greeting, then half a request frame, then end of stream.
        (
            "truncated",
            {
                let mut v = frame(&1u32); // Hello::Client is variant 1
                let req = frame(&(0u32, (5u64, 6u64)));
                v.extend_from_slice(&req[..req.len() / 2]);
                v
            },
            true,
        ),
        // A checksummed frame that decodes as no message of the protocol.
        ("undecodable", frame(&9u32), false),
    ];
    for (what, bytes, half_close) in cases {
        assert!(
            send(host.addr(), &bytes, half_close),
            "{what}: the host answered"
        );
        errors += 1;
        wait_errors(host, errors);
    }
    // The host still serves, and no write came out of the truncated request.
    let mut c = Client::<Kv>::connect(host.addr()).expect("connects");
    assert_eq!(
        c.read_retrying(5, Consistency::Linearizable, 100)
            .expect("read"),
        None
    );
    c.write_retrying((5, 1), 100).expect("write");
    assert_eq!(c.read(5, Consistency::Linearizable).expect("read"), Some(1));
}

#[test]
fn a_peer_frame_that_is_no_raft_message_closes_the_link() {
    let g = Group::start(1, 0);
    let host = g.host(0);
    let mut bytes = frame(&(0u32, 2u64)); // Hello::Peer { from: 2 }
                                          // A peer frame (a byte vector) whose bytes are not a protobuf message.
    bytes.extend_from_slice(&frame(&vec![0xffu8; 7]));
    assert!(send(host.addr(), &bytes, false));
    wait_errors(host, 1);
}
