//! The facts a sentence states about an entity it names, read generically so that two
//! sources can be compared on each: dates (founded, born, died, appointed, sanctioned, ...),
//! places (seat, jurisdiction, birthplace), amounts (raised, fined, revenue, damages, ...),
//! stakes (percentages), owners (owned by, a subsidiary of), and offices (who is chief
//! executive or chair of an organisation, and which office a person holds where).
//!
//! Each fact comes with a value as the sentence gives it and a comparable form (amounts in
//! units of one currency, offices by their canonical name), so `EUR 2.5 million` and
//! `€2,500,000` agree, and `2019` agrees with `March 2019`.

use crate::shared::prose::names_in_full;
use crate::shared::time::is_month_name;

/// One fact a sentence states about an entity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct StatedFact {
    /// What the fact is: `founded`, `seat`, `fine (2021)`, `owner`, `office at Orvane Freight Ltd`,
    /// `chief executive`, ...
    pub fact: String,
    /// The value as the sentence gives it.
    pub value: String,
    /// The value in a comparable form.
    pub canon: String,
    /// How two values of this fact are compared.
    pub compare: Compare,
}

/// How two stated values of one fact are compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Compare {
    /// One names the other in full (`Skelde` and `Skelde City`, `2019` and `March 2019`).
    Names,
    /// Equal comparable forms (amounts, percentages).
    Exact,
    /// Sets of offices (`chair|chief executive`): they agree when they share one.
    Overlap,
}

impl StatedFact {
    /// Whether this value and `other` (of the same fact) say the same thing.
    pub(crate) fn agrees_with(&self, other: &StatedFact) -> bool {
        match self.compare {
            Compare::Names => {
                names_in_full(&self.canon, &other.canon) || names_in_full(&other.canon, &self.canon)
            }
            Compare::Exact => {
                self.canon == other.canon
                    // An amount without a currency agrees with the same number in one.
                    || self.canon.rsplit(' ').next() == other.canon.rsplit(' ').next()
                        && (!self.canon.contains(' ') || !other.canon.contains(' '))
            }
            Compare::Overlap => {
                let mine: Vec<&str> = self.canon.split('|').collect();
                other.canon.split('|').any(|o| mine.contains(&o))
            }
        }
    }
}

/// Cues after which a sentence gives a date (a year, `March 2019`, `4 March 2019`).
const DATE_CUES: &[(&str, &[&str])] = &[
    (
        "founded",
        &[
            "founded in ",
            "established in ",
            "incorporated in ",
            "formed in ",
            "set up in ",
        ],
    ),
    ("born", &["born in ", "born on "]),
    ("died", &["died in ", "died on "]),
];

/// Cues after which a sentence gives a place.
const PLACE_CUES: &[(&str, &[&str])] = &[
    (
        "seat",
        &[
            "headquartered in ",
            "registered in ",
            "based in ",
            "incorporated in ",
            "domiciled in ",
            "head office in ",
        ],
    ),
    (
        "jurisdiction",
        &["under the laws of ", "licensed in ", "regulated in "],
    ),
    ("birthplace", &["born in "]),
];

/// Cues after which a sentence names an owner.
const OWNER_CUES: &[&str] = &[
    "owned by ",
    "a subsidiary of ",
    "controlled by ",
    "acquired by ",
    "bought by ",
    "owned subsidiary of ",
];

/// Cues after which a sentence gives an amount, with the fact each states.
const AMOUNT_CUES: &[(&str, &[&str])] = &[
    ("amount raised", &["raised "]),
    ("fine", &["fined ", "a fine of ", "a penalty of "]),
    (
        "revenue",
        &["revenue of ", "revenues of ", "turnover of ", "sales of "],
    ),
    (
        "price paid",
        &["sold for ", "bought for ", "acquired for ", "paid "],
    ),
    ("valuation", &["valued at ", "a valuation of "]),
    (
        "damages",
        &["damages of ", "settled for ", "a settlement of "],
    ),
    ("losses", &["losses of ", "losses exceeded ", "lost "]),
];

