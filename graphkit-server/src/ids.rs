//! Ids: uuid7 for new threads and runs, uuid5 for system assistants (the reference scheme),
//! and parsing with the reference server's error messages.

use uuid::Uuid;

use crate::error::ServerError;

/// The namespace of system assistant ids (the reference server's; one digit off
/// `uuid.NAMESPACE_URL`).
pub const ASSISTANT_NAMESPACE: Uuid = Uuid::from_u128(0x6ba7b821_9dad_11d1_80b4_00c04fd430c8);

/// The id of the system assistant of `graph_id`: `uuid5(ASSISTANT_NAMESPACE, graph_id)`.
///
/// ```
/// use graphkit_server::ids::system_assistant_id;
/// assert_eq!(system_assistant_id("agent").to_string(), "fe096781-5601-53d2-b2f6-0d3403f7e9ca");
/// ```
pub fn system_assistant_id(graph_id: &str) -> Uuid {
    Uuid::new_v5(&ASSISTANT_NAMESPACE, graph_id.as_bytes())
}

/// A new time-ordered id (uuid7).
pub fn new_id() -> Uuid {
    Uuid::now_v7()
}

/// Parses a path or body id; `what` names it in the 422 message ("thread", "run").
pub fn parse_uuid(what: &str, s: &str) -> Result<Uuid, ServerError> {
    Uuid::try_parse(s)
        .map_err(|_| ServerError::Validation(format!("Invalid {what} ID: must be a UUID")))
}
