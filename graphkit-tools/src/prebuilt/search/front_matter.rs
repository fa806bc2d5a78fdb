//! Front matter of corpus documents: an optional `---` block of `key: value` lines at
//! the top of a file that says where the document lives on the web.

/// What a document's front matter says.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct FrontMatter {
    /// `url:` (or `source:`): the document's address on the web.
    pub(super) url: Option<String>,
    /// `title:`.
    pub(super) title: Option<String>,
}

/// Splits `raw` into its front matter and the rest. A file without a front matter block
/// (or with an unclosed one) is all body. Unknown keys are ignored.
///
/// ```text
/// ---
/// url: https://wikipedia.example/wiki/Henry_Miller
/// title: Henry Miller
/// ---
/// # Henry Miller
/// ...
/// ```
pub(super) fn split(raw: &str) -> (FrontMatter, &str) {
    let text = raw.strip_prefix('\u{feff}').unwrap_or(raw);
    let Some(after_open) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (FrontMatter::default(), raw);
    };
    let mut front = FrontMatter::default();
    let mut offset = 0;
    for line in after_open.split_inclusive('\n') {
        offset += line.len();
        let line = line.trim_end();
        if line == "---" || line == "..." {
            return (front, &after_open[offset..]);
        }
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim().trim_matches(|c| c == '"' || c == '\'').trim();
        if value.is_empty() {
            continue;
        }
        match key.trim().to_ascii_lowercase().as_str() {
            "url" | "source" => front.url = Some(value.to_owned()),
            "title" => front.title = Some(value.to_owned()),
            _ => {}
        }
    }
    (FrontMatter::default(), raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn front_matter_gives_the_url_and_title_and_is_cut_from_the_body() {
        let (front, body) = split(
            "---\nsource: \"https://a.example/x\"\ntitle: A page\nlang: en\n---\n# Heading\ntext",
        );
        assert_eq!(front.url.as_deref(), Some("https://a.example/x"));
        assert_eq!(front.title.as_deref(), Some("A page"));
        assert_eq!(body, "# Heading\ntext");
    }

    #[test]
    fn a_file_without_a_closed_block_is_all_body() {
        for raw in ["# Plain\ntext", "---\nurl: https://a.example\nno end"] {
            let (front, body) = split(raw);
            assert_eq!(front, FrontMatter::default());
            assert_eq!(body, raw);
        }
    }
}
