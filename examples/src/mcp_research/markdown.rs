//! The research report as HTML: markdown rendered on the server by `pulldown-cmark`
//! (CommonMark plus tables and strikethrough), safe to put in the page as it is.
//!
//! The report comes from a model that read outside documents, so it is treated as hostile:
//!
//! - raw HTML in it (block or inline: `<script>`, `<img onerror=..>`) is shown as text;
//! - a link or image keeps its URL only when that is `http:`, `https:`, `mailto:` or
//!   relative (no scheme), judged as a browser would read it (leading and trailing control
//!   characters and spaces removed, tabs and newlines inside dropped); any other link is
//!   rendered as its text alone and any other image as its alt text;
//! - the parser is linear in the input (a line of thousands of backticks included), and
//!   [`MAX_MARKDOWN_BYTES`] bounds what `POST /research/render` accepts.
//!
//! ```
//! use graphkit_examples::mcp_research::markdown::render_markdown;
//!
//! let html = render_markdown("**bold** <script>alert(1)</script> [x](javascript:alert(1))");
//! assert_eq!(
//!     html,
//!     "<p><strong>bold</strong> &lt;script&gt;alert(1)&lt;/script&gt; x</p>\n"
//! );
//! ```

use pulldown_cmark::{CowStr, Event, LinkType, Options, Parser, Tag, TagEnd, html};

/// The largest report `POST /research/render` renders (a report is a few KB).
pub const MAX_MARKDOWN_BYTES: usize = 1024 * 1024;