/// Events whose year a sentence may state (the only year of the sentence).
const EVENT_CUES: &[(&str, &[&str])] = &[
    ("appointed", &["appointed", "named chief", "became chief"]),
    ("resigned", &["resigned", "stepped down"]),
    ("sanctioned", &["sanctioned", "added to the sanctions list"]),
    ("convicted", &["convicted", "found guilty"]),
    (
        "dissolved",
        &[
            "dissolved",
            "liquidated",
            "declared bankrupt",
            "filed for bankruptcy",
        ],
    ),
];

/// Offices one person holds at a time in an organisation (a board has many directors and a
/// company many founders, so those are not compared), with their canonical names.
const OFFICES: &[(&str, &str)] = &[
    ("chief executive officer", "chief executive"),
    ("chief executive", "chief executive"),
    ("ceo", "chief executive"),
    ("managing director", "managing director"),
    ("chief financial officer", "chief financial officer"),
    ("cfo", "chief financial officer"),
    ("chief operating officer", "chief operating officer"),
    ("coo", "chief operating officer"),
    ("chief technology officer", "chief technology officer"),
    ("cto", "chief technology officer"),
    ("chairwoman", "chair"),
    ("chairman", "chair"),
    ("chairperson", "chair"),
    ("chair", "chair"),
    ("president", "president"),
    ("general counsel", "general counsel"),
];

/// Words before an office that make it not the current one.
const NOT_CURRENT: &[&str] = &[
    "former", "ex", "previous", "past", "late", "then", "interim",
];

/// Every fact `sentence` states about `entity` (named in it in full). `others` are the other
/// entities known: a fact whose cue comes after another entity's name (closer to the cue
/// than `entity`'s) is that entity's, not this one's.
pub(crate) fn stated_facts(sentence: &str, entity: &str, others: &[&str]) -> Vec<StatedFact> {
    // ASCII lower case keeps every byte position, so positions in `lower` are positions
    // in `sentence` (the cues are ASCII).
    let lower = sentence.to_ascii_lowercase();
    let mut facts: Vec<StatedFact> = Vec::new();
    let mut push = |fact: String, value: String, canon: String, compare: Compare| {
        if !facts.iter().any(|f| f.fact == fact) {
            facts.push(StatedFact {
                fact,
                value,
                canon,
                compare,
            });
        }
    };
    let owns = |at: usize| subject_at(sentence, at, entity, others);
    for (fact, cues) in DATE_CUES {
        for (at, rest) in after_cues(sentence, &lower, cues) {
            if let Some(date) = date_at(rest).filter(|_| owns(at)) {
                push(
                    (*fact).into(),
                    date.clone(),
                    date.to_lowercase(),
                    Compare::Names,
                );
            }
        }
    }
    for (fact, cues) in PLACE_CUES {
        for (at, rest) in after_cues(sentence, &lower, cues) {
            if let Some(place) = name_at(rest).filter(|_| owns(at)) {
                push(
                    (*fact).into(),
                    place.clone(),
                    place.to_lowercase(),
                    Compare::Names,
                );
            }
        }
    }
    for (at, rest) in after_cues(sentence, &lower, OWNER_CUES) {
        if let Some(owner) = name_at(rest).filter(|o| owns(at) && !names_in_full(o, entity)) {
            push(
                "owner".into(),
                owner.clone(),
                owner.to_lowercase(),
                Compare::Names,
            );
        }
    }
    let year = only_year(sentence);
    let dated = |fact: &str| match &year {
        Some(y) => format!("{fact} ({y})"),
        None => fact.to_owned(),
    };
    for (fact, cues) in AMOUNT_CUES {
        for (at, rest) in after_cues(sentence, &lower, cues) {
            if let Some((value, canon)) = amount_at(rest).filter(|_| owns(at)) {
                push(dated(fact), value, canon, Compare::Exact);
            }
        }
    }
    if let Some((at, percent)) = stake(&lower)
        && owns(at)
    {
        let target = name_at(
            sentence
                .get(at..)
                .and_then(|r| r.split_once(" in "))
                .map_or("", |(_, r)| r),
        );
        let fact = target.map_or_else(|| "stake".to_owned(), |t| format!("stake in {t}"));
        push(fact, percent.clone(), percent, Compare::Exact);
    }
    if let Some(year) = &year {
        for (fact, cues) in EVENT_CUES {
            if let Some(at) = cues.iter().find_map(|c| find_word(&lower, c))
                && owns(at)
            {
                push(
                    format!("{fact} (year)"),
                    year.clone(),
                    year.clone(),
                    Compare::Names,
                );
            }
        }
    }
    for office in offices(sentence, &lower) {
        let holder_is_entity = office
            .holder
            .as_deref()
            .is_some_and(|h| names_in_full(h, entity));
        let org_is_entity = office
            .org
            .as_deref()
            .is_some_and(|o| names_in_full(o, entity));
        if holder_is_entity && let Some(org) = &office.org {
            push(
                format!("office at {org}"),
                office.name.to_owned(),
                office.name.to_owned(),
                Compare::Overlap,
            );
        } else if org_is_entity && let Some(holder) = &office.holder {
            push(
                office.name.to_owned(),
                holder.clone(),
                holder.to_lowercase(),
                Compare::Names,
            );
        }
    }
    facts
}

