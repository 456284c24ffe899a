//! The rustls side of the live tests: one connection, 1 MiB each way,
//! every byte checked, or one tampered record refused; a run whose peer
//! vanished under it is run once more ([`retried`]).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::time::Duration;

use rustls::{ClientConfig, ClientConnection, ServerConfig, ServerConnection, StreamOwned};

use super::{Case, Peer, TIMEOUT, TRANSFER_LEN, first_difference, test_data};

/// How the peer echoes or prints what it receives.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum PeerIo {
    /// Prints what it receives on stdout and sends what comes on stdin.
    StdinStdout,
    /// Sends back the text lines it receives.
    Echo,
}

/// A connection that went away under the rustls side with no word from
/// either TLS side (the socket reset, aborted or closed, no alert to
/// rustls, nothing of an error or alert said by the peer), or a peer
/// killed from outside before it reported the alert rustls sent it. Holds
/// what happened and what the peer had said.
pub struct Dropped(String);

/// Runs `attempt` (which starts its own peer), and if the connection was
/// [`Dropped`], once more, saying so with a `RETRY:` line; a second drop
/// fails. A peer that refuses a record says so before it closes, which
/// fails the test at once, without a retry; what this covers is the peer
/// process or its connection vanishing (seen once on a loaded host,
/// before the peer had said anything).
pub fn retried(what: &str, mut attempt: impl FnMut() -> Result<(), Dropped>) {
    if let Err(Dropped(first)) = attempt() {
        eprintln!("RETRY: {what}, {first}");
        if let Err(Dropped(again)) = attempt() {
            panic!("dropped twice: {again}; the first time: {first}");
        }
    }
}

/// A rustls client on `port` against a peer server from `spawn`: data
/// up, data down; [`retried`] once if the connection is [`Dropped`].
pub fn client_against(
    case: &Case,
    config: Arc<ClientConfig>,
    port: u16,
    spawn: &dyn Fn() -> Peer,
    io: PeerIo,
) {
    retried(&case.name(), || {
        exchange(case, Arc::clone(&config), port, &mut spawn(), io)
    });
}

/// One connection to the peer, 1 MiB each way, every byte checked; panics
/// on anything but a silent drop of the connection.
fn exchange(
    case: &Case,
    config: Arc<ClientConfig>,
    port: u16,
    peer: &mut Peer,
    io: PeerIo,
) -> Result<(), Dropped> {
    let stdout_is_data = io == PeerIo::StdinStdout;
    let tcp = super::connect_when_listening(port, peer);
    let conn = ClientConnection::new(config, super::server_name()).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    // The handshake apart, so a failure says where it happened.
    while tls.conn.is_handshaking() {
        tls.conn
            .complete_io(&mut tls.sock)
            .map_err(|e| io_failure("handshake", e, peer, stdout_is_data))?;
    }
    assert_eq!(tls.conn.negotiated_cipher_suite(), Some(case.suite));
    let up = match io {
        PeerIo::StdinStdout => test_data(TRANSFER_LEN, 1),
        PeerIo::Echo => super::text_data(TRANSFER_LEN, 1),
    };
    match io {
        PeerIo::StdinStdout => {
            tls.write_all(&up)
                .and_then(|()| tls.flush())
                .map_err(|e| io_failure("send", e, peer, stdout_is_data))?;
            assert!(
                peer.wait_stdout(up.len(), TIMEOUT),
                "peer got {} of {} bytes; {}",
                peer.stdout_len(),
                up.len(),
                peer.describe()
            );
            let got = peer.stdout();
            assert!(
                got == up,
                "client to server: {}",
                first_difference(&got, &up)
            );
            let down = test_data(TRANSFER_LEN, 2);
            peer.feed_stdin(down.clone());
            let mut got = vec![0u8; down.len()];
            tls.read_exact(&mut got)
                .map_err(|e| io_failure("receive", e, peer, stdout_is_data))?;
            assert!(
                got == down,
                "server to client: {}",
                first_difference(&got, &down)
            );
        }
        PeerIo::Echo => {
            // Chunk by chunk, so neither side blocks writing while the
            // other writes too.
            let mut back = vec![0u8; 1 << 16];
            for (i, chunk) in up.chunks(back.len()).enumerate() {
                let at = i * back.len();
                tls.write_all(chunk)
                    .and_then(|()| tls.flush())
                    .map_err(|e| io_failure(&format!("send at {at}"), e, peer, false))?;
                let got = &mut back[..chunk.len()];
                tls.read_exact(got)
                    .map_err(|e| io_failure(&format!("receive at {at}"), e, peer, false))?;
                assert!(got == chunk, "echo: {}", first_difference(got, chunk));
            }
        }
    }
    tls.conn.send_close_notify();
    let _ = tls.flush();
    Ok(())
}

/// An I/O error on the rustls side's connection: a silent drop (see
/// [`Dropped`]) is returned, anything else panics with what the peer said.
fn io_failure(what: &str, e: std::io::Error, peer: &mut Peer, stdout_is_data: bool) -> Dropped {
    use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset, UnexpectedEof};
    let transport = matches!(
        e.kind(),
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof
    ) && rustls_error(&e).is_none();
    peer.settle();
    if transport && !peer.said_error(stdout_is_data) {
        Dropped(format!("{what}: {e}; {}", peer.describe()))
    } else {
        panic!("{what}: {e}; {}", peer.describe())
    }
}

