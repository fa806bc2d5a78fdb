//! The connection level: every answer, an error included, leaves a keep-alive connection
//! usable or closes it cleanly (`Connection: close`); a body that does not arrive in time
//! gets 408 and its connection closed. Hand-written HTTP/1.1 on one TCP connection, so that
//! what the server does to the connection shows.

use std::net::SocketAddr;
use std::time::Duration;

use crate::common::{RawConnection, TestServer};

/// Bounds a step that waits for the server, so that a broken server fails the test instead
/// of hanging it. Not a timing assertion: the server answers long before this on any machine.
const PATIENCE: Duration = Duration::from_secs(120);

async fn within<T>(what: &str, step: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(PATIENCE, step)
        .await
        .unwrap_or_else(|_| panic!("no answer for {what}"))
}

fn addr(s: &TestServer) -> SocketAddr {
    s.server
        .as_ref()
        .and_then(|server| server.local_addr())
        .expect("bound")
}

/// The issue's finding: after a 404 to a POST with a body, the next request on the same
/// connection sometimes failed ("server disconnected"), because the unread body was left on
/// it. The headers and the body go in separate writes (Nagle's algorithm holds the small
/// second one until the first is acknowledged), so the body is often not there yet when
/// the route is looked up; the server must wait for it either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_to_a_post_with_a_body_leaves_the_connection_usable() {
    let s = TestServer::start().await;
    let mut connection = RawConnection::open(addr(&s)).await;
    let body = br#"{"assistant_id": "agent", "input": {"messages": []}}"#;
    let unknown = [
        "POST /no/such/route",
        "POST /threads/not-a-uuid/runs",
        "DELETE /threads",
    ];
    for round in 0..40 {
        let request_line = unknown[round % unknown.len()];
        let head = format!(
            "{request_line} HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            body.len()
        );
        connection.send(head.as_bytes()).await.expect("send head");
        tokio::task::yield_now().await;
        connection.send(body).await.expect("send body");
        let refused = within("the error", connection.response())
            .await
            .unwrap_or_else(|| panic!("round {round}: no answer to {request_line}"));
        assert!(
            (400..500).contains(&refused.status),
            "round {round}: {request_line} got {}",
            refused.status
        );
        assert!(
            !refused.closes(),
            "round {round}: the error closed the connection"
        );
        connection
            .send(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("send the next request");
        let ok = within("the next request", connection.response())
            .await
            .unwrap_or_else(|| panic!("round {round}: the connection broke after {request_line}"));
        assert_eq!(ok.status, 200, "round {round}");
        assert_eq!(ok.body, br#"{"ok":true}"#);
    }
    s.stop().await;
}

/// A body shorter than its Content-Length used to hold the connection for good. Now the
/// server waits the body read timeout (tiny here), answers 408 and closes the connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_shorter_than_its_length_gets_408_and_the_connection_closes() {
    let s =
        TestServer::start_with(|server| server.body_read_timeout(Duration::from_millis(50))).await;
    let mut connection = RawConnection::open(addr(&s)).await;
    connection
        .send(b"POST /threads HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{\"metadata\":")
        .await
        .expect("send");
    let answer = within("the 408", connection.response())
        .await
        .expect("an answer");
    assert_eq!(answer.status, 408);
    assert!(answer.closes(), "{:?}", answer.headers);
    let detail: serde_json::Value = serde_json::from_slice(&answer.body).expect("JSON");
    assert!(
        detail["detail"]
            .as_str()
            .is_some_and(|d| d.contains("Content-Length")),
        "{detail}"
    );
    assert!(within("the close", connection.closed_by_server()).await);
    // Nothing was created, and the server serves new connections.
    let count = s
        .post_json(
            "/threads/count",
            serde_json::json!({}),
            reqwest::StatusCode::OK,
        )
        .await;
    assert_eq!(count, serde_json::json!(0));
    s.stop().await;
}

/// Answers given without reading the body (a declared length over the limit, a wrong API
/// key) say `Connection: close` and close it, rather than leave the body on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_that_leave_the_body_unread_close_the_connection() {
    let s = TestServer::start_with(|server| server.body_limit(1024).api_key("sesame")).await;
    let mut connection = RawConnection::open(addr(&s)).await;
    // Only the head is sent: the 413 comes from the declared length.
    connection
        .send(b"POST /threads HTTP/1.1\r\nhost: x\r\nx-api-key: sesame\r\ncontent-length: 1000000\r\n\r\n")
        .await
        .expect("send");
    let too_big = within("the 413", connection.response()).await.expect("413");
    assert_eq!(too_big.status, 413);
    assert!(too_big.closes());
    assert!(within("the close", connection.closed_by_server()).await);

    let mut connection = RawConnection::open(addr(&s)).await;
    connection
        .send(
            b"POST /threads HTTP/1.1\r\nhost: x\r\nx-api-key: nope\r\ncontent-length: 2\r\n\r\n{}",
        )
        .await
        .expect("send");
    let refused = within("the 401", connection.response()).await.expect("401");
    assert_eq!(refused.status, 401);
    assert!(refused.closes());
    assert!(within("the close", connection.closed_by_server()).await);

    // Without a body a 401 keeps the connection.
    let mut connection = RawConnection::open(addr(&s)).await;
    for _ in 0..3 {
        connection
            .send(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .expect("send");
        let refused = within("the 401", connection.response()).await.expect("401");
        assert_eq!(refused.status, 401);
        assert!(!refused.closes());
    }
    s.stop().await;
}