/// `(position of the cue, text after it)` for every cue of `cues` in the sentence.
fn after_cues<'s>(sentence: &'s str, lower: &str, cues: &[&str]) -> Vec<(usize, &'s str)> {
    cues.iter()
        .filter_map(|cue| {
            let at = find_word(lower, cue)?;
            sentence.get(at + cue.len()..).map(|rest| (at, rest))
        })
        .collect()
}

/// Where `cue` starts in `lower` at a word's start.
fn find_word(lower: &str, cue: &str) -> Option<usize> {
    lower.match_indices(cue).map(|(at, _)| at).find(|&at| {
        lower[..at]
            .chars()
            .next_back()
            .is_none_or(|c| !c.is_alphanumeric())
    })
}

/// Whether the fact whose cue is at `at` is `entity`'s: the last entity named before the
/// cue is `entity`, or no entity is named before it and no other entity in the sentence.
fn subject_at(sentence: &str, at: usize, entity: &str, others: &[&str]) -> bool {
    let before = sentence.get(..at).unwrap_or(sentence);
    let last_mention = |name: &str| -> Option<usize> {
        let lower = before.to_ascii_lowercase();
        let wanted = name.to_ascii_lowercase();
        (!wanted.trim().is_empty())
            .then(|| lower.rfind(&wanted))
            .flatten()
    };
    let mine = last_mention(entity);
    let theirs = others
        .iter()
        .filter(|o| !names_in_full(entity, o) && !names_in_full(o, entity))
        .filter_map(|o| last_mention(o))
        .max();
    match (mine, theirs) {
        (Some(m), Some(t)) => m > t,
        (Some(_), None) => true,
        (None, Some(_)) => false,
        (None, None) => !others
            .iter()
            .any(|o| !names_in_full(entity, o) && names_in_full(sentence, o)),
    }
}

/// A date at the start of `text`: `1998`, `March 2022`, `4 March 2022`, `March 4, 2022`.
fn date_at(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().take(4).collect();
    let mut taken = Vec::new();
    for word in words {
        let bare = word.trim_end_matches([',', '.', ';', ')', ':']);
        if is_year(bare) {
            taken.push(bare);
            return Some(taken.join(" "));
        }
        let is_day = bare.len() <= 2 && bare.chars().all(|c| c.is_ascii_digit());
        if is_day || is_month_name(bare) {
            taken.push(bare);
        } else {
            return None;
        }
    }
    None
}