/// A rustls server on `listener` against a peer client from `spawn`,
/// which is fed the up data on stdin and prints what it receives;
/// [`retried`] once if the connection is [`Dropped`].
pub fn server_against(
    case: &Case,
    config: Arc<ServerConfig>,
    listener: &TcpListener,
    spawn: &dyn Fn() -> Peer,
) {
    retried(&case.name(), || {
        serve(case, Arc::clone(&config), listener, &mut spawn())
    });
}

/// One connection from the peer, 1 MiB each way, every byte checked;
/// panics on anything but a silent drop of the connection.
fn serve(
    case: &Case,
    config: Arc<ServerConfig>,
    listener: &TcpListener,
    peer: &mut Peer,
) -> Result<(), Dropped> {
    let up = test_data(TRANSFER_LEN, 3);
    peer.feed_stdin(up.clone());
    let tcp = super::accept_within(listener, peer);
    let conn = ServerConnection::new(config).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    let mut got = vec![0u8; up.len()];
    tls.read_exact(&mut got)
        .map_err(|e| io_failure("receive", e, peer, true))?;
    assert!(
        got == up,
        "client to server: {}",
        first_difference(&got, &up)
    );
    assert_eq!(tls.conn.negotiated_cipher_suite(), Some(case.suite));
    let down = test_data(TRANSFER_LEN, 4);
    tls.write_all(&down)
        .and_then(|()| tls.flush())
        .map_err(|e| io_failure("send", e, peer, true))?;
    assert!(
        peer.wait_stdout(down.len(), TIMEOUT),
        "peer got {} of {} bytes; {}",
        peer.stdout_len(),
        down.len(),
        peer.describe()
    );
    let got = peer.stdout();
    assert!(
        got == down,
        "server to client: {}",
        first_difference(&got, &down)
    );
    tls.conn.send_close_notify();
    let _ = tls.flush();
    // Let the peer see the close_notify and exit by itself.
    let _ = peer.wait_exit(Duration::from_secs(2));
    Ok(())
}

/// After rustls refused the tampered record: whether the peer reported
/// the alert rustls sent it (`seen`). Not seen, a peer that something
/// outside the test killed counts as [`Dropped`]; otherwise the test
/// fails.
pub fn alert_seen(seen: bool, case: &Case, peer: &mut Peer) -> Result<(), Dropped> {
    if seen {
        Ok(())
    } else if peer.killed() {
        Err(Dropped(format!("no alert; {}", peer.describe())))
    } else {
        panic!("{}: no alert; {}", case.name(), peer.describe())
    }
}

/// The rustls error inside an I/O error from a rustls stream.
fn rustls_error(e: &std::io::Error) -> Option<rustls::Error> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
        .cloned()
}

/// A rustls client through a proxy (on `port`) that tampers with the
/// server's first application-data record: the client must fail with
/// rustls's decrypt error. Returns it, or that the connection was
/// [`Dropped`].
pub fn client_gets_tampered(
    config: Arc<ClientConfig>,
    port: u16,
    peer: &mut Peer,
    io: PeerIo,
) -> Result<rustls::Error, Dropped> {
    let tcp = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    tcp.set_read_timeout(Some(TIMEOUT)).unwrap();
    let conn = ClientConnection::new(config, super::server_name()).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    let hello = super::text_data(128, 7);
    let stdout_is_data = io == PeerIo::StdinStdout;
    tls.write_all(&hello)
        .and_then(|()| tls.flush())
        .map_err(|e| io_failure("send", e, peer, stdout_is_data))?;
    if io == PeerIo::StdinStdout {
        assert!(
            peer.wait_stdout(hello.len(), TIMEOUT),
            "{}",
            peer.describe()
        );
        peer.feed_stdin(super::text_data(1000, 8));
    }
    read_fails(&mut tls, peer, stdout_is_data)
}

/// A rustls server whose peer client goes through a proxy that tampers
/// with the client's first application-data record: the server must fail
/// with rustls's decrypt error. Returns it, or that the connection was
/// [`Dropped`].
pub fn server_gets_tampered(
    config: Arc<ServerConfig>,
    listener: &TcpListener,
    peer: &mut Peer,
) -> Result<rustls::Error, Dropped> {
    peer.feed_stdin(super::text_data(1000, 9));
    let tcp = super::accept_within(listener, peer);
    let conn = ServerConnection::new(config).unwrap();
    let mut tls = StreamOwned::new(conn, tcp);
    read_fails(&mut tls, peer, true)
}

/// The first read must fail with a rustls error (the first record that
/// arrives is the tampered one); returns it, or that the connection was
/// [`Dropped`] (an end of stream counting as one).
fn read_fails(
    tls: &mut impl Read,
    peer: &mut Peer,
    stdout_is_data: bool,
) -> Result<rustls::Error, Dropped> {
    let mut buf = [0u8; 4096];
    match tls.read(&mut buf) {
        Ok(0) => Err(io_failure(
            "closed without an error",
            std::io::ErrorKind::UnexpectedEof.into(),
            peer,
            stdout_is_data,
        )),
        Ok(_) => panic!("a tampered record was accepted; {}", peer.describe()),
        Err(e) => match rustls_error(&e) {
            Some(err) => Ok(err),
            None => Err(io_failure("receive", e, peer, stdout_is_data)),
        },
    }
}
