//! Ready-made checks for [`StructuredModel::validate`](crate::StructuredModel::validate).
//!
//! Each takes the name of the field it checks (so the message tells the model which one)
//! and returns `Err(message)` with a message written for the model: what was found and
//! what is wanted.
//!
//! ```
//! use graphkit_llm::checks::{non_empty, required_headings, word_range};
//!
//! assert!(word_range("summary", "one two three", 2..=5).is_ok());
//! assert_eq!(
//!     word_range("summary", "one two three", 5..=10).unwrap_err(),
//!     "`summary` has 3 words; it must have between 5 and 10 words"
//! );
//! assert!(required_headings("body", "# Findings\n...\n## Sources\n...", &["Findings", "Sources"]).is_ok());
//! assert!(non_empty("sources", &Vec::<String>::new()).is_err());
//! ```

use std::ops::{Bound, RangeBounds};

use crate::schema::counted;

/// The result of a check: `Err` holds the message shown to the model.
pub type Check = Result<(), String>;

/// The number of words in `text` (runs of non-whitespace).
pub fn word_count(text: &str) -> usize {
    text.split_whitespace().count()
}

/// `text` (the field `field`) has a number of words within `range` (`150..=300`, `..=50`,
/// `10..`).
pub fn word_range(field: &str, text: &str, range: impl RangeBounds<usize>) -> Check {
    let count = word_count(text);
    if range.contains(&count) {
        Ok(())
    } else {
        Err(format!(
            "`{field}` has {}; it must have {}",
            counted(count, "word", "words"),
            describe_range(&range, "word", "words")
        ))
    }
}

/// The list `items` (the field `field`) has a number of items within `range`.
pub fn count_range<T>(field: &str, items: &[T], range: impl RangeBounds<usize>) -> Check {
    let count = items.len();
    if range.contains(&count) {
        Ok(())
    } else {
        Err(format!(
            "`{field}` has {}; it must have {}",
            counted(count, "item", "items"),
            describe_range(&range, "item", "items")
        ))
    }
}

/// The list `items` (the field `field`) is not empty.
pub fn non_empty<T>(field: &str, items: &[T]) -> Check {
    if items.is_empty() {
        Err(format!(
            "`{field}` is empty; it must have at least one item"
        ))
    } else {
        Ok(())
    }
}

/// The text `text` (the field `field`) has at least one non-whitespace character.
pub fn non_blank(field: &str, text: &str) -> Check {
    if text.trim().is_empty() {
        Err(format!("`{field}` is empty; write it out"))
    } else {
        Ok(())
    }
}

/// The Markdown `markdown` (the field `field`) has a heading for each of `headings`, at
/// any level (`#` to `######`), compared without case and surrounding spaces or closing
/// `#`s. The message lists the missing headings and the ones found.
pub fn required_headings(field: &str, markdown: &str, headings: &[&str]) -> Check {
    let found = markdown_headings(markdown);
    let missing: Vec<&str> = headings
        .iter()
        .copied()
        .filter(|wanted| !found.iter().any(|h| h.eq_ignore_ascii_case(wanted.trim())))
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    let list = |items: &[&str]| {
        items
            .iter()
            .map(|h| format!("\"{h}\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let found: Vec<&str> = found.iter().map(String::as_str).collect();
    Err(format!(
        "`{field}` lacks the Markdown heading(s) {}; {}",
        list(&missing),
        if found.is_empty() {
            "it has no headings (write them as `## Heading` lines)".to_owned()
        } else {
            format!("its headings are {}", list(&found))
        }
    ))
}

/// The ATX headings (`# Title`) of a Markdown text, outside fenced code blocks.
pub fn markdown_headings(markdown: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut headings = Vec::new();
    for line in markdown.lines() {
        let line = line.trim_start();
        if line.starts_with("```") || line.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let level = line.chars().take_while(|&c| c == '#').count();
        let rest = &line[level..];
        if (1..=6).contains(&level) && (rest.is_empty() || rest.starts_with([' ', '\t'])) {
            headings.push(rest.trim().trim_end_matches('#').trim().to_owned());
        }
    }
    headings
}

/// `between 2 and 5 words`, `at least 1 word`, `exactly 3 words`.
fn describe_range(range: &impl RangeBounds<usize>, one: &str, many: &str) -> String {
    let low = match range.start_bound() {
        Bound::Included(&n) => Some(n),
        Bound::Excluded(&n) => Some(n + 1),
        Bound::Unbounded => None,
    };
    let high = match range.end_bound() {
        Bound::Included(&n) => Some(n),
        Bound::Excluded(&n) => Some(n.saturating_sub(1)),
        Bound::Unbounded => None,
    };
    match (low, high) {
        (Some(low), Some(high)) if low == high => format!("exactly {}", counted(low, one, many)),
        (Some(low), Some(high)) => format!("between {low} and {high} {many}"),
        (Some(low), None) => format!("at least {}", counted(low, one, many)),
        (None, Some(high)) => format!("at most {}", counted(high, one, many)),
        (None, None) => format!("any number of {many}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn word_range_names_the_field_the_count_and_the_range() {
        assert_eq!(word_range("s", "a b c", 1..=3), Ok(()));
        assert_eq!(
            word_range("summary", "a b", 3..).unwrap_err(),
            "`summary` has 2 words; it must have at least 3 words"
        );
        assert_eq!(
            word_range("title", "a b c", ..3).unwrap_err(),
            "`title` has 3 words; it must have at most 2 words"
        );
        assert_eq!(
            word_range("t", "", 1..=1).unwrap_err(),
            "`t` has 0 words; it must have exactly 1 word"
        );
    }

    #[test]
    fn headings_match_at_any_level_without_case_and_ignore_code_blocks() {
        let doc = "# Report\n\n## findings ##\ntext\n```\n# Sources\n```\n###Not a heading\n";
        assert_eq!(markdown_headings(doc), ["Report", "findings"]);
        assert_eq!(required_headings("body", doc, &["Findings"]), Ok(()));
        assert_eq!(
            required_headings("body", doc, &["Findings", "Sources", "Limits"]).unwrap_err(),
            "`body` lacks the Markdown heading(s) \"Sources\", \"Limits\"; its headings are \"Report\", \"findings\""
        );
        assert!(
            required_headings("body", "plain", &["A"])
                .unwrap_err()
                .contains("it has no headings")
        );
    }

    #[test]
    fn list_checks_count_items() {
        assert_eq!(non_empty("xs", &[1]), Ok(()));
        assert_eq!(
            non_empty::<u8>("sources", &[]).unwrap_err(),
            "`sources` is empty; it must have at least one item"
        );
        assert_eq!(
            count_range("xs", &[1, 2, 3, 4], 1..=3).unwrap_err(),
            "`xs` has 4 items; it must have between 1 and 3 items"
        );
        assert_eq!(
            non_blank("x", "  ").unwrap_err(),
            "`x` is empty; write it out"
        );
    }
}