fn is_year(word: &str) -> bool {
    word.len() == 4
        && word.chars().all(|c| c.is_ascii_digit())
        && (word.starts_with("18") || word.starts_with("19") || word.starts_with("20"))
}

/// The year of a sentence that states exactly one.
fn only_year(sentence: &str) -> Option<String> {
    let mut years: Vec<&str> = sentence
        .split(|c: char| !c.is_ascii_digit())
        .filter(|w| is_year(w))
        .collect();
    years.dedup();
    (years.len() == 1).then(|| years[0].to_owned())
}

/// The name at the start of `text`: capitalised words (with `of`, `and`, `&`, `de`
/// between them), after an optional `the`: `the Cayman Islands`, `Bank of Skelde`.
fn name_at(text: &str) -> Option<String> {
    let mut words = text.split_whitespace().peekable();
    if words.peek().is_some_and(|w| w.eq_ignore_ascii_case("the")) {
        words.next();
    }
    let mut taken: Vec<&str> = Vec::new();
    for word in words {
        let bare = word.trim_end_matches([',', '.', ';', ')', ':', '\'']);
        let bare = bare.strip_suffix("'s").unwrap_or(bare);
        let joins = matches!(bare, "of" | "and" | "&" | "de" | "van" | "von");
        // A company's legal form may be written in lower case (`Brennick Holdings plc`).
        let legal_form = !taken.is_empty()
            && matches!(
                bare,
                "plc" | "llc" | "llp" | "ltd" | "inc" | "gmbh" | "ag" | "sa" | "bv" | "nv" | "ab"
            );
        if bare.starts_with(char::is_uppercase) || legal_form || (joins && !taken.is_empty()) {
            taken.push(bare);
        } else {
            break;
        }
        if bare.len() != word.len() && !joins {
            // Punctuation after the word ends the name.
            break;
        }
    }
    while taken
        .last()
        .is_some_and(|w| matches!(*w, "of" | "and" | "&" | "de" | "van" | "von"))
    {
        taken.pop();
    }
    let name = taken.join(" ");
    (!name.is_empty() && !is_year(&name)).then_some(name)
}

/// An amount at the start of `text` (after `a`, `an`, `over`, `about`, `more than`): its text
/// and its comparable form, `EUR 2500000` (`crowns 40500000` for a named currency;
/// the number alone when none is given).
fn amount_at(text: &str) -> Option<(String, String)> {
    let words: Vec<&str> = text.split_whitespace().take(7).collect();
    let skip = [
        "a", "an", "over", "about", "around", "nearly", "almost", "more", "than", "some",
        "roughly", "at", "least",
    ];
    let start = words
        .iter()
        .position(|w| !skip.contains(&w.to_lowercase().as_str()))?;
    let words = &words[start..];
    let mut currency: Option<String> = None;
    let mut taken: Vec<&str> = Vec::new();
    let mut number: Option<f64> = None;
    let mut scale = 1.0;
    for (i, raw) in words.iter().enumerate() {
        let word = raw.trim_end_matches([',', '.', ';', ')', ':']);
        let lower = word.to_lowercase();
        if number.is_none() {
            let (symbol, digits) = split_symbol(word);
            if let Some(symbol) = symbol {
                currency = Some(symbol.to_owned());
            }
            if let Some(n) = parse_number(digits) {
                let (n, s) = with_suffix_scale(digits, n);
                number = Some(n);
                scale = s;
                taken.push(word);
            } else if i == 0 && is_currency_code(word) {
                currency = Some(word.to_owned());
                taken.push(word);
            } else {
                return None;
            }
            continue;
        }
        if let Some(s) = scale_word(&lower) {
            scale *= s;
            taken.push(word);
        } else if let Some(c) =
            currency_word(&lower).or_else(|| is_currency_code(word).then_some(word))
        {
            if currency.is_none() {
                currency = Some(c.to_owned());
            }
            taken.push(word);
            break;
        } else {
            break;
        }
    }
    let number = number? * scale;
    let units = format!("{}", number.round() as i64);
    let canon = match currency {
        Some(c) => format!("{} {units}", canonical_currency(&c)),
        None => units,
    };
    Some((taken.join(" "), canon))
}

