//! The graph's check of the report against the sources' text, whatever the model wrote:
//! each red flag and mitigating factor gets the passage of each of its sources that says
//! it, each entity the passage of each source that names it, and the founding year and
//! seat stated next to an entity's name are compared across sources, so two sources that
//! disagree are flagged with both values instead of one being chosen silently.

use std::collections::BTreeMap;

use super::schemas::{
    DueDiligenceReport, Entity, FactConflict, Finding, Passage, ReportedEntity, SourceEvidence,
    StatedValue,
};
use crate::shared::prose::{names_in_full, sentences, supporting_sentence};

/// The text of each source read, by URL.
pub(crate) type SourceTexts = BTreeMap<String, String>;

/// Every URL the report's findings and the entities cite, once each, in order.
pub(crate) fn cited_urls(report: &DueDiligenceReport, entities: &[Entity]) -> Vec<String> {
    let mut urls: Vec<String> = Vec::new();
    let findings = report.red_flags.iter().chain(&report.mitigating_factors);
    for url in findings
        .flat_map(|f| &f.sources)
        .chain(entities.iter().flat_map(|e| &e.sources))
    {
        if !url.is_empty() && !urls.contains(url) {
            urls.push(url.clone());
        }
    }
    urls
}

/// Fills in the passages of the report's red flags and mitigating factors from `texts`,
/// and returns the entities with their passages and the fact conflicts. A finding none of
/// whose sources says it keeps no passage and is counted.
pub(crate) fn attach(
    report: &mut DueDiligenceReport,
    entities: &[Entity],
    texts: &SourceTexts,
) -> SourceEvidence {
    let mut unsupported_findings = 0;
    for finding in report
        .red_flags
        .iter_mut()
        .chain(report.mitigating_factors.iter_mut())
    {
        finding.passages = passages_of(finding, texts);
        unsupported_findings += usize::from(finding.passages.is_empty());
    }
    let reported = entities
        .iter()
        .map(|e| ReportedEntity {
            name: e.name.clone(),
            entity_type: e.entity_type,
            passages: e
                .sources
                .iter()
                .filter_map(|url| {
                    let sentence = naming_sentence(texts.get(url)?, e, &e.description)?;
                    Some(Passage {
                        source: url.clone(),
                        text: sentence,
                    })
                })
                .collect(),
        })
        .collect();
    SourceEvidence {
        entities: reported,
        fact_conflicts: fact_conflicts(entities, texts),
        unsupported_findings,
    }
}

/// The passage of each of `finding`'s sources that says it.
fn passages_of(finding: &Finding, texts: &SourceTexts) -> Vec<Passage> {
    finding
        .sources
        .iter()
        .filter_map(|url| {
            let text = supporting_sentence(texts.get(url)?, &finding.statement)?;
            Some(Passage {
                source: url.clone(),
                text,
            })
        })
        .collect()
}

/// The sentence of `text` that names `entity` (or one of its aliases) in full and shares
/// the most words with `about`; the first naming sentence on a tie.
fn naming_sentence(text: &str, entity: &Entity, about: &str) -> Option<String> {
    let about = about.to_lowercase();
    let shared = |s: &str| {
        s.split_whitespace()
            .filter(|w| w.len() >= 4 && about.contains(&w.to_lowercase()))
            .count()
    };
    sentences(text)
        .into_iter()
        .filter(|s| {
            !s.starts_with('#')
                && std::iter::once(&entity.name)
                    .chain(&entity.aliases)
                    .any(|n| names_in_full(s, n))
        })
        .fold(None::<(usize, String)>, |best, s| {
            let n = shared(&s);
            match best {
                Some((m, _)) if m >= n => best,
                _ => Some((n, s)),
            }
        })
        .map(|(_, s)| s)
}

/// Cues after which a sentence states when an organisation began, and where it sits.
const FOUNDED: &[&str] = &["founded in ", "incorporated in ", "established in "];
const SEAT: &[&str] = &[
    "headquartered in ",
    "registered in ",
    "based in ",
    "incorporated in ",
];

/// The first four-digit year (1800-2099) of `text`.
fn year_in(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_digit())
        .find(|w| {
            w.len() == 4 && (w.starts_with("18") || w.starts_with("19") || w.starts_with("20"))
        })
        .map(str::to_owned)
}