/// `markdown` as an HTML fragment with nothing in it that runs: see the
/// [module docs](self).
pub fn render_markdown(markdown: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH;
    // Which open links and images were dropped, so their ends are dropped too.
    let mut dropped: Vec<bool> = Vec::new();
    let events = Parser::new_ext(markdown, options).filter_map(|event| match event {
        Event::Html(raw) | Event::InlineHtml(raw) => Some(Event::Text(raw)),
        Event::Start(Tag::Link {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = link_type == LinkType::Email || is_safe_url(&dest_url);
            dropped.push(!keep);
            keep.then_some(Event::Start(Tag::Link {
                link_type,
                dest_url: trimmed(dest_url),
                title,
                id,
            }))
        }
        Event::Start(Tag::Image {
            link_type,
            dest_url,
            title,
            id,
        }) => {
            let keep = is_safe_url(&dest_url);
            dropped.push(!keep);
            keep.then_some(Event::Start(Tag::Image {
                link_type,
                dest_url: trimmed(dest_url),
                title,
                id,
            }))
        }
        Event::End(end @ (TagEnd::Link | TagEnd::Image)) => {
            let was_dropped = dropped.pop().unwrap_or(false);
            (!was_dropped).then_some(Event::End(end))
        }
        other => Some(other),
    });
    let mut out = String::with_capacity(markdown.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

/// Whether a browser would load `url` as `http:`, `https:` or `mailto:`, or relative to the
/// page. The URL is read as the WHATWG URL parser reads it: C0 controls and spaces around it
/// are ignored, and tabs and newlines anywhere, so `"\u{1}java\tscript:"` is `javascript:`.
fn is_safe_url(url: &str) -> bool {
    let seen: String = url
        .trim_matches(|c: char| c <= ' ')
        .chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\r'))
        .collect();
    if seen.chars().any(char::is_control) {
        return false;
    }
    // A scheme is what comes before the first `:`, unless a `/`, `?` or `#` comes first.
    let scheme_end = seen.find([':', '/', '?', '#']);
    match scheme_end {
        Some(end) if seen[end..].starts_with(':') => {
            let scheme = &seen[..end];
            ["http", "https", "mailto"]
                .iter()
                .any(|safe| scheme.eq_ignore_ascii_case(safe))
        }
        _ => true,
    }
}

/// The URL without the spaces and controls around it (what a browser would have used).
fn trimmed(url: CowStr<'_>) -> CowStr<'_> {
    let clean = url.trim_matches(|c: char| c <= ' ');
    if clean.len() == url.len() {
        url
    } else {
        CowStr::from(clean.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hostile inputs of issue 27, shared with the browser test's expectations.
    #[test]
    fn raw_html_and_script_urls_come_out_inert() {
        let html = render_markdown(
            "<script>document.body.dataset.pwned = 1</script>\n\n\
             text <img src=x onerror=\"document.body.dataset.pwned=1\"> more\n\n\
             <a href=\"javascript:alert(1)\" onclick=\"alert(1)\">raw</a>\n\n\
             [a](javascript:alert(1)) [b](\u{1}javascript:alert(1)) [c]( JaVaScRiPt:alert(1))\n\n\
             [d](java\tscript:alert(1)) [e](data:text/html,hi) [f](vbscript:x)\n\n\
             ![g](javascript:alert(1)) ![h](\u{1}javascript:alert(1))",
        );
        assert!(!html.contains("<script"), "{html}");
        assert!(!html.contains("<img"), "{html}");
        assert!(!html.contains("<a"), "{html}");
        assert!(html.contains("&lt;script&gt;"), "{html}");
        assert!(
            html.contains("&lt;img src=x onerror=\"document"),
            "the tag stays as text: {html}"
        );
        // Dropped links keep their text.
        assert!(html.contains("<p>a ") && html.contains(" f</p>"), "{html}");
    }

    #[test]
    fn safe_links_and_images_keep_their_urls() {
        let html = render_markdown(
            "[web](https://events.example/e/17) [mail](mailto:a@b.example) [rel](/research/tools) \
             [frag](#top) <https://auto.example/x> <someone@mail.example>\n\n![chart](chart.png)",
        );
        for href in [
            r#"<a href="https://events.example/e/17">web</a>"#,
            r#"<a href="mailto:a@b.example">mail</a>"#,
            r#"<a href="/research/tools">rel</a>"#,
            r##"<a href="#top">frag</a>"##,
            r#"<a href="https://auto.example/x">"#,
            r#"<a href="mailto:someone@mail.example">"#,
            r#"<img src="chart.png" alt="chart" />"#,
        ] {
            assert!(html.contains(href), "{href} in {html}");
        }
    }

    #[test]
    fn a_dropped_link_keeps_its_text_and_the_links_around_it() {
        let html = render_markdown("[**bad**](javascript:x) then [good](https://ok.example)");
        assert_eq!(
            html,
            "<p><strong>bad</strong> then <a href=\"https://ok.example\">good</a></p>\n"
        );
    }

    #[test]
    fn a_line_of_4000_backticks_renders_as_text() {
        let ticks = "`".repeat(4000);
        // Inside a paragraph: no closing run of the same length, so the ticks are text and
        // the markdown after them still renders.
        let html = render_markdown(&format!("before {ticks} after **bold** `code`"));
        assert!(html.contains(&ticks), "the ticks are kept as text");
        assert!(
            html.contains("<strong>bold</strong> <code>code</code>"),
            "{}",
            &html[4000..]
        );
        // On a line of its own it opens a code fence, which runs to the end.
        let html = render_markdown(&format!("intro\n\n{ticks}\n<script>x</script>\n"));
        assert!(
            html.starts_with("<p>intro</p>\n<pre><code>&lt;script&gt;"),
            "{}",
            &html[..80]
        );
        // Many such runs in one report: each pairs with the next into a code span.
        let many = render_markdown(&format!("a {ticks} b\n").repeat(100));
        assert_eq!(many.matches("<code>").count(), 50);
    }

    #[test]
    fn tables_lists_emphasis_and_code_render() {
        let html = render_markdown(
            "## Report\n\n| Country | Events |\n|---|---:|\n| France | 120 |\n\n\
             - a\n  - b\n\n3. three\n\n~~old~~ _i_ [u](https://e.org/a_b_c)\n\n\
             ```\n<b>x</b> **no**\n```",
        );
        for part in [
            "<h2>Report</h2>",
            "<table>",
            "<td style=\"text-align: right\">120</td>",
            "<ul>\n<li>a\n<ul>\n<li>b</li>",
            "<ol start=\"3\">",
            "<del>old</del>",
            "<em>i</em>",
            r#"<a href="https://e.org/a_b_c">u</a>"#,
            "<pre><code>&lt;b&gt;x&lt;/b&gt; **no**\n</code></pre>",
        ] {
            assert!(html.contains(part), "{part} in {html}");
        }
    }

    #[test]
    fn urls_are_judged_as_a_browser_reads_them() {
        for safe in [
            "https://a.example",
            "HTTP://a",
            "mailto:x@y",
            "/p",
            "p?q=a:b",
            "#f:x",
            "",
        ] {
            assert!(is_safe_url(safe), "{safe:?}");
        }
        for bad in [
            "javascript:alert(1)",
            "\u{1}javascript:alert(1)",
            " javascript:x",
            "java\nscript:x",
            "jav\tascript:x",
            "data:text/html,x",
            "file:///etc/passwd",
            "https://a\u{7f}b",
        ] {
            assert!(!is_safe_url(bad), "{bad:?}");
        }
    }
}