fn split_symbol(word: &str) -> (Option<&'static str>, &str) {
    for (symbol, code) in [("€", "EUR"), ("$", "USD"), ("£", "GBP")] {
        if let Some(rest) = word.strip_prefix(symbol) {
            return (Some(code), rest);
        }
    }
    (None, word)
}

fn parse_number(text: &str) -> Option<f64> {
    let digits: String = text
        .trim_end_matches(|c: char| c.is_alphabetic())
        .chars()
        .filter(|c| *c != ',')
        .collect();
    (!digits.is_empty() && digits.chars().next().is_some_and(|c| c.is_ascii_digit()))
        .then(|| digits.parse::<f64>().ok())
        .flatten()
}

/// `2.5m`, `3bn`, `40k`: the scale written onto the number.
fn with_suffix_scale(text: &str, n: f64) -> (f64, f64) {
    let suffix: String = text
        .chars()
        .rev()
        .take_while(|c| c.is_alphabetic())
        .collect::<String>()
        .chars()
        .rev()
        .collect();
    (n, scale_word(&suffix.to_lowercase()).unwrap_or(1.0))
}

fn scale_word(word: &str) -> Option<f64> {
    match word {
        "thousand" | "k" => Some(1e3),
        "million" | "m" | "mn" => Some(1e6),
        "billion" | "bn" | "b" => Some(1e9),
        _ => None,
    }
}

fn is_currency_code(word: &str) -> bool {
    word.len() == 3 && word.chars().all(|c| c.is_ascii_uppercase())
}

fn currency_word(word: &str) -> Option<&'static str> {
    match word {
        "euro" | "euros" => Some("EUR"),
        "dollar" | "dollars" => Some("USD"),
        "pound" | "pounds" => Some("GBP"),
        "crown" | "crowns" | "kroner" | "kronor" | "krone" | "krona" => Some("crowns"),
        "francs" | "franc" => Some("francs"),
        _ => None,
    }
}

fn canonical_currency(code: &str) -> String {
    currency_word(&code.to_lowercase()).map_or_else(|| code.to_uppercase(), str::to_owned)
}

/// A stake: `N%`, `N per cent` or `N percent` near `stake`, `owns`, `holds` or
/// `shareholding`, as `(position, "N%")`.
fn stake(lower: &str) -> Option<(usize, String)> {
    if !["stake", "owns ", "holds ", "shareholding"]
        .iter()
        .any(|w| lower.contains(w))
    {
        return None;
    }
    let words: Vec<(usize, &str)> = lower
        .split_whitespace()
        .map(|w| (w.as_ptr() as usize - lower.as_ptr() as usize, w))
        .collect();
    for (i, (at, word)) in words.iter().enumerate() {
        let bare = word.trim_end_matches([',', '.', ';', ')']);
        let next = words.get(i + 1).map_or("", |(_, w)| *w);
        let number = if let Some(n) = bare.strip_suffix('%') {
            Some(n)
        } else if next.starts_with("per") || next.starts_with("percent") {
            Some(bare)
        } else {
            None
        };
        if let Some(n) = number.and_then(parse_number) {
            return Some((*at, format!("{n}%")));
        }
    }
    None
}

/// An office stated in a sentence: who holds it (the name before it), and where (the name
/// after `of`/`at`, or before `'s`).
struct Office {
    name: &'static str,
    holder: Option<String>,
    org: Option<String>,
}