/// The capitalised words `text` starts with (`Skelde, where` → `Skelde`), as a place.
fn place_at(text: &str) -> Option<String> {
    let words: Vec<&str> = text
        .split_whitespace()
        .take_while(|w| w.starts_with(char::is_uppercase))
        .map(|w| w.trim_end_matches([',', '.', ';', ')']))
        .collect();
    let place = words.join(" ");
    (!place.is_empty() && year_in(&place).is_none()).then_some(place)
}

/// What `sentence` states about the entity it names: `founded` (a year after a founding
/// cue) and `seat` (a capitalised place after a seat cue).
fn facts_in(sentence: &str) -> Vec<(&'static str, String)> {
    let lower = sentence.to_lowercase();
    let after = |cues: &[&str]| -> Vec<&str> {
        cues.iter()
            .filter_map(|c| lower.find(c).map(|at| &sentence[at + c.len()..]))
            .collect()
    };
    let mut facts = Vec::new();
    if let Some(year) = after(FOUNDED)
        .into_iter()
        .find_map(|rest| rest.split_whitespace().next().and_then(year_in))
    {
        facts.push(("founded", year));
    }
    if let Some(place) = after(SEAT).into_iter().find_map(place_at) {
        facts.push(("seat", place));
    }
    facts
}

/// The founding years and seats the sources state next to each entity's name, where two
/// sources give different values.
fn fact_conflicts(entities: &[Entity], texts: &SourceTexts) -> Vec<FactConflict> {
    let mut conflicts = Vec::new();
    for entity in entities {
        let mut stated: BTreeMap<&'static str, Vec<StatedValue>> = BTreeMap::new();
        for url in &entity.sources {
            let Some(text) = texts.get(url) else { continue };
            for sentence in sentences(text) {
                if !names_in_full(&sentence, &entity.name) {
                    continue;
                }
                for (fact, value) in facts_in(&sentence) {
                    let values = stated.entry(fact).or_default();
                    // One value per source: its first statement of the fact.
                    if values.iter().any(|v| v.passage.source == *url) {
                        continue;
                    }
                    values.push(StatedValue {
                        value,
                        passage: Passage {
                            source: url.clone(),
                            text: sentence.clone(),
                        },
                    });
                }
            }
        }
        for (fact, values) in stated {
            let first = &values[0].value;
            if values.iter().any(|v| !same_value(&v.value, first)) {
                conflicts.push(FactConflict {
                    entity: entity.name.clone(),
                    fact: fact.to_owned(),
                    values,
                });
            }
        }
    }
    conflicts
}

/// Whether two stated values agree (one names the other: `Skelde` and `Skelde City`).
fn same_value(a: &str, b: &str) -> bool {
    names_in_full(a, b) || names_in_full(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn founding_year_and_seat_are_read_next_to_a_cue() {
        assert_eq!(
            facts_in(
                "Orvane Freight Ltd was founded in 1998 and is headquartered in Port Skelde, its home."
            ),
            [
                ("founded", "1998".to_owned()),
                ("seat", "Port Skelde".to_owned())
            ]
        );
        assert_eq!(facts_in("Orvane Freight Ltd ships fish."), []);
    }

    #[test]
    fn two_sources_with_two_founding_years_are_a_conflict_with_both_passages() {
        let entity = Entity {
            name: "Orvane Freight Ltd".into(),
            sources: vec!["a".into(), "b".into(), "c".into()],
            ..Entity::default()
        };
        let texts: SourceTexts = [
            ("a", "Orvane Freight Ltd was founded in 1998."),
            ("b", "Records show Orvane Freight Ltd was founded in 2004."),
            ("c", "Orvane Freight Ltd, founded in 1998, grew."),
        ]
        .into_iter()
        .map(|(u, t)| (u.to_owned(), t.to_owned()))
        .collect();
        let conflicts = fact_conflicts(&[entity], &texts);
        assert_eq!(conflicts.len(), 1);
        let values: Vec<(&str, &str)> = conflicts[0]
            .values
            .iter()
            .map(|v| (v.value.as_str(), v.passage.source.as_str()))
            .collect();
        assert_eq!(values, [("1998", "a"), ("2004", "b"), ("1998", "c")]);
    }
}
