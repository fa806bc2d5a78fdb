//! What the SQL stores share: how namespaces are stored, and decoding an item row.

use sqlx::{ColumnIndex, Decode, Row, Type};

use super::Item;
use crate::checkpoint::sql::backend_error;
use crate::error::Error;

/// The separator of namespace parts in the `namespace` column.
pub(crate) const SEPARATOR: char = '\u{1f}';
/// The character after [`SEPARATOR`]: `prefix + SEPARATOR <= ns < prefix + AFTER_SEPARATOR`
/// holds exactly for the namespaces below `prefix`.
pub(crate) const AFTER_SEPARATOR: char = '\u{20}';

pub(crate) fn join(namespace: &[&str]) -> String {
    namespace.join("\u{1f}")
}

pub(crate) fn split(namespace: &str) -> Vec<String> {
    if namespace.is_empty() {
        Vec::new()
    } else {
        namespace.split(SEPARATOR).map(str::to_owned).collect()
    }
}

/// The bounds of the namespaces that start with `prefix`: (`exact`, `low`, `high`). An
/// empty prefix matches every namespace (`exact` is then empty).
pub(crate) fn prefix_bounds(prefix: &[&str]) -> (String, String, String) {
    let exact = join(prefix);
    let low = format!("{exact}{SEPARATOR}");
    let high = format!("{exact}{AFTER_SEPARATOR}");
    (exact, low, high)
}

/// Reads one item row; a row that does not decode is an [`Error::Backend`] naming the item.
pub(crate) fn decode_item<'r, R>(backend: &'static str, row: &'r R) -> Result<Item, Error>
where
    R: Row,
    &'static str: ColumnIndex<R>,
    String: Decode<'r, R::Database> + Type<R::Database>,
    i64: Decode<'r, R::Database> + Type<R::Database>,
{
    let error = |doing: &str, e: sqlx::Error| backend_error(backend, doing, e);
    let namespace: String = row
        .try_get("namespace")
        .map_err(|e| error("reading an item", e))?;
    let key: String = row
        .try_get("key")
        .map_err(|e| error("reading an item", e))?;
    let unreadable = |what: String| Error::Backend {
        backend,
        message: format!(
            "item {key:?} in namespace {:?} cannot be read: {what}",
            split(&namespace)
        ),
    };
    let value: String = row
        .try_get("value")
        .map_err(|e| unreadable(e.to_string()))?;
    Ok(Item {
        value: serde_json::from_str(&value)
            .map_err(|e| unreadable(format!("value is not JSON: {e}")))?,
        created_at_ms: row
            .try_get("created_at_ms")
            .map_err(|e| unreadable(e.to_string()))?,
        updated_at_ms: row
            .try_get("updated_at_ms")
            .map_err(|e| unreadable(e.to_string()))?,
        namespace: split(&namespace),
        key,
    })
}