fn offices(sentence: &str, lower: &str) -> Vec<Office> {
    let mut found: Vec<Office> = Vec::new();
    let mut covered: Vec<std::ops::Range<usize>> = Vec::new();
    for (word, canonical) in OFFICES {
        let mut from = 0;
        while let Some(pos) = lower[from..].find(word).map(|p| p + from) {
            from = pos + word.len();
            let end = pos + word.len();
            let bounded = lower[..pos]
                .chars()
                .next_back()
                .is_none_or(|c| !c.is_alphanumeric())
                && lower[end..]
                    .chars()
                    .next()
                    .is_none_or(|c| !c.is_alphanumeric());
            if !bounded || covered.iter().any(|r| r.contains(&pos)) {
                continue;
            }
            covered.push(pos..end);
            let (Some(before), Some(after)) = (sentence.get(..pos), sentence.get(end..)) else {
                continue;
            };
            let prior: Vec<&str> = before.split_whitespace().collect();
            if prior.last().is_some_and(|w| {
                NOT_CURRENT.contains(&w.trim_end_matches('-').to_lowercase().as_str())
            }) {
                continue;
            }
            // `Orvane Freight Ltd's chief executive` names the organisation before the office.
            let org_before = prior
                .last()
                .and_then(|w| w.strip_suffix("'s"))
                .map(|_| name_before(before.trim_end().trim_end_matches("'s")));
            let org = after
                .trim_start()
                .strip_prefix("of ")
                .or_else(|| after.trim_start().strip_prefix("at "))
                .and_then(name_at)
                .or(org_before.flatten());
            let holder = holder_before(before).or_else(|| {
                // `the chief executive of X, Jane Doe` / `X's chief executive Jane Doe`.
                let rest = after.trim_start();
                let rest = rest
                    .strip_prefix("of ")
                    .or_else(|| rest.strip_prefix("at "))
                    .map_or(rest, |r| r.split_once(',').map_or("", |(_, tail)| tail));
                name_at(rest.trim_start_matches([',', ' ']))
            });
            found.push(Office {
                name: canonical,
                holder,
                org,
            });
        }
    }
    found
}

/// The name ending `text` (capitalised words read backwards).
fn name_before(text: &str) -> Option<String> {
    let words: Vec<&str> = text.split_whitespace().collect();
    let mut start = words.len();
    while start > 0 {
        let word = words[start - 1];
        let joins = matches!(word, "of" | "and" | "&");
        if word.starts_with(char::is_uppercase) || (joins && start < words.len()) {
            start -= 1;
        } else {
            break;
        }
        if word.ends_with([',', ';', '.']) && start + 1 < words.len() {
            start += 1;
            break;
        }
    }
    let name = words[start..]
        .iter()
        .map(|w| w.trim_end_matches([',', ';']))
        .collect::<Vec<_>>()
        .join(" ");
    (!name.is_empty()).then_some(name)
}

