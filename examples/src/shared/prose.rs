//! Reading prose the way every workflow's checks and offline stand-ins need it: whether a
//! text names a subject in full (not by a surname shared with someone else), and the
//! sentences of a page (split so that "Dr.", "Inc.", initials and decimals do not end one).

/// `text` lowercased with every run of non-alphanumeric characters (`_`, `-`, `'`,
/// punctuation, line breaks) turned into one space, padded with a space on each side, so
/// that a phrase can be matched on word boundaries with `contains(" phrase ")`.
fn words_of(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push(' ');
    for c in text.chars() {
        if c.is_alphanumeric() {
            out.extend(c.to_lowercase());
        } else if !out.ends_with(' ') {
            out.push(' ');
        }
    }
    if !out.ends_with(' ') {
        out.push(' ');
    }
    out
}

/// Whether `text` names `name` in full, on word boundaries and ignoring case and
/// punctuation: `names_in_full("Halina_Vosk (1901-1977)", "Halina Vosk")` is true,
/// `names_in_full("Odile Marchetti", "Ada Marchetti")` is false (a shared surname is not
/// the same person), and so is `names_in_full("Vasquelson", "Vasquel")`. An empty name
/// names nothing.
pub fn names_in_full(text: &str, name: &str) -> bool {
    let name = words_of(name);
    name.trim().len() > 1 && words_of(text).contains(&name)
}

/// A text in the form phrases are matched against it by [`WordForm::contains`]: lower
/// case, every run of white space and punctuation one space. Made once per page, so a
/// page checked for many passages is normalised once.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WordForm(String);

impl WordForm {
    /// The word form of `text`.
    pub fn of(text: &str) -> Self {
        Self(words_of(text))
    }

    /// Whether `phrase` occurs in the text on word boundaries, ignoring case, white space
    /// and punctuation: `"- **Founded year:** 2016"` contains `"founded year: 2016"`, and
    /// `"in 2016."` contains `"2016"` but `"20163"` does not. A phrase without a letter or
    /// digit occurs nowhere.
    pub fn contains(&self, phrase: &str) -> bool {
        let phrase = words_of(phrase);
        !phrase.trim().is_empty() && self.0.contains(&phrase)
    }

    /// How many words the text has.
    pub fn word_count(&self) -> usize {
        self.0.split_whitespace().count()
    }
}

/// Abbreviations after which a full stop never ends a sentence (titles and the like come
/// before a name or a number).
const ABBREVIATIONS: &[&str] = &[
    "dr", "mr", "mrs", "ms", "prof", "st", "no", "vs", "e.g", "i.e", "approx", "gen", "col", "sgt",
    "rev", "mt", "ft",
];

/// Abbreviations that end a name or a phrase (`Kestrel Labs Inc.`): their full stop ends
/// the sentence only when the next word is capitalised (`Inc. The`, not `Inc. in 2019`).
const TRAILING_ABBREVIATIONS: &[&str] = &["inc", "ltd", "co", "corp", "jr", "sr", "etc"];

/// Whether the `.` at byte `at` of `text` ends a sentence: it is followed by white space
/// and the word before it is neither a title-like abbreviation nor a single letter (an
/// initial), nor a trailing one (`Inc.`) followed by a lowercase word.
/// A `.` inside a number (`2.5`) is never followed by a space, so it never ends one.
fn ends_sentence(text: &str, at: usize) -> bool {
    let after = &text[at + 1..];
    if !(after.is_empty() || after.starts_with(char::is_whitespace)) {
        return false;
    }
    let word = text[..at]
        .rsplit(|c: char| c.is_whitespace() || c == '(')
        .next()
        .unwrap_or("")
        .to_lowercase();
    let single_letter = word.chars().count() == 1 && word.chars().all(char::is_alphabetic);
    if single_letter || ABBREVIATIONS.contains(&word.as_str()) {
        return false;
    }
    !TRAILING_ABBREVIATIONS.contains(&word.as_str())
        || after.trim_start().starts_with(char::is_uppercase)
}

/// The sentences of a page: paragraphs with their lines joined (list items, headings and
/// table rows stay one per line), split after `!`, `?` or a `.` that ends a sentence (see
/// [`ends_sentence`]).
pub fn sentences(content: &str) -> Vec<String> {
    let mut out = Vec::new();
    for paragraph in content.split("\n\n") {
        let mut joined = String::new();
        for line in paragraph.lines().map(str::trim).filter(|l| !l.is_empty()) {
            if line.starts_with(['-', '*', '|', '#']) {
                out.push(
                    line.trim_start_matches(['-', '*', '|', '#', ' '])
                        .to_owned(),
                );
            } else {
                if !joined.is_empty() {
                    joined.push(' ');
                }
                joined.push_str(line);
            }
        }
        let mut start = 0;
        for (i, c) in joined.char_indices() {
            let ends = match c {
                '!' | '?' => joined[i + 1..].is_empty() || joined[i + 1..].starts_with(' '),
                '.' => ends_sentence(&joined, i),
                _ => false,
            };
            if ends && i + 1 > start {
                let s = joined[start..=i].trim();
                if !s.is_empty() {
                    out.push(s.to_owned());
                }
                start = i + 1;
            }
        }
        let rest = joined[start..].trim();
        if !rest.is_empty() {
            out.push(rest.to_owned());
        }
    }
    out
}

