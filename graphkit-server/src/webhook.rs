//! Webhooks: when a run created with a `webhook` ends, the run (its fields, final status,
//! state values and error) is POSTed to that URL as JSON.
//!
//! The call is made off the run's path: a task of its own, spawned once the run's end is
//! stored, so neither the run nor the worker's next claim waits for it. It is retried with
//! doubling backoff a bounded number of times ([`WebhookSettings`]) and then given up
//! (logged). Deliveries still waiting when the process stops are lost: a webhook is a
//! notification, the run's record stays the truth.
//!
//! Every URL goes through graphkit-tools' address guard (the one of the URL-fetch tool):
//! `http`/`https` only, and a host that resolves to a loopback, private, link-local or
//! otherwise non-public address is refused, at run creation (a 422) and again at delivery
//! (DNS may have changed), where the connection is pinned to the checked address.
//! [`WebhookSettings::allow_private`] lifts the address check (tests, intranets).

use std::time::Duration;

use graphkit_tools::ToolError;
use graphkit_tools::prebuilt::fetch::checked_address;
use reqwest::Url;
use serde_json::Value;

use crate::error::{Result, ServerError};

/// How webhooks are called.
#[derive(Debug, Clone)]
pub struct WebhookSettings {
    /// Allow webhook URLs on loopback, private and other non-public addresses. Off by
    /// default: a client could otherwise make the server call services on its own network.
    pub allow_private: bool,
    /// Calls per webhook before it is given up (at least 1).
    pub attempts: u32,
    /// The wait before the first retry; it doubles for each further one.
    pub backoff: Duration,
    /// The time limit of one call.
    pub timeout: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        Self {
            allow_private: false,
            attempts: 4,
            backoff: Duration::from_secs(1),
            timeout: Duration::from_secs(10),
        }
    }
}

/// Checks a run request's `webhook` (`field` names it in the 422): a string, an `http`
/// or `https` URL, on an address the guard allows (a host name that does not resolve yet
/// passes; it is checked again at delivery).
pub(crate) async fn check(
    field: &str,
    value: &Value,
    settings: &WebhookSettings,
) -> Result<String> {
    let Value::String(url) = value else {
        return Err(ServerError::Validation(format!(
            "`{field}` must be a URL string, not {value}"
        )));
    };
    match guarded(url, settings.allow_private).await {
        // A name that does not resolve now is not refused: it is checked again (and the
        // call retried) when the run ends.
        Ok(_) | Err(ToolError::Request { .. }) => Ok(url.clone()),
        Err(refused) => Err(ServerError::Validation(format!(
            "`{field}` is refused: {refused}"
        ))),
    }
}

/// The parsed URL and the address to pin its connection to, if the guard allows it.
async fn guarded(
    url: &str,
    allow_private: bool,
) -> std::result::Result<(Url, Option<std::net::SocketAddr>), ToolError> {
    let parsed = Url::parse(url).map_err(|e| ToolError::InvalidUrl {
        url: url.to_owned(),
        reason: e.to_string(),
    })?;
    let pinned = checked_address(&parsed, allow_private).await?;
    Ok((parsed, pinned))
}

/// Sends `payload` to `url` on a task of its own, retrying as `settings` say.
pub(crate) fn deliver(url: String, payload: Value, settings: WebhookSettings) {
    tokio::spawn(async move {
        let mut wait = settings.backoff;
        for attempt in 1..=settings.attempts.max(1) {
            match call(&url, &payload, &settings).await {
                Ok(()) => return,
                Err(Refusal::Final(why)) => {
                    tracing::warn!(%url, %why, "webhook refused; not retried");
                    return;
                }
                Err(Refusal::Retry(why)) if attempt < settings.attempts => {
                    tracing::info!(%url, %why, attempt, "webhook failed; retrying");
                    tokio::time::sleep(wait).await;
                    wait = wait.saturating_mul(2);
                }
                Err(Refusal::Retry(why)) => {
                    tracing::warn!(%url, %why, attempt, "webhook failed; given up");
                }
            }
        }
    });
}

enum Refusal {
    /// Worth another try (no answer, 408, 429, 5xx).
    Retry(String),
    /// Not (the guard refused the URL; another 4xx).
    Final(String),
}

async fn call(url: &str, payload: &Value, settings: &WebhookSettings) -> Result<(), Refusal> {
    let (parsed, pinned) = guarded(url, settings.allow_private)
        .await
        .map_err(|e| match e {
            ToolError::Request { message, .. } => Refusal::Retry(message),
            other => Refusal::Final(other.to_string()),
        })?;
    let mut builder = graphkit_llm::http::client_builder()
        .timeout(settings.timeout)
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .user_agent(concat!("graphkit-server/", env!("CARGO_PKG_VERSION")));
    if let (Some(addr), Some(host)) = (pinned, parsed.host_str()) {
        builder = builder.resolve(host, addr);
    }
    let client = builder
        .build()
        .map_err(|e| Refusal::Final(format!("cannot build an HTTP client: {e}")))?;
    let response = client
        .post(parsed)
        .json(payload)
        .send()
        .await
        .map_err(|e| Refusal::Retry(e.to_string()))?;
    let status = response.status();
    if status.is_success() {
        Ok(())
    } else if status.is_server_error() || status.as_u16() == 408 || status.as_u16() == 429 {
        Err(Refusal::Retry(format!("answered {status}")))
    } else {
        Err(Refusal::Final(format!("answered {status}")))
    }
}