/// The holder named just before an office: `Jane Doe, chief executive of`, `Jane Doe is the
/// chief executive`, `Jane Doe as the chief executive`, `Jane Doe serves as chief executive`.
fn holder_before(before: &str) -> Option<String> {
    let mut text = before.trim_end();
    if text.ends_with("'s") {
        // `Greywater Salvage Ltd's chief executive`: the organisation, not the holder.
        return None;
    }
    loop {
        let trimmed = text.trim_end_matches([',', ' ']);
        let lower = trimmed.to_lowercase();
        let link = [
            " is the",
            " was the",
            " is",
            " was",
            " as the",
            " as",
            " the",
            " serves as",
            " became",
            " has been",
            " its",
            " their",
            " remains",
        ]
        .iter()
        .find(|l| lower.ends_with(*l));
        match link {
            Some(l) => text = &trimmed[..trimmed.len() - l.len()],
            None => {
                text = trimmed;
                break;
            }
        }
    }
    let name = name_before(text)?;
    // One capitalised word at the sentence start (`The`, `Its`) is no holder.
    (name.split_whitespace().count() >= 2).then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(sentence: &str, entity: &str, others: &[&str]) -> Vec<(String, String)> {
        stated_facts(sentence, entity, others)
            .into_iter()
            .map(|f| (f.fact, f.value))
            .collect()
    }

    fn pair(a: &str, b: &str) -> (String, String) {
        (a.to_owned(), b.to_owned())
    }

    #[test]
    fn dates_places_owners_and_amounts_are_read_after_their_cues() {
        assert_eq!(
            facts(
                "Orvane Freight Ltd was founded in 1998 and is headquartered in Port Skelde, its home.",
                "Orvane Freight Ltd",
                &[]
            ),
            [pair("founded", "1998"), pair("seat", "Port Skelde")]
        );
        assert_eq!(
            facts(
                "In 2021 Orvane Freight Ltd was fined EUR 2.5 million by the port authority.",
                "Orvane Freight Ltd",
                &[]
            ),
            [pair("fine (2021)", "EUR 2.5 million")]
        );
        assert_eq!(
            facts(
                "Orvane Freight Ltd is a subsidiary of Blackfen Holdings Ltd, registered in the Cayman Islands.",
                "Orvane Freight Ltd",
                &["Blackfen Holdings Ltd"]
            ),
            [pair("owner", "Blackfen Holdings Ltd")]
        );
        // The seat follows Blackfen's name: it is Blackfen's.
        assert_eq!(
            facts(
                "Orvane Freight Ltd is a subsidiary of Blackfen Holdings Ltd, registered in the Cayman Islands.",
                "Blackfen Holdings Ltd",
                &["Orvane Freight Ltd"]
            ),
            [pair("seat", "Cayman Islands")]
        );
        assert_eq!(
            facts("Orvane Freight Ltd ships fish.", "Orvane Freight Ltd", &[]),
            []
        );
    }

    #[test]
    fn offices_are_facts_of_the_holder_and_of_the_organisation() {
        let sentence =
            "Filings list Tamsin Holloway as the chief executive of Greywater Salvage Ltd.";
        assert_eq!(
            facts(sentence, "Tamsin Holloway", &["Greywater Salvage Ltd"]),
            [pair("office at Greywater Salvage Ltd", "chief executive")]
        );
        assert_eq!(
            facts(sentence, "Greywater Salvage Ltd", &["Tamsin Holloway"]),
            [pair("chief executive", "Tamsin Holloway")]
        );
        assert_eq!(
            facts(
                "Greywater Salvage Ltd's CEO, Ivo Marsh, declined to comment.",
                "Greywater Salvage Ltd",
                &[]
            ),
            [pair("chief executive", "Ivo Marsh")]
        );
        // A former office is not the current one.
        assert_eq!(
            facts(
                "Ivo Marsh, the former chairman of Greywater Salvage Ltd, retired.",
                "Ivo Marsh",
                &[]
            ),
            []
        );
    }

    #[test]
    fn amounts_in_different_notations_agree_and_different_ones_do_not() {
        let a = &stated_facts("Kestrel Labs raised EUR 2.5 million.", "Kestrel Labs", &[])[0];
        let b = &stated_facts(
            "Kestrel Labs raised €2,500,000 in all.",
            "Kestrel Labs",
            &[],
        )[0];
        let c = &stated_facts("Kestrel Labs raised 4 million euros.", "Kestrel Labs", &[])[0];
        assert_eq!(a.canon, "EUR 2500000");
        assert!(a.agrees_with(b));
        assert!(!a.agrees_with(c));
    }

    #[test]
    fn a_stake_and_an_event_year_are_facts() {
        assert_eq!(
            facts(
                "Castellane holds a 40% stake in Merrow Trade SA.",
                "Castellane",
                &[]
            ),
            [pair("stake in Merrow Trade SA", "40%")]
        );
        assert_eq!(
            facts(
                "Orvane Freight Ltd was sanctioned by the council in 2022.",
                "Orvane Freight Ltd",
                &[]
            ),
            [pair("sanctioned (year)", "2022")]
        );
    }
}
