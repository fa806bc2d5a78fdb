//! Approximate token counting and trimming a history to a budget.

use super::Message;

/// Overhead per message for role markers and separators, as chat templates add it.
const PER_MESSAGE_OVERHEAD: usize = 4;

/// An approximate token count for one message: about four characters per token plus a
/// small per-message overhead; tool calls count by their JSON length.
///
/// This is a budget heuristic, not a tokenizer: it overestimates plain English a little
/// and is within a factor of two for code and most languages.
pub fn approximate_tokens(message: &Message) -> usize {
    let mut chars = message.text().chars().count();
    for call in message.tool_calls() {
        chars += call.name.len() + call.arguments.to_string().len();
    }
    chars.div_ceil(4) + PER_MESSAGE_OVERHEAD
}

/// The approximate token count of a whole history (see [`approximate_tokens`]).
pub fn count_tokens(messages: &[Message]) -> usize {
    messages.iter().map(approximate_tokens).sum()
}

/// Which end of the history [`trim_messages`] keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TrimStrategy {
    /// Keep the newest messages (and the leading system message). The kept history never
    /// starts with tool results whose call was cut away.
    #[default]
    Last,
    /// Keep the oldest messages.
    First,
}

/// The longest part of `messages` that fits in `max_tokens` (by `counter`), cut at the end
/// chosen by `strategy`.
///
/// With [`TrimStrategy::Last`], a system message at the start is always kept when it fits,
/// and tool results at the start of the kept part whose assistant call was dropped are
/// dropped too, since providers reject them.
///
/// ```
/// use graphkit_llm::{Message, TrimStrategy, approximate_tokens, trim_messages};
///
/// let history = vec![
///     Message::system("You are terse."),
///     Message::user("a long question ".repeat(20)),
///     Message::assistant("a long answer ".repeat(20)),
///     Message::user("and now?"),
/// ];
/// let kept = trim_messages(&history, 30, TrimStrategy::Last, approximate_tokens);
/// assert_eq!(kept.len(), 2);
/// assert_eq!(kept[0].role(), "system");
/// assert_eq!(kept[1].text(), "and now?");
/// ```
pub fn trim_messages(
    messages: &[Message],
    max_tokens: usize,
    strategy: TrimStrategy,
    counter: impl Fn(&Message) -> usize,
) -> Vec<Message> {
    match strategy {
        TrimStrategy::First => {
            let mut used = 0;
            messages
                .iter()
                .take_while(|m| {
                    used += counter(m);
                    used <= max_tokens
                })
                .cloned()
                .collect()
        }
        TrimStrategy::Last => {
            let (system, rest) = match messages.split_first() {
                Some((first @ Message::System(_), rest)) if counter(first) <= max_tokens => {
                    (Some(first), rest)
                }
                _ => (None, messages),
            };
            let mut used = system.map_or(0, &counter);
            let mut start = rest.len();
            while start > 0 {
                let cost = counter(&rest[start - 1]);
                if used + cost > max_tokens {
                    break;
                }
                used += cost;
                start -= 1;
            }
            while start < rest.len() && matches!(rest[start], Message::Tool(_)) {
                start += 1;
            }
            system.into_iter().chain(&rest[start..]).cloned().collect()
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{AssistantMessage, ToolCall};

    fn one_each(_: &Message) -> usize {
        1
    }

    #[test]
    fn approximate_count_grows_with_text_and_tool_calls() {
        let short = Message::user("abcd");
        assert_eq!(approximate_tokens(&short), 1 + PER_MESSAGE_OVERHEAD);
        let call =
            AssistantMessage::with_tool_calls("", vec![ToolCall::new("search", json!({"q": "x"}))]);
        assert!(approximate_tokens(&call.into()) > PER_MESSAGE_OVERHEAD);
        assert_eq!(
            count_tokens(&[short.clone(), short]),
            2 * (1 + PER_MESSAGE_OVERHEAD)
        );
    }

    #[test]
    fn keep_last_drops_orphaned_tool_results_and_keeps_system() {
        let call = ToolCall::new("t", json!({}));
        let history = vec![
            Message::system("s"),
            Message::user("q"),
            AssistantMessage::with_tool_calls("", vec![call.clone()]).into(),
            Message::tool_result(&call.id, "r"),
            Message::assistant("a"),
            Message::user("q2"),
        ];
        // budget 4 = system + the last 3 (tool, assistant, user); the tool result is orphaned
        let kept = trim_messages(&history, 4, TrimStrategy::Last, one_each);
        let roles: Vec<_> = kept.iter().map(Message::role).collect();
        assert_eq!(roles, ["system", "assistant", "user"]);
    }

    #[test]
    fn keep_first_takes_a_prefix() {
        let history = vec![Message::user("1"), Message::user("2"), Message::user("3")];
        let kept = trim_messages(&history, 2, TrimStrategy::First, one_each);
        let texts: Vec<_> = kept.iter().map(Message::text).collect();
        assert_eq!(texts, ["1", "2"]);
        assert!(trim_messages(&history, 0, TrimStrategy::Last, one_each).is_empty());
    }
}