/// `text` with every run of white space (line breaks included) turned into one space, and
/// trimmed: the form in which a passage is quoted from a page and compared with it.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Whether `passage` is quoted from `text`: it occurs in it once runs of white space are
/// counted as one space (a sentence spanning a line break of the page is still a quote).
/// An empty passage quotes nothing.
pub fn quotes(text: &str, passage: &str) -> bool {
    let passage = collapse_whitespace(passage);
    !passage.is_empty() && collapse_whitespace(text).contains(&passage)
}

/// The words of `text` that carry meaning for matching a statement to a sentence: four
/// letters or more, or a number.
fn content_words(text: &str) -> Vec<String> {
    words_of(text)
        .split_whitespace()
        .filter(|w| w.len() >= 4 || w.chars().all(|c| c.is_ascii_digit()))
        .map(str::to_owned)
        .collect()
}

/// The sentence of `text` that a statement was taken from: the one sharing the most of
/// the statement's content words (words of four letters or more, and numbers), as long as
/// it shares at least half of them (at most three needed) and every number of the
/// statement. `None` when no sentence of `text` says it, so a statement with no passage
/// is never given someone else's. The sentence is returned as [`sentences`] gives it
/// (white space collapsed), so [`quotes`] holds for it.
pub fn supporting_sentence(text: &str, statement: &str) -> Option<String> {
    let wanted = content_words(statement);
    if wanted.is_empty() {
        return None;
    }
    let numbers: Vec<&String> = wanted
        .iter()
        .filter(|w| w.chars().all(|c| c.is_ascii_digit()))
        .collect();
    let needed = wanted.len().div_ceil(2).min(3);
    sentences(text)
        .into_iter()
        .filter_map(|sentence| {
            let have = content_words(&sentence);
            if !numbers.iter().all(|n| have.contains(n)) {
                return None;
            }
            let shared = wanted.iter().filter(|w| have.contains(w)).count();
            (shared >= needed).then_some((shared, sentence))
        })
        // The most words shared; the first such sentence on a tie.
        .fold(None::<(usize, String)>, |best, (n, s)| match best {
            Some((m, _)) if m >= n => best,
            _ => Some((n, s)),
        })
        .map(|(_, sentence)| sentence)
}

/// Whether a page is a fact sheet: it has `- **Label:** value` lines, which an extraction
/// reads directly; a page without them is prose, read sentence by sentence.
pub fn is_fact_sheet(content: &str) -> bool {
    content.lines().any(|l| {
        l.trim()
            .strip_prefix("- **")
            .is_some_and(|r| r.contains(":**"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_name_matches_on_word_boundaries_and_a_surname_alone_does_not() {
        assert!(names_in_full("# Halina_Vosk", "Halina Vosk"));
        assert!(names_in_full("said HALINA VOSK, in 1930.", "Halina Vosk"));
        assert!(!names_in_full("Odile Marchetti was born", "Ada Marchetti"));
        assert!(!names_in_full("Marchetti was born", "Ada Marchetti"));
        assert!(!names_in_full("Vasquelson", "Vasquel"));
        assert!(!names_in_full("anything", " "));
    }

    #[test]
    fn a_passage_is_found_by_its_words_and_quoted_across_line_breaks() {
        let page = "# Orvane\n\nOrvane Freight Ltd was founded in 1998.\nSince March 2022 Orvane Freight\nLtd has been sanctioned by the Skelde Trade Council.";
        let passage = supporting_sentence(
            page,
            "Orvane Freight Ltd sanctioned by the Skelde Trade Council",
        )
        .unwrap();
        assert_eq!(
            passage,
            "Since March 2022 Orvane Freight Ltd has been sanctioned by the Skelde Trade Council."
        );
        assert!(quotes(page, &passage));
        assert!(!quotes(page, "Orvane Freight Ltd was fined."));
        assert!(!quotes(page, "  "));
        // A number the statement gives must be in the sentence.
        assert_eq!(
            supporting_sentence(page, "Orvane Freight founded 2001"),
            None
        );
        assert_eq!(supporting_sentence(page, "tide tables"), None);
    }

    #[test]
    fn sentences_survive_titles_company_suffixes_initials_and_decimals() {
        let text = "Dr. Mira Osei joined Kestrel Labs Inc. in 2019. The company raised \
                    EUR 2.5 million from J. Brandt. Was it enough? Yes. It sued Orla Ltd. \
                    The case is open.";
        assert_eq!(
            sentences(text),
            [
                "Dr. Mira Osei joined Kestrel Labs Inc. in 2019.",
                "The company raised EUR 2.5 million from J. Brandt.",
                "Was it enough?",
                "Yes.",
                "It sued Orla Ltd.",
                "The case is open."
            ]
        );
    }
}
